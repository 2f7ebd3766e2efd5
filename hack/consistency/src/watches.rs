//! Every watch stream delivers exactly the events after its starting resourceVersion, in order,
//! with no gap and no duplicate, or ends; never a silent hole.
//!
//! A stream from rv S over the keys starting with P is compared with the writes known to have
//! happened ([`crate::writes`]: the acknowledged ones by the rv their answer returned, the
//! others by a read or an event that saw them). Walking the stream in arrival order with `last`
//! the highest rv delivered so far (S at first):
//!
//! - an event's rv must be greater than `last`: equal to an earlier event's is a duplicate, lower
//!   is out of order;
//! - every known write to a watched key with `last < rv < event rv` must have been delivered
//!   before the event: one that was not is a gap;
//! - the event must be that write: the same key, ADDED for a create, MODIFIED for an update,
//!   DELETED for a delete, the value written (not checked for DELETED, which carries the last
//!   value); an event at an rv no write is known to have made, and that no write with an unknown
//!   outcome could have made, is "a write nobody made"; and it cannot arrive before its write
//!   was sent;
//! - a key's events alternate (ADDED, MODIFIED ones, DELETED, and again): a delete's answer
//!   carries no rv, so a DELETED left out shows only as the key's next event, an ADDED while
//!   the stream last showed the key present (and an ADDED left out, as a MODIFIED or DELETED
//!   of a key it last showed deleted);
//! - a BOOKMARK at rv B claims every event up to B was sent: every known write with
//!   `last < rv <= B` must already have been delivered, and B must not go back.
//!
//! However the stream ended (closed, 410 Gone, an error, still open), what it delivered up to
//! its last rv must be complete: a client resumes from that rv, so a write missing before it is
//! lost to the client; 410 and errors are how a stream may end early, never a hole.

use crate::history::*;
use crate::report::{Check, Violation};
use crate::writes::{describe, Write, Writes};
use std::collections::HashMap;

/// Checks every watch stream of the history.
pub fn check(h: &History, out: &mut Vec<Violation>) {
    check_with(h, &Writes::build(h), out);
}

/// [`check`] against an already built table of writes.
pub(crate) fn check_with(h: &History, writes: &Writes, out: &mut Vec<Violation>) {
    out.extend(h.watches.iter().filter_map(|w| check_one(w, writes)));
}

fn matches(e: &Event, w: &Write) -> bool {
    let kind_ok = match (e.kind, w.value) {
        (EventType::Deleted, None) => true,
        (EventType::Added, Some(_)) => w.created,
        (EventType::Modified, Some(_)) => !w.created,
        _ => false,
    };
    let value_ok = e.kind == EventType::Deleted || e.value == w.value;
    kind_ok && value_ok && e.key == w.key
}

