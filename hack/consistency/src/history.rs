//! The recorded history: every operation a client sent, when it was sent, when (if ever) its
//! answer came back, and what the answer was; and every watch stream with the events it
//! delivered in arrival order.
//!
//! A runner writes one [`Record`] per line (JSON lines) as operations complete, and the checker
//! reads the file back with [`History::from_jsonl`]. Times are nanoseconds from one monotonic
//! clock shared by every client of the run (an `Instant` taken at the start of the run), so
//! "A completed before B was invoked" is a comparison of two numbers.
//!
//! Values are `i64`: the run's objects are counters (a ConfigMap whose `data.n` holds the
//! integer), every check compares values only for equality, and the counter check adds them.
//! An integer keeps the histories small and the comparisons exact; a runner writing other
//! objects maps whatever it writes to a distinct integer.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, BufRead, Write};

/// An object's name within the run (`namespace/name`, or just `name` when the run uses one
/// namespace). Every key starts absent: the runner writes into a fresh namespace.
pub type Key = String;
/// A resourceVersion as the server returned it. kapi's (like etcd's revisions) are integers
/// that grow with every write to any key, which the checks rely on.
pub type Rv = u64;
/// What an object holds: the counter.
pub type Value = i64;

/// One line of a history file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    Op(Op),
    Watch(Watch),
}

/// One request and its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// Unique across the history (operations and watches share one id space).
    pub id: u64,
    /// The client (process, in the literature) that sent it. A client sends one request at a
    /// time; after an `Unknown` outcome a runner may carry on with the same client id, the
    /// checker does not assume clients are sequential.
    pub client: u64,
    /// When the request was sent.
    pub invoke: u64,
    /// When the answer came back; `None` if it never did (still running when the run ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<u64>,
    pub kind: OpKind,
}

/// What was asked, with what came back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum OpKind {
    /// POST of a new object.
    Create {
        key: Key,
        value: Value,
        outcome: CreateOutcome,
    },
    /// GET of one object (a consistent read: no resourceVersion parameter).
    Get { key: Key, outcome: GetOutcome },
    /// PUT with `metadata.resourceVersion = expected_rv` (compare-and-swap).
    Update {
        key: Key,
        expected_rv: Rv,
        value: Value,
        outcome: UpdateOutcome,
    },
    /// DELETE, with a `preconditions.resourceVersion` or without.
    Delete {
        key: Key,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected_rv: Option<Rv>,
        outcome: DeleteOutcome,
    },
    /// One LIST request (one page of a paged walk). `prefix` selects the keys listed ("" for
    /// all); `resource_version` is the parameter as sent: "" (consistent read), "0" (any
    /// version) or a number (not older than it).
    List {
        #[serde(default)]
        prefix: String,
        #[serde(default)]
        resource_version: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u64>,
        /// The `continue` parameter sent: `None` for the first page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        continue_token: Option<String>,
        outcome: ListOutcome,
    },
}

/// A create's answer. `Fail` is an answer that proves nothing was written (a 4xx); `Unknown`
/// is a timeout, a lost connection or a 5xx: the write may or may not have happened, now or
/// later.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreateOutcome {
    Ok { rv: Rv },
    AlreadyExists,
    Fail { reason: String },
    Unknown { reason: String },
}

/// A get's answer. A read that failed or timed out changed nothing and proves nothing: `Fail`
/// and `Unknown` are both left out of every check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GetOutcome {
    Found { value: Value, rv: Rv },
    NotFound,
    Fail { reason: String },
    Unknown { reason: String },
}

/// A compare-and-swap update's answer: `Conflict` is 409 (the object's resourceVersion was
/// not `expected_rv`), `NotFound` is 404.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateOutcome {
    Ok { rv: Rv },
    Conflict,
    NotFound,
    Fail { reason: String },
    Unknown { reason: String },
}

/// A delete's answer. `rv` is the resourceVersion of the deletion when the answer carried the
/// deleted object; kube-apiserver answers most kinds (ConfigMaps among them) with a Status,
/// which has none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeleteOutcome {
    Ok {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rv: Option<Rv>,
    },
    NotFound,
    Conflict,
    Fail {
        reason: String,
    },
    Unknown {
        reason: String,
    },
}

