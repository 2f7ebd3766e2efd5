//! `<plural>/scale` of a custom resource (upstream's `customresource.ScaleREST`): an
//! autoscaling/v1 `Scale` read from and written to the paths the CRD's `subresources.scale`
//! names.

use super::jsonpath::JsonPath;
use crate::rest::{
    self, Context, FieldValidation, Getter, ResourceInfo, UpdateResult, UpdatedObjectFn, Updater,
    ValidateObjectFn, ValidateObjectUpdateFn, WriteOptions,
};
use crate::store::Store;
use async_trait::async_trait;
use k8s_openapi::api::autoscaling::v1::Scale;
use kapi_machinery::{ApiError, FieldError, GetOptions, GroupVersionKind, Object};
use serde_json::{json, Map, Value};
use std::sync::Arc;

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

/// The Scale of a custom object.
pub fn scale_of(obj: &Object, paths: &ScalePaths) -> Result<Object, ApiError> {
    let mut meta = Map::new();
    if let Some(m) = obj.metadata() {
        for k in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = m.get(k) {
                meta.insert(k.into(), v.clone());
            }
        }
    }
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
    let mut o = Object::new();
    o.set_api_version_kind("autoscaling/v1", "Scale");
    o.insert("metadata", Value::Object(meta));
    o.insert("spec", json!({ "replicas": spec }));
    o.insert("status", status_json);
    Ok(o)
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

/// The `scale` subresource over a custom resource's Store.
pub struct CustomResourceScale {
    info: ResourceInfo,
    parent: Store,
    paths: ScalePaths,
}

impl CustomResourceScale {
    pub fn new(parent: Store, paths: ScalePaths) -> Self {
        Self {
            info: crate::resources::scale::scale_info(&parent),
            parent,
            paths,
        }
    }
}

impl rest::Storage for CustomResourceScale {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(
        &self,
        body: Object,
        validation: FieldValidation,
    ) -> Result<(Object, Vec<String>), ApiError> {
        crate::codec::decode::<Scale>(body, validation)
    }
    fn as_getter(&self) -> Option<&dyn Getter> {
        Some(self)
    }
    fn as_updater(&self) -> Option<&dyn Updater> {
        Some(self)
    }
    fn as_patcher(&self) -> Option<&dyn Updater> {
        Some(self)
    }
    fn request_warnings(&self) -> Vec<String> {
        rest::Storage::request_warnings(&self.parent)
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Some(generator.subschema_for::<Scale>())
    }
}

#[async_trait]
impl Getter for CustomResourceScale {
    async fn get(&self, ctx: &Context, name: &str, opts: &GetOptions) -> Result<Object, ApiError> {
        scale_of(&self.parent.get(ctx, name, opts).await?, &self.paths)
    }
}

#[async_trait]
impl Updater for CustomResourceScale {
    async fn update(
        &self,
        ctx: &Context,
        name: &str,
        new_object: UpdatedObjectFn,
        create_validation: ValidateObjectFn,
        update_validation: ValidateObjectUpdateFn,
        _force_allow_create: bool,
        opts: &WriteOptions,
    ) -> Result<UpdateResult, ApiError> {
        let scale_name = name.to_string();
        let paths = self.paths.clone();
        let to_parent: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
            let new_object = new_object.clone();
            let name = scale_name.clone();
            let paths = paths.clone();
            Box::pin(async move {
                let current =
                    current.ok_or_else(|| ApiError::internal("scale of a missing object"))?;
                let scale = new_object(Some(scale_of(&current, &paths)?)).await?;
                let replicas = scale
                    .get("spec")
                    .and_then(|s| s.get("replicas"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if replicas < 0 {
                    return Err(ApiError::invalid(
                        &GroupVersionKind::new("autoscaling", "v1", "Scale"),
                        &name,
                        &[FieldError::invalid(
                            "spec.replicas",
                            replicas,
                            "must be greater than or equal to 0",
                        )],
                    ));
                }
                let mut parent = current;
                if !scale.resource_version().is_empty() {
                    parent.set_resource_version(scale.resource_version());
                }
                set_at(&mut parent, &paths.spec, json!(replicas));
                Ok(parent)
            })
        });
        let r = Updater::update(
            &self.parent,
            ctx,
            name,
            to_parent,
            create_validation,
            update_validation,
            false,
            opts,
        )
        .await?;
        Ok(UpdateResult {
            object: scale_of(&r.object, &self.paths)?,
            created: false,
            warnings: r.warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_reads_and_writes_the_crd_paths() {
        let paths = ScalePaths::new(&json!({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size", "labelSelectorPath": ".status.selector"})).unwrap();
        let mut obj = Object::from_value(json!({"metadata": {"name": "a", "uid": "u"}, "spec": {"size": 3}, "status": {"selector": "app=a"}})).unwrap();
        let s = scale_of(&obj, &paths).unwrap();
        assert_eq!(s.get("spec"), Some(&json!({"replicas": 3})));
        assert_eq!(
            s.get("status"),
            Some(&json!({"replicas": 0, "selector": "app=a"}))
        );
        set_at(&mut obj, &paths.spec, json!(5));
        assert_eq!(obj.get("spec"), Some(&json!({"size": 5})));
        let bad =
            Object::from_value(json!({"metadata": {"name": "a"}, "spec": {"size": "x"}})).unwrap();
        assert!(scale_of(&bad, &paths).is_err());
    }
}
