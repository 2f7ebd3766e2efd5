//! The writes known to have happened, by resourceVersion: the global order the watch and LIST
//! checks compare against.
//!
//! An acknowledged create or update returned its resourceVersion. A write whose outcome is
//! unknown, and a delete answered with a Status, did not; such a write is placed when some read
//! saw it: a GET or LIST item showing a value at an rv no acknowledged write returned, or a
//! watch event. The observation is attributed to a write of that key that could have made it
//! (same value, the right kind, invoked before the observation); if none could, it stays out of
//! the table and the observing check reports "a write nobody made".

use crate::history::*;
use std::collections::{BTreeMap, HashMap};

/// A write at one resourceVersion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Write {
    pub key: Key,
    /// What it left: `None` for a delete.
    pub value: Option<Value>,
    /// The operation that made it.
    pub op: u64,
    /// When that operation was invoked.
    pub invoke: u64,
    /// Whether it was a create (a watch shows it as ADDED, an update as MODIFIED).
    pub created: bool,
    /// Whether this rv came with the operation's answer (else a read or a watch saw it).
    pub acked: bool,
}

/// How a write was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// A GET or LIST item: the object existed with this value.
    Read(Value),
    /// A watch event of this type (with the object's value, for ADDED and MODIFIED).
    Event(EventType, Option<Value>),
}

pub(crate) struct Writes {
    pub by_rv: BTreeMap<Rv, Write>,
}

/// The single-object operations of each key, in history order.
pub(crate) fn by_key(h: &History) -> BTreeMap<&str, Vec<&Op>> {
    let mut keys: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &h.ops {
        if let Some(key) = op.kind.key() {
            keys.entry(key).or_default().push(op);
        }
    }
    keys
}

impl Writes {
    pub fn build(h: &History) -> Self {
        let mut by_rv = BTreeMap::new();
        // Writes whose rv is not known from their answer, per key.
        let mut unplaced: HashMap<&str, Vec<&Op>> = HashMap::new();
        for op in &h.ops {
            let (Some(key), Some(value)) = (op.kind.key(), op.kind.written_value()) else {
                continue;
            };
            match (op.kind.effect(), op.kind.written_rv()) {
                (Effect::Acked, Some(rv)) => {
                    // A second write at the same rv is the rv check's violation; keep the first.
                    by_rv.entry(rv).or_insert(Write {
                        key: key.to_owned(),
                        value,
                        op: op.id,
                        invoke: op.invoke,
                        created: matches!(op.kind, OpKind::Create { .. }),
                        acked: true,
                    });
                }
                (Effect::Acked | Effect::Maybe, None) => unplaced.entry(key).or_default().push(op),
                _ => {}
            }
        }
        let mut writes = Self { by_rv };
        let mut observe = |key: &str, seen: Seen, rv: Rv, at: u64| {
            if writes.by_rv.contains_key(&rv) {
                return;
            }
            let ops = unplaced.get(key).map_or(&[][..], Vec::as_slice);
            if let Some(op) = ops.iter().find(|op| could_make(op, seen, at)) {
                let value = match seen {
                    Seen::Read(v) => Some(v),
                    Seen::Event(EventType::Deleted, _) => None,
                    Seen::Event(_, v) => v,
                };
                let write = Write {
                    key: key.to_owned(),
                    value,
                    op: op.id,
                    invoke: op.invoke,
                    created: matches!(op.kind, OpKind::Create { .. }),
                    acked: false,
                };
                writes.by_rv.insert(rv, write);
            }
        };
        for op in &h.ops {
            let at = op.complete.unwrap_or(u64::MAX);
            match &op.kind {
                OpKind::Get {
                    key,
                    outcome: GetOutcome::Found { value, rv },
                } => {
                    observe(key, Seen::Read(*value), *rv, at);
                }
                OpKind::List {
                    outcome: ListOutcome::Ok { items, .. },
                    ..
                } => {
                    for item in items {
                        observe(&item.key, Seen::Read(item.value), item.rv, at);
                    }
                }
                _ => {}
            }
        }
        for w in &h.watches {
            for e in &w.events {
                if e.kind != EventType::Bookmark {
                    observe(&e.key, Seen::Event(e.kind, e.value), e.rv, e.at);
                }
            }
        }
        writes
    }

    /// The writes to keys starting with `prefix` with `after < rv <= upto`.
    pub fn in_range<'a>(
        &'a self,
        prefix: &'a str,
        after: Rv,
        upto: Rv,
    ) -> impl Iterator<Item = (Rv, &'a Write)> + 'a {
        let range = (
            std::ops::Bound::Excluded(after),
            std::ops::Bound::Included(upto),
        );
        let range = if after >= upto {
            None
        } else {
            Some(self.by_rv.range(range))
        };
        range
            .into_iter()
            .flatten()
            .filter(move |(_, w)| w.key.starts_with(prefix))
            .map(|(rv, w)| (*rv, w))
    }
}

/// Whether `op` (a write whose rv is unknown) could be what was seen at time `at`.
pub(crate) fn could_make(op: &Op, seen: Seen, at: u64) -> bool {
    if op.invoke > at {
        return false;
    }
    match (seen, &op.kind) {
        (Seen::Read(v), OpKind::Create { value, .. } | OpKind::Update { value, .. }) => *value == v,
        (Seen::Event(EventType::Added, v), OpKind::Create { value, .. })
        | (Seen::Event(EventType::Modified, v), OpKind::Update { value, .. }) => v == Some(*value),
        (Seen::Event(EventType::Deleted, _), OpKind::Delete { .. }) => true,
        _ => false,
    }
}

/// What a write did, for messages: "create of a value=3", "delete of a".
pub(crate) fn describe(rv: Rv, w: &Write) -> String {
    let how = if w.acked {
        ""
    } else {
        ", its rv known from a read or watch"
    };
    match w.value {
        Some(v) => format!(
            "the write of {} value={v} at rv={rv} (op {}{how})",
            w.key, w.op
        ),
        None => format!("the delete of {} at rv={rv} (op {}{how})", w.key, w.op),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn unacknowledged_writes_are_placed_by_what_saw_them() {
        let mut b = Builder::new();
        let c = b.create(1, (0, 10), "a", 0, 5);
        let u = b.update_unknown(2, (20, 30), "a", 5, 1);
        let d = b.delete(1, (40, 50), "a", None, DeleteOutcome::Ok { rv: None });
        b.get(3, (31, 32), "a", Some((1, 7)));
        b.watch(
            4,
            1,
            4,
            vec![
                ev(11, EventType::Added, "a", 0, 5),
                ev(25, EventType::Modified, "a", 1, 7),
                ev(45, EventType::Deleted, "a", 1, 9),
                // Nobody wrote 42.
                ev(46, EventType::Added, "a", 42, 11),
            ],
            WatchEnd::Open,
        );
        let writes = Writes::build(&b.h);
        let ops: Vec<_> = writes
            .by_rv
            .iter()
            .map(|(rv, w)| (*rv, w.op, w.acked, w.value))
            .collect();
        assert_eq!(
            ops,
            vec![
                (5, c, true, Some(0)),
                (7, u, false, Some(1)),
                (9, d, false, None)
            ]
        );
        assert_eq!(
            writes
                .in_range("", 5, 9)
                .map(|(rv, _)| rv)
                .collect::<Vec<_>>(),
            vec![7, 9]
        );
        assert_eq!(writes.in_range("b", 0, 9).count(), 0);
        assert_eq!(writes.in_range("", 9, 5).count(), 0);
    }
}
