//! Structural defaulting, after upstream's `defaulting/algorithm.go` (`Default`): a property's
//! `default` fills the field when it is absent or a `null` the schema does not allow; items
//! and `additionalProperties` values that are such nulls take their schema's default. Inserted
//! defaults are defaulted in turn. Also the write-time check of the defaults themselves
//! (`defaulting/validation.go`, `ValidateDefaults`).

use super::goval::to_bad_value;
use super::node::Node;
use kapi_machinery::FieldError;
use serde_json::Value;

/// Applies defaults below `x` according to `s`.
pub fn apply(x: &mut Value, s: &Node) {
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, prop),
                };
                if missing {
                    m.insert(k.clone(), default.clone());
                }
            }
            let ap = s.additional_schema();
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply(v, prop);
                } else if let Some(ap) = ap {
                    if is_non_nullable_null(v, ap) {
                        *v = ap.default.clone().unwrap_or(Value::Null);
                    }
                    apply(v, ap);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items.as_deref() else {
                return;
            };
            for v in items.iter_mut() {
                if is_non_nullable_null(v, item_schema) {
                    *v = item_schema.default.clone().unwrap_or(Value::Null);
                }
                apply(v, item_schema);
            }
        }
        _ => {}
    }
}

fn is_non_nullable_null(v: &Value, s: &Node) -> bool {
    v.is_null() && !s.nullable
}

/// Upstream's `ValidateDefaults` for a new CRD (defaults must be pruned): every `default` is
/// checked against its own schema (unknown fields, embedded resources, value validation),
/// errors under `<path>.default`. Defaults inside `metadata` are not checked here.
pub fn validate_defaults(root: &Node, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(root, path, true, false, &mut errs, 0);
    errs
}

fn under(base: &str, field: &str) -> String {
    if field == "<nil>" || field.is_empty() {
        base.to_string()
    } else {
        format!("{base}.{field}")
    }
}

fn walk(
    s: &Node,
    path: &str,
    is_root: bool,
    inside_meta: bool,
    errs: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > super::node::MAX_DEPTH {
        return;
    }
    let embedded = is_root || s.embedded_resource;
    if let Some(default) = s.default.as_ref().filter(|d| !d.is_null()) {
        if !inside_meta {
            let at = format!("{path}.default");
            let mut pruned = default.clone();
            super::prune::prune_value(&mut pruned, s, embedded);
            if &pruned != default {
                errs.push(FieldError::invalid(
                    at.as_str(),
                    to_bad_value(default),
                    "must not have unknown fields",
                ));
            }
            let meta = super::embedded::validate_default(s, default, embedded);
            if !meta.is_empty() {
                errs.extend(meta.into_iter().map(|mut e| {
                    e.field = under(&at, &e.field);
                    e
                }));
            } else {
                errs.extend(super::validate::validate(s, default, None).into_iter().map(
                    |mut e| {
                        e.field = under(&at, &e.field);
                        e
                    },
                ));
            }
        }
    }
    for (k, p) in &s.properties {
        let meta = inside_meta || (embedded && k == "metadata");
        walk(
            p,
            &format!("{path}.properties[{k}]"),
            false,
            meta,
            errs,
            depth.saturating_add(1),
        );
    }
    if let Some(ap) = s.additional_schema() {
        walk(
            ap,
            &format!("{path}.additionalProperties"),
            false,
            inside_meta,
            errs,
            depth.saturating_add(1),
        );
    }
    if let Some(items) = s.items.as_deref() {
        walk(
            items,
            &format!("{path}.items"),
            false,
            inside_meta,
            errs,
            depth.saturating_add(1),
        );
    }
}
