//! The SQLite schema and the queries readers and the writer share.
//!
//! One table is the revision log (as k3s's kine lays it out): each write is a row whose `id`
//! is its revision; a deletion is a tombstone row carrying the last value. The current value of
//! a key at revision R is its newest row with `id <= R`, unless that row is a tombstone.
//! `meta` holds the current and compacted revisions, so neither moves backwards when
//! compaction removes the newest rows, and how far the rows compaction made unreadable have
//! been removed (`swept`: compaction moves the revision at once and removes the rows a bounded
//! step per write batch, as etcd compacts in batches, so no write waits for all of them).

use crate::error::{Error, Result};
use crate::interface::Revision;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::time::Duration;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kv (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    expires_at INTEGER NOT NULL DEFAULT 0,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kv_name_id ON kv (name, id);
CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires_at) WHERE expires_at > 0;
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (k, v) VALUES ('current', 1), ('compacted', 0), ('swept', 0);
";

// The queries, each prepared once per connection and kept. Written so that SQLite never
// prepares them again for new parameter values: it re-plans a statement whenever a parameter it
// looked at while planning changes, and it looks at a `LIMIT ?` (hence `CAST`) and, with the
// `ORDER BY` of the newest row, at a key compared with `=` (hence `COLLATE BINARY`, the column's
// own collation). Planning every read of a row again was about 7% of a busy server's CPU.
// The test `no_statement_is_planned_again` holds them to it.
const META: &str = "SELECT v FROM meta WHERE k = ?1";
const MAX_ID: &str = "SELECT MAX(id) FROM kv";
const LATEST_ROW: &str = "SELECT id, deleted, create_revision, expires_at, value FROM kv
     WHERE name = ?1 COLLATE BINARY AND id <= ?2 ORDER BY id DESC LIMIT 1";
const RANGE: &str = "SELECT k.name, k.id, k.value FROM kv k
     WHERE k.name >= ?1 COLLATE BINARY AND k.name < ?2 COLLATE BINARY AND k.id <= ?3 AND k.deleted = 0
       AND NOT EXISTS (SELECT 1 FROM kv n WHERE n.name = k.name AND n.id > k.id AND n.id <= ?3)
     ORDER BY k.name LIMIT CAST(?4 AS INTEGER)";
const COUNT: &str = "SELECT COUNT(*) FROM kv k
     WHERE k.name >= ?1 COLLATE BINARY AND k.name < ?2 COLLATE BINARY AND k.id <= ?3 AND k.deleted = 0
       AND NOT EXISTS (SELECT 1 FROM kv n WHERE n.name = k.name AND n.id > k.id AND n.id <= ?3)";
const HISTORY: &str = "SELECT k.id, k.name, k.created, k.deleted, k.value, p.value FROM kv k
     LEFT JOIN kv p ON p.id = k.prev_revision AND k.created = 0 AND k.deleted = 0
     WHERE k.id > ?1 AND k.id <= ?2 AND k.name >= ?3 COLLATE BINARY AND k.name < ?4 COLLATE BINARY
     ORDER BY k.id LIMIT CAST(?5 AS INTEGER)";
/// The writer's: keys whose TTL has passed at `?1` (ms), as (name, id, value).
pub(crate) const EXPIRED: &str = "SELECT k.name, k.id, k.value FROM kv k
     WHERE k.expires_at > 0 AND k.expires_at <= ?1 AND k.deleted = 0
       AND k.id = (SELECT MAX(id) FROM kv WHERE name = k.name)";
pub(crate) const SET_META: &str = "UPDATE meta SET v = ?1 WHERE k = ?2";
/// The writer's sweep step: the end of the next 1,000 rows after `?1`, at most `?2` (etcd
/// compacts in batches of 1,000 keys too).
pub(crate) const SWEEP_END: &str = "SELECT MAX(id) FROM
     (SELECT id FROM kv WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT 1000)";
/// The rows that rows in `(?1, ?2]` superseded: every row names the row it follows (its
/// `prev_revision`), so a step finds them without scanning the keys that did not change.
pub(crate) const SWEEP_SUPERSEDED: &str = "DELETE FROM kv WHERE id IN
     (SELECT prev_revision FROM kv WHERE id > ?1 AND id <= ?2 AND prev_revision > 0)";
/// Tombstones in `(?1, ?2]`: at or below the compacted revision nobody reads them.
pub(crate) const SWEEP_TOMBSTONES: &str =
    "DELETE FROM kv WHERE id > ?1 AND id <= ?2 AND deleted = 1";
