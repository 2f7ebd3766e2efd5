//! The single writer thread. Every write goes through it, so revisions are assigned in one
//! place, strictly increasing and without gaps, and SQLite never sees two writers. Queued
//! writes are committed together (group commit: one fsync for the whole batch); a caller is
//! answered only after its batch is durable, and watchers are fed after the commit too.

use super::db::{self, sql_err, Row};
use crate::error::{Error, Result};
use crate::events::{with_revision, Change, ChangeKind};
use crate::interface::Revision;
use kapi_machinery::Object;
use rusqlite::{params, Connection};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{broadcast, oneshot};

/// A write the writer thread applies.
pub(crate) enum WriteOp {
    /// Creates `key` unless it exists. `object` has no resourceVersion.
    Create {
        key: String,
        value: Vec<u8>,
        object: Object,
        ttl: Option<Duration>,
    },
    /// Replaces `key` if its newest revision is still `expected`; `prev` is that state.
    Update {
        key: String,
        expected: Revision,
        value: Vec<u8>,
        object: Object,
        prev: Arc<Object>,
    },
    /// Deletes `key` if its newest revision is still `expected`; `prev` is that state.
    Delete {
        key: String,
        expected: Revision,
        prev: Arc<Object>,
    },
    /// Forgets superseded history up to `revision`.
    Compact { revision: Revision },
    /// Publishes a progress mark at the current revision, ordered after every earlier write.
    Progress,
}

/// What a write did.
#[derive(Debug)]
pub(crate) enum WriteOutcome {
    Written { revision: Revision },
    Done,
}

pub(crate) struct WriteCmd {
    pub op: WriteOp,
    pub reply: oneshot::Sender<Result<WriteOutcome>>,
}

/// Revisions shared with readers without touching the database.
#[derive(Default)]
pub(crate) struct Revisions {
    pub current: AtomicI64,
    pub compacted: AtomicI64,
}

const MAX_BATCH: usize = 512;
const TTL_CHECK: Duration = Duration::from_millis(500);
/// While a sweep is pending and no write comes, a step runs this often on its own.
const SWEEP_IDLE: Duration = Duration::from_millis(2);
/// How long the sweep pauses after a step failed.
const SWEEP_RETRY: Duration = Duration::from_secs(5);

pub(crate) struct Writer {
    conn: Connection,
    revs: Arc<Revisions>,
    events: broadcast::Sender<Arc<Change>>,
    codec: crate::transformer::Codec,
    current: Revision,
    compacted: Revision,
    /// How far the rows compaction made unreadable are removed: behind `compacted` while a
    /// compaction is being swept, a step per batch ([`db::sweep_step`]).
    swept: Revision,
    /// When a sweep step last failed: the sweep pauses a while instead of failing every 2 ms.
    sweep_failed: Option<Instant>,
    last_ttl_check: Instant,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Outcome of one op inside a batch: the reply, and the change to publish after commit.
type Applied = (Result<WriteOutcome>, Option<Change>);

impl Writer {
    pub fn new(
        conn: Connection,
        revs: Arc<Revisions>,
        events: broadcast::Sender<Arc<Change>>,
        codec: crate::transformer::Codec,
    ) -> Result<Self> {
        let (current, compacted) = db::revisions(&conn)?;
        // A sweep a restart interrupted goes on from where its last step committed.
        let swept = db::swept(&conn)?;
        revs.current.store(current, Ordering::SeqCst);
        revs.compacted.store(compacted, Ordering::SeqCst);
        Ok(Writer {
            conn,
            revs,
            events,
            codec,
            current,
            compacted,
            swept,
            sweep_failed: None,
            last_ttl_check: Instant::now(),
        })
    }

    /// Runs until every sender is gone.
    pub fn run(mut self, rx: Receiver<WriteCmd>) {
        loop {
            let wait = if self.sweeping() {
                SWEEP_IDLE
            } else {
                TTL_CHECK
            };
            let first = match rx.recv_timeout(wait) {
                Ok(cmd) => Some(cmd),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let mut batch = Vec::new();
            if let Some(cmd) = first {
                batch.push(cmd);
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(cmd) => batch.push(cmd),
                        Err(_) => break,
                    }
                }
            }
            if self.last_ttl_check.elapsed() >= TTL_CHECK {
                self.last_ttl_check = Instant::now();
                if let Err(e) = self.expire() {
                    tracing::warn!(error = %e, "embedded storage: expiring keys failed");
                }
            }
            if !batch.is_empty() || self.sweeping() {
                self.commit_batch(batch);
            }
        }
    }

