//! The `/scale` subresource (autoscaling/v1 `Scale`) of workloads and of custom resources:
//! one storage, told by [`ReplicasAt`] where the parent keeps its replicas and selector.

pub mod paths;

pub use paths::{custom_scale_of, ScalePaths};

use crate::kind::at;
use crate::labels::selector_string;
use crate::rest::{
    self, Context, Decoded, FieldValidation, Getter, ResourceInfo, UpdateResult, UpdatedObjectFn,
    Updater, ValidateObjectFn, ValidateObjectUpdateFn, WriteOptions,
};
use crate::store::Store;
use async_trait::async_trait;
use k8s_openapi::api::autoscaling::v1::Scale;
use kapi_machinery::{ApiError, FieldError, GetOptions, GroupVersionKind, Object};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Where a parent keeps what its Scale shows.
#[derive(Clone, Debug)]
pub enum ReplicasAt {
    /// A built-in workload: `spec.replicas`, `status.replicas` and `spec.selector` (a
    /// `LabelSelector`, or a replication controller's plain label map).
    Workload,
    /// A custom resource: the paths of its CRD's `subresources.scale`.
    Custom(ScalePaths),
}

impl ReplicasAt {
    /// The parent's Scale.
    fn scale_of(&self, parent: &Object) -> Result<Object, ApiError> {
        match self {
            ReplicasAt::Workload => Ok(scale_of(parent)),
            ReplicasAt::Custom(paths) => {
                let (replicas, status) = custom_scale_of(parent, paths)?;
                Ok(scale_object(parent, replicas, status))
            }
        }
    }

    /// Writes a Scale's replicas (and resourceVersion) back into its parent.
    fn apply(&self, parent: &mut Object, scale: &Object, replicas: i64) {
        match self {
            ReplicasAt::Workload => {
                parent.set_resource_version(scale.resource_version());
                crate::kind::obj_mut(parent, &["spec"]).insert("replicas".into(), json!(replicas));
            }
            ReplicasAt::Custom(paths) => {
                if !scale.resource_version().is_empty() {
                    parent.set_resource_version(scale.resource_version());
                }
                paths.set_replicas(parent, replicas);
            }
        }
    }
}

/// A Scale with the parent's identifying metadata, `spec.replicas` and `status`.
fn scale_object(parent: &Object, replicas: i64, status: Value) -> Object {
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
    let mut o = Object::new();
    o.set_api_version_kind("autoscaling/v1", "Scale");
    o.insert("metadata", Value::Object(meta));
    o.insert("spec", json!({ "replicas": replicas }));
    o.insert("status", status);
    o
}

/// The Scale of a workload object.
pub fn scale_of(parent: &Object) -> Object {
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
    scale_object(parent, replicas, status)
}

/// `<resource>/scale` over the resource's Store (upstream's `ScaleREST` of workloads and
/// `customresource.ScaleREST`): reads the parent's replicas and selector; writes only the
/// replicas.
pub struct ScaleStore {
    info: ResourceInfo,
    parent: Store,
    replicas: ReplicasAt,
}

impl ScaleStore {
    /// The scale of a built-in workload.
    pub fn new(parent: Store) -> Self {
        Self::at(parent, ReplicasAt::Workload)
    }

    /// The scale of a parent keeping its replicas as `replicas` says.
    pub fn at(parent: Store, replicas: ReplicasAt) -> Self {
        Self {
            info: rest::Storage::info(&parent).subresource_of("scale", "Scale"),
            parent,
            replicas,
        }
    }
}

impl rest::Storage for ScaleStore {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
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
impl Getter for ScaleStore {
    async fn get(&self, ctx: &Context, name: &str, opts: &GetOptions) -> Result<Object, ApiError> {
        self.replicas
            .scale_of(&self.parent.get(ctx, name, opts).await?)
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
        let at_parent = self.replicas.clone();
        let to_parent: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
            let new_object = new_object.clone();
            let name = scale_name.clone();
            let at_parent = at_parent.clone();
            Box::pin(async move {
                let current =
                    current.ok_or_else(|| ApiError::internal("scale of a missing object"))?;
                let scale = new_object(Some(at_parent.scale_of(&current)?)).await?;
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
                at_parent.apply(&mut parent, &scale, replicas);
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
            object: self.replicas.scale_of(&r.object)?,
            created: false,
            warnings: r.warnings,
        })
    }
}
