//! LISTs show states that happened, pages of one walk share one snapshot, and a consistent
//! LIST sees every write acknowledged before it began.
//!
//! Pages are put together into walks: a first page (no `continue`), then each page that sent
//! the token the walk's last page returned (by the same client). For every page that answered:
//!
//! - each item is in the listed keys, its rv is not above the list's rv, and it is a write
//!   known to have happened (the same key and value as the write at that rv; an item at an rv
//!   no write is known for, and that no write with an unknown outcome could have made, is "a
//!   write nobody made");
//! - each item is the key's latest known version as of the list's rv: no known write to that
//!   key has `item rv < rv <= list rv` (a snapshot, not a mix of times);
//! - every page after the first has the first page's list rv;
//! - `resourceVersion=N` ("not older than N") answers with a list rv of at least N.
//!
//! A consistent walk (`resourceVersion=""`) that ended (its last page returned no token) is
//! also checked against every write acknowledged before its first page was sent: the list rv
//! is at least the write's rv, and for each key, if the last such write (by rv) left the object
//! present, the walk shows it at that rv or a later one, or a delete that could have come after
//! it explains its absence; if it was a delete, the walk does not show the object at an rv
//! before it. (A delete answered without its rv cannot be placed, so it is only used to
//! explain an absence.)

use crate::history::*;
use crate::report::{Check, Violation};
use crate::writes::{describe, Writes};
use std::collections::{BTreeMap, HashMap};

fn violation(message: String, ops: Vec<u64>) -> Violation {
    Violation {
        check: Check::Lists,
        message,
        ops,
        watches: Vec::new(),
    }
}

/// Checks every LIST walk of the history.
pub fn check(h: &History, out: &mut Vec<Violation>) {
    check_with(h, &Writes::build(h), out);
}

/// [`check`] against an already built table of writes.
pub(crate) fn check_with(h: &History, writes: &Writes, out: &mut Vec<Violation>) {
    let mut lists: Vec<&Op> = h
        .ops
        .iter()
        .filter(|op| matches!(op.kind, OpKind::List { .. }))
        .collect();
    lists.sort_by_key(|op| (op.invoke, op.id));
    // Each walk's pages; (client, token) -> the walk that returned the token.
    let mut walks: Vec<Vec<&Op>> = Vec::new();
    let mut open: HashMap<(u64, &str), usize> = HashMap::new();
    for op in lists {
        let OpKind::List {
            continue_token,
            outcome,
            ..
        } = &op.kind
        else {
            continue;
        };
        let walk = match continue_token
            .as_deref()
            .and_then(|t| open.remove(&(op.client, t)))
        {
            Some(walk) => {
                walks[walk].push(op);
                walk
            }
            None => {
                walks.push(vec![op]);
                walks.len() - 1
            }
        };
        if let ListOutcome::Ok {
            continue_token: Some(next),
            ..
        } = outcome
        {
            open.insert((op.client, next.as_str()), walk);
        }
    }
    for walk in &walks {
        check_walk(h, walk, writes, out);
    }
}

fn check_walk(h: &History, pages: &[&Op], writes: &Writes, out: &mut Vec<Violation>) {
    let Some(first) = pages.first() else {
        return;
    };
    let OpKind::List {
        prefix,
        resource_version,
        continue_token: first_token,
        ..
    } = &first.kind
    else {
        return;
    };
    let mut list_rv = None;
    let mut items: BTreeMap<&str, &Item> = BTreeMap::new();
    let mut ended = false;
    for page in pages {
        let OpKind::List {
            outcome:
                ListOutcome::Ok {
                    items: page_items,
                    list_rv: rv,
                    continue_token,
                },
            ..
        } = &page.kind
        else {
            return;
        };
        let rv = *rv;
        match list_rv {
            None => list_rv = Some(rv),
            Some(first_rv) if first_rv != rv => {
                out.push(violation(
                    format!(
                        "paged LIST: op {} is a page at rv={rv} of the walk op {} began at \
                         rv={first_rv}",
                        page.id, first.id
                    ),
                    vec![first.id, page.id],
                ));
                return;
            }
            Some(_) => {}
        }
        for item in page_items {
            if let Some(v) = check_item(page, item, rv, prefix, writes) {
                out.push(v);
                return;
            }
            items.insert(&item.key, item);
        }
        ended = continue_token.is_none();
    }
    let Some(list_rv) = list_rv else {
        return;
    };
    if let Ok(at_least) = resource_version.parse::<Rv>() {
        if list_rv < at_least {
            out.push(violation(
                format!(
                    "LIST op {} asked for resourceVersion not older than {at_least} and got \
                     rv={list_rv}",
                    first.id
                ),
                vec![first.id],
            ));
            return;
        }
    }
    // A walk's first page sent no token; a walk that began with one is a leftover (its first
    // page was not recorded) and only its pages were checked.
    if resource_version.is_empty() && ended && first_token.is_none() {
        if let Some(v) = check_fresh(h, first, pages, prefix, list_rv, &items) {
            out.push(v);
        }
    }
}

