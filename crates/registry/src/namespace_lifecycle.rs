//! The namespace check a namespaced create passes (upstream's NamespaceLifecycle admission
//! plugin): the namespace must exist and must not be terminating. It sits behind a trait so
//! the admission plugin can take it over; the Store calls it only when it is given one.

use crate::watch_caches::WatchCaches;
use async_trait::async_trait;
use kapi_admission::plugins::live_lookup::ForceLive;
use kapi_admission::plugins::namespace::is_terminating;
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, GroupResource};
use kapi_storage::DynStorage;

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

    /// Told when a namespace is about to be deleted through this server.
    fn deleting(&self, _namespace: &str) {}
}

/// Reads the namespace from the namespaces' watch cache when it holds it active, else from
/// storage (upstream's NamespaceLifecycle plugin, which reads its informer's lister); a
/// namespace this server was asked to delete is read from storage for 30 s, as the cache may
/// not show it terminating yet (upstream's `forceLiveLookupCache`).
pub struct CachedNamespaceLifecycle {
    storage: DynStorage,
    caches: WatchCaches,
    force_live: ForceLive,
}

impl CachedNamespaceLifecycle {
    pub fn new(storage: DynStorage, caches: WatchCaches) -> Self {
        Self {
            storage,
            caches,
            force_live: ForceLive::default(),
        }
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
impl NamespaceLifecycle for CachedNamespaceLifecycle {
    async fn admit_create(
        &self,
        namespace: &str,
        gr: &GroupResource,
        name: &str,
    ) -> Result<(), ApiError> {
        if !self.force_live.active(namespace) {
            if let Some(ns) = self.caches.namespace(namespace).await? {
                if !is_terminating(&ns) {
                    return Ok(());
                }
            }
        }
        let ns_gr = GroupResource::new("", "namespaces");
        let key = format!("/namespaces/{namespace}");
        let got = self
            .storage
            .get(&key, &crate::reads::LATEST_IF_EXISTS)
            .await
            .map_err(|e| e.into_api_error(&ns_gr, namespace))?;
        let Some(ns) = got else {
            return Err(ApiError::not_found(&ns_gr, namespace));
        };
        if is_terminating(&ns) {
            return Err(namespace_terminating(namespace, gr, name));
        }
        Ok(())
    }
    fn deleting(&self, namespace: &str) {
        self.force_live.mark(namespace);
    }
}
