//! Single-object operations are linearizable, and resourceVersions grow with real time.
//!
//! Each key is a register with a version: absent, or present with (value, resourceVersion). A
//! create succeeds only on an absent key; an update with `expected_rv` succeeds only if the
//! current rv is that one (else 409); a get returns the current state; a delete removes the
//! object (if its precondition holds). The history of one key is linearizable if its operations
//! can be put in one order, each taking effect at an instant between its invocation and its
//! completion, in which every answer is the one the register gives. Keys are independent
//! objects, so each key's history is checked alone (P-compositionality: linearizability is
//! local) and stays small.
//!
//! The search is Wing & Gong's with Lowe's memoization, as Porcupine implements it: the call
//! and return entries in time order in a linked list; repeatedly take the first call whose
//! operation can take effect in the current state, lift it and its return out of the list, and
//! go on; on reaching a return whose call is still in the list (that operation cannot be put
//! off any longer), undo the last choice. A (set of operations linearized, state) pair that was
//! already explored is skipped, which makes the search practical.
//!
//! An operation whose outcome is unknown never returns: it may take effect at any time after its
//! invocation, or never (taking effect after everything else, or failing its precondition,
//! cannot be seen by any other operation). Its write's rv is unknown too: the state holds "value
//! at an unknown rv" until a read names the rv. The model's state is therefore a set of possible
//! states (an unknown update may or may not have applied), as Porcupine does for
//! nondeterministic models.
//!
//! Failed operations (`Fail`: proven not to have happened) and failed or timed-out reads take
//! no part. LISTs are checked by [`crate::lists`], not here.

use crate::history::*;
use crate::report::{Check, Violation};
use crate::writes::by_key;
use std::collections::{BTreeMap, HashSet};

/// The register's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum State {
    Absent,
    /// `rv` is `None` when an operation whose outcome is unknown wrote it.
    Present {
        value: Value,
        rv: Option<Rv>,
    },
}

/// How many search steps one key may take before it is reported as inconclusive.
pub const DEFAULT_BUDGET: u64 = 20_000_000;

/// A key whose search ran out of budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inconclusive {
    pub key: Key,
    pub ops: usize,
}

/// Checks every key; a key that is not linearizable gives one violation.
pub fn check(h: &History, budget: u64, out: &mut Vec<Violation>) -> Vec<Inconclusive> {
    let mut inconclusive = Vec::new();
    for (key, ops) in by_key(h) {
        let ops: Vec<&Op> = ops.into_iter().filter(|op| takes_part(&op.kind)).collect();
        match search(&ops, budget) {
            Search::Linearizable => {}
            Search::OutOfBudget => inconclusive.push(Inconclusive {
                key: key.to_owned(),
                ops: ops.len(),
            }),
            Search::Stuck {
                prefix,
                blocker,
                states,
            } => out.push(explain(key, &ops, &prefix, blocker, &states)),
        }
    }
    inconclusive
}

fn takes_part(kind: &OpKind) -> bool {
    !matches!(
        kind,
        OpKind::Create {
            outcome: CreateOutcome::Fail { .. },
            ..
        } | OpKind::Get {
            outcome: GetOutcome::Fail { .. } | GetOutcome::Unknown { .. },
            ..
        } | OpKind::Update {
            outcome: UpdateOutcome::Fail { .. },
            ..
        } | OpKind::Delete {
            outcome: DeleteOutcome::Fail { .. },
            ..
        } | OpKind::List { .. }
    )
}

/// `rv` (possibly unknown) may be `expected`.
fn may_be(rv: Option<Rv>, expected: Rv) -> bool {
    rv.is_none_or(|r| r == expected)
}

