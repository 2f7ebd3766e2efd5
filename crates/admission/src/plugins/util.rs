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

/// The [`crate::Interface`] of a built-in plugin: the operations it handles (upstream's
/// `admission.NewHandler(admission.Create, ...)`) and which halves it has, `mutates` and/or
/// `validates`. `handler!(Plugin, [Create, Update], mutates, validates);`
macro_rules! handler {
    ($ty:ty, [$($op:ident),+], $($half:ident),+) => {
        impl $crate::Interface for $ty {
            fn handles(&self, op: $crate::Operation) -> bool {
                matches!(op, $($crate::Operation::$op)|+)
            }
            $($crate::plugins::util::handler!(@$half);)+
        }
    };
    (@mutates) => {
        fn as_mutator(&self) -> Option<&dyn $crate::MutationInterface> {
            Some(self)
        }
    };
    (@validates) => {
        fn as_validator(&self) -> Option<&dyn $crate::ValidationInterface> {
            Some(self)
        }
    };
}
pub(crate) use handler;

/// A test's request: `op` on `group`/v1 `resource` (kind `kind`) for `namespace`/`name`,
/// carrying `object`.
#[cfg(test)]
pub(crate) fn request(
    op: crate::Operation,
    (group, kind, resource): (&str, &str, &str),
    (namespace, name): (&str, &str),
    object: Value,
) -> Attributes {
    use kapi_machinery::{GroupVersionKind, GroupVersionResource};
    let mut a = Attributes::new(
        op,
        GroupVersionKind::new(group, "v1", kind),
        GroupVersionResource::new(group, "v1", resource),
        namespace,
        name,
    );
    a.object = Some(Object::from_value(object).unwrap());
    a
}

/// A test's look at the `spec` of the request's object.
#[cfg(test)]
pub(crate) fn spec_of(a: &Attributes) -> &Value {
    a.object.as_ref().unwrap().get("spec").unwrap()
}