pub(crate) const INSERT: &str = "INSERT INTO kv
     (id, name, created, deleted, create_revision, prev_revision, expires_at, value)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

pub(crate) fn sql_err(e: rusqlite::Error) -> Error {
    Error::Internal(format!("sqlite: {e}"))
}

/// A transaction begun and committed by statements prepared once per connection. rusqlite's
/// `Transaction` runs `BEGIN` and `COMMIT` through `execute_batch`, which parses them anew
/// every time: a few percent of a small create's CPU, and of every read, which runs in a
/// transaction of its own so its queries see one revision. Dropped without
/// [`CachedTx::commit`], or after a failed commit, it rolls back (as rusqlite's does).
pub(crate) struct CachedTx<'c> {
    conn: &'c Connection,
}

impl<'c> CachedTx<'c> {
    pub fn begin(conn: &'c Connection) -> Result<CachedTx<'c>> {
        run_cached(conn, "BEGIN")?;
        Ok(CachedTx { conn })
    }

    pub fn commit(self) -> Result<()> {
        run_cached(self.conn, "COMMIT")
    }
}

impl std::ops::Deref for CachedTx<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for CachedTx<'_> {
    fn drop(&mut self) {
        if !self.conn.is_autocommit() {
            // Nothing to report to: the caller already has the error that left it open.
            let _ = run_cached(self.conn, "ROLLBACK");
        }
    }
}

fn run_cached(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .map_err(sql_err)
}

/// Opens a connection with the settings every connection needs: WAL (readers never block the
/// writer), `synchronous=FULL` (a committed transaction is on disk), a busy timeout.
pub(crate) fn open(path: &Path, writer: bool) -> Result<Connection> {
    let conn = Connection::open(path).map_err(sql_err)?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(sql_err)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sql_err)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(sql_err)?;
    if writer {
        conn.execute_batch(SCHEMA).map_err(sql_err)?;
    } else {
        conn.pragma_update(None, "query_only", true)
            .map_err(sql_err)?;
    }
    Ok(conn)
}

/// One `meta` value. Every read runs this: the statement is prepared once per connection,
/// not parsed again.
fn meta(conn: &Connection, k: &str) -> Result<i64> {
    conn.prepare_cached(META)
        .and_then(|mut s| s.query_row([k], |r| r.get::<_, i64>(0)))
        .map_err(sql_err)
}

/// Reads the current and compacted revisions.
pub(crate) fn revisions(conn: &Connection) -> Result<(Revision, Revision)> {
    let current = meta(conn, "current")?;
    let compacted = meta(conn, "compacted")?;
    // Rows are the source of truth if meta ever lagged (it is written in the same transaction).
    let max_id: Option<i64> = conn
        .prepare_cached(MAX_ID)
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(sql_err)?;
    Ok((current.max(max_id.unwrap_or(0)), compacted))
}

/// How far superseded rows at or below the compacted revision have been removed.
pub(crate) fn swept(conn: &Connection) -> Result<Revision> {
    meta(conn, "swept")
}

/// One sweep step after `swept` towards `compacted`: removes the rows that the next
/// 1,000 rows superseded and the tombstones among them; returns where it ended.
/// Rows go in revision order and a row only once its successor (at or below `compacted`)
/// exists, so every read at or above `compacted` sees the same state before and after a step.
pub(crate) fn sweep_step(
    conn: &Connection,
    swept: Revision,
    compacted: Revision,
) -> Result<Revision> {
    let end: Option<Revision> = conn
        .prepare_cached(SWEEP_END)
        .and_then(|mut s| s.query_row(params![swept, compacted], |r| r.get(0)))
        .map_err(sql_err)?;
    // Fewer rows than a step left: the sweep reaches the compacted revision.
    let end = match end {
        Some(e) if e < compacted => e,
        _ => compacted,
    };
    // In a savepoint of the caller's transaction: a step that fails undoes itself and leaves
    // the batch's writes to commit.
    run_cached(conn, "SAVEPOINT sweep")?;
    let deleted = [SWEEP_SUPERSEDED, SWEEP_TOMBSTONES]
        .into_iter()
        .try_for_each(|sql| {
            conn.prepare_cached(sql)
                .and_then(|mut s| s.execute(params![swept, end]))
                .map(|_| ())
                .map_err(sql_err)
        });
    match deleted {
        Ok(()) => {
            run_cached(conn, "RELEASE sweep")?;
            Ok(end)
        }
        Err(e) => {
            run_cached(conn, "ROLLBACK TO sweep")?;
            run_cached(conn, "RELEASE sweep")?;
            Err(e)
        }
    }
}

