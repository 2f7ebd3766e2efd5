//! The pieces every controller is made of, as client-go's: an informer (list, then watch from
//! the list's resourceVersion, listing again when the watch ends or expires) and a work queue
//! (a key waits at most once; failures come back with a growing delay). A controller is then a
//! reconcile function of a key.

use futures::StreamExt;
use kapi_machinery::{EventType, ListOptions, Object};
use kapi_registry::rest::{Context, Storage};
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

const RELIST_DELAY: Duration = Duration::from_millis(500);
/// How often the namespace and resource quota controllers list again although their watch is
/// well: upstream's `--namespace-sync-period` and `--resource-quota-sync-period` (both 5m).
pub const CONTROLLER_SYNC_PERIOD: Duration = Duration::from_secs(5 * 60);

/// What an informer tells its handler.
#[derive(Clone, Debug)]
pub enum Event {
    /// A list starts: what it does not upsert before `Synced` is gone.
    Relisting,
    /// Added, changed, or seen again by a list.
    Upsert(Arc<Object>),
    Deleted(Arc<Object>),
    /// A list finished: everything not upserted since the previous `Synced` is gone.
    Synced,
}

/// How many objects a page of an informer's list holds (client-go's pager): a list of every
/// object of a resource never holds more than this many decoded at once.
const LIST_PAGE: i64 = 500;

/// Lists and watches `storage` (all namespaces) for ever, handing each event to `handle`.
/// The list is read by pages at one revision; `Relisting` comes before the first page's
/// objects, `Synced` after the last page's. As a reflector, it lists again when its watch
/// fails or expires; with `sync_period`, also that often while the watch is well. A watch
/// misses no event, so a controller needs that only for upstream's periodic full sync; an
/// informer without it costs nothing while nothing changes (a list of 100,000 objects every
/// half minute cost an idle server 6% of a core).
pub async fn inform<F>(storage: Arc<dyn Storage>, sync_period: Option<Duration>, mut handle: F)
where
    F: FnMut(Event) + Send,
{
    let name = storage.info().path_name();
    'relist: loop {
        let (Some(lister), Some(watcher)) = (storage.as_lister(), storage.as_watcher()) else {
            return;
        };
        let mut page_opts = ListOptions {
            limit: Some(LIST_PAGE),
            ..Default::default()
        };
        let mut first = true;
        let resource_version = loop {
            let page = match lister.list(&Context::default(), &page_opts).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(resource = %name, error = %e.message, "informer: list failed");
                    tokio::time::sleep(RELIST_DELAY).await;
                    continue 'relist;
                }
            };
            if first {
                handle(Event::Relisting);
                first = false;
            }
            for item in page.items {
                handle(Event::Upsert(Arc::new(item)));
            }
            match page.continue_token.filter(|t| !t.is_empty()) {
                Some(token) => page_opts.continue_token = Some(token),
                None => break page.resource_version,
            }
        };
        handle(Event::Synced);
        let opts = ListOptions {
            resource_version: Some(resource_version),
            watch: true,
            ..Default::default()
        };
        let mut stream = match watcher.watch(&Context::default(), &opts).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(resource = %name, error = %e.message, "informer: watch failed");
                tokio::time::sleep(RELIST_DELAY).await;
                continue 'relist;
            }
        };
        let sync = async {
            match sync_period {
                Some(period) => tokio::time::sleep(period).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sync);
        loop {
            tokio::select! {
                _ = &mut sync => break,
                ev = stream.next() => match ev {
                    Some(Ok(ev)) => match ev.event_type {
                        EventType::Added | EventType::Modified => handle(Event::Upsert(ev.object)),
                        EventType::Deleted => handle(Event::Deleted(ev.object)),
                        _ => {}
                    },
                    // Expired (410) or ended: list again, as a reflector does.
                    Some(Err(_)) | None => break,
                },
            }
        }
    }
}

/// Per-controller metrics, registered once in the server's registry.
#[derive(Clone)]
pub struct ControllerMetrics {
    depth: IntGaugeVec,
    duration: HistogramVec,
    errors: IntCounterVec,
}

