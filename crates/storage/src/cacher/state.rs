//! The watch cache's memory: the current objects, a bounded window of recent changes, and the
//! watchers to fan changes out to. Guarded by one mutex that is never held across an await.

use crate::events::{bookmark, key_matches, to_event, with_revision, Change, ChangeKind};
use crate::interface::{Event, Revision};
use crate::Result;
use kapi_machinery::{EventType, Object, SelectionPredicate};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc;

/// One registered watcher. Its channel is bounded: a watcher that cannot keep up is dropped
/// (its stream ends), never waited for.
pub(super) struct Slot {
    pub key: String,
    pub recursive: bool,
    pub predicate: SelectionPredicate,
    pub bookmarks: bool,
    pub tx: mpsc::Sender<Result<Event>>,
}

#[derive(Default)]
pub(super) struct State {
    /// Set once the first list has been loaded.
    pub ready: bool,
    /// Every change up to here is applied.
    pub revision: Revision,
    pub store: BTreeMap<String, Arc<Object>>,
    pub window: VecDeque<Arc<Change>>,
    /// The window holds every change after this revision.
    pub window_start: Revision,
    pub watchers: HashMap<u64, Slot>,
    pub next_id: u64,
}

impl State {
    /// Replaces the contents with a fresh list; every watcher is closed (upstream terminates
    /// all watchers when the cache relists) and must start again.
    pub fn replace(&mut self, items: Vec<(String, Object)>, revision: Revision) {
        self.store = items.into_iter().map(|(k, o)| (k, Arc::new(o))).collect();
        self.revision = revision;
        self.window.clear();
        self.window_start = revision;
        self.watchers.clear();
        self.ready = true;
    }

    /// Applies one backend event under `key` and fans it out.
    pub fn apply(&mut self, key: String, event: &Event, capacity: usize) {
        let rev = event.revision;
        if rev <= self.revision && event.event_type != EventType::Bookmark {
            return;
        }
        let change = match event.event_type {
            EventType::Bookmark | EventType::Error => {
                self.revision = self.revision.max(rev);
                return;
            }
            EventType::Added | EventType::Modified => {
                let prev = self.store.insert(key.clone(), event.object.clone());
                let kind = if prev.is_some() {
                    ChangeKind::Modified
                } else {
                    ChangeKind::Added
                };
                // The old state, stamped with this revision, in case a watcher's predicate
                // sees the object leave (it is then sent as DELETED).
                let prev = prev.map(|p| Arc::new(with_revision((*p).clone(), rev)));
                Change {
                    revision: rev,
                    key,
                    kind,
                    object: Some(event.object.clone()),
                    prev,
                }
            }
            EventType::Deleted => {
                self.store.remove(&key);
                Change {
                    revision: rev,
                    key,
                    kind: ChangeKind::Deleted,
                    object: Some(event.object.clone()),
                    prev: Some(event.object.clone()),
                }
            }
        };
        self.revision = rev;
        let change = Arc::new(change);
        self.window.push_back(change.clone());
        while self.window.len() > capacity {
            if let Some(old) = self.window.pop_front() {
                self.window_start = old.revision;
            }
        }
        self.watchers.retain(|_, slot| {
            if !key_matches(&slot.key, slot.recursive, &change.key) {
                return true;
            }
            match to_event(&change, &slot.predicate) {
                Some(ev) => slot.tx.try_send(Ok(ev)).is_ok(),
                None => !slot.tx.is_closed(),
            }
        });
    }

    /// Sends a BOOKMARK at the cache's revision to every watcher that asked for them.
    pub fn send_bookmarks(&mut self) {
        let rev = self.revision;
        self.watchers.retain(|_, slot| {
            if slot.bookmarks {
                slot.tx.try_send(Ok(bookmark(rev))).is_ok()
            } else {
                !slot.tx.is_closed()
            }
        });
    }

    /// Forgets the window up to `revision` (the backend compacted it).
    pub fn compacted(&mut self, revision: Revision) {
        while self.window.front().is_some_and(|c| c.revision <= revision) {
            self.window.pop_front();
        }
        self.window_start = self.window_start.max(revision);
    }

    /// The objects under `prefix` matching `pred`, in key order.
    pub fn list(&self, prefix: &str, pred: &SelectionPredicate) -> Vec<Object> {
        let everything = pred.is_everything();
        self.store
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, o)| everything || pred.matches(o))
            .map(|(_, o)| (**o).clone())
            .collect()
    }
}