/// The states `op` may leave when applied to `s`; none if its answer is impossible in `s`.
fn step(s: State, op: &OpKind, next: &mut Vec<State>) {
    use State::{Absent, Present};
    match op {
        OpKind::Create { value, outcome, .. } => match (outcome, s) {
            (CreateOutcome::Ok { rv }, Absent) => next.push(Present {
                value: *value,
                rv: Some(*rv),
            }),
            (CreateOutcome::AlreadyExists, Present { .. }) => next.push(s),
            (CreateOutcome::Unknown { .. }, Absent) => {
                next.push(Absent);
                next.push(Present {
                    value: *value,
                    rv: None,
                });
            }
            (CreateOutcome::Unknown { .. }, Present { .. }) => next.push(s),
            _ => {}
        },
        OpKind::Get { outcome, .. } => match (outcome, s) {
            (GetOutcome::Found { value, rv }, Present { value: v, rv: r })
                if v == *value && may_be(r, *rv) =>
            {
                next.push(Present {
                    value: v,
                    rv: Some(*rv),
                });
            }
            (GetOutcome::NotFound, Absent) => next.push(Absent),
            _ => {}
        },
        OpKind::Update {
            expected_rv,
            value,
            outcome,
            ..
        } => match (outcome, s) {
            (UpdateOutcome::Ok { rv }, Present { rv: r, .. }) if may_be(r, *expected_rv) => {
                next.push(Present {
                    value: *value,
                    rv: Some(*rv),
                });
            }
            (UpdateOutcome::Conflict, Present { rv: r, .. }) if r != Some(*expected_rv) => {
                next.push(s)
            }
            (UpdateOutcome::NotFound | UpdateOutcome::Unknown { .. }, Absent) => next.push(Absent),
            (UpdateOutcome::Unknown { .. }, Present { rv: r, .. }) => {
                next.push(s);
                if may_be(r, *expected_rv) {
                    next.push(Present {
                        value: *value,
                        rv: None,
                    });
                }
            }
            _ => {}
        },
        OpKind::Delete {
            expected_rv,
            outcome,
            ..
        } => {
            let holds = |r: Option<Rv>| expected_rv.is_none_or(|e| may_be(r, e));
            match (outcome, s) {
                (DeleteOutcome::Ok { .. }, Present { rv: r, .. }) if holds(r) => next.push(Absent),
                (DeleteOutcome::NotFound | DeleteOutcome::Unknown { .. }, Absent) => {
                    next.push(Absent)
                }
                (DeleteOutcome::Conflict, Present { rv: r, .. })
                    if expected_rv.is_some() && r != *expected_rv =>
                {
                    next.push(s);
                }
                (DeleteOutcome::Unknown { .. }, Present { rv: r, .. }) => {
                    next.push(s);
                    if holds(r) {
                        next.push(Absent);
                    }
                }
                _ => {}
            }
        }
        OpKind::List { .. } => next.push(s),
    }
}

fn apply(states: &[State], op: &OpKind) -> Vec<State> {
    let mut next = Vec::new();
    for &s in states {
        step(s, op, &mut next);
    }
    next.sort_unstable();
    next.dedup();
    next
}

enum Search {
    Linearizable,
    OutOfBudget,
    /// No order exists. `prefix`: the longest order found (indices into the key's ops);
    /// `blocker`: the first operation that could not be placed after it; `states`: the
    /// register's possible states after the prefix.
    Stuck {
        prefix: Vec<usize>,
        blocker: usize,
        states: Vec<State>,
    },
}

const NIL: usize = usize::MAX;

/// The entries' doubly linked list. Entry `2i` is the call of op `i`, `2i + 1` its return;
/// `head` is a sentinel.
struct Entries {
    next: Vec<usize>,
    prev: Vec<usize>,
    head: usize,
}

impl Entries {
    fn new(ops: &[&Op]) -> Self {
        let n = ops.len() * 2;
        let time = |e: usize| {
            let op = ops[e / 2];
            if e.is_multiple_of(2) {
                op.invoke
            } else {
                op.effective_complete()
            }
        };
        let mut order: Vec<usize> = (0..n).collect();
        // At equal times calls come first: operations that touch are concurrent.
        order.sort_by_key(|&e| (time(e), e % 2, e));
        let head = n;
        let mut next = vec![NIL; n + 1];
        let mut prev = vec![NIL; n + 1];
        let mut last = head;
        for e in order {
            next[last] = e;
            prev[e] = last;
            last = e;
        }
        Self { next, prev, head }
    }

    /// Takes call `c` and its return out of the list.
    fn lift(&mut self, c: usize) {
        for e in [c, c + 1] {
            let (p, n) = (self.prev[e], self.next[e]);
            self.next[p] = n;
            if n != NIL {
                self.prev[n] = p;
            }
        }
    }

    /// Puts call `c` and its return back (the reverse of [`Self::lift`]).
    fn unlift(&mut self, c: usize) {
        for e in [c + 1, c] {
            let (p, n) = (self.prev[e], self.next[e]);
            self.next[p] = e;
            if n != NIL {
                self.prev[n] = e;
            }
        }
    }
}