/// A LIST page's answer: its items, the list's resourceVersion and the continue token for the
/// next page (`None` on the last page). `Gone` is 410 (an expired continue token or a
/// compacted resourceVersion).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListOutcome {
    Ok {
        items: Vec<Item>,
        list_rv: Rv,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        continue_token: Option<String>,
    },
    Gone,
    Fail {
        reason: String,
    },
    Unknown {
        reason: String,
    },
}

/// One object of a LIST answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub key: Key,
    pub value: Value,
    pub rv: Rv,
}

/// One watch stream: from which resourceVersion it started, over which keys, every event in
/// arrival order, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    pub id: u64,
    pub client: u64,
    /// When the watch request was sent.
    pub invoke: u64,
    /// When the stream ended; `None` if it was still open when the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<u64>,
    /// The keys watched: those starting with this ("" for all).
    #[serde(default)]
    pub prefix: String,
    /// The `resourceVersion` parameter: the stream must deliver exactly the events after it.
    /// (Watches from "" or "0", which start with synthetic ADDED events, are not recorded: the
    /// runner starts its watches from a LIST's resourceVersion, as an informer does.)
    pub from_rv: Rv,
    pub events: Vec<Event>,
    pub end: WatchEnd,
}

/// One watch event as it arrived.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// When it arrived.
    pub at: u64,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The object's key; empty for a BOOKMARK.
    #[serde(default)]
    pub key: Key,
    /// The object's value; for DELETED the last value it held, `None` for a BOOKMARK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    pub rv: Rv,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
}

/// How a watch stream ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchEnd {
    /// The server closed the stream without an error (the client would resume from its last
    /// resourceVersion).
    Closed,
    /// 410 Gone, or an ERROR event saying the resourceVersion is too old (the client would
    /// re-list).
    Gone,
    /// Any other error: a lost connection, an ERROR event of another kind.
    Error { reason: String },
    /// Still open when the run ended.
    Open,
}

/// Whether an operation changed the stored state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// It did not write (a read, or a write whose answer proves it did not happen).
    None,
    /// It wrote, and the answer said so.
    Acked,
    /// It may have written, at any time after its invocation.
    Maybe,
}

impl OpKind {
    /// The object this operation is about; `None` for a LIST.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Create { key, .. }
            | Self::Get { key, .. }
            | Self::Update { key, .. }
            | Self::Delete { key, .. } => Some(key.as_str()),
            Self::List { .. } => None,
        }
    }

    /// "create", "get", ...
    pub fn name(&self) -> &'static str {
        match self {
            Self::Create { .. } => "create",
            Self::Get { .. } => "get",
            Self::Update { .. } => "update",
            Self::Delete { .. } => "delete",
            Self::List { .. } => "list",
        }
    }

    /// The outcome's name: "ok", "conflict", "unknown", ...
    pub fn outcome_name(&self) -> &'static str {
        match self {
            Self::Create { outcome, .. } => match outcome {
                CreateOutcome::Ok { .. } => "ok",
                CreateOutcome::AlreadyExists => "already_exists",
                CreateOutcome::Fail { .. } => "fail",
                CreateOutcome::Unknown { .. } => "unknown",
            },
            Self::Get { outcome, .. } => match outcome {
                GetOutcome::Found { .. } => "found",
                GetOutcome::NotFound => "not_found",
                GetOutcome::Fail { .. } => "fail",
                GetOutcome::Unknown { .. } => "unknown",
            },
            Self::Update { outcome, .. } => match outcome {
                UpdateOutcome::Ok { .. } => "ok",
                UpdateOutcome::Conflict => "conflict",
                UpdateOutcome::NotFound => "not_found",
                UpdateOutcome::Fail { .. } => "fail",
                UpdateOutcome::Unknown { .. } => "unknown",
            },
            Self::Delete { outcome, .. } => match outcome {
                DeleteOutcome::Ok { .. } => "ok",
                DeleteOutcome::NotFound => "not_found",
                DeleteOutcome::Conflict => "conflict",
                DeleteOutcome::Fail { .. } => "fail",
                DeleteOutcome::Unknown { .. } => "unknown",
            },
            Self::List { outcome, .. } => match outcome {
                ListOutcome::Ok { .. } => "ok",
                ListOutcome::Gone => "gone",
                ListOutcome::Fail { .. } => "fail",
                ListOutcome::Unknown { .. } => "unknown",
            },
        }
    }

    /// Whether this operation wrote.
    pub fn effect(&self) -> Effect {
        match self {
            Self::Create {
                outcome: CreateOutcome::Ok { .. },
                ..
            }
            | Self::Update {
                outcome: UpdateOutcome::Ok { .. },
                ..
            }
            | Self::Delete {
                outcome: DeleteOutcome::Ok { .. },
                ..
            } => Effect::Acked,
            Self::Create {
                outcome: CreateOutcome::Unknown { .. },
                ..
            }
            | Self::Update {
                outcome: UpdateOutcome::Unknown { .. },
                ..
            }
            | Self::Delete {
                outcome: DeleteOutcome::Unknown { .. },
                ..
            } => Effect::Maybe,
            _ => Effect::None,
        }
    }

    /// The resourceVersion an acknowledged write returned, when the answer carried one.
    pub fn written_rv(&self) -> Option<Rv> {
        match self {
            Self::Create {
                outcome: CreateOutcome::Ok { rv },
                ..
            }
            | Self::Update {
                outcome: UpdateOutcome::Ok { rv },
                ..
            } => Some(*rv),
            Self::Delete {
                outcome: DeleteOutcome::Ok { rv },
                ..
            } => *rv,
            _ => None,
        }
    }

    /// What a write leaves behind: `Some(value)` for a create or update, `None` for a delete.
    /// `None` from the outer option for reads.
    pub fn written_value(&self) -> Option<Option<Value>> {
        match self {
            Self::Create { value, .. } | Self::Update { value, .. } => Some(Some(*value)),
            Self::Delete { .. } => Some(None),
            Self::Get { .. } | Self::List { .. } => None,
        }
    }
}

