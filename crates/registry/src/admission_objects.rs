//! The registry's implementation of admission's `ObjectStore`: admission plugins read
//! namespaces, limit ranges, quotas and service accounts (and write quota status and
//! auto-provisioned namespaces) from storage, by `/<resource>/<namespace>/<name>`, and from
//! the resources' watch caches ([`WatchCaches`]) where a plugin asks for a cached read.

use crate::watch_caches::{key, list_prefix, WatchCaches};
use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use kapi_admission::objects::ObjectStore;
use kapi_admission::source::{Change, ObjectWatcher};
use kapi_machinery::{ApiError, GroupResource, ListOptions, Object};
use kapi_storage::{DynStorage, Error, WatchOptions};
use std::sync::Arc;

/// Objects read and written through the storage backend.
pub struct StorageObjects {
    storage: DynStorage,
    /// Where cached reads come from (every namespaced write reads its namespace and quotas;
    /// every pod create, its service account, limit ranges and priority classes).
    caches: WatchCaches,
}

impl StorageObjects {
    pub fn new(storage: DynStorage) -> Arc<Self> {
        Self::with_caches(storage, WatchCaches::default())
    }

    /// Serves [`ObjectStore::get_cached`] and [`ObjectStore::list_cached`] from `caches` once
    /// they are set, for the resources they hold.
    pub fn with_caches(storage: DynStorage, caches: WatchCaches) -> Arc<Self> {
        Arc::new(Self { storage, caches })
    }
}

#[async_trait]
impl ObjectStore for StorageObjects {
    async fn get(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ApiError> {
        self.storage
            .get(&key(gr, namespace, name), &crate::reads::LATEST_IF_EXISTS)
            .await
            .map_err(|e| e.into_api_error(gr, name))
    }

    async fn get_cached(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Object>>, ApiError> {
        match self.caches.get(gr, namespace, name).await? {
            Some(cached) => Ok(cached),
            None => Ok(self.get(gr, namespace, name).await?.map(Arc::new)),
        }
    }

    async fn list_cached(
        &self,
        gr: &GroupResource,
        namespace: &str,
    ) -> Result<Vec<Object>, ApiError> {
        match self.caches.list(gr, namespace).await? {
            Some(cached) => Ok(cached),
            None => self.list(gr, namespace).await,
        }
    }

    async fn list(&self, gr: &GroupResource, namespace: &str) -> Result<Vec<Object>, ApiError> {
        Ok(self
            .storage
            .list(&list_prefix(gr, namespace), &ListOptions::default())
            .await
            .map_err(|e| e.into_api_error(gr, ""))?
            .items
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect())
    }

    async fn create(&self, gr: &GroupResource, obj: Object) -> Result<Object, ApiError> {
        let name = obj.name().to_string();
        let k = key(gr, obj.namespace(), &name);
        self.storage
            .create(&k, obj, None)
            .await
            .map_err(|e| e.into_api_error(gr, &name))
    }

    async fn update(&self, gr: &GroupResource, obj: Object) -> Result<Object, ApiError> {
        let name = obj.name().to_string();
        let k = key(gr, obj.namespace(), &name);
        let expected = obj.resource_version().to_string();
        let conflict_key = k.clone();
        let mut try_update = move |current: Option<Object>| {
            let obj = obj.clone();
            let expected = expected.clone();
            let k = conflict_key.clone();
            Box::pin(async move {
                match current {
                    Some(cur) if cur.resource_version() == expected => Ok(obj),
                    _ => Err(Error::Conflict {
                        key: k,
                        message: "the object has been modified".into(),
                    }),
                }
            }) as futures::future::BoxFuture<'_, kapi_storage::Result<Object>>
        };
        self.storage
            .guaranteed_update(&k, None, false, &mut try_update)
            .await
            .map_err(|e| e.into_api_error(gr, &name))
    }
}

/// Configuration objects (webhook configurations, policies, bindings) for the dynamic
/// admission plugins: listed, then watched from the list's revision.
#[async_trait]
impl ObjectWatcher for StorageObjects {
    async fn list_all(&self, gr: &GroupResource) -> Result<(Vec<Object>, i64), ApiError> {
        let res = self
            .storage
            .list(&list_prefix(gr, ""), &ListOptions::default())
            .await
            .map_err(|e| e.into_api_error(gr, ""))?;
        let items = res.items.into_iter().map(Arc::unwrap_or_clone).collect();
        Ok((items, res.revision))
    }

    async fn watch_from(
        &self,
        gr: &GroupResource,
        revision: i64,
    ) -> Result<BoxStream<'static, Result<Change, ApiError>>, ApiError> {
        let opts = WatchOptions {
            from_revision: Some(revision),
            recursive: true,
            ..Default::default()
        };
        let stream = self
            .storage
            .watch(&list_prefix(gr, ""), opts)
            .await
            .map_err(|e| e.into_api_error(gr, ""))?;
        let gr = gr.clone();
        Ok(stream
            .map(move |ev| {
                ev.map(|e| Change {
                    event_type: e.event_type,
                    object: (*e.object).clone(),
                    revision: e.revision,
                })
                .map_err(|e| e.into_api_error(&gr, ""))
            })
            .boxed())
    }
}
