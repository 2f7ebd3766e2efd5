//! How plugins read (and, for namespace auto-provisioning and quota usage, write) other
//! objects. The registry implements [`ObjectStore`] over storage, so admission never depends
//! on the registry.

use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use std::sync::Arc;

/// Objects by resource, namespace (`""` for cluster-scoped) and name.
#[async_trait]
pub trait ObjectStore: Send + Sync {
    /// The object, or `None` if it does not exist.
    async fn get(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ApiError>;

    /// The object as a watch cache holds it, which may trail storage by the last changes
    /// (upstream's informer listers), shared with the cache; without a cache,
    /// [`ObjectStore::get`]. Callers read storage again whenever a cached answer would refuse
    /// or could be out of date in a way that matters (upstream's live lookup).
    async fn get_cached(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Object>>, ApiError> {
        Ok(self.get(gr, namespace, name).await?.map(Arc::new))
    }

    /// Every object of `gr` in `namespace` (all namespaces when `""` for a namespaced one).
    async fn list(&self, gr: &GroupResource, namespace: &str) -> Result<Vec<Object>, ApiError>;

    /// [`ObjectStore::list`] as a watch cache holds it (upstream's informer listers), which
    /// may trail storage; without a cache, [`ObjectStore::list`].
    async fn list_cached(
        &self,
        gr: &GroupResource,
        namespace: &str,
    ) -> Result<Vec<Object>, ApiError> {
        self.list(gr, namespace).await
    }

    /// Stores a new object as given (no strategy runs); 409 AlreadyExists if present.
    async fn create(&self, gr: &GroupResource, obj: Object) -> Result<Object, ApiError>;

    /// Replaces an object if its `metadata.resourceVersion` is still current (409 Conflict
    /// otherwise).
    async fn update(&self, gr: &GroupResource, obj: Object) -> Result<Object, ApiError>;
}

/// An in-memory [`ObjectStore`] for unit tests of plugins.
#[cfg(test)]
pub(crate) mod memory {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct MemoryObjects {
        pub objects: Mutex<BTreeMap<(String, String, String), Object>>,
    }

    fn key(gr: &GroupResource, ns: &str, name: &str) -> (String, String, String) {
        (gr.resource.clone(), ns.to_string(), name.to_string())
    }

    impl MemoryObjects {
        pub fn put(&self, resource: &str, obj: serde_json::Value) {
            let obj = Object::from_value(obj).unwrap();
            let k = (
                resource.to_string(),
                obj.namespace().to_string(),
                obj.name().to_string(),
            );
            self.objects.lock().unwrap().insert(k, obj);
        }
    }

    #[async_trait]
    impl ObjectStore for MemoryObjects {
        async fn get(
            &self,
            gr: &GroupResource,
            ns: &str,
            name: &str,
        ) -> Result<Option<Object>, ApiError> {
            Ok(self
                .objects
                .lock()
                .unwrap()
                .get(&key(gr, ns, name))
                .cloned())
        }
        async fn list(&self, gr: &GroupResource, ns: &str) -> Result<Vec<Object>, ApiError> {
            Ok(self
                .objects
                .lock()
                .unwrap()
                .iter()
                .filter(|((r, n, _), _)| *r == gr.resource && (ns.is_empty() || n == ns))
                .map(|(_, o)| o.clone())
                .collect())
        }
        async fn create(&self, gr: &GroupResource, obj: Object) -> Result<Object, ApiError> {
            let k = key(gr, obj.namespace(), obj.name());
            let mut m = self.objects.lock().unwrap();
            if m.contains_key(&k) {
                return Err(ApiError::already_exists(gr, obj.name()));
            }
            m.insert(k, obj.clone());
            Ok(obj)
        }
        async fn update(&self, gr: &GroupResource, obj: Object) -> Result<Object, ApiError> {
            let k = key(gr, obj.namespace(), obj.name());
            self.objects.lock().unwrap().insert(k, obj.clone());
            Ok(obj)
        }
    }
}
