//! The watchers of one cache, indexed as upstream's `indexedWatchers`: a watcher whose field
//! selector asks for one exact value of the resource's trigger field (`spec.nodeName=n1` for
//! pods, `metadata.name=n1` for nodes) is kept under that value, and a change is offered only
//! to the watchers under the values its new and old states have, besides the unindexed ones.
//! Without the index every change to a pod was matched against every node's watch: with 5,000
//! nodes, 5,000 selector evaluations per pod event.

use crate::interface::Event;
use crate::Result;
use kapi_machinery::SelectionPredicate;
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long before a watch's deadline its last bookmark is due (upstream: 2s).
const PRE_TIMEOUT: Duration = Duration::from_secs(2);

/// One registered watcher. Its channel is bounded: a watcher that cannot keep up is dropped
/// (its stream ends), never waited for.
pub(super) struct Slot {
    pub key: String,
    pub recursive: bool,
    pub predicate: SelectionPredicate,
    pub bookmarks: bool,
    /// When the watch ends (its `timeoutSeconds`), if it has a deadline.
    pub deadline: Option<Instant>,
    /// When this watcher's next bookmark is due; `None` when no more will be sent.
    pub next_bookmark: Option<Instant>,
    pub tx: mpsc::Sender<Result<Event>>,
}

/// Upstream's `nextBookmarkTime`: a watcher that asked for bookmarks gets one every
/// `frequency`, and one shortly before its deadline so that a client resuming after the
/// timeout starts from a recent revision; none once that moment has passed.
pub(super) fn next_bookmark_time(
    bookmarks: bool,
    now: Instant,
    frequency: Duration,
    deadline: Option<Instant>,
) -> Option<Instant> {
    if !bookmarks {
        return None;
    }
    let periodic = now.checked_add(frequency).unwrap_or(now);
    let Some(deadline) = deadline else {
        return Some(periodic);
    };
    let due = match deadline.checked_sub(PRE_TIMEOUT) {
        Some(pre_timeout) if pre_timeout < periodic => pre_timeout,
        Some(_) => periodic,
        // A deadline closer than the margin (only possible this early in a process's life).
        None => return None,
    };
    (due >= now).then_some(due)
}

/// The registered watchers and their index by the trigger field's value.
#[derive(Default)]
pub(super) struct Watchers {
    /// The field whose exact-match selectors index watchers, if the resource has one.
    trigger: Option<&'static str>,
    /// Each watcher and the value it is indexed under (`None`: every change is offered to it).
    slots: HashMap<u64, (Slot, Option<Box<str>>)>,
    /// Watchers offered every change.
    unindexed: HashSet<u64>,
    /// Watchers offered only the changes whose new or old state has the value.
    by_value: HashMap<Box<str>, HashSet<u64>>,
}

impl Watchers {
    pub fn new(trigger: Option<&'static str>) -> Watchers {
        Watchers {
            trigger,
            ..Watchers::default()
        }
    }

    /// The trigger field, if the resource has one.
    pub fn trigger(&self) -> Option<&'static str> {
        self.trigger
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn clear(&mut self) {
        self.slots.clear();
        self.unindexed.clear();
        self.by_value.clear();
    }

    /// Registers a watcher under `id`; it is indexed when its field selector requires one
    /// value of the trigger field (upstream's `RequiresExactMatch`: any `field=value` term of
    /// the selector's conjunction).
    pub fn insert(&mut self, id: u64, slot: Slot) {
        let value = self.trigger.and_then(|trigger| {
            slot.predicate
                .field
                .requirements
                .iter()
                .find(|r| r.field == trigger && !r.negated)
                .map(|r| Box::<str>::from(r.value.as_str()))
        });
        match &value {
            Some(v) => {
                self.by_value.entry(v.clone()).or_default().insert(id);
            }
            None => {
                self.unindexed.insert(id);
            }
        }
        self.slots.insert(id, (slot, value));
    }

    fn remove(&mut self, id: u64) {
        let Some((_, value)) = self.slots.remove(&id) else {
            return;
        };
        match value {
            Some(v) => {
                if let Some(ids) = self.by_value.get_mut(&v) {
                    ids.remove(&id);
                    if ids.is_empty() {
                        self.by_value.remove(&v);
                    }
                }
            }
            None => {
                self.unindexed.remove(&id);
            }
        }
    }

    /// Offers a change to the watchers that may see it: the unindexed ones and those under
    /// any of `values` (the trigger field's values in the change's new and old states);
    /// `deliver` says whether a watcher stays.
    pub fn offer(&mut self, values: &[Option<&str>], mut deliver: impl FnMut(&mut Slot) -> bool) {
        let mut ids: Vec<u64> = self.unindexed.iter().copied().collect();
        for (i, value) in values.iter().enumerate() {
            let Some(value) = value else { continue };
            // The old state usually has the new one's value: offered once.
            if values
                .get(..i)
                .is_some_and(|seen| seen.contains(&Some(*value)))
            {
                continue;
            }
            if let Some(under) = self.by_value.get(*value) {
                ids.extend(under.iter().copied());
            }
        }
        for id in ids {
            let keep = self
                .slots
                .get_mut(&id)
                .is_none_or(|(slot, _)| deliver(slot));
            if !keep {
                self.remove(id);
            }
        }
    }

