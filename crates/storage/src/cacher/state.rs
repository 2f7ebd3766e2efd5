//! The watch cache's memory: the current objects, a bounded window of recent changes, and the
//! watchers to fan changes out to. Guarded by one mutex that is never held across an await.

use super::item::{Cached, Former, ItemEncoder, Kept};
use super::watchers::{next_bookmark_time, Watchers};
use crate::events::{bookmark, key_matches, prefix_end, to_event, Change, ChangeKind};
use crate::interface::{EncodedItem, Event, Revision};
use kapi_machinery::{EventType, SelectionPredicate};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Default)]
pub(super) struct State {
    /// Set once the first list has been loaded.
    pub ready: bool,
    /// Every change up to here is applied.
    pub revision: Revision,
    pub store: BTreeMap<String, Arc<Cached>>,
    /// How long the cache's prefix is: a key continues with `ns/name` or `name`.
    pub prefix_len: usize,
    /// Makes the items this state stores.
    pub items: ItemEncoder,
    /// Recent changes, their states as the store keeps them (shared with it while current).
    pub window: VecDeque<Kept>,
    /// The window holds every change after this revision.
    pub window_start: Revision,
    /// The store is the state at every revision from here up to `revision`: the last change
    /// applied (or the revision of the list it was loaded from). A page at such a revision is
    /// served from memory.
    pub unchanged_since: Revision,
    /// The backend's history is compacted up to here, as far as the cache was told.
    pub compacted_to: Revision,
    pub watchers: Watchers,
    pub next_id: u64,
    /// When the last change (not a bookmark) reached the cache: a prefix changing now will
    /// likely change again soon, which tells a consistent read how to learn it is current.
    pub changed_at: Option<std::time::Instant>,
}

impl State {
    /// Replaces the contents with a fresh list; every watcher is closed (upstream terminates
    /// all watchers when the cache relists) and must start again.
    pub fn replace(&mut self, items: BTreeMap<String, Arc<Cached>>, revision: Revision) {
        self.store = items;
        self.revision = revision;
        self.window.clear();
        self.window_start = revision;
        self.unchanged_since = revision;
        self.watchers.clear();
        self.ready = true;
    }

    /// Applies one backend event under `key` and fans it out.
    pub fn apply(&mut self, key: String, event: &Event, capacity: usize) {
        let rev = event.revision;
        if rev <= self.revision && event.event_type != EventType::Bookmark {
            return;
        }
        let (kind, item, prev) = match event.event_type {
            EventType::Bookmark | EventType::Error => {
                self.revision = self.revision.max(rev);
                return;
            }
            EventType::Added | EventType::Modified => {
                let item = Arc::new(self.items.encode(&event.object));
                let prev = self
                    .store
                    .insert(key.clone(), item.clone())
                    .map(|item| Former {
                        item,
                        prefix_len: self.prefix_len,
                    });
                let kind = if prev.is_some() {
                    ChangeKind::Modified
                } else {
                    ChangeKind::Added
                };
                (kind, item, prev)
            }
            EventType::Deleted => {
                // The window keeps the last state as the store had it (stamped with the
                // deletion's revision when decoded), or encodes the event's if the store
                // never had the key.
                let item = match self.store.remove(&key) {
                    Some(item) => item,
                    None => Arc::new(self.items.encode(&event.object)),
                };
                // A deletion's event carries the last state itself.
                (ChangeKind::Deleted, item, None)
            }
        };
        self.revision = rev;
        self.unchanged_since = rev;
        self.changed_at = Some(std::time::Instant::now());
        // Fanned out with the backend's decoded object, shared by every watcher; the old state
        // as the cache kept it: only a watcher whose predicate sees the object leave needs it,
        // decoded and stamped with this revision (see `to_event`).
        let change = Change {
            revision: rev,
            key,
            kind,
            object: Some(event.object.clone()),
            prev,
        };
        // The watchers that may see the change: those indexed under the trigger field's value
        // in its new or old state, and the unindexed.
        let rest = change.key.get(self.prefix_len..).unwrap_or_default();
        let values = match self.watchers.trigger() {
            Some(field) => [
                item.field(rest, field),
                change.prev.as_ref().and_then(|p| p.item.field(rest, field)),
            ],
            None => [None, None],
        };
        self.watchers.offer(&values, |slot| {
            if !key_matches(&slot.key, slot.recursive, &change.key) {
                return true;
            }
            match to_event(&change, &slot.predicate) {
                // Only a live stream's deliveries count: one whose client has gone is still
                // here until a send to it fails.
                Some(_) if !slot.tx.is_closed() && super::planted::drops_delivery(&slot.key) => {
                    true
                }
                Some(ev) => slot.tx.try_send(Ok(ev)).is_ok(),
                None => !slot.tx.is_closed(),
            }
        });
        self.window.push_back(Kept {
            revision: rev,
            key: change.key,
            kind,
            item,
            prev: change.prev,
        });
        while self.window.len() > capacity {
            if let Some(old) = self.window.pop_front() {
                self.window_start = old.revision;
            }
        }
    }

