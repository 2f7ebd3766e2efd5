//! The `/scale` subresource of workloads (autoscaling/v1 `Scale`), as upstream's
//! `ScaleREST`: reads the parent's replicas and selector; writes only `spec.replicas`.

use crate::resources::at;
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

/// Upstream's `LabelSelectorAsSelector(...).String()` for a `metav1.LabelSelector`.
pub fn selector_string(selector: Option<&Value>) -> String {
    let Some(sel) = selector else {
        return String::new();
    };
    let mut parts: Vec<(String, String)> = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            parts.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort();
        let text = match e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        parts.push((key, text));
    }
    parts.sort();
    parts
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// The Scale of a workload object.
pub fn scale_of(parent: &Object) -> Object {
    let mut meta = Map::new();
    if let Some(m) = parent.metadata() {
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
    let replicas = at(parent, &["spec", "replicas"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = at(parent, &["status", "replicas"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    // a replication controller's selector is a plain label map
    let selector = match at(parent, &["spec", "selector"]) {
        Some(m) if parent.kind() == "ReplicationController" => {
            selector_string(Some(&json!({ "matchLabels": m })))
        }
        other => selector_string(other),
    };
    if !selector.is_empty() {
        if let Some(m) = status.as_object_mut() {
            m.insert("selector".into(), json!(selector));
        }
    }
    let mut o = Object::new();
    o.set_api_version_kind("autoscaling/v1", "Scale");
    o.insert("metadata", Value::Object(meta));
    o.insert("spec", json!({"replicas": replicas}));
    o.insert("status", status);
    o
}

/// `<resource>/scale` over the resource's Store.
pub struct ScaleStore {
    info: ResourceInfo,
    parent: Store,
}

impl ScaleStore {
    pub fn new(parent: Store) -> Self {
        Self {
            info: scale_info(&parent),
            parent,
        }
    }
}

/// The description of `<resource>/scale`: the parent's names, kind `Scale`, and none of the
/// main resource's list kind, singular, short names or categories.
pub(crate) fn scale_info(parent: &Store) -> ResourceInfo {
    let mut info = rest::Storage::info(parent).clone();
    info.subresource = "scale".into();
    info.kind = "Scale".into();
    info.list_kind = String::new();
    info.singular = String::new();
    info.short_names = Vec::new();
    info.categories = Vec::new();
    info
}

impl rest::Storage for ScaleStore {
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
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        Some(generator.subschema_for::<Scale>())
    }
}

#[async_trait]
impl Getter for ScaleStore {
    async fn get(&self, ctx: &Context, name: &str, opts: &GetOptions) -> Result<Object, ApiError> {
        Ok(scale_of(&self.parent.get(ctx, name, opts).await?))
    }
}

#[async_trait]
impl Updater for ScaleStore {
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
        let to_parent: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
            let new_object = new_object.clone();
            let name = scale_name.clone();
            Box::pin(async move {
                let current =
                    current.ok_or_else(|| ApiError::internal("scale of a missing object"))?;
                let scale = new_object(Some(scale_of(&current))).await?;
                let replicas = at(&scale, &["spec", "replicas"])
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
                parent.set_resource_version(scale.resource_version());
                crate::resources::obj_mut(&mut parent, &["spec"])
                    .insert("replicas".into(), json!(replicas));
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
            object: scale_of(&r.object),
            created: false,
            warnings: r.warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_print_as_upstream() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]}, {"key": "d", "operator": "DoesNotExist"}]});
        assert_eq!(selector_string(Some(&sel)), "a=1,b=2,c in (x,y),!d");
    }
}
