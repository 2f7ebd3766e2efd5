//! The embedded backend: a revision log in SQLite (bundled), one file under a directory.
//!
//! Writes go through one writer thread ([`writer`]) that batches queued writes into one
//! transaction; reads run on a small pool of read-only connections on the blocking pool; WAL
//! keeps readers and the writer out of each other's way. Watches subscribe to the writer's
//! committed changes and replay older history from the log ([`watch`]).

mod db;
mod lock;
pub use lock::{private_dir, tighten, LOCK_FILE};
mod watch;
mod writer;

use crate::backend::{delete_allowed, get_answer, strip_revision, DeleteState, UpdateStep};
use crate::error::{too_large_resource_version, Error, Result};
use crate::events::{with_revision, Change};
use crate::interface::{
    GetOptions, ListResult, Revision, Storage, ValidateDeleteFn, WatchOptions, WatchStream,
};
use crate::list::{RangeReader, RawKv, RawPage};
use crate::transformer::{Codec, Transformers};
use async_trait::async_trait;
use kapi_machinery::{ListOptions, Object, Preconditions};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, oneshot};
use writer::{Revisions, WriteCmd, WriteOp, WriteOutcome, Writer};

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "kapi.db";

/// Settings of the embedded backend.
#[derive(Clone, Debug)]
pub struct EmbeddedConfig {
    /// How often watches with `bookmarks` set get a BOOKMARK (upstream: about a minute).
    pub bookmark_interval: Duration,
    /// Compact history this often, keeping one interval's worth (kube-apiserver's
    /// `--etcd-compaction-interval`, default 5m). `None` = never compact by itself.
    pub compaction_interval: Option<Duration>,
    /// Encryption at rest (`--encryption-provider-config`); `None` stores values as they are.
    pub transformers: Option<Arc<Transformers>>,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            bookmark_interval: Duration::from_secs(60),
            compaction_interval: Some(Duration::from_secs(300)),
            transformers: None,
        }
    }
}

/// How many reads run at once (each on its own connection, kept open for reuse). More would
/// only queue on two or four cores and churn connections.
const READ_POOL: usize = 8;
/// Capacity of the change broadcast; a watcher further behind replays from the log.
const EVENT_BUFFER: usize = 4096;

pub(crate) struct Inner {
    path: PathBuf,
    writer: std::sync::mpsc::Sender<WriteCmd>,
    readers: Mutex<Vec<Connection>>,
    read_slots: tokio::sync::Semaphore,
    revs: Arc<Revisions>,
    events: broadcast::Sender<Arc<Change>>,
    config: EmbeddedConfig,
    codec: Codec,
    /// Held until [`EmbeddedStorage::close`] or the store's end: one process writes a
    /// data directory.
    lock: Mutex<Option<lock::DirLock>>,
    /// Set by `close`; writes hold it shared while they queue, so none slips in after.
    closed: std::sync::RwLock<bool>,
}

/// The embedded, persistent storage. Cheap to clone (a shared handle).
#[derive(Clone)]
pub struct EmbeddedStorage {
    inner: Arc<Inner>,
}

impl EmbeddedStorage {
    /// Opens (creating if needed) the store under `dir`. Synchronous: it opens the database
    /// and starts the writer thread. Periodic compaction starts if called inside a tokio
    /// runtime.
    pub fn open(dir: &Path) -> Result<EmbeddedStorage> {
        Self::open_with(dir, EmbeddedConfig::default())
    }

