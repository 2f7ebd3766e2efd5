//! Checks of embedded resources (`x-kubernetes-embedded-resource`) inside a custom object,
//! after upstream's `schema/objectmeta/validation.go`: `apiVersion` and `kind` are required
//! strings and `metadata` follows `ObjectMeta`'s rules, with names as path segments.

use super::child;
use super::goval::to_bad_value;
use super::node::Node;
use kapi_machinery::{FieldError, Object};
use kapi_registry::meta::validate_object_meta;
use kapi_registry::strategy::NameRule;
use serde_json::Value;

/// Validates every embedded resource below the root `obj` (the root itself is the Store's).
pub fn validate(s: &Node, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(s, obj, "", true, &mut errs);
    errs
}

/// The same for a schema's `default`: the value itself is checked as an embedded resource
/// unless it stands for a resource root (upstream's `isResourceRoot` flag).
pub fn validate_default(s: &Node, default: &Value, is_resource_root: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(s, default, "", is_resource_root, &mut errs);
    errs
}

fn walk(s: &Node, v: &Value, path: &str, is_root: bool, errs: &mut Vec<FieldError>) {
    if !is_root && s.embedded_resource {
        if let Value::Object(m) = v {
            embedded_resource(m, path, errs);
        }
    }
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if let Some(prop) = s.properties.get(k) {
                    walk(prop, v, &child(path, k), false, errs);
                } else if let Some(ap) = s.additional_schema() {
                    walk(ap, v, &format!("{path}[{k}]"), false, errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.items.as_deref() {
                for (i, v) in items.iter().enumerate() {
                    walk(is, v, &format!("{path}[{i}]"), false, errs);
                }
            }
        }
        _ => {}
    }
}

fn embedded_resource(m: &serde_json::Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    if !m.contains_key("apiVersion") {
        errs.push(FieldError::required(
            child(path, "apiVersion"),
            "must not be empty",
        ));
    }
    if !m.contains_key("kind") {
        errs.push(FieldError::required(
            child(path, "kind"),
            "must not be empty",
        ));
    }
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    child(path, "apiVersion"),
                    to_bad_value(v),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(
                    child(path, "apiVersion"),
                    "",
                    "must not be empty",
                )),
                Some(av) => {
                    if let Some(msg) = parse_group_version_error(av) {
                        errs.push(FieldError::invalid(child(path, "apiVersion"), av, msg));
                    }
                }
            },
            "kind" => match v.as_str() {
                None => errs.push(FieldError::invalid(
                    child(path, "kind"),
                    to_bad_value(v),
                    "must be a string",
                )),
                Some("") => errs.push(FieldError::invalid(
                    child(path, "kind"),
                    "",
                    "must not be empty",
                )),
                Some(_) => {}
            },
            "metadata" => metadata(v, path, errs),
            _ => {}
        }
    }
}

/// `schema.ParseGroupVersion`'s refusal: more than one `/`.
fn parse_group_version_error(s: &str) -> Option<String> {
    if s.matches('/').count() > 1 {
        Some(format!("unexpected GroupVersion string: {s}"))
    } else {
        None
    }
}

fn metadata(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Value::Object(meta) = v else {
        errs.push(FieldError::invalid(
            child(path, "metadata"),
            to_bad_value(v),
            "expected object",
        ));
        return;
    };
    let mut meta = meta.clone();
    let namespaced = meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    // Upstream fills a name so that a nameless embedded object is not refused for it.
    if meta
        .get("name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        meta.insert("name".into(), Value::String("fakename".into()));
    }
    let mut obj = Object::new();
    obj.as_map_mut()
        .insert("metadata".into(), Value::Object(meta));
    for mut e in validate_object_meta(&obj, namespaced, NameRule::PathSegment) {
        e.field = child(path, &e.field);
        errs.push(e);
    }
}