    /// Sends a BOOKMARK at the cache's revision to every watcher that asked for them.
    pub fn send_bookmarks(&mut self) {
        let rev = self.revision;
        self.watchers.retain(|slot| {
            if slot.bookmarks {
                slot.tx.try_send(Ok(bookmark(rev))).is_ok()
            } else {
                !slot.tx.is_closed()
            }
        });
    }

    /// Sends a BOOKMARK at the cache's revision to every watcher whose bookmark is due at
    /// `now`, and schedules its next one.
    pub fn send_due_bookmarks(&mut self, now: Instant, frequency: Duration) {
        let rev = self.revision;
        self.watchers.retain(|slot| {
            if slot.next_bookmark.is_none_or(|due| due > now) {
                return !slot.tx.is_closed();
            }
            slot.next_bookmark = next_bookmark_time(slot.bookmarks, now, frequency, slot.deadline);
            slot.tx.try_send(Ok(bookmark(rev))).is_ok()
        });
    }

    /// Forgets the window up to `revision` (the backend compacted it).
    pub fn compacted(&mut self, revision: Revision) {
        while self.window.front().is_some_and(|c| c.revision <= revision) {
            self.window.pop_front();
        }
        self.window_start = self.window_start.max(revision);
        self.compacted_to = self.compacted_to.max(revision);
    }

    /// How many keys the store holds under `prefix` (the cache's own, `whole`, or one below
    /// it such as a namespace's).
    pub fn count_under(&self, prefix: &str, whole: &str) -> usize {
        if prefix == whole {
            return self.store.len();
        }
        let end = prefix_end(prefix);
        self.store
            .range::<str, _>((Bound::Included(prefix), Bound::Excluded(end.as_str())))
            .count()
    }

    /// Whether the store holds the state at `revision` exactly (a page of an earlier list can
    /// be served from memory). Below a compaction the backend answers, with its 410.
    pub fn holds(&self, revision: Revision) -> bool {
        self.ready
            && revision >= self.unchanged_since
            && revision <= self.revision
            && revision >= self.compacted_to
    }

    /// One page of the objects in `[start, end)` matching `pred`, in key order: at most
    /// `limit` items (all without one), read from the sorted store by seeking to `start`, as
    /// upstream's storage pages (the page stops at `limit` matches; `more` only when a key
    /// follows).
    pub fn page(
        &self,
        start: &str,
        end: &str,
        limit: Option<usize>,
        pred: &SelectionPredicate,
    ) -> Page<'_> {
        let everything = pred.is_everything();
        let mut page = Page::default();
        let mut keys = self
            .store
            .range::<str, _>((Bound::Included(start), Bound::Excluded(end)));
        for (k, o) in keys.by_ref() {
            if limit.is_some_and(|l| page.items.len() >= l) {
                page.more = true;
                // Upstream's `count - limit`: the keys left from this one on.
                page.remaining = everything.then(|| (keys.count() as i64).saturating_add(1));
                break;
            }
            let rest = k.get(self.prefix_len..).unwrap_or_default();
            if everything || o.matches(rest, pred) {
                page.items.push(o.encoded());
            }
            page.last_key = Some(k.as_str());
        }
        page
    }
}

/// A page read from the cache.
#[derive(Default)]
pub(super) struct Page<'a> {
    /// The items' encodings, shared with the cache.
    pub items: Vec<EncodedItem>,
    /// The last key looked at (the next page starts after it).
    pub last_key: Option<&'a str>,
    /// Whether keys follow the page.
    pub more: bool,
    /// How many keys follow, when there is no selector.
    pub remaining: Option<i64>,
}
