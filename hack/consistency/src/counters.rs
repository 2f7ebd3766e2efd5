//! No acknowledged increment is lost or applied twice.
//!
//! A counter is a key that is created once and then only incremented by read-modify-write
//! loops: read (value n, rv r), update with `expected_rv = r` to n + 1, retry on conflict. Every
//! update of a counter is such an increment (the runner makes no other), and a counter is never
//! deleted (keys with any delete are not counters). Then, with `initial` the created value,
//! `acked` the acknowledged updates and `unknown` the updates whose outcome is unknown, the final
//! value must satisfy `initial + acked <= final <= initial + acked + unknown`: below is an
//! acknowledged increment lost, above an increment applied twice (or a write nobody made).
//!
//! The final value is the one the last successful read shows (a GET, or a consistent LIST
//! item) among the reads invoked after every acknowledged update of the counter completed.
//! Two acknowledged increments that wrote the same value are also a lost update: each started
//! from a different read, or one overwrote the other.

use crate::history::*;
use crate::report::{Check, Violation};
use crate::writes::by_key;
use std::collections::BTreeMap;

/// A key that could not be checked, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub key: Key,
    pub why: String,
}

pub fn check(h: &History, out: &mut Vec<Violation>) -> Vec<Skipped> {
    let mut skipped = Vec::new();
    for (key, ops) in by_key(h) {
        if ops
            .iter()
            .any(|op| matches!(op.kind, OpKind::Delete { .. }))
        {
            continue;
        }
        let creates: Vec<&Op> = ops
            .iter()
            .copied()
            .filter(|op| {
                matches!(
                    op.kind,
                    OpKind::Create {
                        outcome: CreateOutcome::Ok { .. } | CreateOutcome::Unknown { .. },
                        ..
                    }
                )
            })
            .collect();
        let Some(create) = creates.first() else {
            continue;
        };
        let OpKind::Create { value: initial, .. } = create.kind else {
            continue;
        };
        if creates
            .iter()
            .any(|op| matches!(op.kind, OpKind::Create { value, .. } if value != initial))
        {
            let why = "creates with different initial values".to_owned();
            skipped.push(Skipped {
                key: key.to_owned(),
                why,
            });
            continue;
        }
        let mut acked = 0i64;
        let mut unknown = 0i64;
        let mut last_acked_done = create.complete.unwrap_or(0);
        let mut by_value: BTreeMap<Value, &Op> = BTreeMap::new();
        for op in &ops {
            if let OpKind::Update { value, outcome, .. } = &op.kind {
                match outcome {
                    UpdateOutcome::Ok { .. } => {
                        acked += 1;
                        last_acked_done = last_acked_done.max(op.complete.unwrap_or(u64::MAX));
                        if let Some(first) = by_value.insert(*value, *op) {
                            out.push(Violation {
                                check: Check::Counters,
                                message: format!(
                                    "counter {key}: ops {} and {} both acknowledged an increment \
                                     to {value}: one increment was lost",
                                    first.id, op.id
                                ),
                                ops: vec![first.id, op.id],
                                watches: Vec::new(),
                            });
                        }
                    }
                    UpdateOutcome::Unknown { .. } => unknown += 1,
                    _ => {}
                }
            }
        }
        let Some((read, value)) = final_read(h, key, &ops, last_acked_done) else {
            let why = "no successful read after the last acknowledged increment".to_owned();
            skipped.push(Skipped {
                key: key.to_owned(),
                why,
            });
            continue;
        };
        let Some(value) = value else {
            out.push(Violation {
                check: Check::Counters,
                message: format!(
                    "counter {key}: the final read (op {}) found no object",
                    read.id
                ),
                ops: vec![read.id, create.id],
                watches: Vec::new(),
            });
            continue;
        };
        let low = initial + acked;
        let high = low + unknown;
        let message = if value < low {
            format!(
                "counter {key}: the final read (op {}) shows {value}, but it was created with \
                 {initial} (op {}) and {acked} increments were acknowledged: {} acknowledged \
                 increment(s) lost",
                read.id,
                create.id,
                low - value
            )
        } else if value > high {
            format!(
                "counter {key}: the final read (op {}) shows {value}, more than the initial \
                 {initial} (op {}) plus {acked} acknowledged and {unknown} unknown increments: \
                 {} increment(s) applied twice",
                read.id,
                create.id,
                value - high
            )
        } else {
            continue;
        };
        out.push(Violation {
            check: Check::Counters,
            message,
            ops: vec![read.id, create.id],
            watches: Vec::new(),
        });
    }
    skipped
}

