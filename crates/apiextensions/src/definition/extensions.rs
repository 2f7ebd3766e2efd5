//! The `x-kubernetes-*` rules of `ValidateCustomResourceDefinitionOpenAPISchema`: preserve
//! unknown fields, map and list types, list map keys (`validateMapListKeysMapSet`), and the
//! fields of `x-kubernetes-validations` rules.

use super::schema::{each_schema, flag, opt_str, present, s, Opts};
use super::selectable::valid_field_path;
use kapi_machinery::{BadValue, FieldError};
use serde_json::{Map, Value};

const VALIDATION_REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn required_or_invalid(path: String, value: &str, detail: &str) -> FieldError {
    if value.is_empty() {
        FieldError::required(path, detail)
    } else {
        FieldError::invalid(path, value, detail)
    }
}

fn opt_str_value(v: Option<&str>) -> BadValue {
    v.map_or(BadValue::Null, BadValue::from)
}

/// The `x-kubernetes-preserve-unknown-fields`, map-type and list-type rules.
pub(super) fn extension_rules(
    errs: &mut Vec<FieldError>,
    schema: &Map<String, Value>,
    path: &str,
    opts: &Opts,
) {
    let t = s(schema, "type");
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            format!("{path}.x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let map_type = opt_str(schema, "x-kubernetes-map-type");
    if map_type.is_some() && t != "object" {
        errs.push(required_or_invalid(
            format!("{path}.type"),
            t,
            "must be object if x-kubernetes-map-type is specified",
        ));
    }
    if let Some(mt) = map_type.filter(|m| *m != "atomic" && *m != "granular") {
        errs.push(FieldError::not_supported(
            format!("{path}.x-kubernetes-map-type"),
            mt,
            &["atomic", "granular"],
        ));
    }
    let list_type = opt_str(schema, "x-kubernetes-list-type");
    let items = schema.get("items").and_then(Value::as_object);
    if list_type.is_some() && t != "array" {
        errs.push(required_or_invalid(
            format!("{path}.type"),
            t,
            "must be array if x-kubernetes-list-type is specified",
        ));
    } else if let (true, Some("set"), Some(is)) = (opts.require_atomic_set_type, list_type, items) {
        let item_list = opt_str(is, "x-kubernetes-list-type");
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        match s(is, "type") {
            "array" if item_list.is_some_and(|l| l != "atomic") => errs.push(FieldError::invalid(
                format!("{path}.items.x-kubernetes-list-type"),
                opt_str_value(item_list),
                detail,
            )),
            // upstream reports the item's list type here, not its map type
            "object" if opt_str(is, "x-kubernetes-map-type") != Some("atomic") => {
                errs.push(FieldError::invalid(
                    format!("{path}.items.x-kubernetes-map-type"),
                    opt_str_value(item_list),
                    detail,
                ))
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type.filter(|l| !["atomic", "set", "map"].contains(l)) {
        errs.push(FieldError::not_supported(
            format!("{path}.x-kubernetes-list-type"),
            lt,
            &["atomic", "set", "map"],
        ));
    }
    let keys_raw = schema.get("x-kubernetes-list-map-keys");
    let keys: Vec<&str> = keys_raw
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|k| k.as_str().unwrap_or_default())
        .collect();
    if !keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::required(
                format!("{path}.x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                format!("{path}.x-kubernetes-list-type"),
                lt,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            _ => {}
        }
    }
    if list_type != Some("map") {
        return;
    }
    if keys.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    match schema.get("items").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(
            format!("{path}.items"),
            "must have a schema if x-kubernetes-list-type is map",
        )),
        Some(Value::Object(is)) => {
            let it = s(is, "type");
            if it != "object" {
                errs.push(FieldError::invalid(
                    format!("{path}.items.type"),
                    it,
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
                return;
            }
            let mut seen: Vec<&str> = Vec::new();
            for k in &keys {
                match is
                    .get("properties")
                    .and_then(|p| p.get(*k))
                    .and_then(Value::as_object)
                {
                    Some(p) => {
                        if matches!(s(p, "type"), "array" | "object") {
                            // upstream reports the items' type here
                            errs.push(FieldError::invalid(
                                format!("{path}.items.properties[{k}].type"),
                                it,
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            ));
                        }
                    }
                    None => errs.push(FieldError::invalid(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        BadValue::strings(keys_raw),
                        "entries must all be names of item properties",
                    )),
                }
                if seen.contains(k) {
                    errs.push(FieldError::invalid(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        BadValue::strings(keys_raw),
                        "must not contain duplicate entries",
                    ));
                }
                seen.push(k);
            }
        }
        Some(other) => errs.push(FieldError::invalid(
            format!("{path}.items"),
            BadValue::from(other),
            "must only have a single schema if x-kubernetes-list-type is map",
        )),
    }
}

/// `validateMapListKeysMapSet`.
pub(super) fn map_list_keys_map_set(schema: &Map<String, Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(is) = schema.get("items").and_then(Value::as_object) else {
        return errs;
    };
    let lt = match opt_str(schema, "x-kubernetes-list-type") {
        Some(lt @ ("set" | "map")) => lt,
        _ => return errs,
    };
    if flag(is, "nullable") {
        errs.push(FieldError::forbidden(
            format!("{path}.items.nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return errs;
    }
    let required: Vec<&str> = is
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for k in schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let Some(p) = is
            .get("properties")
            .and_then(|p| p.get(k))
            .and_then(Value::as_object)
        else {
            continue;
        };
        if !required.contains(&k) && !present(p, "default") {
            errs.push(FieldError::required(
                format!("{path}.items.properties[{k}].default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if flag(p, "nullable") {
            errs.push(FieldError::forbidden(
                format!("{path}.items.properties[{k}].nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
    errs
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// The field checks of each `x-kubernetes-validations` rule (compiling the rule is CEL's).
pub(super) fn validation_rules(
    errs: &mut Vec<FieldError>,
    schema: &Map<String, Value>,
    path: &str,
) {
    for (i, rule) in each_schema(schema, "x-kubernetes-validations") {
        let p = format!("{path}.x-kubernetes-validations[{i}]");
        let r = s(rule, "rule");
        let msg = s(rule, "message");
        let msg_expr = s(rule, "messageExpression");
        let (tr, tm) = (r.trim(), msg.trim());
        if tr.is_empty() {
            errs.push(FieldError::required(
                format!("{p}.rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && tm.is_empty() {
            errs.push(FieldError::invalid(
                format!("{p}.message"),
                msg,
                "message must be non-empty if specified",
            ));
        } else if has_newlines(tm) {
            errs.push(FieldError::invalid(
                format!("{p}.message"),
                msg,
                "message must not contain line breaks",
            ));
        } else if has_newlines(tr) && tm.is_empty() {
            errs.push(FieldError::required(
                format!("{p}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{p}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = opt_str(rule, "reason") {
            if !VALIDATION_REASONS.contains(&reason) {
                errs.push(FieldError::not_supported(
                    format!("{p}.reason"),
                    reason,
                    VALIDATION_REASONS,
                ));
            }
        }
        let fp = s(rule, "fieldPath");
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{p}.fieldPath"),
                fp,
                "fieldPath must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            errs.push(FieldError::invalid(
                format!("{p}.fieldPath"),
                fp,
                "fieldPath must not contain line breaks",
            ));
        }
        if !fp.is_empty() && valid_field_path(fp, schema, true).is_err() {
            errs.push(FieldError::invalid(
                format!("{p}.fieldPath"),
                fp,
                "fieldPath must be a valid path",
            ));
        }
    }
}