impl ControllerMetrics {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let depth = IntGaugeVec::new(
            Opts::new("workqueue_depth", "Current depth of workqueue"),
            &["name"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "kapi_controller_reconcile_duration_seconds",
                "How long one reconcile of a controller took",
            ),
            &["name"],
        )?;
        let errors = IntCounterVec::new(
            Opts::new(
                "kapi_controller_reconcile_errors_total",
                "Reconciles of a controller that failed and were retried",
            ),
            &["name"],
        )?;
        registry.register(Box::new(depth.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        Ok(Self {
            depth,
            duration,
            errors,
        })
    }
}

struct QueueState<K> {
    /// Keys waiting to be taken.
    pending: Vec<K>,
    queued: HashSet<K>,
    failures: HashMap<K, u32>,
}

/// A deduplicating work queue with per-key exponential retry delays.
pub struct WorkQueue<K> {
    name: &'static str,
    state: Mutex<QueueState<K>>,
    notify: Notify,
    metrics: Option<ControllerMetrics>,
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<K> {
    pub fn new(name: &'static str, metrics: Option<ControllerMetrics>) -> Arc<Self> {
        Arc::new(Self {
            name,
            state: Mutex::new(QueueState {
                pending: Vec::new(),
                queued: HashSet::new(),
                failures: HashMap::new(),
            }),
            notify: Notify::new(),
            metrics,
        })
    }

    fn lock(&self) -> MutexGuard<'_, QueueState<K>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` unless it already waits.
    pub fn add(&self, key: K) {
        let mut s = self.lock();
        if s.queued.insert(key.clone()) {
            s.pending.push(key);
            if let Some(m) = &self.metrics {
                m.depth
                    .with_label_values(&[self.name])
                    .set(s.pending.len() as i64);
            }
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Queues `key` after `delay`.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        let q = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            q.add(key);
        });
    }

