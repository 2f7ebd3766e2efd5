//! What a kind's module is built from: its [`ResourceInfo`] ([`info`]), decoding through its
//! `k8s-openapi` type ([`typed!`](crate::typed)), its group's table of strategies
//! ([`strategy_group`]), and the helpers its defaults and validation read and write objects
//! with.

pub mod group_util;

use crate::rest::{ApiGroupInfo, ResourceInfo, Storage};
use crate::store::{Store, Subresource};
use crate::strategy::Strategy;
use crate::Stores;
use kapi_machinery::{FieldError, Object};
use serde_json::{Map, Value};
use std::sync::Arc;

/// A group's registration table: the strategies of its resources at `version`. Each
/// strategy's `info()` names the resource, kind, scope, short names and categories, and
/// discovery, OpenAPI and routes are all generated from the storages made here (a Store per
/// strategy, and its `/status` where the strategy has one).
pub fn strategy_group(
    stores: &Stores,
    group: &str,
    version: &str,
    table: impl IntoIterator<Item = Arc<dyn Strategy>>,
) -> ApiGroupInfo {
    let mut storages: Vec<Arc<dyn Storage>> = Vec::new();
    for strategy in table {
        push(&mut storages, stores, strategy);
    }
    ApiGroupInfo::single_version(group, version, storages)
}

/// Adds a resource's storage, and its `/status` when it has one.
pub fn push(
    out: &mut Vec<Arc<dyn Storage>>,
    stores: &Stores,
    strategy: Arc<dyn Strategy>,
) -> Store {
    let store = stores.store(strategy.clone());
    out.push(Arc::new(store.clone()));
    if strategy.has_status() {
        out.push(Arc::new(store.subresource(Subresource::Status)));
    }
    store
}

/// Describes a resource for discovery and routing.
#[allow(clippy::too_many_arguments)]
pub fn info(
    group: &str,
    version: &str,
    resource: &str,
    kind: &str,
    namespaced: bool,
    short_names: &[&str],
    categories: &[&str],
) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        subresource: String::new(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
    }
}

/// The `decode`, `openapi_schema` and `canonicalize` of a strategy backed by the
/// `k8s-openapi` type `$t`; the strategy's `defaults` run after decoding. Go decodes an
/// omitted field as its zero value, which validation then reports (422), where the typed
/// struct would refuse the body (400): `typed!(T, zeros = &[(path, zero), ...])` fills such
/// fields first, and `typed!(T, fill = f)` runs `f: fn(&mut Object)` for zeros nested in lists.
/// A field that is a pointer in Go but required in the OpenAPI schema (a Deployment's
/// `spec.selector`) decodes as its zero value in `T`; `typed!(T, keep_absent = &[path, ...])`
/// leaves it absent when the body had none, so that validation sees Go's nil. A version served
/// through another version's type (flowcontrol v1beta3 read as v1, the only one `k8s-openapi`
/// has) says which with `typed!(T, fill = f, served_as = |s| api_version_of(s))`.
#[macro_export]
macro_rules! typed {
    ($t:ty) => {
        $crate::typed!($t, fill = |_| {});
    };
    ($t:ty, keep_absent = $paths:expr) => {
        $crate::typed!($t, fill = |_| {}, keep_absent = $paths);
    };
    ($t:ty, zeros = $zeros:expr) => {
        $crate::typed!(
            $t,
            fill = |body| $crate::kind::group_util::fill_zeros(body, $zeros)
        );
    };
    ($t:ty, fill = $fill:expr) => {
        $crate::typed!($t, fill = $fill, keep_absent = &[]);
    };
    ($t:ty, fill = $fill:expr, keep_absent = $paths:expr) => {
        $crate::typed!(@impl $t, $fill, $paths, |_strategy| {
            <$t as $crate::k8s_openapi::Resource>::API_VERSION.to_string()
        });
    };
    ($t:ty, fill = $fill:expr, served_as = |$strategy:ident| $served:expr) => {
        $crate::typed!(@impl $t, $fill, &[], |$strategy| $served);
    };
    // `$served`: the apiVersion the strategy serves, from the strategy (`$strategy`)
    (@impl $t:ty, $fill:expr, $paths:expr, |$strategy:ident| $served:expr) => {
        fn decode(
            &self,
            mut body: kapi_machinery::Object,
            validation: $crate::rest::FieldValidation,
        ) -> $crate::rest::Decoded {
            let fill: fn(&mut kapi_machinery::Object) = $fill;
            fill(&mut body);
            let paths: &[&[&str]] = $paths;
            let absent: Vec<&[&str]> = paths
                .iter()
                .copied()
                .filter(|p| $crate::kind::at(&body, p).is_none_or(serde_json::Value::is_null))
                .collect();
            let $strategy = self;
            let served: String = $served;
            let (mut obj, warnings) = $crate::codec::decode_as::<$t>(body, validation, &served)?;
            for path in absent {
                $crate::kind::remove_at(&mut obj, path);
            }
            self.defaults(&mut obj);
            Ok((obj, warnings))
        }
        fn openapi_schema(
            &self,
            generator: &mut schemars::SchemaGenerator,
        ) -> Option<schemars::Schema> {
            Some(generator.subschema_for::<$t>())
        }
        fn canonicalize(&self, obj: kapi_machinery::Object) -> kapi_machinery::Object {
            let $strategy = self;
            let served: String = $served;
            $crate::codec::canonicalize_as::<$t>(obj, &served)
        }
    };
}

/// Removes the value at a path of object keys, if there is one.
pub fn remove_at(obj: &mut Object, path: &[&str]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj.as_map_mut();
    for k in parents {
        match cur.get_mut(*k) {
            Some(Value::Object(m)) => cur = m,
            _ => return,
        }
    }
    cur.remove(*last);
}