impl Op {
    /// The completion time a checker must assume: an operation whose outcome is unknown may
    /// take effect at any time after its invocation, so it never completes.
    pub fn effective_complete(&self) -> u64 {
        match (self.kind.effect(), self.complete) {
            (Effect::Maybe, _) | (_, None) => u64::MAX,
            (_, Some(t)) => t,
        }
    }

    /// Whether it completed (with any answer) before `t`.
    pub fn completed_before(&self, t: u64) -> bool {
        self.complete.is_some_and(|c| c < t)
    }
}

/// A whole run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    pub ops: Vec<Op>,
    pub watches: Vec<Watch>,
}

/// A history file that could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    /// Line `line` (1-based) is not a record.
    Parse {
        line: usize,
        error: serde_json::Error,
    },
    /// Two records share an id.
    DuplicateId {
        line: usize,
        id: u64,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "reading the history: {e}"),
            Self::Parse { line, error } => write!(f, "line {line}: {error}"),
            Self::DuplicateId { line, id } => write!(f, "line {line}: id {id} is used twice"),
        }
    }
}

impl std::error::Error for ReadError {}

impl History {
    /// Reads JSON lines, one [`Record`] a line; blank lines are skipped.
    pub fn from_jsonl(reader: impl BufRead) -> Result<Self, ReadError> {
        let mut history = Self::default();
        let mut ids = std::collections::HashSet::new();
        for (n, line) in reader.lines().enumerate() {
            let line = line.map_err(ReadError::Io)?;
            if line.trim().is_empty() {
                continue;
            }
            let number = n + 1;
            let record: Record = serde_json::from_str(&line).map_err(|error| ReadError::Parse {
                line: number,
                error,
            })?;
            let id = match &record {
                Record::Op(op) => op.id,
                Record::Watch(w) => w.id,
            };
            if !ids.insert(id) {
                return Err(ReadError::DuplicateId { line: number, id });
            }
            match record {
                Record::Op(op) => history.ops.push(op),
                Record::Watch(w) => history.watches.push(w),
            }
        }
        Ok(history)
    }

    /// Writes every record as JSON lines: the operations, then the watches.
    pub fn write_jsonl(&self, mut writer: impl Write) -> io::Result<()> {
        for op in &self.ops {
            write_record(&mut writer, &Record::Op(op.clone()))?;
        }
        for w in &self.watches {
            write_record(&mut writer, &Record::Watch(w.clone()))?;
        }
        Ok(())
    }

    /// The operation with this id.
    pub fn op(&self, id: u64) -> Option<&Op> {
        self.ops.iter().find(|op| op.id == id)
    }

    /// The watch with this id.
    pub fn watch(&self, id: u64) -> Option<&Watch> {
        self.watches.iter().find(|w| w.id == id)
    }
}

