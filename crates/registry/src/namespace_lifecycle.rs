//! The namespace check a namespaced create passes (upstream's NamespaceLifecycle admission
//! plugin): the namespace must exist and must not be terminating. It sits behind a trait so
//! the admission plugin can take it over; the Store calls it only when it is given one.

use async_trait::async_trait;
use kapi_admission::plugins::namespace::is_terminating;
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, GroupResource, Object};
use kapi_storage::{DynStorage, GetOptions};
use std::sync::{Arc, OnceLock};

/// Decides whether new objects may be created in a namespace.
#[async_trait]
pub trait NamespaceLifecycle: Send + Sync {
    /// `Ok` if `gr`/`name` may be created in `namespace`; 404 if the namespace does not exist,
    /// 403 if it is being terminated.
    async fn admit_create(
        &self,
        namespace: &str,
        gr: &GroupResource,
        name: &str,
    ) -> Result<(), ApiError>;
}

/// Reads the namespace straight from storage: a namespace deleted a moment ago is seen
/// terminating by the next create (a watch cache could still show it active).
pub struct StorageNamespaceLifecycle {
    storage: DynStorage,
}

impl StorageNamespaceLifecycle {
    pub fn new(storage: DynStorage) -> Self {
        Self { storage }
    }
}

/// The namespaces Store's storage (its watch cache), for admission's cached reads; set once
/// the Store exists (the admission chain is built before, or beside, the groups).
#[derive(Clone, Default)]
pub struct NamespaceCache(Arc<OnceLock<DynStorage>>);

impl NamespaceCache {
    /// Takes the storage of the namespaces Store among `groups`, if there is one.
    pub fn fill_from(&self, groups: &[crate::rest::ApiGroupInfo]) {
        let found = groups
            .iter()
            .filter(|g| g.group.is_empty())
            .flat_map(|g| g.versions.iter())
            .flat_map(|v| v.storages.iter())
            .filter(|s| s.info().resource == "namespaces" && s.info().subresource.is_empty())
            .find_map(|s| s.as_any()?.downcast_ref::<crate::store::Store>())
            .map(|store| store.storage().clone());
        if let Some(storage) = found {
            let _ = self.0.set(storage);
        }
    }

    /// The namespace as the cache holds it (it may trail storage); `None` when it does not
    /// hold it or no cache is set.
    pub async fn get(&self, namespace: &str) -> Result<Option<Object>, ApiError> {
        let Some(cache) = self.0.get() else {
            return Ok(None);
        };
        cache
            .get(&format!("/namespaces/{namespace}"), &ANY_CACHED)
            .await
            .map_err(|e| e.into_api_error(&GroupResource::new("", "namespaces"), namespace, "get"))
    }
}

/// Any revision the cache holds (a backend reads its latest).
const ANY_CACHED: GetOptions = GetOptions {
    resource_version: Some(0),
    ignore_not_found: true,
};

/// 403 `<gr> "<name>" is forbidden: unable to create new content in namespace <ns> because it
/// is being terminated`, with upstream's `NamespaceTerminating` cause.
pub fn namespace_terminating(namespace: &str, gr: &GroupResource, name: &str) -> ApiError {
    let mut e = ApiError::forbidden(
        gr,
        name,
        format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        ),
    );
    let details = e.details.get_or_insert_with(Default::default);
    details.causes.push(StatusCause {
        reason: "NamespaceTerminating".into(),
        message: format!("namespace {namespace} is being terminated"),
        field: "metadata.namespace".into(),
    });
    e
}

#[async_trait]
impl NamespaceLifecycle for StorageNamespaceLifecycle {
    async fn admit_create(
        &self,
        namespace: &str,
        gr: &GroupResource,
        name: &str,
    ) -> Result<(), ApiError> {
        let ns_gr = GroupResource::new("", "namespaces");
        let key = format!("/namespaces/{namespace}");
        let got = self
            .storage
            .get(&key, &crate::store::LATEST_IF_EXISTS)
            .await
            .map_err(|e| e.into_api_error(&ns_gr, namespace, "get"))?;
        let Some(ns) = got else {
            return Err(ApiError::not_found(&ns_gr, namespace));
        };
        if is_terminating(&ns) {
            return Err(namespace_terminating(namespace, gr, name));
        }
        Ok(())
    }
}
