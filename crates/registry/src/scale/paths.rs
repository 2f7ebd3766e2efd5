//! Where a custom resource keeps its scale (upstream's `customresource.ScaleREST`): the paths
//! the CRD's `subresources.scale` names, read and written by the one scale storage
//! (`scale::ScaleStore`), which builds the Scale object from what this reads.

use crate::jsonpath::JsonPath;
use kapi_machinery::{ApiError, Object};
use serde_json::{json, Map, Value};

/// The paths of `subresources.scale`, as field lists (`.spec.replicas` → `spec`, `replicas`).
#[derive(Clone, Debug)]
pub struct ScalePaths {
    spec: Vec<String>,
    status: Vec<String>,
    selector: Option<Vec<String>>,
}

fn fields(path: &str) -> Result<Vec<String>, String> {
    JsonPath::parse(path)?
        .fields()
        .map(|f| f.into_iter().map(str::to_string).collect())
        .ok_or_else(|| format!("unsupported scale path {path:?}"))
}

impl ScalePaths {
    /// From `subresources.scale` JSON.
    pub fn new(scale: &Value) -> Result<Self, String> {
        let text = |k: &str| scale.get(k).and_then(Value::as_str).unwrap_or("");
        Ok(Self {
            spec: fields(text("specReplicasPath"))?,
            status: fields(text("statusReplicasPath"))?,
            selector: match text("labelSelectorPath") {
                "" => None,
                p => Some(fields(p)?),
            },
        })
    }
}

fn at<'a>(obj: &'a Object, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(obj.get(first)?, |v, k| v.get(k))
}

/// An integer at `path` (0 when absent); an error when it holds something else, as
/// upstream's `NestedInt64`.
fn int_at(obj: &Object, path: &[String]) -> Result<i64, ApiError> {
    match at(obj, path) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64().unwrap_or(0)),
        Some(v) => {
            let go_type = match v {
                Value::String(_) => "string",
                Value::Bool(_) => "bool",
                Value::Number(_) => "float64",
                Value::Array(_) => "[]interface {}",
                _ => "map[string]interface {}",
            };
            Err(ApiError::internal(format!(
                ".{} accessor error: {v} is of the type {go_type}, expected int64",
                path.join(".")
            )))
        }
    }
}

/// What the Scale of a custom object shows: its `spec.replicas` and its `status` (replicas,
/// and the selector when the CRD names one and it is set).
pub fn custom_scale_of(obj: &Object, paths: &ScalePaths) -> Result<(i64, Value), ApiError> {
    let spec = int_at(obj, &paths.spec)?;
    let status = int_at(obj, &paths.status)?;
    let mut status_json = json!({ "replicas": status });
    if let Some(sel) = &paths.selector {
        if let Some(Value::String(s)) = at(obj, sel) {
            if !s.is_empty() {
                status_json = json!({ "replicas": status, "selector": s });
            }
        }
    }
    Ok((spec, status_json))
}

impl ScalePaths {
    /// Writes `replicas` at the spec replicas path.
    pub fn set_replicas(&self, obj: &mut Object, replicas: i64) {
        set_at(obj, &self.spec, json!(replicas));
    }
}

fn set_at(obj: &mut Object, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = obj.as_map_mut();
    for p in parents {
        let next = cur
            .entry(p.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        let Value::Object(m) = next else {
            return;
        };
        cur = m;
    }
    cur.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_reads_and_writes_the_crd_paths() {
        let paths = ScalePaths::new(&json!({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size", "labelSelectorPath": ".status.selector"})).unwrap();
        let mut obj = Object::from_value(json!({"metadata": {"name": "a", "uid": "u"}, "spec": {"size": 3}, "status": {"selector": "app=a"}})).unwrap();
        let (replicas, status) = custom_scale_of(&obj, &paths).unwrap();
        assert_eq!(replicas, 3);
        assert_eq!(status, json!({"replicas": 0, "selector": "app=a"}));
        set_at(&mut obj, &paths.spec, json!(5));
        assert_eq!(obj.get("spec"), Some(&json!({"size": 5})));
        let bad =
            Object::from_value(json!({"metadata": {"name": "a"}, "spec": {"size": "x"}})).unwrap();
        assert!(custom_scale_of(&bad, &paths).is_err());
    }
}