fn check_item(
    page: &Op,
    item: &Item,
    list_rv: Rv,
    prefix: &str,
    writes: &Writes,
) -> Option<Violation> {
    let shows = format!(
        "LIST op {} at rv={list_rv} shows {}={} at rv={}",
        page.id, item.key, item.value, item.rv
    );
    if !item.key.starts_with(prefix) {
        return Some(violation(
            format!("{shows}, outside the listed keys {prefix:?}"),
            vec![page.id],
        ));
    }
    if item.rv > list_rv {
        return Some(violation(
            format!("{shows}, newer than the list"),
            vec![page.id],
        ));
    }
    match writes.by_rv.get(&item.rv) {
        None => {
            return Some(violation(
                format!(
                    "{shows}: a write nobody made (no acknowledged write returned that rv, and \
                     no write with an unknown outcome could have made it)"
                ),
                vec![page.id],
            ));
        }
        Some(w) if w.key != item.key || w.value != Some(item.value) => {
            return Some(violation(
                format!("{shows}, but that rv is {}", describe(item.rv, w)),
                vec![page.id, w.op],
            ));
        }
        Some(_) => {}
    }
    let newer = writes
        .in_range(&item.key, item.rv, list_rv)
        .find(|(_, w)| w.key == item.key);
    newer.map(|(rv, w)| {
        violation(
            format!(
                "{shows}, but {} came before the list's rv: not a snapshot",
                describe(rv, w)
            ),
            vec![page.id, w.op],
        )
    })
}

