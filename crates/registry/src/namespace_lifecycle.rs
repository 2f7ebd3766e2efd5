//! The namespace check a namespaced create passes (upstream's NamespaceLifecycle admission
//! plugin): the namespace must exist and must not be terminating. It sits behind a trait so
//! the admission plugin can take it over; the Store calls it only when it is given one.

use async_trait::async_trait;
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, GroupResource};
use kapi_storage::DynStorage;
use serde_json::Value;

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

/// Reads the namespace straight from storage.
pub struct StorageNamespaceLifecycle {
    storage: DynStorage,
}

impl StorageNamespaceLifecycle {
    pub fn new(storage: DynStorage) -> Self {
        Self { storage }
    }
}

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
        let phase = ns
            .get("status")
            .and_then(|s| s.get("phase"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if phase == "Terminating" || ns.deletion_timestamp().is_some() {
            return Err(namespace_terminating(namespace, gr, name));
        }
        Ok(())
    }
}
