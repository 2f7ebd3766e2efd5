//! The watch caches other parts of the server read objects from, as upstream's components
//! read their informers' listers: admission (namespaces, quotas, service accounts, limit
//! ranges, priority classes), the namespace check, and service-account token authentication
//! (the accounts, secrets, pods and nodes a token is bound to). A cached answer may trail
//! storage by the last changes; each reader falls back to storage where upstream does a live
//! lookup. Without a watch cache (`--watch-cache=false`) the Stores' storages are the backend
//! itself, and these reads are storage reads.

use kapi_machinery::{ApiError, GroupResource, ListOptions, Object};
use kapi_storage::{DynStorage, GetOptions};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The resources read through their caches, by group and plural.
const CACHED: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "resourcequotas"),
    ("", "serviceaccounts"),
    ("", "limitranges"),
    ("", "secrets"),
    ("", "pods"),
    ("", "nodes"),
    ("scheduling.k8s.io", "priorityclasses"),
];

/// The caches, set once the Stores exist (the admission chain is built before, or beside,
/// the groups). Until then reads answer "no cache" and callers go to storage.
#[derive(Clone, Default)]
pub struct WatchCaches {
    stores: Arc<OnceLock<HashMap<GroupResource, DynStorage>>>,
}

/// Any revision the cache holds (a backend reads its latest).
const ANY_CACHED: GetOptions = GetOptions {
    resource_version: Some(0),
    ignore_not_found: true,
};

impl WatchCaches {
    /// Takes the storages of the Stores of [`CACHED`], which `storage_of` finds by group and
    /// resource.
    pub fn fill_from(&self, storage_of: impl Fn(&str, &str) -> Option<DynStorage>) {
        let stores = CACHED
            .iter()
            .filter_map(|&(group, resource)| {
                Some((
                    GroupResource::new(group, resource),
                    storage_of(group, resource)?,
                ))
            })
            .collect();
        let _ = self.stores.set(stores);
    }

    fn cache(&self, gr: &GroupResource) -> Option<&DynStorage> {
        self.stores.get()?.get(gr)
    }

    /// The object as the cache holds it; `Ok(None)` when no cache is set for `gr`,
    /// `Ok(Some(None))` when the cache does not hold it.
    pub async fn get(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Option<Arc<Object>>>, ApiError> {
        let Some(cache) = self.cache(gr) else {
            return Ok(None);
        };
        cache
            .get_shared(&key(gr, namespace, name), &ANY_CACHED)
            .await
            .map(Some)
            .map_err(|e| e.into_api_error(gr, name))
    }

    /// The objects of `gr` in `namespace` (all when `""`) as the cache holds them; `None` when
    /// no cache is set for `gr`.
    pub async fn list(
        &self,
        gr: &GroupResource,
        namespace: &str,
    ) -> Result<Option<Vec<Object>>, ApiError> {
        let Some(cache) = self.cache(gr) else {
            return Ok(None);
        };
        let opts = ListOptions {
            resource_version: Some("0".into()),
            ..Default::default()
        };
        let listed = cache
            .list(&list_prefix(gr, namespace), &opts)
            .await
            .map_err(|e| e.into_api_error(gr, ""))?;
        Ok(Some(
            listed.items.into_iter().map(Arc::unwrap_or_clone).collect(),
        ))
    }

    /// The namespace as the cache holds it; `None` when it does not hold it or no cache is
    /// set.
    pub async fn namespace(&self, namespace: &str) -> Result<Option<Arc<Object>>, ApiError> {
        Ok(self
            .get(&GroupResource::new("", "namespaces"), "", namespace)
            .await?
            .flatten())
    }
}

/// The storage key of an object: `/<prefix>[/<namespace>]/<name>`.
pub fn key(gr: &GroupResource, namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        format!("/{}/{name}", gr.storage_prefix())
    } else {
        format!("/{}/{namespace}/{name}", gr.storage_prefix())
    }
}

/// The storage prefix of the objects of `gr` in `namespace` (all of them when `""`).
pub fn list_prefix(gr: &GroupResource, namespace: &str) -> String {
    if namespace.is_empty() {
        format!("/{}/", gr.storage_prefix())
    } else {
        format!("/{}/{namespace}/", gr.storage_prefix())
    }
}
