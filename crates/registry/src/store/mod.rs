//! The generic `Store`: every REST verb written once over a [`kapi_storage::Storage`], driven
//! by a resource's [`Strategy`] (upstream's `registry/generic/registry/store.go`).
//!
//! Keys are `/<prefix>/<namespace>/<name>` for namespaced resources and `/<prefix>/<name>`
//! for cluster-scoped ones; the storage backend adds its own root (`/registry`).

mod create;
mod delete;
mod read;
mod update;

use crate::namespace_lifecycle::NamespaceLifecycle;
use crate::rest::{self, Context, Decoded, FieldValidation, ResourceInfo};
use crate::strategy::Strategy;
use kapi_machinery::{ApiError, FieldError, GroupResource, GroupVersionKind, Object};
use kapi_storage::DynStorage;
use std::sync::Arc;

/// Which part of the object a store writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// The whole object (status kept when the resource has a `/status`).
    Main,
    /// `/status`: only `status` changes.
    Status,
    /// `/finalize` (namespaces): only `spec.finalizers` changes.
    Finalize,
}

/// One resource's (or subresource's) REST storage.
#[derive(Clone)]
pub struct Store {
    info: ResourceInfo,
    strategy: Arc<dyn Strategy>,
    storage: DynStorage,
    sub: Subresource,
    namespaces: Option<Arc<dyn NamespaceLifecycle>>,
    prefix: String,
    table: Arc<dyn rest::TableConvertor>,
    /// Ends every open watch when it turns true (the resource stops being served).
    watch_stop: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Store {
    pub fn new(strategy: Arc<dyn Strategy>, storage: DynStorage) -> Self {
        let info = strategy.info();
        let prefix = format!("/{}", strategy.key_prefix().trim_matches('/'));
        let table = crate::strategy::table_of(strategy.as_ref());
        Self {
            info,
            strategy,
            storage,
            sub: Subresource::Main,
            namespaces: None,
            prefix,
            table,
            watch_stop: None,
        }
    }

    /// Ends the watches this store serves once `stop` turns true, as upstream closes the
    /// watches of a custom resource whose definition goes away.
    pub fn with_watch_stop(mut self, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        self.watch_stop = Some(stop);
        self
    }

    /// Checks namespaced creates against `lifecycle` (404 / 403 Terminating).
    pub fn with_namespace_lifecycle(mut self, lifecycle: Arc<dyn NamespaceLifecycle>) -> Self {
        self.namespaces = Some(lifecycle);
        self
    }

    /// The same store serving a subresource (`status`, `finalize`).
    pub fn subresource(&self, sub: Subresource) -> Self {
        let mut s = self.clone();
        s.sub = sub;
        s.info.subresource = match sub {
            Subresource::Main => String::new(),
            Subresource::Status => "status".into(),
            Subresource::Finalize => "finalize".into(),
        };
        s
    }

    pub fn strategy(&self) -> &Arc<dyn Strategy> {
        &self.strategy
    }

    pub fn storage(&self) -> &DynStorage {
        &self.storage
    }

    fn gr(&self) -> GroupResource {
        self.info.group_resource()
    }

    /// Whether this is the namespaces Store (its deletes are told to the namespace check).
    fn holds_namespaces(&self) -> bool {
        self.info.group.is_empty() && self.info.resource == "namespaces"
    }

    fn gvk(&self) -> GroupVersionKind {
        self.info.gvk()
    }

    fn api_version(&self) -> String {
        self.gvk().group_version().api_version()
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: &str, name: &str) -> String {
        if self.info.namespaced {
            format!("{}/{namespace}/{name}", self.prefix)
        } else {
            format!("{}/{name}", self.prefix)
        }
    }

    /// The prefix a list or watch reads: one namespace, or every object.
    pub fn list_prefix(&self, namespace: &str) -> String {
        if self.info.namespaced && !namespace.is_empty() {
            format!("{}/{namespace}/", self.prefix)
        } else {
            format!("{}/", self.prefix)
        }
    }

    /// Sets apiVersion/kind on an object handed out (stored objects keep them, but objects
    /// written by other tools may not).
    fn with_type_meta(&self, mut obj: Object) -> Object {
        if obj.kind() != self.info.kind || obj.api_version() != self.api_version() {
            obj.set_api_version_kind(&self.api_version(), &self.info.kind);
        }
        obj
    }

    /// An object read from storage, in this resource's version, with apiVersion/kind.
    fn read_stored(&self, obj: Object) -> Object {
        self.with_type_meta(self.strategy.convert_from_storage(obj))
    }

    /// An object in the form storage keeps.
    fn to_stored(&self, obj: Object) -> Object {
        self.strategy.to_storage(self.strategy.canonicalize(obj))
    }

    fn invalid(&self, name: &str, errs: &[FieldError]) -> ApiError {
        ApiError::invalid(&self.gvk(), name, errs)
    }

    /// Upstream's `rest.ValidNamespace` step: a namespaced object takes the request's
    /// namespace (400 on a mismatch); a cluster-scoped one has none.
    fn check_namespace(&self, ctx: &Context, obj: &mut Object) -> Result<(), ApiError> {
        if self.info.namespaced {
            if obj.namespace().is_empty() {
                obj.set_namespace(&ctx.namespace);
            } else if obj.namespace() != ctx.namespace {
                return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
            }
        } else {
            obj.set_namespace("");
        }
        Ok(())
    }
}

/// The storage behind the Store that serves `group`/`resource` among `groups` (any version),
/// if a Store serves it.
pub fn storage_of(
    groups: &[rest::ApiGroupInfo],
    group: &str,
    resource: &str,
) -> Option<DynStorage> {
    groups
        .iter()
        .filter(|g| g.group == group)
        .flat_map(|g| g.versions.iter())
        .flat_map(|v| v.storages.iter())
        .filter(|s| s.info().resource == resource && s.info().subresource.is_empty())
        .find_map(|s| s.as_any()?.downcast_ref::<Store>())
        .map(|store| store.storage().clone())
}

impl rest::Storage for Store {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        self.strategy.decode(body, validation)
    }