    /// Whether compaction left rows to remove (and the sweep is not pausing after a failure).
    fn sweeping(&self) -> bool {
        self.swept < self.compacted
            && self
                .sweep_failed
                .is_none_or(|at| at.elapsed() >= SWEEP_RETRY)
    }

    fn commit_batch(&mut self, batch: Vec<WriteCmd>) {
        let start_rev = self.current;
        let start_compacted = self.compacted;
        let start_swept = self.swept;
        let mut results: Vec<(oneshot::Sender<Result<WriteOutcome>>, Applied)> =
            Vec::with_capacity(batch.len());
        let outcome = (|| -> Result<()> {
            let tx = db::CachedTx::begin(&self.conn)?;
            for cmd in batch {
                let applied = match apply(&tx, &mut self.current, &mut self.compacted, cmd.op) {
                    Ok(a) => a,
                    Err(e) => (Err(e), None),
                };
                results.push((cmd.reply, applied));
            }
            if self.current != start_rev {
                tx.prepare_cached(db::SET_META)
                    .and_then(|mut s| s.execute(params![self.current, "current"]))
                    .map_err(sql_err)?;
            }
            if self.compacted != start_compacted {
                tx.prepare_cached(db::SET_META)
                    .and_then(|mut s| s.execute(params![self.compacted, "compacted"]))
                    .map_err(sql_err)?;
            }
            // One step of a pending sweep rides on the batch's commit (and its fsync); a step
            // that fails leaves the batch alone and is tried again with the next.
            if self.sweeping() {
                match db::sweep_step(&tx, self.swept, self.compacted) {
                    Ok(end) => {
                        self.swept = end;
                        self.sweep_failed = None;
                        tx.prepare_cached(db::SET_META)
                            .and_then(|mut s| s.execute(params![self.swept, "swept"]))
                            .map_err(sql_err)?;
                    }
                    Err(e) => {
                        self.sweep_failed = Some(Instant::now());
                        tracing::warn!(error = %e, "embedded storage: compaction sweep failed");
                    }
                }
            }
            tx.commit()
        })();
        if let Err(e) = outcome {
            // Nothing of the batch is durable: undo the in-memory revisions and fail every op.
            self.current = start_rev;
            self.compacted = start_compacted;
            self.swept = start_swept;
            // Resynchronise with the file in case something else wrote to it.
            if let Ok((current, compacted)) = db::revisions(&self.conn) {
                self.current = current.max(start_rev);
                self.compacted = compacted.max(start_compacted);
            }
            tracing::error!(error = %e, "embedded storage: commit failed");
            for (reply, _) in results {
                let _ = reply.send(Err(Error::Internal(format!("commit failed: {e}"))));
            }
            return;
        }
        self.revs.current.store(self.current, Ordering::SeqCst);
        self.revs.compacted.store(self.compacted, Ordering::SeqCst);
        for (reply, (result, change)) in results {
            if let Some(change) = change {
                // No receivers is fine: nobody is watching.
                let _ = self.events.send(Arc::new(change));
            }
            let _ = reply.send(result);
        }
    }

