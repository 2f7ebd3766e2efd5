//! `Object`: a Kubernetes object as a JSON map, with typed access to `metadata`.
//!
//! Built-in and custom resources travel the generic request path in this one form; a
//! resource's strategy may decode it into a typed struct where it needs to.

use crate::error::ApiError;
use crate::gvk::GroupVersionKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A JSON object (`apiVersion`, `kind`, `metadata`, ...).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Object(Map<String, Value>);

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::deserialize(d).map(Object)
    }
}

impl From<Map<String, Value>> for Object {
    fn from(m: Map<String, Value>) -> Self {
        Object(m)
    }
}

impl From<Object> for Value {
    fn from(o: Object) -> Self {
        Value::Object(o.0)
    }
}

impl Object {
    pub fn new() -> Self {
        Self::default()
    }

    /// Wraps a JSON value that must be an object.
    pub fn from_value(v: Value) -> Result<Self, ApiError> {
        match v {
            Value::Object(m) => Ok(Object(m)),
            other => Err(ApiError::bad_request(format!(
                "expected a JSON object, got {}",
                json_type_name(&other)
            ))),
        }
    }

    /// Decodes JSON bytes into an object.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ApiError> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?;
        Self::from_value(v)
    }

    /// Encodes the object as compact JSON.
    pub fn to_vec(&self) -> Vec<u8> {
        // Serializing a Map of Values cannot fail: every key is a string.
        serde_json::to_vec(&self.0).unwrap_or_default()
    }

    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }
    pub fn as_map_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.0
    }
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0.get_mut(key)
    }
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.0.insert(key.into(), value)
    }
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    fn str_field(&self, key: &str) -> &str {
        self.0.get(key).and_then(Value::as_str).unwrap_or("")
    }

    pub fn api_version(&self) -> &str {
        self.str_field("apiVersion")
    }
    pub fn kind(&self) -> &str {
        self.str_field("kind")
    }
    pub fn set_api_version_kind(&mut self, api_version: &str, kind: &str) {
        self.0
            .insert("apiVersion".into(), Value::String(api_version.into()));
        self.0.insert("kind".into(), Value::String(kind.into()));
    }
    /// The object's group/version/kind as it declares it.
    pub fn gvk(&self) -> GroupVersionKind {
        let gv = crate::gvk::GroupVersion::parse_api_version(self.api_version());
        GroupVersionKind::new(gv.group, gv.version, self.kind())
    }

    /// `metadata`, or `None` when absent or not an object.
    pub fn metadata(&self) -> Option<&Map<String, Value>> {
        self.0.get("metadata").and_then(Value::as_object)
    }

    /// `metadata`, created (or replaced if it is not an object) on demand.
    pub fn metadata_mut(&mut self) -> &mut Map<String, Value> {
        let entry = self
            .0
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        match entry {
            Value::Object(m) => m,
            _ => unreachable!("metadata was just made an object"),
        }
    }

    fn meta_str(&self, key: &str) -> &str {
        self.metadata()
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn set_meta(&mut self, key: &str, value: Option<Value>) {
        let m = self.metadata_mut();
        match value {
            Some(v) => {
                m.insert(key.into(), v);
            }
            None => {
                m.remove(key);
            }
        }
    }

    fn set_meta_str(&mut self, key: &str, value: &str) {
        let v = if value.is_empty() {
            None
        } else {
            Some(Value::String(value.into()))
        };
        self.set_meta(key, v);
    }

    pub fn name(&self) -> &str {
        self.meta_str("name")
    }
    pub fn set_name(&mut self, name: &str) {
        self.set_meta_str("name", name)
    }
    pub fn generate_name(&self) -> &str {
        self.meta_str("generateName")
    }
    pub fn namespace(&self) -> &str {
        self.meta_str("namespace")
    }
    pub fn set_namespace(&mut self, ns: &str) {
        self.set_meta_str("namespace", ns)
    }
    pub fn uid(&self) -> &str {
        self.meta_str("uid")
    }
    pub fn set_uid(&mut self, uid: &str) {
        self.set_meta_str("uid", uid)
    }
    pub fn resource_version(&self) -> &str {
        self.meta_str("resourceVersion")
    }
    pub fn set_resource_version(&mut self, rv: &str) {
        self.set_meta_str("resourceVersion", rv)
    }
    pub fn creation_timestamp(&self) -> &str {
        self.meta_str("creationTimestamp")
    }
    pub fn set_creation_timestamp(&mut self, ts: &str) {
        self.set_meta_str("creationTimestamp", ts)
    }
    pub fn deletion_timestamp(&self) -> Option<&str> {
        self.metadata()
            .and_then(|m| m.get("deletionTimestamp"))
            .and_then(Value::as_str)
    }
    pub fn set_deletion_timestamp(&mut self, ts: Option<&str>) {
        self.set_meta("deletionTimestamp", ts.map(|t| Value::String(t.into())))
    }
    pub fn deletion_grace_period_seconds(&self) -> Option<i64> {
        self.metadata()
            .and_then(|m| m.get("deletionGracePeriodSeconds"))
            .and_then(Value::as_i64)
    }
    pub fn set_deletion_grace_period_seconds(&mut self, s: Option<i64>) {
        self.set_meta("deletionGracePeriodSeconds", s.map(Value::from))
    }
    pub fn generation(&self) -> i64 {
        self.metadata()
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }
    pub fn set_generation(&mut self, g: i64) {
        self.set_meta(
            "generation",
            if g == 0 { None } else { Some(Value::from(g)) },
        )
    }

    fn string_map(&self, key: &str) -> BTreeMap<String, String> {
        self.metadata()
            .and_then(|m| m.get(key))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn labels(&self) -> BTreeMap<String, String> {
        self.string_map("labels")
    }
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.string_map("annotations")
    }
    pub fn set_annotation(&mut self, key: &str, value: &str) {
        let m = self.metadata_mut();
        let a = m
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !a.is_object() {
            *a = Value::Object(Map::new());
        }
        if let Value::Object(a) = a {
            a.insert(key.into(), Value::String(value.into()));
        }
    }

    pub fn finalizers(&self) -> Vec<String> {
        self.metadata()
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }
    pub fn set_finalizers(&mut self, finalizers: &[String]) {
        let v = if finalizers.is_empty() {
            None
        } else {
            Some(Value::Array(
                finalizers
                    .iter()
                    .map(|f| Value::String(f.clone()))
                    .collect(),
            ))
        };
        self.set_meta("finalizers", v)
    }

    /// Looks up a dotted path (`spec.nodeName`, `metadata.name`) for field selectors, rendered
    /// as upstream's field sets render values: strings as is, booleans and numbers as text,
    /// anything missing as the empty string. Paths separated by `|` are read in turn and the
    /// first non-empty value wins, for a field set entry upstream computes with a fallback
    /// (an event's `source` is `source.component`, else `reportingComponent`).
    pub fn field_value(&self, path: &str) -> String {
        path.split('|')
            .map(|p| self.field_value_at(p))
            .find(|v| !v.is_empty())
            .unwrap_or_default()
    }

    fn field_value_at(&self, path: &str) -> String {
        let mut cur: Option<&Value> = None;
        for (i, part) in path.split('.').enumerate() {
            cur = if i == 0 {
                self.0.get(part)
            } else {
                cur.and_then(|v| v.get(part))
            };
            if cur.is_none() {
                return String::new();
            }
        }
        match cur {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        }
    }
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_accessors() {
        let mut o = Object::from_value(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"nodeName": "n1", "hostNetwork": true}})).unwrap();
        assert_eq!(o.name(), "p");
        assert_eq!(o.labels().get("a").map(String::as_str), Some("b"));
        o.set_namespace("default");
        o.set_resource_version("12");
        assert_eq!(o.namespace(), "default");
        assert_eq!(o.resource_version(), "12");
        assert_eq!(o.field_value("spec.nodeName"), "n1");
        assert_eq!(o.field_value("spec.hostNetwork"), "true");
        assert_eq!(o.field_value("status.phase"), "");
        assert_eq!(o.field_value("status.phase|spec.nodeName"), "n1");
        assert_eq!(o.field_value("spec.nodeName|metadata.name"), "n1");
        assert_eq!(o.field_value("status.phase|status.x"), "");
        assert_eq!(o.gvk().kind, "Pod");
        assert!(Object::from_value(json!([1])).is_err());
    }
}