fn search(ops: &[&Op], budget: u64) -> Search {
    let mut list = Entries::new(ops);
    let words = ops.len().div_ceil(64);
    let mut linearized = vec![0u64; words];
    let mut states = vec![State::Absent];
    // (call entry, states before it) for every operation placed, in order.
    let mut placed: Vec<(usize, Vec<State>)> = Vec::new();
    let mut seen: HashSet<(Vec<u64>, Vec<State>)> = HashSet::new();
    let mut best: (Vec<usize>, Option<(usize, Vec<State>)>) = (Vec::new(), None);
    let mut steps = 0u64;
    let mut entry = list.next[list.head];
    while list.next[list.head] != NIL {
        steps += 1;
        if steps > budget {
            return Search::OutOfBudget;
        }
        if entry != NIL && entry.is_multiple_of(2) {
            let i = entry / 2;
            let after = apply(&states, &ops[i].kind);
            if !after.is_empty() {
                let mut bits = linearized.clone();
                bits[i / 64] |= 1u64 << (i % 64);
                if seen.insert((bits.clone(), after.clone())) {
                    placed.push((entry, std::mem::replace(&mut states, after)));
                    linearized = bits;
                    list.lift(entry);
                    if placed.len() > best.0.len() {
                        best = (placed.iter().map(|(c, _)| c / 2).collect(), None);
                    }
                    entry = list.next[list.head];
                    continue;
                }
            }
            entry = list.next[entry];
        } else {
            // A return whose operation was not placed: it cannot be put off any longer.
            if placed.len() == best.0.len() && best.1.is_none() && entry != NIL {
                let prefix = placed.iter().map(|(c, _)| c / 2).collect();
                best = (prefix, Some((entry / 2, states.clone())));
            }
            let Some((call, before)) = placed.pop() else {
                let (prefix, blocked) = best;
                let (blocker, states) = blocked.unwrap_or((0, states));
                return Search::Stuck {
                    prefix,
                    blocker,
                    states,
                };
            };
            states = before;
            let i = call / 2;
            linearized[i / 64] &= !(1u64 << (i % 64));
            list.unlift(call);
            entry = list.next[call];
        }
    }
    Search::Linearizable
}

fn describe_states(states: &[State], ops: &[&Op]) -> String {
    let one = |s: &State| match s {
        State::Absent => "absent".to_owned(),
        State::Present {
            value,
            rv: Some(rv),
        } => match ops.iter().find(|op| op.kind.written_rv() == Some(*rv)) {
            Some(op) => format!("value={value} at rv={rv} (written by op {})", op.id),
            None => format!("value={value} at rv={rv}"),
        },
        State::Present { value, rv: None } => format!("value={value} at an rv no answer named"),
    };
    states.iter().map(one).collect::<Vec<_>>().join(" or ")
}

/// What `op`'s answer needs the key to be when it takes effect.
fn needs(op: &OpKind) -> String {
    match op {
        OpKind::Create {
            outcome: CreateOutcome::Ok { .. },
            ..
        }
        | OpKind::Get {
            outcome: GetOutcome::NotFound,
            ..
        }
        | OpKind::Update {
            outcome: UpdateOutcome::NotFound,
            ..
        }
        | OpKind::Delete {
            outcome: DeleteOutcome::NotFound,
            ..
        } => "the key absent".to_owned(),
        OpKind::Create { .. } => "the key present".to_owned(),
        OpKind::Get {
            outcome: GetOutcome::Found { value, rv },
            ..
        } => format!("value={value} at rv={rv}"),
        OpKind::Update {
            expected_rv,
            outcome: UpdateOutcome::Ok { .. },
            ..
        }
        | OpKind::Delete {
            expected_rv: Some(expected_rv),
            outcome: DeleteOutcome::Ok { .. },
            ..
        } => {
            format!("the key at rv={expected_rv}")
        }
        OpKind::Update { expected_rv, .. }
        | OpKind::Delete {
            expected_rv: Some(expected_rv),
            ..
        } => {
            format!("the key present at an rv other than {expected_rv}")
        }
        OpKind::Delete { .. } | OpKind::Get { .. } | OpKind::List { .. } => {
            "the key present".to_owned()
        }
    }
}

