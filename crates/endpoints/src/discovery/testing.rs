//! A test double of the REST capability traits: a storage that only answers which verbs it
//! has (its methods are never called by discovery or OpenAPI) and the schema of its kind.

use async_trait::async_trait;
use k8s_openapi::api::autoscaling::v1 as autoscaling;
use k8s_openapi::api::{apps::v1 as apps, coordination::v1 as coordination, core::v1 as core};
use kapi_machinery::{ApiError, DeleteOptions, GetOptions, ListOptions, Object};
use kapi_registry::rest::*;
use std::sync::Arc;

/// Which capabilities a test storage has.
#[derive(Clone, Copy)]
pub struct Caps(u8);

impl Caps {
    pub const CREATE: Caps = Caps(1);
    pub const GET: Caps = Caps(2);
    pub const LIST: Caps = Caps(4);
    pub const UPDATE: Caps = Caps(8);
    pub const PATCH: Caps = Caps(16);
    pub const DELETE: Caps = Caps(32);
    pub const DELETE_COLLECTION: Caps = Caps(64);
    pub const WATCH: Caps = Caps(128);
    pub const ALL: Caps = Caps(255);
    /// What a `/status` or `/scale` subresource has.
    pub const STATUS: Caps = Caps(2 | 8 | 16);
    fn has(self, c: Caps) -> bool {
        self.0 & c.0 != 0
    }
}

pub struct TestStorage {
    info: ResourceInfo,
    caps: Caps,
}

#[allow(clippy::too_many_arguments)]
pub fn storage(
    group: &str,
    version: &str,
    resource: &str,
    sub: &str,
    kind: &str,
    namespaced: bool,
    short: &[&str],
    categories: &[&str],
    caps: Caps,
) -> Arc<dyn Storage> {
    let singular = kind.to_lowercase();
    Arc::new(TestStorage {
        info: ResourceInfo {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: sub.into(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            singular,
            namespaced,
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: categories.iter().map(|s| s.to_string()).collect(),
        },
        caps,
    })
}

pub fn group(group: &str, version: &str, storages: Vec<Arc<dyn Storage>>) -> ApiGroupInfo {
    ApiGroupInfo {
        group: group.into(),
        preferred_version: version.into(),
        versions: vec![ApiVersionInfo {
            version: version.into(),
            storages,
        }],
    }
}

fn never() -> ApiError {
    ApiError::internal("test storage")
}

impl Storage for TestStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }
    fn decode(&self, body: Object, _: FieldValidation) -> Result<(Object, Vec<String>), ApiError> {
        Ok((body, Vec::new()))
    }
    fn as_creater(&self) -> Option<&dyn Creater> {
        self.caps.has(Caps::CREATE).then_some(self as &dyn Creater)
    }
    fn as_getter(&self) -> Option<&dyn Getter> {
        self.caps.has(Caps::GET).then_some(self as &dyn Getter)
    }
    fn as_lister(&self) -> Option<&dyn Lister> {
        self.caps.has(Caps::LIST).then_some(self as &dyn Lister)
    }
    fn as_updater(&self) -> Option<&dyn Updater> {
        self.caps.has(Caps::UPDATE).then_some(self as &dyn Updater)
    }
    fn as_patcher(&self) -> Option<&dyn Updater> {
        self.caps.has(Caps::PATCH).then_some(self as &dyn Updater)
    }
    fn as_graceful_deleter(&self) -> Option<&dyn GracefulDeleter> {
        self.caps
            .has(Caps::DELETE)
            .then_some(self as &dyn GracefulDeleter)
    }
    fn as_collection_deleter(&self) -> Option<&dyn CollectionDeleter> {
        self.caps
            .has(Caps::DELETE_COLLECTION)
            .then_some(self as &dyn CollectionDeleter)
    }
    fn as_watcher(&self) -> Option<&dyn Watcher> {
        self.caps.has(Caps::WATCH).then_some(self as &dyn Watcher)
    }
    fn openapi_schema(&self, g: &mut schemars::SchemaGenerator) -> Option<schemars::Schema> {
        Some(match self.info.kind.as_str() {
            "ConfigMap" => g.subschema_for::<core::ConfigMap>(),
            "Pod" => g.subschema_for::<core::Pod>(),
            "Namespace" => g.subschema_for::<core::Namespace>(),
            "LimitRange" => g.subschema_for::<core::LimitRange>(),
            "Binding" => g.subschema_for::<core::Binding>(),
            "Deployment" => g.subschema_for::<apps::Deployment>(),
            "Scale" => g.subschema_for::<autoscaling::Scale>(),
            "Lease" => g.subschema_for::<coordination::Lease>(),
            _ => return None,
        })
    }
}

#[async_trait]
impl Creater for TestStorage {
    async fn create(
        &self,
        _: &Context,
        _: Object,
        _: ValidateObjectFn,
        _: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        Err(never())
    }
}
#[async_trait]
impl Getter for TestStorage {
    async fn get(&self, _: &Context, _: &str, _: &GetOptions) -> Result<Object, ApiError> {
        Err(never())
    }
}
#[async_trait]
impl Lister for TestStorage {
    async fn list(&self, _: &Context, _: &ListOptions) -> Result<ObjectList, ApiError> {
        Err(never())
    }
}
#[async_trait]
impl Updater for TestStorage {
    async fn update(
        &self,
        _: &Context,
        _: &str,
        _: UpdatedObjectFn,
        _: ValidateObjectFn,
        _: ValidateObjectUpdateFn,
        _: bool,
        _: &WriteOptions,
    ) -> Result<UpdateResult, ApiError> {
        Err(never())
    }
}
#[async_trait]
impl GracefulDeleter for TestStorage {
    async fn delete(
        &self,
        _: &Context,
        _: &str,
        _: ValidateObjectFn,
        _: &DeleteOptions,
    ) -> Result<DeleteResult, ApiError> {
        Err(never())
    }
}
#[async_trait]
impl CollectionDeleter for TestStorage {
    async fn delete_collection(
        &self,
        _: &Context,
        _: ValidateObjectFn,
        _: &DeleteOptions,
        _: &ListOptions,
    ) -> Result<ObjectList, ApiError> {
        Err(never())
    }
}
#[async_trait]
impl Watcher for TestStorage {
    async fn watch(&self, _: &Context, _: &ListOptions) -> Result<WatchEventStream, ApiError> {
        Err(never())
    }
}