/// Writes one record as a line: what a runner calls as each operation completes.
pub fn write_record(mut writer: impl Write, record: &Record) -> io::Result<()> {
    serde_json::to_writer(&mut writer, record)?;
    writer.write_all(b"\n")
}

/// Nanoseconds as milliseconds with three decimals.
pub(crate) fn ms(ns: u64) -> String {
    format!("{}.{:03}ms", ns / 1_000_000, (ns / 1_000) % 1_000)
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let done = self.complete.map_or_else(|| "never".to_owned(), ms);
        write!(
            f,
            "op {} client {} [{} -> {}] ",
            self.id,
            self.client,
            ms(self.invoke),
            done
        )?;
        write!(f, "{}", self.kind)
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Create {
                key,
                value,
                outcome,
            } => {
                write!(f, "create {key} value={value} -> ")?;
                match outcome {
                    CreateOutcome::Ok { rv } => write!(f, "ok rv={rv}"),
                    CreateOutcome::AlreadyExists => write!(f, "already exists"),
                    CreateOutcome::Fail { reason } => write!(f, "failed ({reason})"),
                    CreateOutcome::Unknown { reason } => write!(f, "unknown ({reason})"),
                }
            }
            Self::Get { key, outcome } => {
                write!(f, "get {key} -> ")?;
                match outcome {
                    GetOutcome::Found { value, rv } => write!(f, "value={value} rv={rv}"),
                    GetOutcome::NotFound => write!(f, "not found"),
                    GetOutcome::Fail { reason } => write!(f, "failed ({reason})"),
                    GetOutcome::Unknown { reason } => write!(f, "unknown ({reason})"),
                }
            }
            Self::Update {
                key,
                expected_rv,
                value,
                outcome,
            } => {
                write!(
                    f,
                    "update {key} expected_rv={expected_rv} value={value} -> "
                )?;
                match outcome {
                    UpdateOutcome::Ok { rv } => write!(f, "ok rv={rv}"),
                    UpdateOutcome::Conflict => write!(f, "conflict"),
                    UpdateOutcome::NotFound => write!(f, "not found"),
                    UpdateOutcome::Fail { reason } => write!(f, "failed ({reason})"),
                    UpdateOutcome::Unknown { reason } => write!(f, "unknown ({reason})"),
                }
            }
            Self::Delete {
                key,
                expected_rv,
                outcome,
            } => {
                write!(f, "delete {key}")?;
                if let Some(rv) = expected_rv {
                    write!(f, " expected_rv={rv}")?;
                }
                write!(f, " -> ")?;
                match outcome {
                    DeleteOutcome::Ok { rv: Some(rv) } => write!(f, "ok rv={rv}"),
                    DeleteOutcome::Ok { rv: None } => write!(f, "ok"),
                    DeleteOutcome::NotFound => write!(f, "not found"),
                    DeleteOutcome::Conflict => write!(f, "conflict"),
                    DeleteOutcome::Fail { reason } => write!(f, "failed ({reason})"),
                    DeleteOutcome::Unknown { reason } => write!(f, "unknown ({reason})"),
                }
            }
            Self::List {
                prefix,
                resource_version,
                limit,
                continue_token,
                outcome,
            } => {
                write!(
                    f,
                    "list prefix={prefix:?} resourceVersion={resource_version:?}"
                )?;
                if let Some(limit) = limit {
                    write!(f, " limit={limit}")?;
                }
                if let Some(token) = continue_token {
                    write!(f, " continue={token:?}")?;
                }
                write!(f, " -> ")?;
                match outcome {
                    ListOutcome::Ok {
                        items,
                        list_rv,
                        continue_token,
                    } => {
                        write!(f, "rv={list_rv} [")?;
                        for (i, item) in items.iter().enumerate() {
                            let sep = if i == 0 { "" } else { ", " };
                            write!(f, "{sep}{}={}@{}", item.key, item.value, item.rv)?;
                        }
                        write!(f, "]")?;
                        match continue_token {
                            Some(token) => write!(f, " continue={token:?}"),
                            None => Ok(()),
                        }
                    }
                    ListOutcome::Gone => write!(f, "410 gone"),
                    ListOutcome::Fail { reason } => write!(f, "failed ({reason})"),
                    ListOutcome::Unknown { reason } => write!(f, "unknown ({reason})"),
                }
            }
        }
    }
}