fn explain(
    key: &str,
    ops: &[&Op],
    prefix: &[usize],
    blocker: usize,
    states: &[State],
) -> Violation {
    let b = ops[blocker];
    let mut involved = vec![b.id];
    // The operations that made the state the blocker could not use.
    for s in states {
        if let State::Present { rv: Some(rv), .. } = s {
            if let Some(op) = ops.iter().find(|op| op.kind.written_rv() == Some(*rv)) {
                involved.push(op.id);
            }
        }
    }
    if let Some(&last) = prefix.last() {
        involved.push(ops[last].id);
    }
    let mut dedup = HashSet::new();
    involved.retain(|id| dedup.insert(*id));
    let order = match prefix.len() {
        0 => "before any operation took effect".to_owned(),
        n => format!(
            "after the longest order found ({n} of {} operations, the last op {})",
            ops.len(),
            prefix.last().map_or(0, |&i| ops[i].id)
        ),
    };
    let message = format!(
        "key {key} is not linearizable: op {} ({}) cannot take effect at any point between its \
         invocation and its answer; {order} the key was {}, and its answer needs {}",
        b.id,
        b.kind,
        describe_states(states, ops),
        needs(&b.kind),
    );
    Violation {
        check: Check::Linearizability,
        message,
        ops: involved,
        watches: Vec::new(),
    }
}

