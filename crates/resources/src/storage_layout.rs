//! What earlier versions of kapi stored differently from kube-apiserver 1.28, made the same at
//! start-up, so that the two servers (and etcd-level tools) find the same objects in one etcd:
//!
//! - keys: kube-apiserver keeps CustomResourceDefinitions and APIServices under
//!   `<group>/<resource>` (the apiextensions and aggregator servers' storage prefix) and
//!   Ingresses under `ingress` (`SpecialDefaultResourcePrefixes`); kapi kept all three under
//!   the plural alone. Each object is created under its new key, then the old key deleted at
//!   the revision that was copied. A replica starting beside it on the same etcd may move the
//!   same object; whichever create comes second finds the key there and only removes the old
//!   one. An old key whose object differs from the one already at the new key is left where
//!   it is, with a warning: it was written after the copy, and deleting it would lose that
//!   write.
//! - versions: kube-apiserver 1.28 stores FlowSchemas and PriorityLevelConfigurations as
//!   v1beta3 and cannot read v1 (1.29's), which kapi stored; each is rewritten as v1beta3
//!   (the same schema) in a compare-and-swap.
//!
//! Both run before the objects are served or bootstrapped.

use kapi_machinery::{ApiError, GroupResource, ListOptions, Object, Preconditions};
use kapi_storage::{DynStorage, Error as StorageError, GetOptions};

/// (group, resource) an earlier kapi kept under its plural alone (`/<resource>/`).
const EARLIER_PREFIXES: &[(&str, &str)] = &[
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "apiservices"),
    ("networking.k8s.io", "ingresses"),
];

/// (group, resource, the apiVersion an earlier kapi stored, kube-apiserver 1.28's).
const EARLIER_VERSIONS: &[(&str, &str, &str, &str)] = &[
    (
        "flowcontrol.apiserver.k8s.io",
        "flowschemas",
        "flowcontrol.apiserver.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1beta3",
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
        "flowcontrol.apiserver.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1beta3",
    ),
];

/// Moves and rewrites what an earlier kapi stored (see the module's doc); returns how many
/// objects changed. `storage` is the backend itself (no watch cache), which every Store's
/// cache watches, so the caches see each change as it is made.
pub async fn upgrade_earlier_layout(storage: &DynStorage) -> Result<usize, ApiError> {
    let moved = relocate_earlier_keys(storage).await?;
    Ok(moved.saturating_add(restore_storage_versions(storage).await?))
}

/// Rewrites the objects stored in an earlier version as kube-apiserver's storage version.
async fn restore_storage_versions(storage: &DynStorage) -> Result<usize, ApiError> {
    let mut rewritten: usize = 0;
    for &(group, resource, earlier, now) in EARLIER_VERSIONS {
        let gr = GroupResource::new(group, resource);
        let prefix = format!("/{}/", gr.storage_prefix());
        let listed = storage
            .list(&prefix, &ListOptions::default())
            .await
            .map_err(|e| e.into_api_error(&gr, ""))?;
        let mut rewritten_here: usize = 0;
        for obj in listed.items.iter().filter(|o| o.api_version() == earlier) {
            let key = format!("{prefix}{}", obj.name());
            let mut relabel = |current: Option<Object>| {
                let result = match current {
                    Some(mut o) if o.api_version() == earlier => {
                        let kind = o.kind().to_string();
                        o.set_api_version_kind(now, &kind);
                        Ok(o)
                    }
                    // rewritten meanwhile (by another replica): unchanged, so not written
                    Some(o) => Ok(o),
                    None => Err(StorageError::NotFound { key: key.clone() }),
                };
                Box::pin(async move { result }) as futures::future::BoxFuture<'_, _>
            };
            match storage
                .guaranteed_update(&key, None, false, &mut relabel)
                .await
            {
                Ok(_) => rewritten_here = rewritten_here.saturating_add(1),
                Err(StorageError::NotFound { .. }) => {}
                Err(e) => return Err(e.into_api_error(&gr, obj.name())),
            }
        }
        if rewritten_here > 0 {
            tracing::info!(
                %gr, from = earlier, to = now, objects = rewritten_here,
                "rewrote objects an earlier kapi stored in kube-apiserver's storage version"
            );
        }
        rewritten = rewritten.saturating_add(rewritten_here);
    }
    Ok(rewritten)
}

/// Moves every object found under an earlier prefix to upstream's key; returns how many were
/// moved.
async fn relocate_earlier_keys(storage: &DynStorage) -> Result<usize, ApiError> {
    let mut moved: usize = 0;
    for &(group, resource) in EARLIER_PREFIXES {
        let gr = GroupResource::new(group, resource);
        let (earlier, now) = (
            format!("/{resource}/"),
            format!("/{}/", gr.storage_prefix()),
        );
        let listed = storage
            .list(&earlier, &ListOptions::default())
            .await
            .map_err(|e| e.into_api_error(&gr, ""))?;
        let mut moved_here: usize = 0;
        for obj in listed.items {
            let (namespace, name) = (obj.namespace().to_string(), obj.name().to_string());
            let relative = if namespace.is_empty() {
                name.clone()
            } else {
                format!("{namespace}/{name}")
            };
            let (from, to) = (format!("{earlier}{relative}"), format!("{now}{relative}"));
            if move_one(storage, &from, &to, &obj)
                .await
                .map_err(|e| e.into_api_error(&gr, &name))?
            {
                moved_here = moved_here.saturating_add(1);
            }
        }
        if moved_here > 0 {
            tracing::info!(
                %gr, from = earlier, to = %now, objects = moved_here,
                "moved objects an earlier kapi stored to kube-apiserver's keys"
            );
        }
        moved = moved.saturating_add(moved_here);
    }
    Ok(moved)
}

/// Copies `obj` (read from `from`) to `to` unless it is there, then deletes `from` at the
/// revision read. False when another replica moved it first or `from` changed since.
async fn move_one(
    storage: &DynStorage,
    from: &str,
    to: &str,
    obj: &Object,
) -> Result<bool, StorageError> {
    let read_at = obj.resource_version().to_string();
    let mut copy = obj.clone();
    copy.set_resource_version("");
    let created = match storage.create(to, copy.clone(), None).await {
        Ok(_) => true,
        Err(StorageError::KeyExists { .. }) => {
            let there = storage.get(to, &GetOptions::default()).await?;
            let same = there.is_some_and(|mut o| {
                o.set_resource_version("");
                o == copy
            });
            if !same {
                tracing::warn!(
                    from,
                    to,
                    "an object is stored under both its earlier key and kube-apiserver's, and they differ: the earlier one is left in place"
                );
                return Ok(false);
            }
            false
        }
        Err(e) => return Err(e),
    };
    let at_copied = Preconditions {
        uid: None,
        resource_version: Some(read_at),
    };
    match storage
        .delete(from, Some(&at_copied), &|_| Box::pin(async { Ok(()) }))
        .await
    {
        Ok(_) | Err(StorageError::NotFound { .. }) => Ok(created),
        Err(StorageError::Conflict { .. }) => {
            tracing::warn!(
                from,
                to,
                "an object changed under its earlier key while it was moved: the earlier one is left in place"
            );
            Ok(created)
        }
        Err(e) => Err(e),
    }
}