    fn as_creater(&self) -> Option<&dyn rest::Creater> {
        (self.sub == Subresource::Main).then_some(self as &dyn rest::Creater)
    }
    fn as_getter(&self) -> Option<&dyn rest::Getter> {
        (self.sub != Subresource::Finalize).then_some(self as &dyn rest::Getter)
    }
    fn as_lister(&self) -> Option<&dyn rest::Lister> {
        (self.sub == Subresource::Main).then_some(self as &dyn rest::Lister)
    }
    fn as_updater(&self) -> Option<&dyn rest::Updater> {
        Some(self)
    }
    fn as_patcher(&self) -> Option<&dyn rest::Updater> {
        (self.sub != Subresource::Finalize).then_some(self as &dyn rest::Updater)
    }
    fn as_graceful_deleter(&self) -> Option<&dyn rest::GracefulDeleter> {
        (self.sub == Subresource::Main).then_some(self as &dyn rest::GracefulDeleter)
    }
    fn as_collection_deleter(&self) -> Option<&dyn rest::CollectionDeleter> {
        (self.sub == Subresource::Main && self.strategy.allow_delete_collection())
            .then_some(self as &dyn rest::CollectionDeleter)
    }
    fn as_watcher(&self) -> Option<&dyn rest::Watcher> {
        (self.sub == Subresource::Main).then_some(self as &dyn rest::Watcher)
    }
    fn as_table_convertor(&self) -> Option<&dyn rest::TableConvertor> {
        Some(self)
    }
    fn field_labels(&self) -> &[&'static str] {
        match self.strategy.field_label_conversion() {
            Some(c) => c.labels,
            None => &["metadata.name", "metadata.namespace"],
        }
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.strategy.openapi_schema(generator)
    }
    fn openapi_v2_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.strategy.openapi_v2_schema(generator)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn return_deleted_object(&self) -> bool {
        self.strategy.return_deleted_object()
    }
    fn request_warnings(&self) -> Vec<String> {
        self.strategy.request_warnings()
    }
}

impl rest::TableConvertor for Store {
    fn columns(&self) -> Vec<serde_json::Value> {
        self.table.columns()
    }
    fn cells(&self, obj: &Object) -> Vec<serde_json::Value> {
        self.table.cells(obj)
    }
    fn sort_rows(&self, objects: &mut [&Object]) {
        self.table.sort_rows(objects)
    }
}