    /// [`EmbeddedStorage::open`] with explicit settings.
    pub fn open_with(dir: &Path, config: EmbeddedConfig) -> Result<EmbeddedStorage> {
        lock::private_dir(dir)?;
        let dir_lock = lock::DirLock::acquire(dir)?;
        lock::private_files(dir, DB_FILE)?;
        let path = dir.join(DB_FILE);
        let conn = db::open(&path, true)?;
        let codec = Codec::new(config.transformers.clone(), "");
        let revs = Arc::new(Revisions::default());
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let writer = Writer::new(conn, revs.clone(), events.clone(), codec.clone())?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("kapi-embedded-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| Error::Internal(format!("starting the writer thread: {e}")))?;
        let inner = Arc::new(Inner {
            path,
            writer: tx,
            readers: Mutex::new(Vec::new()),
            read_slots: tokio::sync::Semaphore::new(READ_POOL),
            revs,
            events,
            config,
            codec,
            lock: Mutex::new(Some(dir_lock)),
            closed: std::sync::RwLock::new(false),
        });
        if let (Some(interval), Ok(handle)) = (
            inner.config.compaction_interval,
            tokio::runtime::Handle::try_current(),
        ) {
            handle.spawn(compact_periodically(Arc::downgrade(&inner), interval));
        }
        Ok(EmbeddedStorage { inner })
    }

    /// Refuses further writes, waits for the queued ones to commit and releases the
    /// directory's lock, so another store (in this process or another) may open it while
    /// handles to this one linger (a stopped server's background tasks).
    pub async fn close(&self) {
        if let Ok(mut closed) = self.inner.closed.write() {
            *closed = true;
        }
        // Commands run in order: once this one is answered, every earlier write is done.
        let (tx, rx) = oneshot::channel();
        let cmd = WriteCmd {
            op: WriteOp::Progress,
            reply: tx,
        };
        if self.inner.writer.send(cmd).is_ok() {
            let _ = rx.await;
        }
        if let Ok(mut lock) = self.inner.lock.lock() {
            lock.take();
        }
    }

    /// The directory's database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The compacted revision (reads and watches below it are Gone).
    pub fn compacted_revision(&self) -> Revision {
        self.inner.revs.compacted.load(Ordering::SeqCst)
    }
}

async fn compact_periodically(inner: std::sync::Weak<Inner>, interval: Duration) {
    let mut previous: Option<Revision> = None;
    loop {
        tokio::time::sleep(interval).await;
        let Some(inner) = inner.upgrade() else { return };
        // Like kube-apiserver's compactor: compact to what was current one interval ago.
        if let Some(rev) = previous {
            if let Err(e) = write(&inner, WriteOp::Compact { revision: rev }).await {
                tracing::warn!(error = %e, "embedded storage: compaction failed");
            }
        }
        previous = Some(inner.revs.current.load(Ordering::SeqCst));
    }
}

impl Inner {
    /// Runs `f` on a read connection on the blocking pool (never on the async runtime).
    async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let _slot = self
            .read_slots
            .acquire()
            .await
            .map_err(|_| Error::Unavailable("the embedded storage is closed".into()))?;
        let inner = self.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = inner
                .readers
                .lock()
                .map_err(|_| Error::Internal("reader pool poisoned".into()))?
                .pop();
            let conn = match pooled {
                Some(c) => c,
                None => db::open(&inner.path, false)?,
            };
            let result = f(&conn);
            if let Ok(mut pool) = inner.readers.lock() {
                if pool.len() < READ_POOL {
                    pool.push(conn);
                }
            }
            result
        })
        .await
        .map_err(|e| Error::Internal(format!("read task failed: {e}")))?
    }

    /// The newest live state of `key`: the object (with resourceVersion), its revision and
    /// its stored bytes.
    async fn latest(
        self: &Arc<Self>,
        key: &str,
    ) -> Result<(Option<(Object, Revision, Vec<u8>)>, Revision)> {
        let key = key.to_string();
        let codec = self.codec.clone();
        self.read(move |conn| {
            let tx = db::CachedTx::begin(conn)?;
            let (current, _) = db::revisions(&tx)?;
            let row = db::latest_row(&tx, &key, current)?.filter(|r| !r.deleted);
            let found = match row {
                Some(r) => {
                    // The plain bytes: an update compares them with its new value.
                    let plain = codec.plain(&key, &r.value)?.into_owned();
                    let obj = crate::events::decode_stored(&key, &plain, r.id)?;
                    Some((obj, r.id, plain))
                }
                None => None,
            };
            Ok((found, current))
        })
        .await
    }
}

async fn write(inner: &Inner, op: WriteOp) -> Result<WriteOutcome> {
    let (tx, rx) = oneshot::channel();
    {
        let closed = inner
            .closed
            .read()
            .map_err(|_| Error::Internal("close flag poisoned".into()))?;
        if *closed {
            return Err(Error::Unavailable("the embedded storage is closed".into()));
        }
        inner
            .writer
            .send(WriteCmd { op, reply: tx })
            .map_err(|_| Error::Unavailable("the embedded storage writer has stopped".into()))?;
    }
    rx.await
        .map_err(|_| Error::Unavailable("the embedded storage writer has stopped".into()))?
}

fn written(outcome: WriteOutcome) -> Result<Revision> {
    match outcome {
        WriteOutcome::Written { revision } => Ok(revision),
        WriteOutcome::Done => Err(Error::Internal("write reported no revision".into())),
    }
}

