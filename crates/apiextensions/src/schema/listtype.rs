//! `x-kubernetes-list-type` `set` and `map` invariants on values, after upstream's
//! `schema/listtype/validation.go` (`ValidateListSetsAndMaps`): each repeated element (or map
//! key) is reported once, at its second occurrence, as a `Duplicate value`.

use super::child;
use super::goval::{go_syntax, to_bad_value};
use super::node::Node;
use kapi_machinery::{BadValue, FieldError};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Validates the list sets and maps below the object `obj`.
pub fn validate(s: &Node, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Value::Object(m) = obj {
        object(s, m, "", &mut errs);
    }
    errs
}

fn object(s: &Node, m: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(ap) = s.additional_schema() {
        for (k, v) in m {
            value(ap, v, &format!("{path}[{k}]"), errs);
        }
    }
    for (k, v) in m {
        if let Some(prop) = s.properties.get(k) {
            value(prop, v, &child(path, k), errs);
        }
    }
}

fn value(s: &Node, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match v {
        Value::Object(m) => object(s, m, path, errs),
        Value::Array(items) => array(s, items, path, errs),
        _ => {}
    }
}

/// A hashable identity of a JSON value for duplicate detection: scalars by Go value, compound
/// values by their JSON encoding (upstream's `json.Marshal`, keys sorted).
fn identity(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => format!("c{}", canonical(v)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => format!("i{i}"),
            None => format!("f{}", n.as_f64().unwrap_or_default()),
        },
        other => format!("s{other}"),
    }
}

fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&m[k])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// Indices of the second occurrence of each repeated identity.
fn second_occurrences(ids: impl Iterator<Item = Option<String>>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, id) in ids.enumerate() {
        let Some(id) = id else { continue };
        let times = seen.entry(id).or_insert(0);
        *times = times.saturating_add(1);
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

fn array(s: &Node, items: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    match s.list_type.as_deref() {
        Some("set") => {
            for i in second_occurrences(items.iter().map(|v| Some(identity(v)))) {
                if let Some(item) = items.get(i) {
                    errs.push(FieldError::duplicate(
                        format!("{path}[{i}]"),
                        to_bad_value(item),
                    ));
                }
            }
        }
        Some("map") => list_map(s, items, path, errs),
        _ => {}
    }
    if let Some(item_schema) = s.items.as_deref() {
        for (i, v) in items.iter().enumerate() {
            value(item_schema, v, &format!("{path}[{i}]"), errs);
        }
    }
}

fn list_map(s: &Node, items: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                to_bad_value(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    let item_schema = s.items.as_deref();
    // A key absent from an element takes the key's default, as upstream compares them.
    let key_of = |x: &Value, k: &str| -> Option<Value> {
        x.get(k).cloned().or_else(|| {
            item_schema
                .and_then(|is| is.properties.get(k))
                .and_then(|p| p.default.clone())
        })
    };
    let keys: Vec<Map<String, Value>> = items
        .iter()
        .map(|x| {
            s.list_map_keys
                .iter()
                .filter_map(|k| key_of(x, k).map(|v| (k.clone(), v)))
                .collect()
        })
        .collect();
    let ids = keys
        .iter()
        .map(|m| Some(canonical(&Value::Object(m.clone()))));
    for i in second_occurrences(ids) {
        if let Some(key) = keys.get(i) {
            errs.push(FieldError::duplicate(
                format!("{path}[{i}]"),
                BadValue::Go(go_syntax(&Value::Object(key.clone()))),
            ));
        }
    }
}