/// The value at a dotted path of object keys.
pub fn at<'a>(obj: &'a Object, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(obj.get(first)?, |v, k| v.get(*k))
}

/// A string at a path, `""` when absent.
pub fn str_at<'a>(obj: &'a Object, path: &[&str]) -> &'a str {
    at(obj, path).and_then(Value::as_str).unwrap_or_default()
}

/// The object at a path, created (replacing non-objects) on demand.
pub fn obj_mut<'a>(obj: &'a mut Object, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut cur = obj.as_map_mut();
    for k in path {
        let e = cur
            .entry(k.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !e.is_object() {
            *e = Value::Object(Map::new());
        }
        cur = match e {
            Value::Object(m) => m,
            _ => unreachable!("just made an object"),
        };
    }
    cur
}

/// Sets `key` in the map at `path` unless present.
pub fn default_at(obj: &mut Object, path: &[&str], key: &str, v: Value) {
    let m = obj_mut(obj, path);
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), v);
    }
}

/// The object at `key` of a JSON map, if it is one.
pub fn object_at_mut<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The objects of the array at `key` of a JSON map (none when it is not an array).
pub fn objects_at_mut<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// Sets `key` on a JSON map unless present.
pub fn default_in(m: &mut Map<String, Value>, key: &str, v: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), v);
    }
}

/// Replaces the `status` with `v` (or removes it).
pub fn set_status(obj: &mut Object, v: Option<Value>) {
    match v {
        Some(v) => {
            obj.insert("status", v);
        }
        None => {
            obj.remove("status");
        }
    }
}

/// apimachinery's `meta.SetStatusCondition` on `status.conditions` of a JSON object, the one
/// rule the kinds' own `Set*Condition` helpers share: `condition` replaces the condition of its
/// `type` (or is appended), and its `lastTransitionTime` moves only when the status changes: it
/// is kept from the condition it replaces when the status is the same, and is now when neither
/// gives one. A `lastTransitionTime` key in `condition` (even null) keeps its place in the
/// encoded object.
pub fn set_condition(obj: &mut Object, mut condition: Value) {
    let has_time = |c: &Value| {
        c.get("lastTransitionTime")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
    };
    let kept_time = at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|c| c.get("type") == condition.get("type")))
        .filter(|old| old.get("status") == condition.get("status") && has_time(old))
        .and_then(|old| old.get("lastTransitionTime").cloned());
    let given_time = has_time(&condition);
    if let Some(c) = condition.as_object_mut() {
        match kept_time {
            Some(t) => {
                c.insert("lastTransitionTime".into(), t);
            }
            None if !given_time => {
                c.insert(
                    "lastTransitionTime".into(),
                    Value::String(crate::meta::now_rfc3339()),
                );
            }
            None => {}
        }
    }
    replace_condition(obj, condition);
}

/// Puts `condition` in `status.conditions` as given, in place of the condition of its `type`
/// (or appended): what a server-side apply of that one condition leaves there.
pub fn replace_condition(obj: &mut Object, condition: Value) {
    let conditions = obj_mut(obj, &["status"])
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(list) = conditions else {
        return;
    };
    match list
        .iter_mut()
        .find(|c| c.get("type") == condition.get("type"))
    {
        Some(old) => *old = condition,
        None => list.push(condition),
    }
}

/// A required field: `Required value` when absent or empty.
pub fn require(errs: &mut Vec<FieldError>, obj: &Object, path: &[&str], field: &str) {
    let missing = match at(obj, path) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        _ => false,
    };
    if missing {
        errs.push(FieldError::required(field, ""));
    }
}

/// Upstream's `ValidateNonnegativeField`.
pub fn non_negative(errs: &mut Vec<FieldError>, obj: &Object, path: &[&str], field: &str) {
    if let Some(n) = at(obj, path).and_then(Value::as_i64) {
        if n < 0 {
            errs.push(FieldError::invalid(
                field,
                n,
                "must be greater than or equal to 0",
            ));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "test code")]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(obj: &Object) -> Value {
        at(obj, &["status", "conditions"]).cloned().unwrap()
    }

    #[test]
    fn a_condition_keeps_its_transition_time_until_its_status_changes() {
        let mut obj = Object::from_value(json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "A"}
        ]}}))
        .unwrap();
        set_condition(
            &mut obj,
            json!({"type": "Ready", "status": "True", "lastTransitionTime": null, "reason": "B"}),
        );
        assert_eq!(
            conditions(&obj),
            json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "B"}])
        );
        set_condition(
            &mut obj,
            json!({"type": "Ready", "status": "False", "reason": "C"}),
        );
        let now = conditions(&obj)[0]["lastTransitionTime"]
            .as_str()
            .unwrap()
            .to_string();
        assert_ne!(now, "2020-01-01T00:00:00Z");
        set_condition(
            &mut obj,
            json!({"type": "Other", "status": "True", "lastTransitionTime": "2021-01-01T00:00:00Z"}),
        );
        assert_eq!(
            conditions(&obj)[1]["lastTransitionTime"],
            "2021-01-01T00:00:00Z"
        );
        assert_eq!(conditions(&obj).as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_replaced_condition_is_written_as_given() {
        let mut obj = Object::from_value(json!({"status": {"conditions": [
            {"type": "Dangling", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}
        ]}}))
        .unwrap();
        replace_condition(
            &mut obj,
            json!({"type": "Dangling", "status": "True", "lastTransitionTime": "2022-01-01T00:00:00Z"}),
        );
        assert_eq!(
            conditions(&obj),
            json!([{"type": "Dangling", "status": "True", "lastTransitionTime": "2022-01-01T00:00:00Z"}])
        );
    }
}