#[async_trait]
impl RangeReader for EmbeddedStorage {
    async fn range(
        &self,
        start: &str,
        end: &str,
        revision: Option<Revision>,
        limit: usize,
        with_count: bool,
    ) -> Result<RawPage> {
        let (start, end) = (start.to_string(), end.to_string());
        let codec = self.inner.codec.clone();
        self.inner
            .read(move |conn| {
                let tx = db::CachedTx::begin(conn)?;
                let (current, compacted) = db::revisions(&tx)?;
                let rev = revision.unwrap_or(current);
                if rev < compacted {
                    return Err(Error::ResourceExpired {
                        requested: rev,
                        compacted,
                    });
                }
                if rev > current {
                    return Err(too_large_resource_version(rev, current));
                }
                let fetch = if limit == 0 {
                    0
                } else {
                    limit.saturating_add(1)
                };
                let mut rows = db::range(&tx, &start, &end, rev, fetch)?;
                let more = limit > 0 && rows.len() > limit;
                rows.truncate(if limit == 0 { rows.len() } else { limit });
                let count = if with_count {
                    Some(db::count(&tx, &start, &end, rev)?)
                } else {
                    None
                };
                let kvs = rows
                    .into_iter()
                    .map(|(key, mod_revision, value)| {
                        let value = codec.plain(&key, &value)?.into_owned();
                        Ok(RawKv {
                            key,
                            mod_revision,
                            value,
                        })
                    })
                    .collect::<Result<_>>()?;
                Ok(RawPage {
                    kvs,
                    more,
                    revision: rev,
                    count,
                })
            })
            .await
    }
}

#[async_trait]
impl Storage for EmbeddedStorage {
    async fn create(&self, key: &str, obj: Object, ttl: Option<Duration>) -> Result<Object> {
        let object = strip_revision(obj);
        let value = self.inner.codec.encode(key, &object)?;
        let revision = written(
            write(
                &self.inner,
                WriteOp::Create {
                    key: key.into(),
                    value,
                    object: object.clone(),
                    ttl,
                },
            )
            .await?,
        )?;
        Ok(with_revision(object, revision))
    }