/// The last successful read of `key` invoked after `after`: the op and the value it showed
/// (`None`: the key was absent).
fn final_read<'a>(
    h: &'a History,
    key: &str,
    ops: &[&'a Op],
    after: u64,
) -> Option<(&'a Op, Option<Value>)> {
    let gets = ops.iter().filter_map(|op| match &op.kind {
        OpKind::Get {
            outcome: GetOutcome::Found { value, .. },
            ..
        } => Some((*op, Some(*value))),
        OpKind::Get {
            outcome: GetOutcome::NotFound,
            ..
        } => Some((*op, None)),
        _ => None,
    });
    // Only complete consistent LISTs say the key is absent when it is not among the items.
    let lists = h.ops.iter().filter_map(|op| match &op.kind {
        OpKind::List {
            prefix,
            resource_version,
            continue_token: None,
            outcome:
                ListOutcome::Ok {
                    items,
                    continue_token: None,
                    ..
                },
            ..
        } if resource_version.is_empty() && key.starts_with(prefix.as_str()) => {
            Some((op, items.iter().find(|i| i.key == key).map(|i| i.value)))
        }
        _ => None,
    });
    gets.chain(lists)
        .filter(|(op, _)| op.invoke > after)
        .max_by_key(|(op, _)| (op.invoke, op.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn run(h: &History) -> (Vec<Violation>, Vec<Skipped>) {
        let mut out = Vec::new();
        let skipped = check(h, &mut out);
        (out, skipped)
    }

    /// Two clients each increment "c" twice (one conflict retried); one increment times out.
    fn loops(final_value: Value) -> Builder {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.get(1, (11, 12), "c", Some((0, 100)));
        b.get(2, (11, 12), "c", Some((0, 100)));
        b.update(1, (13, 20), "c", 100, 1, 101);
        b.update_with(2, (14, 21), "c", 100, 1, UpdateOutcome::Conflict);
        b.get(2, (22, 23), "c", Some((1, 101)));
        b.update(2, (24, 30), "c", 101, 2, 102);
        b.get(1, (31, 32), "c", Some((2, 102)));
        b.update(1, (33, 40), "c", 102, 3, 103);
        b.get(2, (41, 42), "c", Some((3, 103)));
        b.update_unknown(2, (43, 50), "c", 103, 4);
        b.list(
            3,
            (100, 110),
            "",
            None,
            None,
            &[("c", final_value, 104)],
            104,
            None,
        );
        b
    }

    #[test]
    fn a_counter_within_bounds_passes_whether_the_unknown_increment_happened_or_not() {
        for final_value in [3, 4] {
            let (out, skipped) = run(&loops(final_value).h);
            assert!(out.is_empty(), "{out:?}");
            assert!(skipped.is_empty());
        }
    }

    #[test]
    fn a_lost_acknowledged_increment_is_caught() {
        let (out, _) = run(&loops(2).h);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].message,
            "counter c: the final read (op 12) shows 2, but it was created with 0 (op 1) and 3 \
             increments were acknowledged: 1 acknowledged increment(s) lost"
        );
        assert_eq!(out[0].ops, vec![12, 1]);
    }

    #[test]
    fn a_duplicated_increment_is_caught() {
        let (out, _) = run(&loops(5).h);
        assert_eq!(out.len(), 1);
        assert!(
            out[0].message.ends_with("1 increment(s) applied twice"),
            "{}",
            out[0].message
        );
    }

    #[test]
    fn two_acknowledged_increments_to_the_same_value_are_a_lost_update() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.update(1, (20, 30), "c", 100, 1, 101);
        b.update(2, (21, 31), "c", 100, 1, 102);
        b.get(1, (40, 50), "c", Some((1, 102)));
        let (out, _) = run(&b.h);
        let messages: Vec<_> = out.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "counter c: ops 2 and 3 both acknowledged an increment to 1: one increment was lost",
                "counter c: the final read (op 4) shows 1, but it was created with 0 (op 1) and 2 \
                 increments were acknowledged: 1 acknowledged increment(s) lost",
            ]
        );
    }

    #[test]
    fn reads_before_the_last_increment_do_not_count_and_deleted_keys_are_not_counters() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.update(1, (20, 30), "c", 100, 1, 101);
        b.get(2, (25, 35), "c", Some((0, 100)));
        let (out, skipped) = run(&b.h);
        assert!(out.is_empty());
        assert_eq!(skipped.len(), 1);
        let mut b = Builder::new();
        b.create(1, (0, 10), "d", 0, 100);
        b.delete(1, (20, 30), "d", None, DeleteOutcome::Ok { rv: None });
        b.get(2, (40, 50), "d", None);
        assert_eq!(run(&b.h), (Vec::new(), Vec::new()));
    }
}
