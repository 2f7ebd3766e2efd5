//! Storage metrics: a decorator that times every operation but a watch (upstream times none)
//! into `etcd_request_duration_seconds` with upstream's labels (`operation`: create, get, list,
//! update, delete, and `listWithCount` for an object count; `type`: the group-resource of the
//! store the key belongs to, `pods`, `nodes`, `deployments.apps`, as upstream's etcd3 store
//! names its requests, or for a count the stored key prefix, `/registry/pods/`), and the count
//! of each served resource's stored objects every minute (`apiserver_storage_objects`, and the
//! counts APF's LIST work estimate reads).

use crate::controllers::framework::served_resources;
use crate::metrics::Metrics;
use async_trait::async_trait;
use kapi_endpoints::ApiServerHandler;
use kapi_flowcontrol::estimate::group_resource_key;
use kapi_flowcontrol::ObjectCountTracker;
use kapi_machinery::{ListOptions, Object, Preconditions};
use kapi_registry::rest::ApiGroupInfo;
use kapi_registry::store::Store;
use kapi_resources::allocator::{SERVICE_IPS_KEY, SERVICE_NODE_PORTS_KEY};
use kapi_storage::{
    DynStorage, GetOptions, ListResult, Result, Revision, Storage, ValidateDeleteFn, WatchOptions,
    WatchStream,
};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How often object counts are taken (`--etcd-count-metric-poll-period`'s default).
const COUNT_PERIOD: Duration = Duration::from_secs(60);
/// Counts not refreshed for this long are forgotten by APF (resources no longer served).
const COUNT_PRUNE_AGE: Duration = Duration::from_secs(3600);

/// The group-resource each storage key prefix belongs to, learnt from the served stores: the
/// key alone does not say it (nodes live under `/minions/`, Endpoints under
/// `/services/endpoints/`, Deployments under `/deployments/` without their group).
pub struct StorageTypeNames {
    /// (key prefix, group-resource), longest prefix first.
    by_prefix: RwLock<Vec<(String, String)>>,
}

impl Default for StorageTypeNames {
    /// The allocators' ranges, which no served store holds, under upstream's names.
    fn default() -> Self {
        let ranges = [
            (SERVICE_IPS_KEY, "serviceipallocations"),
            (SERVICE_NODE_PORTS_KEY, "servicenodeportallocations"),
        ];
        Self {
            by_prefix: RwLock::new(
                ranges
                    .into_iter()
                    .map(|(key, name)| (key.to_string(), name.to_string()))
                    .collect(),
            ),
        }
    }
}

impl StorageTypeNames {
    /// Adds the prefixes of the stores `groups` serve; a prefix two groups share (core and
    /// events.k8s.io events) keeps the first group's name, as upstream has one store for both.
    pub fn learn(&self, groups: &[ApiGroupInfo]) {
        let mut by_prefix = self.by_prefix.write().unwrap_or_else(|e| e.into_inner());
        for s in served_resources(groups) {
            let Some(store) = s.as_any().and_then(|a| a.downcast_ref::<Store>()) else {
                continue;
            };
            let prefix = store.list_prefix("");
            if by_prefix.iter().all(|(p, _)| *p != prefix) {
                let info = s.info();
                by_prefix.push((prefix, group_resource_key(&info.group, &info.resource)));
            }
        }
        by_prefix.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    }

    /// The `type` label of an operation on `key`. Keys of no learnt store (custom resources,
    /// whose stores come and go with their definitions) are named from their layout:
    /// `/<group>/<plural>/` is `<plural>.<group>`.
    fn name_of(&self, key: &str) -> String {
        let by_prefix = self.by_prefix.read().unwrap_or_else(|e| e.into_inner());
        if let Some((_, name)) = by_prefix
            .iter()
            .find(|(p, _)| key.starts_with(p.as_str()) || key == p.trim_end_matches('/'))
        {
            return name.clone();
        }
        let mut parts = key.trim_start_matches('/').split('/');
        let first = parts.next().unwrap_or_default();
        let second = parts.next().unwrap_or_default();
        match (first, second) {
            (group, plural) if group.contains('.') && !plural.is_empty() => {
                format!("{plural}.{group}")
            }
            _ => first.to_string(),
        }
    }
}

/// Times each call to the wrapped storage.
pub struct MeteredStorage {
    inner: DynStorage,
    metrics: Arc<Metrics>,
    names: Arc<StorageTypeNames>,
    /// What upstream's keys start with (`--etcd-prefix`, `/registry` on the embedded store):
    /// a count is labelled with the whole stored prefix, as upstream's `Count` does.
    key_prefix: String,
}

impl MeteredStorage {
    pub fn wrap(
        inner: DynStorage,
        metrics: Arc<Metrics>,
        names: Arc<StorageTypeNames>,
        key_prefix: &str,
    ) -> DynStorage {
        Arc::new(Self {
            inner,
            metrics,
            names,
            key_prefix: key_prefix.trim_end_matches('/').to_string(),
        })
    }

    fn observe(&self, operation: &str, key: &str, start: Instant) {
        let name = self.names.name_of(key);
        self.record(operation, &name, start);
    }

    fn record(&self, operation: &str, name: &str, start: Instant) {
        self.metrics
            .storage_duration
            .with_label_values(&[operation, name])
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

    fn counts_slowly(&self) -> bool {
        self.inner.counts_slowly()
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

    /// Not timed: upstream's etcd3 store times no watch either.
    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        self.inner.watch(key, opts).await
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
        self.record(
            "listWithCount",
            &format!("{}{prefix}", self.key_prefix),
            start,
        );
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