    /// Queues `key` again after a delay that doubles with each failure (5 ms up to `max`).
    pub fn retry(self: &Arc<Self>, key: K, max: Duration) {
        let n = {
            let mut s = self.lock();
            let n = s.failures.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let delay = Duration::from_millis(5u64.saturating_mul(1 << n.min(16))).min(max);
        self.add_after(key, delay);
    }

    /// Clears `key`'s failure count.
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    /// Waits for the next key.
    pub async fn next(&self) -> K {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.lock();
                if !s.pending.is_empty() {
                    let key = s.pending.remove(0);
                    s.queued.remove(&key);
                    if let Some(m) = &self.metrics {
                        m.depth
                            .with_label_values(&[self.name])
                            .set(s.pending.len() as i64);
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    /// Takes keys for ever, reconciling each with `reconcile`; an error retries the key.
    pub async fn run<F, Fut>(self: Arc<Self>, max_delay: Duration, reconcile: F)
    where
        F: Fn(K) -> Fut,
        Fut: std::future::Future<Output = Result<(), String>>,
        K: std::fmt::Display,
    {
        loop {
            let key = self.next().await;
            let began = Instant::now();
            let result = reconcile(key.clone()).await;
            if let Some(m) = &self.metrics {
                m.duration
                    .with_label_values(&[self.name])
                    .observe(began.elapsed().as_secs_f64());
            }
            match result {
                Ok(()) => self.forget(&key),
                Err(e) => {
                    if let Some(m) = &self.metrics {
                        m.errors.with_label_values(&[self.name]).inc();
                    }
                    tracing::info!(controller = self.name, key = %key, error = %e, "retrying");
                    self.retry(key, max_delay);
                }
            }
        }
    }
}

/// The served storages of the current router snapshot: one per (group, resource), from the
/// group's preferred version when it serves the resource, main resources only.
pub fn served_resources(groups: &[kapi_registry::rest::ApiGroupInfo]) -> Vec<Arc<dyn Storage>> {
    let mut out: Vec<Arc<dyn Storage>> = Vec::new();
    let mut seen = HashSet::new();
    for g in groups {
        let mut versions: Vec<_> = g.versions.iter().collect();
        // The preferred version first, so it wins for the resources it serves.
        versions.sort_by_key(|v| v.version != g.preferred_version);
        for v in versions {
            for s in &v.storages {
                let info = s.info();
                if info.subresource.is_empty()
                    && seen.insert((info.group.clone(), info.resource.clone()))
                {
                    out.push(s.clone());
                }
            }
        }
    }
    out
}

/// The main storage serving `api_version` / `kind`, if any.
pub fn storage_for_kind(
    groups: &[kapi_registry::rest::ApiGroupInfo],
    api_version: &str,
    kind: &str,
) -> Option<Arc<dyn Storage>> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    groups
        .iter()
        .filter(|g| g.group == group)
        .flat_map(|g| g.versions.iter())
        .filter(|v| v.version == version)
        .flat_map(|v| v.storages.iter())
        .find(|s| s.info().kind == kind && s.info().subresource.is_empty())
        .cloned()
}

/// `group/version/resource` of a storage: the name informers and graphs key resources by.
pub fn resource_key(s: &Arc<dyn Storage>) -> String {
    let info = s.info();
    format!("{}/{}/{}", info.group, info.version, info.resource)
}

/// A controller watching a set of resources that changes with the served groups (custom
/// resources come and go) and, for some, with the controller's own state (the resources some
/// quota counts). [`keep_informers`] runs one informer per wanted resource.
pub trait InformerSet: Send + Sync + 'static {
    /// Whether `storage` (a served main resource) is to be watched now.
    fn wants(&self, storage: &Arc<dyn Storage>) -> bool;
    /// Changes whenever `wants` may answer differently for the same served groups.
    fn generation(&self) -> u64 {
        0
    }
    /// How often its informers list again while their watch is well (see [`inform`]).
    fn sync_period(&self) -> Option<Duration> {
        None
    }
    /// An informer for `key` starts (before its first event).
    fn started(&self, _key: &str) {}
    /// The informer for `key` stopped: the resource is no longer served or wanted, so what was
    /// learnt from it is stale.
    fn stopped(&self, _key: &str) {}
    fn observe(&self, storage: &Arc<dyn Storage>, key: &str, ev: Event);
}

/// Informer tasks, aborted when dropped.
#[derive(Default)]
struct Informers(HashMap<String, tokio::task::JoinHandle<()>>);

impl Drop for Informers {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// How often the served resources are compared with the watched ones.
const DISCOVERY_PERIOD: Duration = Duration::from_millis(500);

/// Keeps one informer per resource `set` wants among `handler`'s served ones, starting and
/// stopping them as groups (or the set's generation) change.
pub async fn keep_informers<T: InformerSet>(
    handler: kapi_endpoints::ApiServerHandler,
    set: Arc<T>,
) {
    // Dropped with this future (the controller stopping), it stops its informers too.
    let mut running = Informers::default();
    let running = &mut running.0;
    let mut last: Option<(Arc<Vec<kapi_registry::rest::ApiGroupInfo>>, u64)> = None;
    loop {
        let groups = handler.groups();
        let generation = set.generation();
        if last
            .as_ref()
            .is_none_or(|(l, g)| !Arc::ptr_eq(l, &groups) || *g != generation)
        {
            let wanted: HashMap<String, Arc<dyn Storage>> = served_resources(&groups)
                .into_iter()
                .filter(|s| set.wants(s))
                .map(|s| (resource_key(&s), s))
                .collect();
            let mut stopped = Vec::new();
            running.retain(|k, task| {
                let keep = wanted.contains_key(k);
                if !keep {
                    task.abort();
                    stopped.push(k.clone());
                }
                keep
            });
            for key in stopped {
                tracing::debug!(resource = %key, "informer stopped");
                set.stopped(&key);
            }
            for (key, storage) in wanted {
                if running.contains_key(&key) {
                    continue;
                }
                set.started(&key);
                let (s, k, observer) = (storage.clone(), key.clone(), set.clone());
                let period = set.sync_period();
                let task = tokio::spawn(inform(storage, period, move |ev| {
                    observer.observe(&s, &k, ev)
                }));
                running.insert(key, task);
            }
            last = Some((groups, generation));
        }
        tokio::time::sleep(DISCOVERY_PERIOD).await;
    }
}