fn check_fresh(
    h: &History,
    first: &Op,
    pages: &[&Op],
    prefix: &str,
    list_rv: Rv,
    items: &BTreeMap<&str, &Item>,
) -> Option<Violation> {
    let start = first.invoke;
    let end = pages.last().map_or(u64::MAX, |p| p.effective_complete());
    let walk = if pages.len() > 1 {
        format!("paged LIST op {} ({} pages)", first.id, pages.len())
    } else {
        format!("LIST op {}", first.id)
    };
    // The last write (by rv) acknowledged before the walk began, per key.
    let mut last: BTreeMap<&str, (Rv, &Op)> = BTreeMap::new();
    for op in &h.ops {
        let (Some(key), Effect::Acked, Some(rv)) =
            (op.kind.key(), op.kind.effect(), op.kind.written_rv())
        else {
            continue;
        };
        if !key.starts_with(prefix) || !op.completed_before(start) {
            continue;
        }
        if rv > list_rv {
            return Some(violation(
                format!(
                    "consistent {walk} invoked at {} answered at rv={list_rv}, older than op {}'s \
                     write at rv={rv} acknowledged at {}",
                    ms(start),
                    op.id,
                    ms(op.complete.unwrap_or(0))
                ),
                vec![first.id, op.id],
            ));
        }
        let entry = last.entry(key).or_insert((rv, op));
        if rv > entry.0 {
            *entry = (rv, op);
        }
    }
    for (key, (rv, op)) in last {
        let item = items.get(key);
        let acked = format!(
            "op {}'s {} (rv={rv}, acknowledged at {})",
            op.id,
            op.kind.name(),
            ms(op.complete.unwrap_or(0))
        );
        match (op.kind.written_value().flatten(), item) {
            (Some(_), Some(item)) if item.rv < rv => {
                return Some(violation(
                    format!(
                        "consistent {walk} invoked at {} shows {key} at rv={}, older than {acked}",
                        ms(start),
                        item.rv
                    ),
                    vec![first.id, op.id],
                ));
            }
            (Some(_), None) => {
                // Absent: only a delete that may have come after the write explains it.
                let deleted = h.ops.iter().any(|d| {
                    matches!(d.kind, OpKind::Delete { .. })
                        && d.kind.key() == Some(key)
                        && d.kind.effect() != Effect::None
                        && d.invoke < end
                        && d.kind
                            .written_rv()
                            .is_none_or(|drv| drv > rv && drv <= list_rv)
                });
                if !deleted {
                    return Some(violation(
                        format!(
                            "consistent {walk} invoked at {} does not contain {key}, written by \
                             {acked}, and no delete explains it",
                            ms(start)
                        ),
                        vec![first.id, op.id],
                    ));
                }
            }
            (None, Some(item)) if item.rv < rv => {
                return Some(violation(
                    format!(
                        "consistent {walk} invoked at {} shows {key} at rv={}, deleted by {acked}",
                        ms(start),
                        item.rv
                    ),
                    vec![first.id, op.id],
                ));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn run(b: &Builder) -> Vec<String> {
        let mut out = Vec::new();
        check(&b.h, &mut out);
        out.into_iter().map(|v| v.message).collect()
    }

    /// a created (rv 10) and updated (rv 11); b created (rv 12); c created (rv 13) and deleted.
    fn writes() -> Builder {
        let mut b = Builder::new();
        b.create(1, (1000, 1100), "a", 0, 10);
        b.update(1, (1200, 1300), "a", 10, 1, 11);
        b.create(2, (1400, 1500), "b", 0, 12);
        b.create(2, (1600, 1700), "c", 0, 13);
        b.delete(2, (1800, 1900), "c", None, DeleteOutcome::Ok { rv: None });
        b
    }

    #[test]
    fn consistent_and_paged_lists_pass() {
        let mut b = writes();
        // Concurrent with the update of a: either version; c may be there or not.
        b.list(3, (1250, 1260), "", None, None, &[("a", 0, 10)], 10, None);
        b.list(3, (1250, 1260), "", None, None, &[("a", 1, 11)], 11, None);
        b.list(
            3,
            (2000, 2100),
            "",
            None,
            None,
            &[("a", 1, 11), ("b", 0, 12)],
            14,
            None,
        );
        // A paged walk: two pages at the first page's rv, though c was deleted in between.
        b.list(
            4,
            (1710, 1720),
            "",
            Some(2),
            None,
            &[("a", 1, 11), ("b", 0, 12)],
            13,
            Some("t1"),
        );
        b.list(
            4,
            (1950, 1960),
            "",
            Some(2),
            Some("t1"),
            &[("c", 0, 13)],
            13,
            None,
        );
        // resourceVersion=0 may be stale.
        b.list(5, (2000, 2100), "0", None, None, &[("a", 0, 10)], 10, None);
        assert_eq!(run(&b), Vec::<String>::new());
    }

    #[test]
    fn a_consistent_list_missing_an_acknowledged_write_is_caught() {
        let mut b = writes();
        // Invoked after b's create was acknowledged at 1500, rv right, b missing.
        b.list(3, (1550, 1560), "", None, None, &[("a", 1, 11)], 12, None);
        assert_eq!(
            run(&b),
            vec![
                "consistent LIST op 6 invoked at 0.001ms does not contain b, written by op 3's \
                 create (rv=12, acknowledged at 0.001ms), and no delete explains it"
            ]
        );
        // An older snapshot: the list rv gives it away.
        let mut b = writes();
        b.list(3, (1550, 1560), "", None, None, &[("a", 1, 11)], 11, None);
        let out = run(&b);
        assert_eq!(out.len(), 1);
        assert!(
            out[0].contains("answered at rv=11, older than op 3's write at rv=12"),
            "{out:?}"
        );
    }

    #[test]
    fn a_stale_item_is_caught() {
        let mut b = writes();
        b.list(
            3,
            (1550, 1560),
            "",
            None,
            None,
            &[("a", 0, 10), ("b", 0, 12)],
            12,
            None,
        );
        assert_eq!(
            run(&b),
            vec![
                "LIST op 6 at rv=12 shows a=0 at rv=10, but the write of a value=1 at rv=11 (op 2) \
                 came before the list's rv: not a snapshot"
            ]
        );
    }

    #[test]
    fn pages_of_one_walk_share_the_first_pages_rv() {
        let mut b = writes();
        b.list(
            4,
            (1710, 1720),
            "",
            Some(2),
            None,
            &[("a", 1, 11), ("b", 0, 12)],
            13,
            Some("t1"),
        );
        b.list(4, (1950, 1960), "", Some(2), Some("t1"), &[], 14, None);
        assert_eq!(
            run(&b),
            vec!["paged LIST: op 7 is a page at rv=14 of the walk op 6 began at rv=13"]
        );
    }

    #[test]
    fn items_nobody_wrote_and_too_old_answers_are_caught() {
        let mut b = writes();
        b.list(
            3,
            (2000, 2100),
            "",
            None,
            None,
            &[("a", 5, 11), ("b", 0, 12)],
            14,
            None,
        );
        assert_eq!(
            run(&b),
            vec!["LIST op 6 at rv=14 shows a=5 at rv=11, but that rv is the write of a value=1 at rv=11 (op 2)"]
        );
        let mut b = writes();
        b.list(3, (2000, 2100), "12", None, None, &[("a", 1, 11)], 11, None);
        assert_eq!(
            run(&b),
            vec!["LIST op 6 asked for resourceVersion not older than 12 and got rv=11"]
        );
    }
}