    /// Visits every watcher; `visit` says whether it stays.
    pub fn retain(&mut self, mut visit: impl FnMut(&mut Slot) -> bool) {
        let gone: Vec<u64> = self
            .slots
            .iter_mut()
            .filter_map(|(id, (slot, _))| (!visit(slot)).then_some(*id))
            .collect();
        for id in gone {
            self.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_machinery::fields::{FieldRequirement, FieldSelector};

    #[test]
    fn bookmarks_are_due_periodically_and_before_the_deadline() {
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        assert_eq!(next_bookmark_time(false, now, minute, None), None);
        assert_eq!(
            next_bookmark_time(true, now, minute, None),
            Some(now + minute)
        );
        // A 3s watch: due 2s before its end, i.e. after 1s.
        let deadline = now + Duration::from_secs(3);
        assert_eq!(
            next_bookmark_time(true, now, minute, Some(deadline)),
            Some(now + Duration::from_secs(1))
        );
        // A long watch: the periodic one comes first.
        let long = now + Duration::from_secs(600);
        assert_eq!(
            next_bookmark_time(true, now, minute, Some(long)),
            Some(now + minute)
        );
        // Once the pre-timeout bookmark has gone out, no more.
        let later = now + Duration::from_secs(2);
        assert_eq!(
            next_bookmark_time(true, later, minute, Some(deadline)),
            None
        );
    }

    fn slot(requirements: &[(&str, &str, bool)]) -> (Slot, mpsc::Receiver<Result<Event>>) {
        let (tx, rx) = mpsc::channel(1);
        let predicate = SelectionPredicate {
            field: FieldSelector {
                requirements: requirements
                    .iter()
                    .map(|(field, value, negated)| FieldRequirement {
                        field: field.to_string(),
                        value: value.to_string(),
                        negated: *negated,
                    })
                    .collect(),
            },
            ..SelectionPredicate::default()
        };
        let slot = Slot {
            key: "/pods/".into(),
            recursive: true,
            predicate,
            bookmarks: false,
            deadline: None,
            next_bookmark: None,
            tx,
        };
        (slot, rx)
    }

    /// The ids `offer` visits for a change with `values`, sorted.
    fn offered(w: &mut Watchers, values: &[Option<&str>]) -> Vec<String> {
        let mut seen = Vec::new();
        w.offer(values, |s| {
            seen.push(s.key.clone());
            true
        });
        seen.sort();
        seen
    }

    #[test]
    fn a_change_reaches_the_unindexed_and_its_values_watchers_only() {
        let mut w = Watchers::new(Some("spec.nodeName"));
        let mut keep = Vec::new();
        for (id, (name, reqs)) in [
            ("all", vec![]),
            ("n1", vec![("spec.nodeName", "n1", false)]),
            (
                "n2-running",
                vec![
                    ("status.phase", "Running", false),
                    ("spec.nodeName", "n2", false),
                ],
            ),
            ("not-n1", vec![("spec.nodeName", "n1", true)]),
            ("unassigned", vec![("spec.nodeName", "", false)]),
        ]
        .into_iter()
        .enumerate()
        {
            let (mut s, rx) = slot(&reqs);
            s.key = name.into();
            keep.push(rx);
            w.insert(id as u64, s);
        }
        assert_eq!(offered(&mut w, &[Some("n3"), None]), ["all", "not-n1"]);
        assert_eq!(
            offered(&mut w, &[Some("n1"), Some("n1")]),
            ["all", "n1", "not-n1"]
        );
        // A pod bound to n2: the scheduler's watch of unassigned pods sees it leave.
        assert_eq!(
            offered(&mut w, &[Some("n2"), Some("")]),
            ["all", "n2-running", "not-n1", "unassigned"]
        );
        // A watcher that is dropped leaves the index.
        w.offer(&[Some("n1")], |s| s.key != "n1");
        assert_eq!(w.len(), 4);
        assert!(!w.by_value.contains_key("n1"));
        assert_eq!(offered(&mut w, &[Some("n1")]), ["all", "not-n1"]);
        w.retain(|s| s.key != "all");
        assert_eq!(offered(&mut w, &[Some("n2")]), ["n2-running", "not-n1"]);
    }

    #[test]
    fn without_a_trigger_every_change_reaches_every_watcher() {
        let mut w = Watchers::new(None);
        let (s, _rx) = slot(&[("spec.nodeName", "n1", false)]);
        w.insert(1, s);
        assert_eq!(offered(&mut w, &[Some("n2")]), ["/pods/"]);
    }
}
