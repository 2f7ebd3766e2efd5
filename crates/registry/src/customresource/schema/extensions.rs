//! The `x-kubernetes-*` checks of upstream's `ValidateCustomResourceDefinitionOpenAPISchema`
//! (`apis/apiextensions/validation/validation.go`): preserve-unknown-fields must be true or
//! absent, map and list types, list-map keys, and (as for a new CRD) set items atomic and
//! list-map keys required or defaulted. Children are judged before their parent, as upstream
//! recurses first.

use kapi_machinery::{BadValue, FieldError};
use serde_json::{Map, Value};

/// The checks for the schema at `path` and everything below it.
pub fn validate(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(m) = schema.as_object() {
        node(m, path, &mut errs, 0);
    }
    errs
}

fn type_of(s: &Map<String, Value>) -> &str {
    s.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `%#v` of a `[]string`.
fn go_strings(v: &[String]) -> BadValue {
    let items: Vec<String> = v
        .iter()
        .map(|s| kapi_machinery::goformat::quote(s))
        .collect();
    BadValue::Go(format!("[]string{{{}}}", items.join(", ")))
}

fn node(s: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>, depth: usize) {
    if depth > super::node::MAX_DEPTH {
        return;
    }
    if let Some(p) = s.get("properties").and_then(Value::as_object) {
        let mut keys: Vec<&String> = p.keys().collect();
        keys.sort();
        for k in keys {
            if let Some(c) = p[k].as_object() {
                node(c, &format!("{path}.properties[{k}]"), errs, depth + 1);
            }
        }
    }
    for k in ["items", "additionalProperties", "not"] {
        if let Some(c) = s.get(k).and_then(Value::as_object) {
            node(c, &format!("{path}.{k}"), errs, depth + 1);
        }
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = s.get(k).and_then(Value::as_array) {
            for (i, c) in list.iter().enumerate() {
                if let Some(c) = c.as_object() {
                    node(c, &format!("{path}.{k}[{i}]"), errs, depth + 1);
                }
            }
        }
    }
    own(s, path, errs);
}

fn own(s: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let t = type_of(s);
    let at = |k: &str| format!("{path}.{k}");
    if s.get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(false)
    {
        errs.push(FieldError::invalid(
            at("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let map_type = s.get("x-kubernetes-map-type").and_then(Value::as_str);
    if map_type.is_some() && t != "object" {
        let msg = "must be object if x-kubernetes-map-type is specified";
        if t.is_empty() {
            errs.push(FieldError::required(at("type"), msg));
        } else {
            errs.push(FieldError::invalid(at("type"), t, msg));
        }
    }
    if let Some(mt) = map_type {
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                at("x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = s.get("x-kubernetes-list-type").and_then(Value::as_str);
    let items = s.get("items").and_then(Value::as_object);
    if list_type.is_some() && t != "array" {
        let msg = "must be array if x-kubernetes-list-type is specified";
        if t.is_empty() {
            errs.push(FieldError::required(at("type"), msg));
        } else {
            errs.push(FieldError::invalid(at("type"), t, msg));
        }
    } else if let (Some("set"), Some(is)) = (list_type, items) {
        match type_of(is) {
            "array" => {
                if let Some(lt) = is.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    if lt != "atomic" {
                        errs.push(FieldError::invalid(
                            format!("{path}.items.x-kubernetes-list-type"),
                            lt,
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
            }
            "object" => {
                let mt = is.get("x-kubernetes-map-type").and_then(Value::as_str);
                if mt != Some("atomic") {
                    // Upstream passes the items' list type here: a nil pointer, printed "null".
                    errs.push(FieldError::invalid(
                        format!("{path}.items.x-kubernetes-map-type"),
                        BadValue::Null,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type {
        if lt != "atomic" && lt != "set" && lt != "map" {
            errs.push(FieldError::not_supported(
                at("x-kubernetes-list-type"),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    let keys = strings(s.get("x-kubernetes-list-map-keys"));
    if !keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(at("x-kubernetes-list-type"), msg)),
            Some("map") => {}
            Some(lt) => errs.push(FieldError::invalid(at("x-kubernetes-list-type"), lt, msg)),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(FieldError::required(
                at("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match items {
            None => errs.push(FieldError::required(
                at("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(is) if type_of(is) != "object" => errs.push(FieldError::invalid(
                format!("{path}.items.type"),
                type_of(is),
                "must be object if parent array's x-kubernetes-list-type is map",
            )),
            Some(is) => {
                let props = is.get("properties").and_then(Value::as_object);
                let mut seen: Vec<&str> = Vec::new();
                for k in &keys {
                    match props.and_then(|p| p.get(k)) {
                        Some(p) => {
                            let pt = p.get("type").and_then(Value::as_str).unwrap_or_default();
                            if pt == "array" || pt == "object" {
                                // Upstream reports the items' type here.
                                errs.push(FieldError::invalid(
                                    format!("{path}.items.properties[{k}].type"),
                                    type_of(is),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(FieldError::invalid(
                            at("x-kubernetes-list-map-keys"),
                            go_strings(&keys),
                            "entries must all be names of item properties",
                        )),
                    }
                    if seen.contains(&k.as_str()) {
                        errs.push(FieldError::invalid(
                            at("x-kubernetes-list-map-keys"),
                            go_strings(&keys),
                            "must not contain duplicate entries",
                        ));
                    }
                    seen.push(k);
                }
            }
        }
    }
    map_list_keys_map_set(s, list_type, &keys, path, errs);
}

/// `validateMapListKeysMapSet` (required of new CRDs).
fn map_list_keys_map_set(
    s: &Map<String, Value>,
    list_type: Option<&str>,
    keys: &[String],
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(is) = s.get("items").and_then(Value::as_object) else {
        return;
    };
    let Some(lt @ ("set" | "map")) = list_type else {
        return;
    };
    if is.get("nullable").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::forbidden(
            format!("{path}.items.nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return;
    }
    let required = strings(is.get("required"));
    let props = is.get("properties").and_then(Value::as_object);
    for k in keys {
        let Some(p) = props.and_then(|p| p.get(k)) else {
            continue;
        };
        if !required.contains(k) && p.get("default").is_none_or(Value::is_null) {
            errs.push(FieldError::required(
                format!("{path}.items.properties[{k}].default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if p.get("nullable").and_then(Value::as_bool) == Some(true) {
            errs.push(FieldError::forbidden(
                format!("{path}.items.properties[{k}].nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}
