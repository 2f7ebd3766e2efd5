//! Small helpers the plugins share: which resource a request is for, and spec access.

use crate::Attributes;
use kapi_machinery::Object;
use serde_json::{Map, Value};

/// Whether `a` is for `group`/`resource` itself (not a subresource).
pub fn is_resource(a: &Attributes, group: &str, resource: &str) -> bool {
    a.resource.group == group && a.resource.resource == resource && a.subresource.is_empty()
}

/// The object's `spec`, if it is an object.
pub fn spec(obj: &Object) -> Option<&Map<String, Value>> {
    obj.get("spec")?.as_object()
}

/// The object's `spec`, made an object when missing.
pub fn spec_mut(obj: &mut Object) -> Option<&mut Map<String, Value>> {
    obj.as_map_mut()
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

/// A string at `spec.<field>`, `""` when absent.
pub fn spec_str<'a>(obj: &'a Object, field: &str) -> &'a str {
    spec(obj)
        .and_then(|s| s.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// An array at `spec.<field>` (created when missing).
pub fn spec_array_mut<'a>(obj: &'a mut Object, field: &str) -> Option<&'a mut Vec<Value>> {
    spec_mut(obj)?
        .entry(field)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
}

/// A JSON value as plain text (strings without quotes).
pub fn text(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

/// The newest object (by `creationTimestamp`, then name) whose annotation `key` is "true", or
/// whose `alt_key` is; how upstream picks among several default classes.
pub fn newest_default<'a>(objs: &'a [Object], keys: &[&str]) -> Option<&'a Object> {
    objs.iter()
        .filter(|o| {
            let ann = o.annotations();
            keys.iter()
                .any(|k| ann.get(*k).map(String::as_str) == Some("true"))
        })
        .max_by(|a, b| {
            a.creation_timestamp()
                .cmp(b.creation_timestamp())
                .then_with(|| b.name().cmp(a.name()))
        })
}
