//! The watch cache: one per resource prefix, fed by a single backend watch, serving LIST and
//! WATCH from memory (upstream's `cacher`). It implements [`Storage`] itself, so the registry
//! cannot tell it from the backend; writes go straight to the backend.
//!
//! - LIST with `resourceVersion="0"` is served from memory as is (and, as upstream, ignores
//!   `limit`); `NotOlderThan` waits until the cache has reached the revision; a consistent LIST
//!   (no resourceVersion) first learns the backend's current revision and waits for the cache
//!   to reach it (upstream's consistent reads from cache). `limit` pages from the sorted store
//!   by seeking to the start key, so a page costs what it returns. A page at an exact revision
//!   (`continue`, `Exact`) is served from memory while nothing under the prefix has changed
//!   since that revision; older states go to the backend, which reads them at that revision
//!   or answers 410.
//! - WATCH is served from a bounded window of recent changes; older revisions are 410 Gone.
//!   Each watcher has a bounded queue: one that cannot keep up is closed, never waited for.
//! - The store keeps each object as its list-item JSON and labels, not decoded (see `item`): a
//!   list is written from those bytes; a GET, a list of objects or a selector on another
//!   field decodes them. The window of recent changes keeps the same items (shared with the
//!   store while current): a change is fanned out with the backend's decoded object, shared by
//!   every watcher as an `Arc`, and a watch from an earlier revision decodes what it replays.
//! - The first load reads the backend by pages and encodes each object as it comes, so no
//!   whole decoded list is held.
//! - A failed backend watch (e.g. 410 after compaction) relists and closes every watcher.
//! - A watcher that asked for bookmarks gets a BOOKMARK at the cache's revision about every
//!   minute and 2s before its timeout, as upstream's `nextBookmarkTime` schedules them.

mod decoded;
mod item;
mod planted;
mod state;
mod watchers;

use crate::continuation;
use crate::error::{Error, Result};
use crate::events::prefix_end;
use crate::interface::{
    DynStorage, EncodedItem, GetOptions, ListResult, Revision, Storage, ValidateDeleteFn,
    WatchOptions, WatchStream,
};
use crate::list::ReadAt;
use async_trait::async_trait;
use futures::StreamExt;
use item::{Cached, ItemEncoder, Kept};
use kapi_machinery::options::parse_resource_version;
use kapi_machinery::{ListOptions, Object, Preconditions};
use state::State;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use watchers::{Slot, Watchers};

/// Settings of a watch cache.
#[derive(Clone, Debug)]
pub struct CacherConfig {
    /// How many recent changes are kept for watches from a past revision.
    pub window: usize,
    /// How many events a watcher may have queued before it is closed as too slow.
    pub watcher_buffer: usize,
    /// How often watchers that asked for bookmarks get one (upstream: a minute); each also
    /// gets one 2s before its `timeout` ends.
    pub bookmark_interval: Duration,
    /// How long a read waits for the cache to reach a revision (upstream: 3s).
    pub freshness_timeout: Duration,
    /// The resource's field labels (selectable fields): each item keeps their values, as
    /// upstream's `storeElement` keeps its `Fields`, so a field selector on them decodes no
    /// object.
    pub fields: &'static [&'static str],
    /// The field whose exact-match selectors index watchers (upstream's `TriggerFunc`:
    /// `spec.nodeName` for pods, `metadata.name` for nodes), so that a change is matched only
    /// against the watchers that may see it. It must be `metadata.name`, `metadata.namespace`
    /// or one of `fields`; another is ignored.
    pub trigger: Option<&'static str>,
}

impl Default for CacherConfig {
    fn default() -> Self {
        Self {
            window: 4096,
            watcher_buffer: 1000,
            bookmark_interval: Duration::from_secs(60),
            freshness_timeout: Duration::from_secs(3),
            fields: &[],
            trigger: None,
        }
    }
}

/// How often the bookmark task looks for watchers whose bookmark is due (upstream: about 1s).
const BOOKMARK_TICK: Duration = Duration::from_secs(1);

/// How long a read waits for a cache that cannot learn its progress from the backend.
const NO_PROGRESS_WAIT: Duration = Duration::from_millis(100);