    async fn get(&self, key: &str, opts: &GetOptions) -> Result<Option<Object>> {
        let (found, current) = self.inner.latest(key).await?;
        get_answer(key, opts, current, found.map(|(obj, _, _)| || Ok(obj)))
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult> {
        crate::list::list(self, prefix, opts).await
    }

    fn starts_from_cached_copy(&self) -> bool {
        true
    }

    fn counts_slowly(&self) -> bool {
        true
    }

    async fn update(&self, key: &str, mut u: crate::GuaranteedUpdate<'_, '_>) -> Result<Object> {
        // The watch cache's copy saves the first read of the key (a read on the blocking pool
        // for every write); the writer's compare-and-swap catches a stale one.
        let mut cached = crate::backend::cached_copy(&mut u);
        loop {
            let current = match cached.take() {
                Some((obj, rev)) => Some((obj, rev, None)),
                None => {
                    let (current, _) = self.inner.latest(key).await?;
                    current.map(|(obj, rev, stored)| (obj, rev, Some(stored)))
                }
            };
            let Some((cur, rev, stored)) = current else {
                if !u.ignore_not_found {
                    return Err(Error::NotFound { key: key.into() });
                }
                let object = strip_revision((u.try_update)(None).await?);
                let value = self.inner.codec.encode(key, &object)?;
                match write(
                    &self.inner,
                    WriteOp::Create {
                        key: key.into(),
                        value,
                        object: object.clone(),
                        ttl: None,
                    },
                )
                .await
                {
                    Ok(outcome) => return Ok(with_revision(object, written(outcome)?)),
                    Err(Error::KeyExists { .. }) => continue,
                    Err(e) => return Err(e),
                }
            };
            let (object, value, cur) =
                match crate::backend::update_step(&mut u, key, cur, stored.as_deref()).await? {
                    UpdateStep::Write {
                        object,
                        value,
                        current,
                    } => (object, value, current),
                    UpdateStep::ReadAgain => continue,
                    UpdateStep::Unchanged(cur) => return Ok(cur),
                };
            let value = self.inner.codec.seal(key, value)?;
            let op = WriteOp::Update {
                key: key.into(),
                expected: rev,
                value,
                object: object.clone(),
                prev: Arc::new(cur),
            };
            match write(&self.inner, op).await {
                Ok(outcome) => return Ok(with_revision(object, written(outcome)?)),
                Err(Error::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    async fn delete_from(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: &ValidateDeleteFn<'_>,
        cached: Option<Object>,
    ) -> Result<Object> {
        // The watch cache's copy saves the read of the key (on the blocking pool), as for
        // updates; the writer's revision check catches a stale one.
        let mut copy = DeleteState::from_copy(cached);
        loop {
            let state = match copy.take() {
                Some(copy) => copy,
                None => match self.inner.latest(key).await?.0 {
                    Some((object, revision, _)) => DeleteState {
                        object,
                        revision,
                        read: true,
                    },
                    None => return Err(Error::NotFound { key: key.into() }),
                },
            };
            if !delete_allowed(&state, key, preconditions, validate).await? {
                continue;
            }
            let op = WriteOp::Delete {
                key: key.into(),
                expected: state.revision,
                prev: Arc::new(state.object.clone()),
            };
            match write(&self.inner, op).await {
                Ok(outcome) => return Ok(with_revision(state.object, written(outcome)?)),
                // A stale copy, or a write in between: decide again on a read.
                Err(Error::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        watch::watch(&self.inner, key, opts).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.inner.revs.current.load(Ordering::SeqCst))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        write(&self.inner, WriteOp::Compact { revision })
            .await
            .map(|_| ())
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        let (start, end) = (prefix.to_string(), crate::events::prefix_end(prefix));
        self.inner
            .read(move |conn| {
                let tx = db::CachedTx::begin(conn)?;
                let (current, _) = db::revisions(&tx)?;
                db::count(&tx, &start, &end, current)
            })
            .await
    }

    async fn health(&self) -> Result<()> {
        self.inner
            .read(|conn| {
                conn.query_row("SELECT 1", [], |_| Ok(()))
                    .map_err(|e| Error::Unavailable(e.to_string()))
            })
            .await
    }

    async fn request_progress(&self) -> Result<()> {
        write(&self.inner, WriteOp::Progress).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]
    use super::*;
    use crate::interface::Storage;
    use crate::testing::no_validate;

    /// Rows in the log of the store in `dir`, and how far its sweep got, read from the file.
    fn rows_and_swept(dir: &Path) -> (i64, Revision) {
        let conn = db::open(&dir.join(DB_FILE), false).unwrap();
        let rows = conn
            .query_row("SELECT COUNT(*) FROM kv", [], |r| r.get(0))
            .unwrap();
        (rows, db::swept(&conn).unwrap())
    }

    async fn wait_swept(dir: &Path, compacted: Revision) -> i64 {
        for _ in 0..500 {
            let (rows, swept) = rows_and_swept(dir);
            if swept == compacted {
                return rows;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the sweep did not reach {compacted}");
    }

    /// Compaction answers at once and removes the history after, in steps, with no write to
    /// carry them; a sweep a restart interrupted goes on when the store opens again.
    #[tokio::test]
    async fn compaction_sweeps_history_in_steps_and_resumes_after_a_restart() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let config = || EmbeddedConfig {
            compaction_interval: None,
            ..Default::default()
        };
        let key = "/pods/ns/p";
        let s = EmbeddedStorage::open_with(dir, config()).unwrap();
        s.create(key, crate::testing::pod("ns", "p", &[]), None)
            .await
            .unwrap();
        s.create(
            "/pods/ns/gone",
            crate::testing::pod("ns", "gone", &[]),
            None,
        )
        .await
        .unwrap();
        s.delete("/pods/ns/gone", None, &no_validate).await.unwrap();
        let bump = |n: i64| {
            move |cur: Option<Object>| {
                Box::pin(async move {
                    let mut o = cur.unwrap();
                    o.insert("spec", serde_json::json!({"counter": n}));
                    Ok(o)
                }) as futures::future::BoxFuture<'static, Result<Object>>
            }
        };
        for n in 1..=2_500 {
            s.guaranteed_update(key, None, false, &mut bump(n))
                .await
                .unwrap();
        }
        let current = s.current_revision().await.unwrap();
        s.compact(current).await.unwrap();
        // The key's newest row is all that stays (the deleted key's rows go too).
        assert_eq!(wait_swept(dir, current).await, 1);
        assert_eq!(
            crate::testing::counter(&s.get(key, &Default::default()).await.unwrap().unwrap()),
            2_500
        );

        // A compaction recorded but not swept when the store stopped.
        for n in 1..=1_500 {
            s.guaranteed_update(key, None, false, &mut bump(n))
                .await
                .unwrap();
        }
        s.close().await;
        let compacted = {
            let conn = db::open(&dir.join(DB_FILE), true).unwrap();
            let (current, _) = db::revisions(&conn).unwrap();
            conn.execute(db::SET_META, rusqlite::params![current, "compacted"])
                .unwrap();
            current
        };
        assert_eq!(rows_and_swept(dir).0, 1_501);
        let s = EmbeddedStorage::open_with(dir, config()).unwrap();
        assert_eq!(wait_swept(dir, compacted).await, 1);
        assert_eq!(
            crate::testing::counter(&s.get(key, &Default::default()).await.unwrap().unwrap()),
            1_500
        );
    }
}
