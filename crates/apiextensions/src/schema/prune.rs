//! Pruning of unknown fields, after upstream's `pruning/algorithm.go` (`PruneWithOptions`
//! with unknown-field paths tracked), `defaulting/prunenulls.go`
//! (`PruneNonNullableNullsWithoutDefaults`) and the metadata half of `objectmeta/coerce.go`
//! (unknown `ObjectMeta` fields dropped at the root and in embedded resources).

use super::node::Node;
use serde_json::{Map, Value};

/// `apiVersion`, `kind` and `metadata` survive pruning at a resource root and in embedded
/// resources: they are typed by the API machinery, not by the schema.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The JSON names of `metav1.ObjectMeta`'s fields: what a `metadata` keeps.
pub const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes `obj` as a resource root; returns the removed paths (`spec.foo`, `spec.list[0].x`)
/// sorted, then the dropped metadata fields (`metadata.foo`), as upstream reports them for
/// `fieldValidation`.
pub fn prune_root(obj: &mut Value, schema: &Node) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = String::new();
    // The root is always treated as an embedded resource (upstream's isResourceRoot).
    prune(obj, Some(schema), true, &mut path, &mut out);
    out.sort();
    prune_nulls(obj, schema);
    // Upstream appends the metadata paths after the sorted pruned ones.
    let mut meta = Vec::new();
    coerce_meta(obj, Some(schema), true, &mut String::new(), &mut meta);
    meta.sort();
    out.extend(meta);
    out
}

/// Prunes a value below the root (a schema's `default`), as upstream's `Prune(v, s,
/// isResourceRoot)` with `embedded` standing for its resource-root flag.
pub fn prune_value(x: &mut Value, s: &Node, embedded: bool) {
    prune(x, Some(s), embedded, &mut String::new(), &mut Vec::new());
}

fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    len
}

fn push_index(path: &mut String, i: usize) -> usize {
    let len = path.len();
    path.push_str(&format!("[{i}]"));
    len
}

fn record(path: &mut String, key: &str, out: &mut Vec<String>) {
    let len = push_key(path, key);
    out.push(path.clone());
    path.truncate(len);
}

fn prune(
    x: &mut Value,
    s: Option<&Node>,
    embedded: bool,
    path: &mut String,
    out: &mut Vec<String>,
) {
    if let Some(s) = s {
        if s.preserves_unknown() {
            skip_prune(x, s, embedded, path, out);
            return;
        }
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                for k in m.keys() {
                    record(path, k, out);
                }
                m.clear();
                return;
            };
            prune_fields(m, s, embedded, true, path, out);
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                let len = push_index(path, i);
                prune(v, item_schema, false, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Prunes each field of `m` against its property's (or `additionalProperties`') schema; a
/// field that neither describes is recorded and removed when `drop_unknown`, kept otherwise
/// (under `x-kubernetes-preserve-unknown-fields`).
fn prune_fields(
    m: &mut Map<String, Value>,
    s: &Node,
    embedded: bool,
    drop_unknown: bool,
    path: &mut String,
    out: &mut Vec<String>,
) {
    let embedded = embedded || s.embedded_resource;
    let mut removed = Vec::new();
    for (k, v) in m.iter_mut() {
        if embedded && META_FIELDS.contains(&k.as_str()) {
            continue;
        }
        let len = push_key(path, k);
        if let Some(prop) = s.properties.get(k) {
            prune(v, Some(prop), false, path, out);
        } else if let Some(ap) = &s.additional_properties {
            let ap = match ap {
                super::node::Additional::Schema(ap) => Some(&**ap),
                // `additionalProperties: true` is an empty schema: everything below is
                // unknown to it.
                super::node::Additional::Bool(_) => None,
            };
            prune(v, ap, false, path, out);
        } else if drop_unknown {
            out.push(path.clone());
            removed.push(k.clone());
        }
        path.truncate(len);
    }
    for k in removed {
        m.shift_remove(&k);
    }
}

fn skip_prune(x: &mut Value, s: &Node, embedded: bool, path: &mut String, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => prune_fields(m, s, embedded, false, path, out),
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    let len = push_index(path, i);
                    skip_prune(v, item_schema, false, path, out);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// Upstream's `PruneNonNullableNullsWithoutDefaults`: a `null` where the schema neither allows
/// it nor has a default to put in its place is dropped, as if never sent.
pub fn prune_nulls(x: &mut Value, s: &Node) {
    match x {
        Value::Object(m) => {
            let mut removed = Vec::new();
            for (k, v) in m.iter_mut() {
                let Some(prop) = s.child(k) else { continue };
                if v.is_null() && prop.default.is_none() && !prop.nullable {
                    removed.push(k.clone());
                } else {
                    prune_nulls(v, prop);
                }
            }
            for k in removed {
                m.shift_remove(&k);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for v in items {
                    prune_nulls(v, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// Drops the fields of every resource `metadata` (the root's and embedded resources') that
/// `ObjectMeta` does not have, recording their paths (`objectmeta.CoerceWithOptions` with
/// `ReturnUnknownFieldPaths`).
fn coerce_meta(
    x: &mut Value,
    s: Option<&Node>,
    is_resource_root: bool,
    path: &mut String,
    out: &mut Vec<String>,
) {
    let Value::Object(m) = x else {
        if let (Value::Array(items), Some(s)) = (x, s) {
            for (i, v) in items.iter_mut().enumerate() {
                let len = push_index(path, i);
                coerce_meta(v, s.items.as_deref(), false, path, out);
                path.truncate(len);
            }
        }
        return;
    };
    let embedded = is_resource_root || s.is_some_and(|s| s.embedded_resource);
    if embedded {
        if let Some(Value::Object(meta)) = m.get_mut("metadata") {
            let unknown: Vec<String> = meta
                .keys()
                .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
                .cloned()
                .collect();
            let len = push_key(path, "metadata");
            for k in unknown {
                record(path, &k, out);
                meta.shift_remove(&k);
            }
            // Re-encoding ObjectMeta drops a zero creationTimestamp.
            if meta.get("creationTimestamp").is_some_and(Value::is_null) {
                meta.shift_remove("creationTimestamp");
            }
            path.truncate(len);
        }
    }
    let Some(s) = s else { return };
    for (k, v) in m.iter_mut() {
        if embedded && k == "metadata" {
            continue;
        }
        let Some(child) = s.child(k) else { continue };
        // Upstream's coercer walks with a field.Path: map values are keys (`m[k]`).
        let len = if s.properties.contains_key(k) {
            push_key(path, k)
        } else {
            let len = path.len();
            path.push_str(&format!("[{k}]"));
            len
        };
        coerce_meta(v, Some(child), false, path, out);
        path.truncate(len);
    }
}