/// The newest row of a key at or below `revision`.
pub(crate) struct Row {
    pub id: Revision,
    pub deleted: bool,
    pub create_revision: Revision,
    pub expires_at: i64,
    pub value: Vec<u8>,
}

pub(crate) fn latest_row(conn: &Connection, key: &str, revision: Revision) -> Result<Option<Row>> {
    conn.prepare_cached(LATEST_ROW)
        .map_err(sql_err)?
        .query_row(params![key, revision], |r| {
            Ok(Row {
                id: r.get(0)?,
                deleted: r.get::<_, i64>(1)? != 0,
                create_revision: r.get(2)?,
                expires_at: r.get(3)?,
                value: r.get(4)?,
            })
        })
        .optional()
        .map_err(sql_err)
}

/// Live keys in `[start, end)` at `revision`, in key order, at most `limit` (0 = all).
pub(crate) fn range(
    conn: &Connection,
    start: &str,
    end: &str,
    revision: Revision,
    limit: usize,
) -> Result<Vec<(String, Revision, Vec<u8>)>> {
    let limit = if limit == 0 {
        -1
    } else {
        i64::try_from(limit).unwrap_or(i64::MAX)
    };
    let mut stmt = conn.prepare_cached(RANGE).map_err(sql_err)?;
    let rows = stmt
        .query_map(params![start, end, revision, limit], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map_err(sql_err)?;
    rows.collect::<std::result::Result<Vec<_>, _>>()
        .map_err(sql_err)
}

/// How many live keys `[start, end)` holds at `revision`.
pub(crate) fn count(conn: &Connection, start: &str, end: &str, revision: Revision) -> Result<i64> {
    conn.prepare_cached(COUNT)
        .map_err(sql_err)?
        .query_row(params![start, end, revision], |r| r.get(0))
        .map_err(sql_err)
}

/// One row of history, for replaying a watch.
pub(crate) struct HistoryRow {
    pub id: Revision,
    pub name: String,
    pub created: bool,
    pub deleted: bool,
    pub value: Vec<u8>,
    pub prev_value: Option<Vec<u8>>,
}

/// Writes in `(after, upto]` to keys in `[start, end)`, in revision order, at most `limit`.
pub(crate) fn history(
    conn: &Connection,
    start: &str,
    end: &str,
    after: Revision,
    upto: Revision,
    limit: usize,
) -> Result<Vec<HistoryRow>> {
    let mut stmt = conn.prepare_cached(HISTORY).map_err(sql_err)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![after, upto, start, end, limit], |r| {
            Ok(HistoryRow {
                id: r.get(0)?,
                name: r.get(1)?,
                created: r.get::<_, i64>(2)? != 0,
                deleted: r.get::<_, i64>(3)? != 0,
                value: r.get(4)?,
                prev_value: r.get(5)?,
            })
        })
        .map_err(sql_err)?;
    rows.collect::<std::result::Result<Vec<_>, _>>()
        .map_err(sql_err)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]
    use super::*;
    use rusqlite::StatementStatus;

    /// Every statement runs twice with other parameters and is planned once; the reads use the
    /// `(name, id)` index or the revision itself.
    #[test]
    fn no_statement_is_planned_again() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("db.sqlite"), true).unwrap();
        for i in 1..=20i64 {
            conn.prepare_cached(INSERT)
                .unwrap()
                .execute(params![
                    i,
                    format!("/pods/a/p{}", i % 5),
                    0,
                    0,
                    i,
                    0,
                    i % 3,
                    b"v".as_slice()
                ])
                .unwrap();
        }
        for i in 0..3i64 {
            let key = format!("/pods/a/p{i}");
            latest_row(&conn, &key, 10 + i).unwrap();
            range(
                &conn,
                "/pods/a/",
                &format!("/pods/a/p{i}"),
                10 + i,
                usize::try_from(i).unwrap(),
            )
            .unwrap();
            count(&conn, "/pods/", &format!("/pods/a/p{i}"), 10 + i).unwrap();
            history(
                &conn,
                "/pods/",
                &format!("/pods/a/p{i}"),
                i,
                15 + i,
                5 + usize::try_from(i).unwrap(),
            )
            .unwrap();
            revisions(&conn).unwrap();
            conn.prepare_cached(EXPIRED)
                .unwrap()
                .query_map([i], |_| Ok(()))
                .unwrap()
                .for_each(drop);
            conn.prepare_cached(SET_META)
                .unwrap()
                .execute(params![20 + i, "current"])
                .unwrap();
            sweep_step(&conn, i, 2 + i).unwrap();
        }
        for sql in [
            META,
            MAX_ID,
            LATEST_ROW,
            RANGE,
            COUNT,
            HISTORY,
            EXPIRED,
            SET_META,
            INSERT,
            SWEEP_END,
            SWEEP_SUPERSEDED,
            SWEEP_TOMBSTONES,
        ] {
            let stmt = conn.prepare_cached(sql).unwrap();
            assert_eq!(
                stmt.get_status(StatementStatus::RePrepare),
                0,
                "planned again: {sql}"
            );
        }
        let plan = |sql: &str| -> String {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            for i in 1..=stmt.parameter_count() {
                stmt.raw_bind_parameter(i, 1i64).unwrap();
            }
            let mut rows = stmt.raw_query();
            let mut plan = Vec::new();
            while let Some(row) = rows.next().unwrap() {
                plan.push(row.get::<_, String>(3).unwrap());
            }
            plan.join("; ")
        };
        assert_eq!(
            plan(LATEST_ROW),
            "SEARCH kv USING INDEX kv_name_id (name=? AND id<?)"
        );
        assert!(
            plan(RANGE).starts_with("SEARCH k USING INDEX kv_name_id (name>? AND name<?)"),
            "{}",
            plan(RANGE)
        );
        assert!(
            plan(COUNT).starts_with("SEARCH k USING COVERING INDEX kv_name_id (name>? AND name<?)")
                || plan(COUNT).starts_with("SEARCH k USING INDEX kv_name_id (name>? AND name<?)"),
            "{}",
            plan(COUNT)
        );
        assert!(
            plan(HISTORY).starts_with("SEARCH k USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"),
            "{}",
            plan(HISTORY)
        );
        // A sweep step reads only its own rows, never the keys that did not change.
        for sql in [SWEEP_END, SWEEP_SUPERSEDED, SWEEP_TOMBSTONES] {
            assert!(
                plan(sql).contains("USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)")
                    && !plan(sql).contains("SCAN kv"),
                "{sql}: {}",
                plan(sql)
            );
        }
    }

    /// A sweep in steps removes exactly what the compacted revision made unreadable: every row
    /// at or below it that a later row at or below it superseded, and its tombstones; rows
    /// above it stay, as does the newest live row of each key at it.
    #[test]
    fn sweep_removes_what_compaction_made_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("db.sqlite"), true).unwrap();
        // 40 keys over 5,000 revisions: updates, deletions and re-creations, each row naming
        // the row it follows, as the writer writes them.
        let mut newest: std::collections::HashMap<String, (i64, bool)> = Default::default();
        let mut rows = Vec::new();
        for id in 1..=5000i64 {
            let key = format!("/k/{}", (id * 7919) % 40);
            let prev = newest.get(&key).copied();
            let deleted = prev.is_some_and(|(_, d)| !d) && id % 11 == 0;
            let created = prev.is_none_or(|(_, d)| d);
            let prev_id = prev.map_or(0, |(p, _)| p);
            conn.prepare_cached(INSERT)
                .unwrap()
                .execute(params![
                    id,
                    key,
                    created as i64,
                    deleted as i64,
                    id,
                    prev_id,
                    0,
                    b"v".as_slice()
                ])
                .unwrap();
            newest.insert(key.clone(), (id, deleted));
            rows.push((id, key, deleted));
        }
        let compacted = 3_456;
        let expected: std::collections::BTreeSet<i64> = rows
            .iter()
            .filter(|(id, key, deleted)| {
                *id > compacted
                    || (!deleted
                        && !rows
                            .iter()
                            .any(|(n, k, _)| k == key && n > id && *n <= compacted))
            })
            .map(|(id, _, _)| *id)
            .collect();
        let mut swept = 0;
        let mut steps = 0;
        while swept < compacted {
            swept = sweep_step(&conn, swept, compacted).unwrap();
            steps += 1;
        }
        assert_eq!(swept, compacted);
        assert_eq!(steps, 4, "1,000 rows a step");
        let left: std::collections::BTreeSet<i64> = conn
            .prepare("SELECT id FROM kv")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(left, expected);
        // Nothing more to do at the same revision.
        assert_eq!(sweep_step(&conn, swept, compacted).unwrap(), compacted);
    }
}