impl fmt::Display for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let done = self.complete.map_or_else(|| "never".to_owned(), ms);
        write!(
            f,
            "watch {} client {} [{} -> {}] prefix={:?} from rv={}: {} events, ended {}",
            self.id,
            self.client,
            ms(self.invoke),
            done,
            self.prefix,
            self.from_rv,
            self.events.len(),
            match &self.end {
                WatchEnd::Closed => "closed".to_owned(),
                WatchEnd::Gone => "410 gone".to_owned(),
                WatchEnd::Error { reason } => format!("with an error ({reason})"),
                WatchEnd::Open => "open".to_owned(),
            }
        )
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
        };
        write!(f, "{kind} ")?;
        if self.kind != EventType::Bookmark {
            write!(f, "{} ", self.key)?;
        }
        if let Some(v) = self.value {
            write!(f, "value={v} ")?;
        }
        write!(f, "rv={} at {}", self.rv, ms(self.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_as_json_lines() {
        let history = History {
            ops: vec![
                Op {
                    id: 1,
                    client: 7,
                    invoke: 10,
                    complete: Some(20),
                    kind: OpKind::Create {
                        key: "c0".into(),
                        value: 0,
                        outcome: CreateOutcome::Ok { rv: 5 },
                    },
                },
                Op {
                    id: 2,
                    client: 7,
                    invoke: 30,
                    complete: None,
                    kind: OpKind::Update {
                        key: "c0".into(),
                        expected_rv: 5,
                        value: 1,
                        outcome: UpdateOutcome::Unknown {
                            reason: "timeout".into(),
                        },
                    },
                },
                Op {
                    id: 3,
                    client: 8,
                    invoke: 31,
                    complete: Some(40),
                    kind: OpKind::List {
                        prefix: String::new(),
                        resource_version: String::new(),
                        limit: Some(1),
                        continue_token: None,
                        outcome: ListOutcome::Ok {
                            items: vec![Item {
                                key: "c0".into(),
                                value: 0,
                                rv: 5,
                            }],
                            list_rv: 5,
                            continue_token: Some("abc".into()),
                        },
                    },
                },
            ],
            watches: vec![Watch {
                id: 4,
                client: 9,
                invoke: 1,
                complete: None,
                prefix: String::new(),
                from_rv: 4,
                events: vec![Event {
                    at: 21,
                    kind: EventType::Added,
                    key: "c0".into(),
                    value: Some(0),
                    rv: 5,
                }],
                end: WatchEnd::Open,
            }],
        };
        let mut out = Vec::new();
        history.write_jsonl(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 4);
        assert!(text.starts_with(r#"{"record":"op","id":1,"client":7,"invoke":10,"complete":20,"kind":{"op":"create","key":"c0","value":0,"outcome":{"ok":{"rv":5}}}}"#), "{text}");
        assert!(text.contains(r#""type":"ADDED""#), "{text}");
        let back = History::from_jsonl(text.as_bytes()).unwrap();
        assert_eq!(back, history);
    }

    #[test]
    fn a_bad_line_is_named() {
        let text = "{\"record\":\"op\",\"id\":1}\n";
        let err = History::from_jsonl(text.as_bytes()).unwrap_err();
        assert!(err.to_string().starts_with("line 1: "), "{err}");
        let dup = concat!(
            r#"{"record":"op","id":1,"client":0,"invoke":0,"kind":{"op":"get","key":"a","outcome":"not_found"}}"#,
            "\n\n",
            r#"{"record":"op","id":1,"client":0,"invoke":0,"kind":{"op":"get","key":"a","outcome":"not_found"}}"#,
        );
        let err = History::from_jsonl(dup.as_bytes()).unwrap_err();
        assert_eq!(err.to_string(), "line 3: id 1 is used twice");
    }

    #[test]
    fn unknown_outcomes_never_complete() {
        let op = Op {
            id: 1,
            client: 0,
            invoke: 5,
            complete: Some(9),
            kind: OpKind::Delete {
                key: "a".into(),
                expected_rv: None,
                outcome: DeleteOutcome::Unknown {
                    reason: "connection reset".into(),
                },
            },
        };
        assert_eq!(op.effective_complete(), u64::MAX);
        assert_eq!(op.kind.effect(), Effect::Maybe);
        assert_eq!(
            op.to_string(),
            "op 1 client 0 [0.000ms -> 0.000ms] delete a -> unknown (connection reset)"
        );
    }
}
