//! The per-namespace objects: `default` ServiceAccount and `kube-root-ca.crt` ConfigMap.

use futures::StreamExt;
use kapi_machinery::{ApiError, EventType, GetOptions, ListOptions, Object};
use kapi_registry::rest::{
    validate_nothing, Context, FieldValidation, Storage, UpdatedObjectFn, WriteOptions,
};
use kapi_storage::{DynStorage, WatchOptions};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// How often every namespace is checked again, so deleted objects come back.
pub const RESYNC_PERIOD: Duration = Duration::from_secs(30);
/// The annotation upstream's root-ca-cert-publisher puts on the ConfigMap.
pub const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
const RETRY: Duration = Duration::from_secs(1);

pub(super) struct NamespacedObjects {
    pub storage: DynStorage,
    /// The serviceaccount controller's part, when it runs.
    pub accounts: Option<Arc<dyn Storage>>,
    /// The root-ca-cert-publisher's part, when it runs.
    pub configmaps: Option<Arc<dyn Storage>>,
    pub ca_pem: String,
}

fn active(ns: &Object) -> bool {
    let terminating = ns
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(|p| p.as_str())
        == Some("Terminating");
    ns.deletion_timestamp().is_none() && !terminating
}

/// Creates `body` in `namespace` through `storage` unless an object of that name exists.
async fn ensure(
    storage: &Arc<dyn Storage>,
    namespace: &str,
    body: serde_json::Value,
) -> Result<(), ApiError> {
    ensure_with(storage, namespace, body, false).await
}

/// Like [`ensure`]; with `keep_data`, an existing object whose `data` differs from `body`'s
/// gets `body`'s `data` back (the CA bundle follows the server's CA, as upstream's publisher).
async fn ensure_with(
    storage: &Arc<dyn Storage>,
    namespace: &str,
    body: serde_json::Value,
    keep_data: bool,
) -> Result<(), ApiError> {
    let ctx = Context {
        namespace: namespace.to_string(),
        ..Default::default()
    };
    let (Some(getter), Some(creater)) = (storage.as_getter(), storage.as_creater()) else {
        return Err(ApiError::internal("resource cannot be created"));
    };
    let body = Object::from_value(body)?;
    match getter.get(&ctx, body.name(), &GetOptions::default()).await {
        Ok(existing) if keep_data && existing.get("data") != body.get("data") => {
            let Some(updater) = storage.as_updater() else {
                return Ok(());
            };
            let data = body.get("data").cloned().unwrap_or_default();
            let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
                let data = data.clone();
                Box::pin(async move {
                    let mut obj = current.ok_or_else(|| ApiError::internal("gone meanwhile"))?;
                    obj.insert("data", data);
                    Ok(obj)
                })
            });
            let result = super::ops::write(updater, &ctx, body.name(), new_object).await;
            return match result {
                Ok(_) => Ok(()),
                Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
                Err(e) => Err(e),
            };
        }
        Ok(_) => return Ok(()),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    let (obj, _) = storage.decode(body, FieldValidation::Strict)?;
    match creater
        .create(&ctx, obj, validate_nothing(), &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        // Lost a race with another writer, or the namespace went away meanwhile.
        Err(e) if e.is_already_exists() || e.code == 403 || e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

impl NamespacedObjects {
    async fn sync(&self, ns: &Object) {
        if !active(ns) {
            return;
        }
        let name = ns.name();
        if let Some(accounts) = &self.accounts {
            let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": name}});
            if let Err(e) = ensure(accounts, name, account).await {
                tracing::warn!(namespace = name, error = %e.message, "creating the default service account");
            }
        }
        if let Some(configmaps) = &self.configmaps {
            let ca = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kube-root-ca.crt", "namespace": name,
                    "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
                "data": {"ca.crt": self.ca_pem}});
            if let Err(e) = ensure_with(configmaps, name, ca, true).await {
                tracing::warn!(namespace = name, error = %e.message, "publishing kube-root-ca.crt");
            }
        }
    }

    /// Lists every namespace and syncs it; returns the revision the list was read at.
    async fn resync(&self) -> Option<i64> {
        match self
            .storage
            .list("/namespaces/", &ListOptions::default())
            .await
        {
            Ok(list) => {
                for ns in &list.items {
                    self.sync(ns).await;
                }
                Some(list.revision)
            }
            Err(e) => {
                tracing::warn!(error = %e, "listing namespaces");
                None
            }
        }
    }

    pub(super) async fn run(self) {
        loop {
            let Some(revision) = self.resync().await else {
                tokio::time::sleep(RETRY).await;
                continue;
            };
            let opts = WatchOptions {
                from_revision: Some(revision),
                recursive: true,
                ..Default::default()
            };
            let mut stream = match self.storage.watch("/namespaces/", opts).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "watching namespaces");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            let resync = tokio::time::sleep(RESYNC_PERIOD);
            tokio::pin!(resync);
            loop {
                tokio::select! {
                    _ = &mut resync => break,
                    ev = stream.next() => match ev {
                        Some(Ok(ev)) if matches!(ev.event_type, EventType::Added | EventType::Modified) => {
                            self.sync(&ev.object).await;
                        }
                        Some(Ok(_)) => {}
                        // The watch ended (compaction, backend restart): list again.
                        Some(Err(_)) | None => break,
                    },
                }
            }
        }
    }
}