    /// Deletes keys whose TTL has passed, as deletions with events.
    fn expire(&mut self) -> Result<()> {
        let due: Vec<(String, Revision, Vec<u8>)> = {
            let mut stmt = self.conn.prepare_cached(db::EXPIRED).map_err(sql_err)?;
            let rows = stmt
                .query_map([now_ms()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(sql_err)?;
            rows.collect::<std::result::Result<Vec<_>, _>>()
                .map_err(sql_err)?
        };
        if due.is_empty() {
            return Ok(());
        }
        let mut batch = Vec::new();
        for (key, id, value) in due {
            let prev = Arc::new(self.codec.decode(&key, &value, id)?);
            // Nobody waits for an expiry's answer.
            let (tx, _) = oneshot::channel();
            batch.push(WriteCmd {
                op: WriteOp::Delete {
                    key,
                    expected: id,
                    prev,
                },
                reply: tx,
            });
        }
        self.commit_batch(batch);
        Ok(())
    }
}

/// A log row to append.
struct NewRow<'a> {
    rev: Revision,
    key: &'a str,
    created: bool,
    deleted: bool,
    create_rev: Revision,
    prev: Revision,
    expires: i64,
    value: &'a [u8],
}

fn insert(tx: &Connection, r: NewRow<'_>) -> Result<()> {
    tx.prepare_cached(db::INSERT)
        .map_err(sql_err)?
        .execute(params![
            r.rev,
            r.key,
            r.created as i64,
            r.deleted as i64,
            r.create_rev,
            r.prev,
            r.expires,
            r.value
        ])
        .map_err(sql_err)?;
    Ok(())
}

fn live(row: Option<Row>) -> Option<Row> {
    row.filter(|r| !r.deleted)
}

/// The live row of `key` if it is still the one at `expected` (the revision the writer read).
fn expected_row(tx: &Connection, key: &str, expected: Revision) -> Result<Option<Row>> {
    Ok(live(db::latest_row(tx, key, i64::MAX)?).filter(|r| r.id == expected))
}

/// The object of an op's `prev`: the op's own (its caller kept no other handle), else a copy.
fn owned(prev: Arc<Object>) -> Object {
    Arc::try_unwrap(prev).unwrap_or_else(|shared| (*shared).clone())
}

/// A compare-and-swap that lost: someone wrote `key` since it was read.
fn conflict(key: String) -> Applied {
    let message = "the object has been modified".into();
    (Err(Error::Conflict { key, message }), None)
}

/// Writes the row that follows `row` for `key` at the next revision (a new value, or a
/// tombstone when `deleted`), keeping its creation revision; returns that revision.
fn supersede(
    tx: &Connection,
    current: &mut Revision,
    key: &str,
    row: &Row,
    deleted: bool,
    expires: i64,
    value: &[u8],
) -> Result<Revision> {
    let rev = current.saturating_add(1);
    insert(
        tx,
        NewRow {
            rev,
            key,
            created: false,
            deleted,
            create_rev: row.create_revision,
            prev: row.id,
            expires,
            value,
        },
    )?;
    *current = rev;
    Ok(rev)
}

/// Applies one op inside the batch's transaction. A logical refusal (exists, conflict) writes
/// nothing; a SQL error fails the whole batch.
fn apply(
    tx: &Connection,
    current: &mut Revision,
    compacted: &mut Revision,
    op: WriteOp,
) -> Result<Applied> {
    match op {
        WriteOp::Create {
            key,
            value,
            object,
            ttl,
        } => {
            let existing = db::latest_row(tx, &key, i64::MAX)?;
            if existing.as_ref().is_some_and(|r| !r.deleted) {
                return Ok((Err(Error::KeyExists { key }), None));
            }
            let rev = current.saturating_add(1);
            let expires = ttl.map_or(0, |t| {
                now_ms().saturating_add(i64::try_from(t.as_millis()).unwrap_or(i64::MAX / 2))
            });
            insert(
                tx,
                NewRow {
                    rev,
                    key: &key,
                    created: true,
                    deleted: false,
                    create_rev: rev,
                    prev: existing.map_or(0, |r| r.id),
                    expires,
                    value: &value,
                },
            )?;
            *current = rev;
            let change = Change {
                revision: rev,
                key,
                kind: ChangeKind::Added,
                object: Some(Arc::new(with_revision(object, rev))),
                prev: None,
            };
            Ok((Ok(WriteOutcome::Written { revision: rev }), Some(change)))
        }
        WriteOp::Update {
            key,
            expected,
            value,
            object,
            prev,
        } => {
            let Some(row) = expected_row(tx, &key, expected)? else {
                return Ok(conflict(key));
            };
            let rev = supersede(tx, current, &key, &row, false, row.expires_at, &value)?;
            let prev = Arc::new(with_revision(owned(prev), rev));
            let change = Change {
                revision: rev,
                key,
                kind: ChangeKind::Modified,
                object: Some(Arc::new(with_revision(object, rev))),
                prev: Some(prev),
            };
            Ok((Ok(WriteOutcome::Written { revision: rev }), Some(change)))
        }
        WriteOp::Delete {
            key,
            expected,
            prev,
        } => {
            let Some(row) = expected_row(tx, &key, expected)? else {
                return Ok(conflict(key));
            };
            let rev = supersede(tx, current, &key, &row, true, 0, &row.value)?;
            let gone = Arc::new(with_revision(owned(prev), rev));
            let change = Change {
                revision: rev,
                key,
                kind: ChangeKind::Deleted,
                object: Some(gone.clone()),
                prev: Some(gone),
            };
            Ok((Ok(WriteOutcome::Written { revision: rev }), Some(change)))
        }
        WriteOp::Compact { revision } => {
            if revision > *current {
                return Ok((
                    Err(crate::error::too_large_resource_version(revision, *current)),
                    None,
                ));
            }
            if revision <= *compacted {
                return Ok((Ok(WriteOutcome::Done), None));
            }
            // Reads below the revision are refused from this commit on; the superseded rows
            // and tombstones at or below it go a step per batch after it (the sweep), and the
            // newest live row of each key stays, so reads at `revision` still see everything.
            *compacted = revision;
            Ok((Ok(WriteOutcome::Done), None))
        }
        WriteOp::Progress => Ok((Ok(WriteOutcome::Done), Some(Change::progress(*current)))),
    }
}
