//! Storage metrics: a decorator that times every operation into
//! `etcd_request_duration_seconds` (`operation`: create/get/list/update/delete/watch/count;
//! `type`: the resource, taken from the key's first segment), and the count of each served
//! resource's stored objects every minute (`apiserver_storage_objects`, and the counts APF's
//! LIST work estimate reads).

use crate::controllers::framework::served_resources;
use crate::metrics::Metrics;
use async_trait::async_trait;
use kapi_endpoints::ApiServerHandler;
use kapi_flowcontrol::estimate::group_resource_key;
use kapi_flowcontrol::ObjectCountTracker;
use kapi_machinery::{ListOptions, Object, Preconditions};
use kapi_registry::store::Store;
use kapi_storage::{
    DynStorage, GetOptions, ListResult, Result, Revision, Storage, ValidateDeleteFn, WatchOptions,
    WatchStream,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How often object counts are taken (`--etcd-count-metric-poll-period`'s default).
const COUNT_PERIOD: Duration = Duration::from_secs(60);
/// Counts not refreshed for this long are forgotten by APF (resources no longer served).
const COUNT_PRUNE_AGE: Duration = Duration::from_secs(3600);

/// Times each call to the wrapped storage.
pub struct MeteredStorage {
    inner: DynStorage,
    metrics: Arc<Metrics>,
}

impl MeteredStorage {
    pub fn wrap(inner: DynStorage, metrics: Arc<Metrics>) -> DynStorage {
        Arc::new(Self { inner, metrics })
    }

    fn observe(&self, operation: &str, key: &str, start: Instant) {
        let resource = key
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default();
        self.metrics
            .storage_duration
            .with_label_values(&[operation, resource])
            .observe(start.elapsed().as_secs_f64());
    }
}

#[async_trait]
impl Storage for MeteredStorage {
    async fn create(&self, key: &str, obj: Object, ttl: Option<Duration>) -> Result<Object> {
        let start = Instant::now();
        let r = self.inner.create(key, obj, ttl).await;
        self.observe("create", key, start);
        r
    }

    async fn get(&self, key: &str, opts: &GetOptions) -> Result<Option<Object>> {
        let start = Instant::now();
        let r = self.inner.get(key, opts).await;
        self.observe("get", key, start);
        r
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult> {
        let start = Instant::now();
        let r = self.inner.list(prefix, opts).await;
        self.observe("list", prefix, start);
        r
    }

    fn starts_from_cached_copy(&self) -> bool {
        self.inner.starts_from_cached_copy()
    }

    async fn update(
        &self,
        key: &str,
        update: kapi_storage::GuaranteedUpdate<'_, '_>,
    ) -> Result<Object> {
        let start = Instant::now();
        let r = self.inner.update(key, update).await;
        self.observe("update", key, start);
        r
    }

    async fn delete_from(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: &ValidateDeleteFn<'_>,
        cached: Option<Object>,
    ) -> Result<Object> {
        let start = Instant::now();
        let r = self
            .inner
            .delete_from(key, preconditions, validate, cached)
            .await;
        self.observe("delete", key, start);
        r
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        let start = Instant::now();
        let r = self.inner.watch(key, opts).await;
        self.observe("watch", key, start);
        r
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        let start = Instant::now();
        let r = self.inner.count(prefix).await;
        self.observe("count", prefix, start);
        r
    }

    async fn health(&self) -> Result<()> {
        self.inner.health().await
    }

    async fn request_progress(&self) -> Result<()> {
        self.inner.request_progress().await
    }

    async fn prefix_stamp(&self, prefix: &str) -> Result<Option<kapi_storage::PrefixStamp>> {
        self.inner.prefix_stamp(prefix).await
    }
}

/// The task [`observe_object_counts`] runs; it stops when this drops.
pub struct ObjectCounting(JoinHandle<()>);

impl Drop for ObjectCounting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Counts every served resource's stored objects now and then every minute, into
/// `apiserver_storage_objects` (-1 where the count failed) and `counts`, as upstream's registry
/// stores do (`startObservingCount`), whether or not APF is on.
pub fn observe_object_counts(
    handler: ApiServerHandler,
    metrics: Arc<Metrics>,
    counts: Arc<ObjectCountTracker>,
) -> ObjectCounting {
    ObjectCounting(tokio::spawn(async move {
        let mut last_prune = tokio::time::Instant::now();
        loop {
            // A resource served in two groups from one store (events, events.k8s.io) is counted
            // once, under the first group's name, as upstream has one store for both.
            let mut prefixes = std::collections::HashSet::new();
            for s in served_resources(&handler.groups()) {
                let Some(store) = s.as_any().and_then(|a| a.downcast_ref::<Store>()) else {
                    continue;
                };
                let prefix = store.list_prefix("");
                if !prefixes.insert(prefix.clone()) {
                    continue;
                }
                let info = s.info();
                let resource = group_resource_key(&info.group, &info.resource);
                let n = store.storage().count(&prefix).await.unwrap_or(-1);
                metrics
                    .storage_objects
                    .with_label_values(&[&resource])
                    .set(n);
                counts.set(&resource, n);
            }
            if last_prune.elapsed() >= COUNT_PRUNE_AGE {
                counts.prune(COUNT_PRUNE_AGE);
                last_prune = tokio::time::Instant::now();
            }
            tokio::time::sleep(COUNT_PERIOD).await;
        }
    }))
}