/// Every resourceVersion an acknowledged write returned is unique; an update's (and a
/// preconditioned delete's) is greater than the one it replaced; and they grow with real time:
/// a write invoked after another completed has the greater rv (etcd's revision is global).
pub fn check_rvs(h: &History, out: &mut Vec<Violation>) {
    let mut by_rv: BTreeMap<Rv, &Op> = BTreeMap::new();
    for op in &h.ops {
        let (Effect::Acked, Some(rv)) = (op.kind.effect(), op.kind.written_rv()) else {
            continue;
        };
        if let Some(first) = by_rv.get(&rv) {
            out.push(Violation {
                check: Check::ResourceVersions,
                message: format!(
                    "ops {} and {} both returned rv={rv}: two writes share a resourceVersion",
                    first.id, op.id
                ),
                ops: vec![first.id, op.id],
                watches: Vec::new(),
            });
            continue;
        }
        by_rv.insert(rv, op);
        let replaced = match &op.kind {
            OpKind::Update { expected_rv, .. } => Some(*expected_rv),
            OpKind::Delete { expected_rv, .. } => *expected_rv,
            _ => None,
        };
        if let Some(old) = replaced.filter(|old| rv <= *old) {
            out.push(Violation {
                check: Check::ResourceVersions,
                message: format!(
                    "op {} replaced rv={old} and returned rv={rv}, which is not greater",
                    op.id
                ),
                ops: vec![op.id],
                watches: Vec::new(),
            });
        }
    }
    // In rv order, the latest-invoked write so far must not have been invoked after this one
    // (with a greater rv) completed.
    let mut latest: Option<(Rv, &Op)> = None;
    for (&rv, &op) in &by_rv {
        if let (Some((lrv, l)), Some(done)) = (latest, op.complete) {
            if done < l.invoke {
                out.push(Violation {
                    check: Check::ResourceVersions,
                    message: format!(
                        "op {} got rv={lrv} but was invoked at {}, after op {} had completed at {} \
                         with the greater rv={rv}: resourceVersions went back in time",
                        l.id,
                        ms(l.invoke),
                        op.id,
                        ms(done)
                    ),
                    ops: vec![l.id, op.id],
                    watches: Vec::new(),
                });
            }
        }
        if latest.is_none_or(|(_, l)| op.invoke > l.invoke) {
            latest = Some((rv, op));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn violations(h: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        let inconclusive = check(h, DEFAULT_BUDGET, &mut out);
        assert!(inconclusive.is_empty());
        out
    }

    /// Two clients' read-modify-write loops on one counter, interleaved, with a conflict.
    fn counter_loops() -> Builder {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.get(1, (11, 15), "c", Some((0, 100)));
        b.get(2, (12, 16), "c", Some((0, 100)));
        // Both try to move rv 100; the one whose write lands first wins (they overlap, so
        // either order is allowed), the other gets a conflict.
        b.update(1, (20, 40), "c", 100, 1, 101);
        b.update_with(2, (21, 39), "c", 100, 1, UpdateOutcome::Conflict);
        b.get(2, (41, 45), "c", Some((1, 101)));
        b.update(2, (46, 50), "c", 101, 2, 102);
        // A read concurrent with that update may see either version.
        b.get(1, (47, 49), "c", Some((1, 101)));
        b.get(1, (51, 52), "c", Some((2, 102)));
        b.delete(1, (53, 60), "c", Some(102), DeleteOutcome::Ok { rv: None });
        b.get(2, (61, 62), "c", None);
        b.update_with(2, (63, 64), "c", 102, 3, UpdateOutcome::NotFound);
        b
    }

    #[test]
    fn a_valid_concurrent_history_passes() {
        let b = counter_loops();
        assert!(violations(&b.h).is_empty(), "{:?}", violations(&b.h));
        let mut out = Vec::new();
        check_rvs(&b.h, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_lost_update_is_caught() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.get(1, (11, 15), "c", Some((0, 100)));
        b.get(2, (11, 15), "c", Some((0, 100)));
        // Both compare-and-swaps on rv 100 succeed: one increment is lost.
        b.update(1, (20, 30), "c", 100, 1, 101);
        b.update(2, (21, 31), "c", 100, 1, 102);
        let out = violations(&b.h);
        assert_eq!(out.len(), 1, "{out:?}");
        let v = &out[0];
        assert_eq!(v.check, Check::Linearizability);
        assert_eq!(
            v.message,
            "key c is not linearizable: op 5 (update c expected_rv=100 value=1 -> ok rv=102) \
             cannot take effect at any point between its invocation and its answer; after the \
             longest order found (4 of 5 operations, the last op 4) the key was value=1 at \
             rv=101 (written by op 4), and its answer needs the key at rv=100"
        );
        assert_eq!(v.ops, vec![5, 4]);
    }

    #[test]
    fn a_stale_read_is_caught() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        let w = b.update(1, (20, 30), "c", 100, 1, 101);
        // Invoked after the update was acknowledged, yet returns the old version.
        let g = b.get(2, (40, 50), "c", Some((0, 100)));
        let out = violations(&b.h);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].message,
            "key c is not linearizable: op 3 (get c -> value=0 rv=100) cannot take effect at any \
             point between its invocation and its answer; after the longest order found (2 of 3 \
             operations, the last op 2) the key was value=1 at rv=101 (written by op 2), and its \
             answer needs value=0 at rv=100"
        );
        assert_eq!(out[0].ops, vec![g, w]);
    }

    #[test]
    fn a_read_concurrent_with_the_write_may_see_either() {
        for old in [true, false] {
            let mut b = Builder::new();
            b.create(1, (0, 10), "c", 0, 100);
            b.update(1, (20, 30), "c", 100, 1, 101);
            let seen = if old { (0, 100) } else { (1, 101) };
            b.get(2, (25, 35), "c", Some(seen));
            assert!(violations(&b.h).is_empty());
        }
    }

    #[test]
    fn an_unknown_update_may_or_may_not_have_happened() {
        for happened in [true, false] {
            let mut b = Builder::new();
            b.create(1, (0, 10), "c", 0, 100);
            // The client timed out; the write may land at any time after 20.
            b.update_unknown(1, (20, 30), "c", 100, 1);
            if happened {
                // Seen long after the client gave up, at an rv its answer never named.
                b.get(2, (100, 110), "c", Some((1, 101)));
                b.update(2, (120, 130), "c", 101, 2, 102);
            } else {
                b.get(2, (100, 110), "c", Some((0, 100)));
                b.update(2, (120, 130), "c", 100, 2, 102);
            }
            assert!(
                violations(&b.h).is_empty(),
                "happened={happened}: {:?}",
                violations(&b.h)
            );
        }
        // But it cannot be undone once seen.
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.update_unknown(1, (20, 30), "c", 100, 1);
        b.get(2, (100, 110), "c", Some((1, 101)));
        b.get(2, (120, 130), "c", Some((0, 100)));
        let out = violations(&b.h);
        assert_eq!(out.len(), 1);
        assert!(
            out[0]
                .message
                .contains("op 4 (get c -> value=0 rv=100) cannot take effect"),
            "{}",
            out[0].message
        );
    }

    #[test]
    fn an_unknown_create_may_or_may_not_have_happened() {
        for happened in [true, false] {
            let mut b = Builder::new();
            b.create_unknown(1, (0, 10), "c", 0);
            if happened {
                b.get(2, (20, 30), "c", Some((0, 100)));
                let outcome = CreateOutcome::AlreadyExists;
                b.op(
                    2,
                    40,
                    Some(50),
                    OpKind::Create {
                        key: "c".into(),
                        value: 0,
                        outcome,
                    },
                );
            } else {
                b.get(2, (20, 30), "c", None);
                b.create(2, (40, 50), "c", 0, 100);
            }
            assert!(violations(&b.h).is_empty(), "happened={happened}");
        }
    }

    #[test]
    fn deletes_follow_their_preconditions() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "d", 0, 100);
        b.delete(2, (20, 30), "d", Some(99), DeleteOutcome::Conflict);
        b.delete(
            2,
            (40, 50),
            "d",
            Some(100),
            DeleteOutcome::Ok { rv: Some(101) },
        );
        b.delete(1, (60, 70), "d", None, DeleteOutcome::NotFound);
        b.update_with(1, (71, 75), "d", 100, 1, UpdateOutcome::NotFound);
        b.create(1, (80, 90), "d", 5, 102);
        assert!(violations(&b.h).is_empty(), "{:?}", violations(&b.h));
        // A conflict at the object's own rv is not.
        let mut b = Builder::new();
        b.create(1, (0, 10), "d", 0, 100);
        b.delete(2, (20, 30), "d", Some(100), DeleteOutcome::Conflict);
        let out = violations(&b.h);
        assert_eq!(out.len(), 1);
        assert!(
            out[0]
                .message
                .ends_with("and its answer needs the key present at an rv other than 100"),
            "{}",
            out[0].message
        );
    }

    #[test]
    fn an_unknown_delete_may_or_may_not_have_happened() {
        for happened in [true, false] {
            let mut b = Builder::new();
            b.create(1, (0, 10), "d", 0, 100);
            let outcome = DeleteOutcome::Unknown {
                reason: "timeout".into(),
            };
            b.delete(1, (20, 30), "d", None, outcome);
            let seen = if happened { None } else { Some((0, 100)) };
            b.get(2, (40, 50), "d", seen);
            assert!(violations(&b.h).is_empty(), "happened={happened}");
        }
    }

    #[test]
    fn a_create_on_an_existing_key_is_caught() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.create(2, (20, 30), "c", 7, 101);
        let out = violations(&b.h);
        assert_eq!(out.len(), 1);
        assert!(
            out[0]
                .message
                .ends_with("and its answer needs the key absent"),
            "{}",
            out[0].message
        );
    }

    #[test]
    fn failed_operations_take_no_part() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "c", 0, 100);
        b.update_with(
            1,
            (20, 30),
            "c",
            100,
            1,
            UpdateOutcome::Fail {
                reason: "422".into(),
            },
        );
        b.get(2, (40, 50), "c", Some((0, 100)));
        assert!(violations(&b.h).is_empty());
    }

    #[test]
    fn many_concurrent_clients_stay_fast() {
        // 8 clients, 400 operations on one key, every one overlapping its neighbours.
        let mut b = Builder::new();
        b.create(0, (0, 5), "c", 0, 1);
        let (mut value, mut rv) = (0, 1);
        for round in 0..50u64 {
            let t = 10 + round * 100;
            for client in 0..8u64 {
                let start = t + client;
                if client == 0 {
                    b.update(client, (start, start + 50), "c", rv, value + 1, rv + 1);
                } else if client % 2 == 0 {
                    b.update_with(
                        client,
                        (start, start + 50),
                        "c",
                        rv,
                        value + 1,
                        UpdateOutcome::Conflict,
                    );
                } else {
                    b.get(client, (start, start + 50), "c", Some((value, rv)));
                }
            }
            value += 1;
            rv += 1;
        }
        let started = std::time::Instant::now();
        assert!(violations(&b.h).is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn resource_versions_must_be_unique_greater_and_in_real_time() {
        let mut b = Builder::new();
        b.create(1, (0, 10), "a", 0, 100);
        b.create(2, (0, 10), "b", 0, 100);
        b.delete(
            1,
            (5, 20),
            "a",
            Some(100),
            DeleteOutcome::Ok { rv: Some(90) },
        );
        b.create(3, (40_000, 50_000), "x", 0, 200);
        // Invoked after op 4 completed, yet given an older rv.
        b.create(3, (60_000, 70_000), "y", 0, 150);
        let mut out = Vec::new();
        check_rvs(&b.h, &mut out);
        let messages: Vec<_> = out.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "ops 1 and 2 both returned rv=100: two writes share a resourceVersion",
                "op 3 replaced rv=100 and returned rv=90, which is not greater",
                "op 5 got rv=150 but was invoked at 0.060ms, after op 4 had completed at 0.050ms \
                 with the greater rv=200: resourceVersions went back in time",
            ]
        );
    }
}