struct Shared {
    backend: DynStorage,
    prefix: String,
    config: CacherConfig,
    state: Mutex<State>,
    /// The cache's revision, published after each applied change (0 until ready).
    revision: watch::Sender<Revision>,
    /// The last proof of each range that a consistent read needed ([`Shared::prove_current`]),
    /// behind a lock per range, so that the reads that need the same range proven at once
    /// make one backend read, and later ones none while nothing has reached the cache.
    proofs: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Proven>>>>>,
    /// Objects decoded for [`Storage::get_shared`].
    decoded: decoded::Decoded,
}

/// A range proven to hold no change between the cache's revision and a later one.
#[derive(Clone, Copy, Debug)]
struct Proven {
    /// The cache's revision when the range was proven (for the whole prefix, the revision the
    /// proof moved it to).
    cached_at: Revision,
    /// The backend's revision the range was read at: nothing under it changed in
    /// `(cached_at, at]`.
    at: Revision,
}

/// How many ranges' proofs are remembered; past it the memory is cleared (a proof is then
/// made again, never skipped wrongly).
const PROOFS_KEPT: usize = 256;

/// The watch cache for the keys under one prefix.
pub struct Cacher {
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Cacher {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Cacher {
    /// A cache of `prefix` (e.g. `/configmaps/`) over `backend`. Must be called inside a
    /// tokio runtime: it starts the list-and-watch loop.
    pub fn new(backend: DynStorage, prefix: &str) -> Arc<Cacher> {
        Self::with_config(backend, prefix, CacherConfig::default())
    }

    /// [`Cacher::new`] with explicit settings.
    pub fn with_config(backend: DynStorage, prefix: &str, config: CacherConfig) -> Arc<Cacher> {
        planted::announce();
        let (revision, _) = watch::channel(0);
        let items = ItemEncoder::new(config.fields);
        let trigger = config.trigger.filter(|t| {
            matches!(*t, "metadata.name" | "metadata.namespace") || config.fields.contains(t)
        });
        let shared = Arc::new(Shared {
            backend,
            prefix: prefix.to_string(),
            config,
            state: Mutex::new(State {
                prefix_len: prefix.len(),
                items,
                watchers: Watchers::new(trigger),
                ..State::default()
            }),
            revision,
            proofs: Mutex::default(),
            decoded: decoded::Decoded::default(),
        });
        let tasks = vec![
            tokio::spawn(reflect(shared.clone())),
            tokio::spawn(bookmarks(shared.clone())),
        ];
        Arc::new(Cacher { shared, tasks })
    }

    /// The revision the cache has caught up with (0 before the first list).
    pub fn revision(&self) -> Revision {
        *self.shared.revision.borrow()
    }

    /// How many watchers are registered.
    pub fn watcher_count(&self) -> usize {
        self.shared.lock().watchers.len()
    }
}

/// Where a read of one key is answered.
enum OneKey {
    /// By the backend: no revision asked for, the cache still loading, or not there yet.
    Backend,
    /// From the cache's item.
    Cached(EncodedItem),
    /// The cache holds no such key (and the read ignores not-found).
    Missing,
}

impl Shared {
    /// The copy an update or a delete of `key` hands the backend: the caller's, else the
    /// cache's own, so the backend may start from it instead of reading the key (upstream's
    /// cacher hands its object to GuaranteedUpdate and Delete the same way); decoded only for
    /// a backend that does.
    fn copy_for_backend(&self, key: &str, given: Option<Object>) -> Option<Object> {
        match given {
            None if self.backend.starts_from_cached_copy() => self.cached_object(key),
            given => given,
        }
    }

    /// The object of `key` as the cache holds it, decoded (outside the lock), if it holds one.
    fn cached_object(&self, key: &str) -> Option<Object> {
        let item = {
            let st = self.lock();
            if !st.ready {
                return None;
            }
            st.store.get(key)?.clone()
        };
        item.decode().ok()
    }

    /// Decides where a read of `key` is answered (see [`OneKey`]).
    async fn read_one(&self, key: &str, opts: &GetOptions) -> Result<OneKey> {
        let Some(min) = opts.resource_version else {
            return Ok(OneKey::Backend);
        };
        // A cache still loading hands reads of one key to the backend (upstream, KEP 4568).
        if !self.is_ready() {
            return Ok(OneKey::Backend);
        }
        if !self.wait_for(min).await {
            // Not there yet (or not loaded): the backend answers, and says "too large" itself
            // if the revision really is in the future.
            return Ok(OneKey::Backend);
        }
        let found = self.lock().store.get(key).map(|c| c.encoded());
        match found {
            Some(c) => Ok(OneKey::Cached(c)),
            None if opts.ignore_not_found => Ok(OneKey::Missing),
            None => Err(Error::NotFound { key: key.into() }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than stopping all reads; keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key an object of this cache lives at (the registry's layout).
    fn key_of(&self, obj: &Object) -> String {
        match obj.namespace() {
            "" => format!("{}{}", self.prefix, obj.name()),
            ns => format!("{}{ns}/{}", self.prefix, obj.name()),
        }
    }

    /// Whether the first list has been loaded (its revision is published then; read without
    /// taking the cache's lock).
    fn is_ready(&self) -> bool {
        *self.revision.borrow() > 0
    }

    /// Waits until the first list has been loaded (at once if it has); false after the
    /// freshness timeout.
    async fn wait_ready(&self) -> bool {
        let mut rx = self.revision.subscribe();
        let loaded =
            tokio::time::timeout(self.config.freshness_timeout, rx.wait_for(|r| *r > 0)).await;
        matches!(loaded, Ok(Ok(_)))
    }

    /// Waits until the cache has reached `revision`; false after the freshness timeout.
    async fn wait_for(&self, revision: Revision) -> bool {
        let mut rx = self.revision.subscribe();
        let behind = *rx.borrow() < revision;
        let mut timeout = self.config.freshness_timeout;
        // A quiet prefix sees no events: ask the backend watch to report its progress. If it
        // cannot, only changes in flight can still arrive, so do not wait long: the caller then
        // asks the backend, which is never behind.
        if behind && self.backend.request_progress().await.is_err() {
            timeout = timeout.min(NO_PROGRESS_WAIT);
        }
        let reached = tokio::time::timeout(timeout, rx.wait_for(|r| *r >= revision.max(1))).await;
        matches!(reached, Ok(Ok(_)))
    }

    /// Waits until the cache's keys under `prefix` are the backend's current state; returns a
    /// revision they are that state at (the backend's current one or later), or `None` when
    /// that could not be established in time (the caller asks the backend).
    async fn wait_fresh(&self, prefix: &str) -> Result<Option<Revision>> {
        // A progress request made while the cache is still loading reaches no watch of its
        // own: wait for the load first, then ask.
        if !self.wait_ready().await {
            return Ok(None);
        }
        let current = self.backend.current_revision().await?;
        if *self.revision.borrow() >= current {
            return Ok(Some(current));
        }
        if self.backend.request_progress().await.is_ok() {
            return Ok(self.wait_for(current).await.then_some(current));
        }
        // Without trustworthy progress reports (etcd before 3.4.31/3.5.13) only a change
        // after `current` shows the cache has every change up to it (changes arrive in
        // revision order). A busy prefix makes one within moments: wait for it (briefly)
        // rather than prove a quiet prefix current, which costs etcd a read of every key
        // under it, values included, however large the range.
        if self.busy() && self.wait_for(current).await {
            return Ok(Some(current));
        }
        self.prove_current(prefix, current).await
    }

    /// Whether a change reached the cache within the last [`NO_PROGRESS_WAIT`].
    fn busy(&self) -> bool {
        self.lock()
            .changed_at
            .is_some_and(|at| at.elapsed() < NO_PROGRESS_WAIT)
    }

    /// Proves the cache's keys under `prefix` are the backend's state at `wanted` or later,
    /// from one read of the range's newest mod revision `M` and key count at the current
    /// revision `R`: if `M` is at most the cache's revision `C` and the counts are equal, every
    /// key at `R` existed unchanged at `C` (a re-created key has a newer mod revision) and the
    /// two sets are equal, so nothing under the prefix changed in `(C, R]`. For the cache's
    /// own prefix the cache then is at `R`, as a progress report would have said. Changes
    /// still in flight are waited for once; `None` when the proof does not hold.
    ///
    /// A proof is remembered per range: while the cache's revision has not moved (nothing
    /// reached it) and the proof was read at `wanted` or later, it holds for this read too,
    /// and reads that need one range proven at once wait for the one read in flight.
    async fn prove_current(&self, prefix: &str, wanted: Revision) -> Result<Option<Revision>> {
        let range = {
            let st = self.lock();
            if !st.ready {
                return Ok(None);
            }
            // A range holding most of the cache costs etcd about as much to prove as the
            // cache's whole prefix (etcd reads every key of the range), and proving that
            // moves the cache itself: later pages of a paged list, and watches from the
            // list's revision, then come from memory too.
            if st.count_under(prefix, &self.prefix).saturating_mul(2) > st.store.len() {
                self.prefix.clone()
            } else {
                prefix.to_string()
            }
        };
        let slot = self.proof_slot(&range);
        let mut last = slot.lock().await;
        if let Some(proven) = *last {
            // The store's own revision (the published one trails it): equal, no change has
            // reached the store since the proof.
            if proven.at >= wanted && proven.cached_at == self.lock().revision {
                return Ok(Some(proven.at.max(proven.cached_at)));
            }
        }
        for attempt in 0..2 {
            let (cached_at, held) = {
                let st = self.lock();
                if !st.ready {
                    return Ok(None);
                }
                (st.revision, st.count_under(&range, &self.prefix))
            };
            let Some(stamp) = self.backend.prefix_stamp(&range).await? else {
                return Ok(None);
            };
            if stamp.newest <= cached_at && usize::try_from(stamp.count) == Ok(held) {
                let cached_at = if range == self.prefix {
                    self.advance(stamp.revision);
                    stamp.revision.max(cached_at)
                } else {
                    cached_at
                };
                *last = Some(Proven {
                    cached_at,
                    at: stamp.revision,
                });
                return Ok(Some(stamp.revision.max(cached_at)));
            }
            // A change the watch has not delivered yet (a delete shows only in the count):
            // wait for the cache to move past it, then look again; or, when the prefix went on
            // changing past the read's revision meanwhile, the cache has everything up to it.
            let next = stamp.newest.max(cached_at.saturating_add(1));
            if attempt > 0 || !self.wait_for(next).await {
                return Ok(None);
            }
            if *self.revision.borrow() >= stamp.revision {
                return Ok(Some(stamp.revision));
            }
        }
        Ok(None)
    }

    /// The lock and last proof of `range`.
    fn proof_slot(&self, range: &str) -> Arc<tokio::sync::Mutex<Option<Proven>>> {
        let mut proofs = self.proofs.lock().unwrap_or_else(|p| p.into_inner());
        if proofs.len() >= PROOFS_KEPT && !proofs.contains_key(range) {
            proofs.clear();
        }
        proofs.entry(range.to_string()).or_default().clone()
    }

    /// Moves the cache's revision up to `revision`, proven to hold no change of its prefix
    /// since its own (see [`Shared::prove_current`]). Monotonic: a relist since the proof
    /// loaded a state at or after the proof's start, which equals the state at `revision`
    /// or is newer.
    fn advance(&self, revision: Revision) {
        let mut st = self.lock();
        if st.ready && revision > st.revision {
            st.revision = revision;
            self.revision.send_replace(revision);
        }
    }

    /// Waits until the cache has reached `revision`, proving it current when the backend
    /// cannot report progress; false when it did not in time.
    async fn reach(&self, revision: Revision) -> Result<bool> {
        if *self.revision.borrow() >= revision.max(1) {
            return Ok(true);
        }
        if self.backend.request_progress().await.is_err()
            && self
                .prove_current(&self.prefix, revision)
                .await?
                .is_some_and(|r| r >= revision)
        {
            return Ok(true);
        }
        Ok(self.wait_for(revision).await)
    }
}

/// The list-then-watch loop; relists whenever the watch fails.
async fn reflect(shared: Arc<Shared>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match reflect_once(&shared).await {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(e) => {
                tracing::warn!(prefix = %shared.prefix, error = %e, "watch cache: relisting");
                tokio::time::sleep(backoff).await;
                backoff = backoff.saturating_mul(2).min(Duration::from_secs(5));
            }
        }
    }
}

/// How many objects a page of the load reads: upstream's cacher's `storageWatchListPageSize`.
/// The decoded page is the most the load holds at once, and each page costs etcd a walk of
/// the rest of the range (it counts the keys after the limit), so smaller pages make the load
/// quadratic: with 1,000 per page, loading 1,000,000 ConfigMaps from etcd took 524 s.
const LOAD_PAGE: i64 = 10_000;

/// Reads every object under the cache's prefix by pages at one revision, each encoded as it
/// comes and its decoded form dropped.
async fn load(shared: &Shared) -> Result<(BTreeMap<String, Arc<Cached>>, Revision)> {
    let mut items = BTreeMap::new();
    let mut encoder = ItemEncoder::new(shared.config.fields);
    let mut opts = ListOptions {
        limit: Some(LOAD_PAGE),
        without_remaining_count: true,
        ..Default::default()
    };
    loop {
        let page = shared.backend.list(&shared.prefix, &opts).await?;
        for o in page.items {
            items.insert(shared.key_of(&o), Arc::new(encoder.encode(&o)));
        }
        match page.continue_token {
            Some(token) => opts.continue_token = Some(token),
            None => return Ok((items, page.revision)),
        }
    }
}

async fn reflect_once(shared: &Arc<Shared>) -> Result<()> {
    let (items, revision) = load(shared).await?;
    let opts = WatchOptions {
        from_revision: Some(revision),
        recursive: true,
        bookmarks: true,
        ..Default::default()
    };
    let mut events = shared.backend.watch(&shared.prefix, opts).await?;
    {
        let mut st = shared.lock();
        st.replace(items, revision);
        shared.revision.send_replace(revision);
    }
    while let Some(item) = events.next().await {
        let event = item?;
        let mut st = shared.lock();
        let key = shared.key_of(&event.object);
        st.apply(key, &event, shared.config.window);
        // Published under the lock, so nobody sees an event before the revision that has it.
        shared.revision.send_replace(st.revision);
    }
    Err(Error::Unavailable("the backend watch ended".into()))
}

/// Sends each watcher that asked for bookmarks its due ones: periodic, and shortly before its
/// deadline (upstream's cacher keeps watchers in buckets by due time and checks every second).
async fn bookmarks(shared: Arc<Shared>) {
    let frequency = shared.config.bookmark_interval;
    let mut ticker = tokio::time::interval(BOOKMARK_TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let now = ticker.tick().await;
        shared.lock().send_due_bookmarks(now, frequency);
    }
}

/// Which state of the cache a page is read from.
#[derive(Clone, Copy)]
enum PageAt {
    /// Its current state.
    Latest,
    /// Exactly this revision.
    Exact(Revision),
    /// A revision at which the listed prefix is proven to be the backend's current state
    /// ([`Shared::wait_fresh`]); the cache's own revision when that is later.
    Fresh(Revision),
}

/// Where a list is served from.
enum ListFrom {
    /// The cache's current state, once it is fresh enough: after catching up with the
    /// backend (`consistent`) or reaching `min`. `limit` pages it.
    Latest {
        min: Option<Revision>,
        consistent: bool,
        limit: Option<usize>,
    },
    /// Exactly `revision` from `start` (a continued list, `Exact`, legacy rv with `limit`):
    /// from memory when nothing under the prefix changed since, else from the backend.
    At {
        revision: Revision,
        start: String,
        limit: Option<usize>,
    },
}

fn list_from(prefix: &str, opts: &ListOptions) -> Result<ListFrom> {
    // The shared planner validates the token and resourceVersion exactly as the backends do.
    let plan = crate::list::plan(prefix, opts)?;
    let rv = parse_resource_version(opts.resource_version.as_deref()).map_err(Error::from)?;
    Ok(match plan.read {
        ReadAt::Exact(revision) => ListFrom::At {
            revision,
            start: plan.start,
            limit: plan.limit,
        },
        // "0": any state; as upstream, the cache ignores `limit`.
        ReadAt::Latest { .. } if rv == Some(0) => ListFrom::Latest {
            min: None,
            consistent: false,
            limit: None,
        },
        ReadAt::Latest { min } => ListFrom::Latest {
            min,
            consistent: min.is_none(),
            limit: plan.limit,
        },
    })
}

impl Cacher {
    /// A page of the cache at its current revision (or as `at` says), or `None` when it does
    /// not hold that state.
    fn page(
        &self,
        prefix: &str,
        start: &str,
        at: PageAt,
        limit: Option<usize>,
        opts: &ListOptions,
    ) -> Result<Option<ListResult>> {
        let st = self.shared.lock();
        let revision = match at {
            // Proven for this prefix only: the store's keys under it are still that state
            // unless the cache has moved past it since, and then its own state is newer.
            PageAt::Fresh(r) if r > st.revision && st.ready => r,
            PageAt::Exact(r) if st.holds(r) => r,
            PageAt::Latest | PageAt::Fresh(_) if st.holds(st.revision) => st.revision,
            _ => return Ok(None),
        };
        let end = prefix_end(prefix);
        let page = st.page(start, &end, limit, &opts.predicate);
        let continue_token = match page.last_key.filter(|_| page.more) {
            Some(k) => Some(continuation::encode(
                &format!("{k}\u{0}"),
                prefix,
                revision,
            )?),
            None => None,
        };
        let remaining_item_count = page.remaining.filter(|_| continue_token.is_some());
        // The items stay encoded: the caller decodes them if it needs objects.
        Ok(Some(ListResult {
            items: Vec::new(),
            revision,
            remaining_item_count,
            continue_token,
            encoded: Some(page.items),
        }))
    }
}

#[async_trait]
impl Storage for Cacher {
    async fn create(&self, key: &str, obj: Object, ttl: Option<Duration>) -> Result<Object> {
        self.shared.backend.create(key, obj, ttl).await
    }

    async fn get(&self, key: &str, opts: &GetOptions) -> Result<Option<Object>> {
        match self.shared.read_one(key, opts).await? {
            OneKey::Backend => self.shared.backend.get(key, opts).await,
            // Decoded outside the lock.
            OneKey::Cached(c) => Ok(Some(c.decode()?)),
            OneKey::Missing => Ok(None),
        }
    }

    async fn get_shared(&self, key: &str, opts: &GetOptions) -> Result<Option<Arc<Object>>> {
        match self.shared.read_one(key, opts).await? {
            OneKey::Backend => Ok(self.shared.backend.get(key, opts).await?.map(Arc::new)),
            OneKey::Cached(c) => self.shared.decoded.get_or_decode(key, &c).map(Some),
            OneKey::Missing => Ok(None),
        }
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult> {
        let mut list = self.list_encoded(prefix, opts).await?;
        list.decode_items()?;
        Ok(list)
    }

    async fn list_encoded(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult> {
        let backend = &self.shared.backend;
        let (min, consistent, limit) = match list_from(prefix, opts)? {
            ListFrom::At {
                revision,
                start,
                limit,
            } => {
                // Pages of a list whose revision the cache still holds come from memory; an
                // older state (or an expired token) is the backend's to serve or refuse.
                if let Some(page) =
                    self.page(prefix, &start, PageAt::Exact(revision), limit, opts)?
                {
                    return Ok(page);
                }
                return backend.list(prefix, opts).await;
            }
            ListFrom::Latest {
                min,
                consistent,
                limit,
            } => (min, consistent, limit),
        };
        // A cache still loading hands a limited list without selectors to the backend at
        // once, which reads only the page (upstream's `shouldDelegateListOnNotReadyCache`);
        // other lists wait for the load.
        if limit.is_some() && opts.predicate.is_everything() && !self.shared.is_ready() {
            return backend.list(prefix, opts).await;
        }
        let at = if consistent {
            match self.shared.wait_fresh(prefix).await? {
                Some(r) => PageAt::Fresh(r),
                // The cache could not catch up in time: answer from the backend instead.
                None => return backend.list(prefix, opts).await,
            }
        } else if self.shared.reach(min.unwrap_or(1)).await? {
            PageAt::Latest
        } else {
            // Not there yet (or not loaded): the backend answers, and says "too large" itself
            // if the revision really is in the future.
            return backend.list(prefix, opts).await;
        };
        match self.page(prefix, prefix, at, limit, opts)? {
            Some(page) => Ok(page),
            None => backend.list(prefix, opts).await,
        }
    }

    async fn update(
        &self,
        key: &str,
        mut update: crate::GuaranteedUpdate<'_, '_>,
    ) -> Result<Object> {
        update.cached = self.shared.copy_for_backend(key, update.cached.take());
        self.shared.backend.update(key, update).await
    }

    async fn delete_from(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: &ValidateDeleteFn<'_>,
        cached: Option<Object>,
    ) -> Result<Object> {
        let cached = self.shared.copy_for_backend(key, cached);
        self.shared
            .backend
            .delete_from(key, preconditions, validate, cached)
            .await
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        let from = match opts.from_revision {
            Some(r) => r,
            // "From now" means from the backend's current revision, once the cache has it.
            None => match self.shared.wait_fresh(&self.shared.prefix).await? {
                Some(r) => r,
                None => return self.shared.backend.watch(key, opts).await,
            },
        };
        if !self.shared.reach(from).await? {
            // The backend can serve any uncompacted revision (and refuses future ones).
            return self.shared.backend.watch(key, opts).await;
        }
        let mut st = self.shared.lock();
        if from < st.window_start {
            return Err(Error::ResourceExpired {
                requested: from,
                compacted: st.window_start,
            });
        }
        // What the watcher replays, collected under the lock (the window's items are shared,
        // not copied) and decoded as the watcher reads them, outside it.
        let replay: Vec<Kept> = st
            .window
            .iter()
            .filter(|c| {
                c.revision > from && crate::events::key_matches(key, opts.recursive, &c.key)
            })
            .cloned()
            .collect();
        // Room for as many live events as there are replayed ones besides the buffer, as if
        // both shared one queue.
        let (tx, rx) = mpsc::channel(
            replay
                .len()
                .saturating_add(self.shared.config.watcher_buffer),
        );
        let predicate = opts.predicate.clone();
        let prefix_len = self.shared.prefix.len();
        let replayed = futures::stream::iter(replay).filter_map(move |kept| {
            // Most of a window is other objects' changes (a node's watch of its pods restarts
            // every few minutes over every pod's): decoded only if the watcher gets them.
            let event = kept
                .may_concern(prefix_len, &predicate)
                .then(|| kept.decoded())
                .flatten()
                .and_then(|c| crate::events::to_event(&c, &predicate));
            futures::future::ready(event.map(Ok))
        });
        let id = st.next_id;
        st.next_id = st.next_id.wrapping_add(1);
        let now = tokio::time::Instant::now();
        // A timeout past the clock's range is no timeout (a client's timeoutSeconds can be huge).
        let deadline = opts.timeout.and_then(|t| now.checked_add(t));
        st.watchers.insert(
            id,
            Slot {
                key: key.to_string(),
                recursive: opts.recursive,
                predicate: opts.predicate,
                bookmarks: opts.bookmarks,
                deadline,
                next_bookmark: watchers::next_bookmark_time(
                    opts.bookmarks,
                    now,
                    self.shared.config.bookmark_interval,
                    deadline,
                ),
                tx,
            },
        );
        Ok(replayed.chain(ReceiverStream::new(rx)).boxed())
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.shared.backend.current_revision().await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.shared.backend.compact(revision).await?;
        self.shared.lock().compacted(revision);
        Ok(())
    }

    /// Over a store that counts slowly, from memory once the cache holds the backend's current
    /// state (a count right after a write sees it, as the backend's own would): the cache holds
    /// every key under its prefix, where the embedded store reads each key's history (the
    /// object-count metric asks for each resource every minute).
    async fn count(&self, prefix: &str) -> Result<i64> {
        if self.shared.backend.counts_slowly()
            && prefix.starts_with(self.shared.prefix.as_str())
            && self.shared.lock().ready
            && self.shared.wait_fresh(prefix).await?.is_some()
        {
            let held = self.shared.lock().count_under(prefix, &self.shared.prefix);
            return Ok(i64::try_from(held).unwrap_or(i64::MAX));
        }
        self.shared.backend.count(prefix).await
    }

    async fn health(&self) -> Result<()> {
        self.shared.backend.health().await
    }

    async fn request_progress(&self) -> Result<()> {
        match self.shared.wait_fresh(&self.shared.prefix).await? {
            Some(_) => {
                self.shared.lock().send_bookmarks();
                Ok(())
            }
            None => Err(Error::Unavailable(
                "the watch cache cannot confirm it is current".into(),
            )),
        }
    }
}