/// The first violation of one stream.
fn check_one(w: &Watch, writes: &Writes) -> Option<Violation> {
    let fail = |message: String, ops: Vec<u64>| {
        let message = format!(
            "watch {} from rv={} over {:?}: {message}",
            w.id, w.from_rv, w.prefix
        );
        Some(Violation {
            check: Check::Watches,
            message,
            ops,
            watches: vec![w.id],
        })
    };
    let mut last = w.from_rv;
    // rv -> the number (1-based) of the event that delivered it.
    let mut delivered: HashMap<Rv, usize> = HashMap::new();
    // key -> whether the stream last showed it present, and the event that did.
    let mut by_key: HashMap<&str, (bool, usize)> = HashMap::new();
    for (i, e) in w.events.iter().enumerate() {
        let n = i + 1;
        if e.kind == EventType::Bookmark {
            if e.rv < last {
                return fail(
                    format!("event {n} ({e}) goes back from rv={last}"),
                    Vec::new(),
                );
            }
            if let Some((rv, write)) = writes.in_range(&w.prefix, last, e.rv).next() {
                return fail(
                    format!(
                        "event {n} ({e}) claims every event up to rv={} was sent, but {} was not",
                        e.rv,
                        describe(rv, write)
                    ),
                    vec![write.op],
                );
            }
            last = e.rv;
            continue;
        }
        if !e.key.starts_with(&w.prefix) {
            return fail(
                format!("event {n} ({e}) is outside the watched keys"),
                Vec::new(),
            );
        }
        if e.rv <= last {
            return match delivered.get(&e.rv) {
                Some(first) => fail(
                    format!("event {n} ({e}) repeats event {first}: a duplicate"),
                    Vec::new(),
                ),
                None => fail(
                    format!("event {n} ({e}) arrived after rv={last}: out of order"),
                    Vec::new(),
                ),
            };
        }
        if let Some((rv, write)) = writes.in_range(&w.prefix, last, e.rv - 1).next() {
            return fail(
                format!(
                    "{} was never delivered: a gap before event {n} ({e})",
                    describe(rv, write)
                ),
                vec![write.op],
            );
        }
        match writes.by_rv.get(&e.rv) {
            None => {
                return fail(
                    format!(
                        "event {n} ({e}) is for a write nobody made: no acknowledged write \
                         returned rv={}, and no write with an unknown outcome could have made it",
                        e.rv
                    ),
                    Vec::new(),
                );
            }
            Some(write) if !matches(e, write) => {
                return fail(
                    format!("event {n} ({e}) is not {}", describe(e.rv, write)),
                    vec![write.op],
                );
            }
            Some(write) if e.at < write.invoke => {
                return fail(
                    format!(
                        "event {n} ({e}) arrived before op {} was invoked at {}",
                        write.op,
                        ms(write.invoke)
                    ),
                    vec![write.op],
                );
            }
            Some(_) => {}
        }
        // A key's events alternate: ADDED, MODIFIED ones, DELETED, and again. A delete's answer
        // carries no rv, so a DELETED left out is invisible to the rv comparison above; the
        // key's next event shows it (and likewise an ADDED left out).
        let present = e.kind != EventType::Deleted;
        match (by_key.get(e.key.as_str()), e.kind) {
            (Some(&(true, m)), EventType::Added) => {
                return fail(
                    format!(
                        "event {n} ({e}) adds {} while event {m} left it in place: its deletion \
                         was never delivered (a gap)",
                        e.key
                    ),
                    Vec::new(),
                );
            }
            (Some(&(false, m)), EventType::Modified | EventType::Deleted) => {
                return fail(
                    format!(
                        "event {n} ({e}) finds {} which event {m} deleted: its creation was \
                         never delivered (a gap)",
                        e.key
                    ),
                    Vec::new(),
                );
            }
            _ => {}
        }
        by_key.insert(e.key.as_str(), (present, n));
        delivered.insert(e.rv, n);
        last = e.rv;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use EventType::{Added, Deleted, Modified};

    /// Creates a (rv 10), updates it (11, 12), creates b (13), deletes a (rv 14, from a watch).
    fn writes() -> Builder {
        let mut b = Builder::new();
        b.create(1, (100, 110), "a", 0, 10);
        b.update(1, (120, 130), "a", 10, 1, 11);
        b.update(2, (140, 150), "a", 11, 2, 12);
        b.create(2, (160, 170), "b", 0, 13);
        b.delete(1, (180, 190), "a", None, DeleteOutcome::Ok { rv: None });
        b
    }

    fn run(b: &Builder) -> Vec<String> {
        let mut out = Vec::new();
        check(&b.h, &mut out);
        out.into_iter().map(|v| v.message).collect()
    }

    fn all_events() -> Vec<Event> {
        vec![
            ev(111, Added, "a", 0, 10),
            ev(131, Modified, "a", 1, 11),
            ev(151, Modified, "a", 2, 12),
            ev(171, Added, "b", 0, 13),
            ev(191, Deleted, "a", 2, 14),
        ]
    }

    #[test]
    fn complete_streams_pass_however_they_end() {
        let mut b = writes();
        b.watch(3, 0, 9, all_events(), WatchEnd::Open);
        // From the middle, with bookmarks; ended by 410 after that.
        let tail = vec![
            bookmark(135, 11),
            ev(151, Modified, "a", 2, 12),
            bookmark(155, 12),
            bookmark(175, 12),
        ];
        b.watch(
            4,
            0,
            10,
            vec![ev(131, Modified, "a", 1, 11)]
                .into_iter()
                .chain(tail)
                .collect(),
            WatchEnd::Gone,
        );
        // Closed early: what it delivered is complete up to its last rv.
        b.watch(5, 0, 9, all_events()[..2].to_vec(), WatchEnd::Closed);
        assert_eq!(run(&b), Vec::<String>::new());
    }

    #[test]
    fn a_gap_is_caught() {
        let mut b = writes();
        let mut events = all_events();
        events.remove(1);
        b.watch(3, 0, 9, events, WatchEnd::Open);
        assert_eq!(
            run(&b),
            vec![
                "watch 6 from rv=9 over \"\": the write of a value=1 at rv=11 (op 2) was never \
                 delivered: a gap before event 2 (MODIFIED a value=2 rv=12 at 0.000ms)"
            ]
        );
    }

    #[test]
    fn a_lost_deletion_is_caught_by_the_next_creation() {
        // a is deleted (rv 14, seen by no stream) and created again (rv 15); the stream misses
        // the deletion, whose rv nothing else tells.
        let mut b = writes();
        b.create(3, (200, 210), "a", 5, 15);
        let mut events = all_events();
        events.pop();
        events.push(ev(211, Added, "a", 5, 15));
        b.watch(4, 0, 9, events, WatchEnd::Open);
        assert_eq!(
            run(&b),
            vec![
                "watch 7 from rv=9 over \"\": event 5 (ADDED a value=5 rv=15 at 0.000ms) adds a \
                 while event 3 left it in place: its deletion was never delivered (a gap)"
            ]
        );
    }

    #[test]
    fn a_lost_creation_is_caught_by_the_next_event() {
        // After a's deletion (rv 14), a create of a times out (its rv 15 unknown: no read saw
        // it) and an update of it lands at rv 16; the stream misses the creation.
        let mut b = writes();
        b.create_unknown(3, (200, 210), "a", 5);
        b.update(3, (220, 230), "a", 15, 6, 16);
        let mut events = all_events();
        events.push(ev(231, Modified, "a", 6, 16));
        b.watch(4, 0, 9, events, WatchEnd::Open);
        assert_eq!(
            run(&b),
            vec![
                "watch 8 from rv=9 over \"\": event 6 (MODIFIED a value=6 rv=16 at 0.000ms) finds \
                 a which event 5 deleted: its creation was never delivered (a gap)"
            ]
        );
    }

    #[test]
    fn a_duplicate_is_caught() {
        let mut b = writes();
        let mut events = all_events();
        events.insert(2, ev(132, Modified, "a", 1, 11));
        b.watch(3, 0, 9, events, WatchEnd::Open);
        assert_eq!(
            run(&b),
            vec!["watch 6 from rv=9 over \"\": event 3 (MODIFIED a value=1 rv=11 at 0.000ms) repeats event 2: a duplicate"]
        );
    }

    #[test]
    fn a_bookmark_past_a_missing_event_is_caught() {
        let mut b = writes();
        let events = vec![
            ev(111, Added, "a", 0, 10),
            bookmark(160, 12),
            ev(171, Added, "b", 0, 13),
        ];
        b.watch(3, 0, 9, events, WatchEnd::Open);
        assert_eq!(
            run(&b),
            vec![
                "watch 6 from rv=9 over \"\": event 2 (BOOKMARK rv=12 at 0.000ms) claims every \
                 event up to rv=12 was sent, but the write of a value=1 at rv=11 (op 2) was not"
            ]
        );
    }

    #[test]
    fn events_must_match_their_writes() {
        let cases: Vec<(Event, &str)> = vec![
            (ev(131, Modified, "a", 7, 11), "event 2 (MODIFIED a value=7 rv=11 at 0.000ms) is not the write of a value=1 at rv=11 (op 2)"),
            (ev(131, Added, "a", 1, 11), "event 2 (ADDED a value=1 rv=11 at 0.000ms) is not the write of a value=1 at rv=11 (op 2)"),
            (ev(119, Modified, "a", 1, 11), "event 2 (MODIFIED a value=1 rv=11 at 0.000ms) arrived before op 2 was invoked at 0.000ms"),
        ];
        for (event, message) in cases {
            let mut b = writes();
            b.watch(
                3,
                0,
                9,
                vec![ev(111, Added, "a", 0, 10), event],
                WatchEnd::Open,
            );
            assert_eq!(
                run(&b),
                vec![format!("watch 6 from rv=9 over \"\": {message}")]
            );
        }
    }

    #[test]
    fn an_event_for_an_unknown_write_is_allowed_only_if_one_could_have_made_it() {
        let mut b = writes();
        b.update_unknown(3, (200, 210), "b", 13, 1);
        let mut events = all_events();
        events.push(ev(300, Modified, "b", 1, 15));
        b.watch(3, 0, 9, events.clone(), WatchEnd::Open);
        assert_eq!(run(&b), Vec::<String>::new());
        // Without the unknown update nobody wrote b=1.
        let mut b = writes();
        events.push(ev(301, Modified, "b", 2, 16));
        b.watch(3, 0, 9, events, WatchEnd::Open);
        let out = run(&b);
        assert_eq!(out.len(), 1);
        assert!(
            out[0].contains(
                "event 6 (MODIFIED b value=1 rv=15 at 0.000ms) is for a write nobody made"
            ),
            "{out:?}"
        );
    }

    #[test]
    fn order_and_range() {
        let mut b = writes();
        let events = vec![
            ev(111, Added, "a", 0, 10),
            ev(171, Added, "b", 0, 13),
            ev(151, Modified, "a", 2, 12),
        ];
        b.watch(3, 0, 9, events, WatchEnd::Open);
        let out = run(&b);
        assert!(out[0].contains("a gap before event 2"), "{out:?}");
        let mut b = writes();
        b.h.watches.push(Watch {
            id: 99,
            client: 3,
            invoke: 0,
            complete: None,
            prefix: "b".into(),
            from_rv: 9,
            events: vec![ev(171, Added, "b", 0, 13), ev(191, Deleted, "a", 2, 14)],
            end: WatchEnd::Open,
        });
        let out = run(&b);
        assert_eq!(
            out,
            vec!["watch 99 from rv=9 over \"b\": event 2 (DELETED a value=2 rv=14 at 0.000ms) is outside the watched keys"]
        );
    }
}
