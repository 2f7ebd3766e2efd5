//! Committed changes as backends and the watch cache see them, and the one function that turns
//! a change into what a watcher with a key and a predicate receives.

use crate::interface::{Event, Revision};
use crate::list_item::TYPE_FIELDS;
use kapi_machinery::{EventType, Object, SelectionPredicate};
use serde_json::{json, Value};
use std::sync::Arc;

/// What a committed write did to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// Not a write: every change up to `revision` has been published (progress notify).
    Progress,
}

/// One committed write. Objects carry `resourceVersion`; for a deletion `object` is the last
/// state with `resourceVersion` set to the deletion's revision, as upstream sends it.
#[derive(Clone, Debug)]
pub(crate) struct Change<P = Arc<Object>> {
    pub revision: Revision,
    pub key: String,
    pub kind: ChangeKind,
    pub object: Option<Arc<Object>>,
    /// The state before this write (sent, with `resourceVersion` set to `revision`, as the
    /// DELETED of an object that stopped matching a predicate). `None` for additions. It may
    /// still carry its own `resourceVersion`: `to_event` stamps it when it is sent. The
    /// backends keep the object; the watch cache keeps its encoded item ([`Prior`]).
    pub prev: Option<P>,
}

/// The state before a write as a [`Change`] keeps it.
pub(crate) trait Prior {
    /// Whether it matches `pred` (`key` is the change's).
    fn matches(&self, key: &str, pred: &SelectionPredicate) -> bool;
    /// The object with `resourceVersion` set to `revision` (a DELETED event's object).
    fn stamped(&self, revision: Revision) -> Option<Arc<Object>>;
}

impl Prior for Arc<Object> {
    fn matches(&self, _: &str, pred: &SelectionPredicate) -> bool {
        pred.matches(self)
    }

    fn stamped(&self, revision: Revision) -> Option<Arc<Object>> {
        Some(if self.resource_version() == revision.to_string() {
            self.clone()
        } else {
            Arc::new(with_revision((**self).clone(), revision))
        })
    }
}

impl Change {
    pub fn progress(revision: Revision) -> Self {
        Change {
            revision,
            key: String::new(),
            kind: ChangeKind::Progress,
            object: None,
            prev: None,
        }
    }
}

/// Whether `key` is watched by a watch on `watched` (a prefix when `recursive`).
pub(crate) fn key_matches(watched: &str, recursive: bool, key: &str) -> bool {
    if recursive {
        key.starts_with(watched)
    } else {
        key == watched
    }
}

/// The event a watcher with `pred` gets for `change`, if any: an object that starts matching
/// is ADDED, one that stops matching is DELETED (upstream's cacheWatcher rules).
pub(crate) fn to_event<P: Prior>(change: &Change<P>, pred: &SelectionPredicate) -> Option<Event> {
    let everything = pred.is_everything();
    let matches = |o: &Arc<Object>| everything || pred.matches(o);
    let event = |t: EventType, o: &Arc<Object>| {
        Some(Event {
            event_type: t,
            object: o.clone(),
            revision: change.revision,
        })
    };
    match change.kind {
        ChangeKind::Progress => None,
        ChangeKind::Added => change
            .object
            .as_ref()
            .filter(|o| matches(o))
            .and_then(|o| event(EventType::Added, o)),
        ChangeKind::Deleted => change
            .object
            .as_ref()
            .filter(|o| matches(o))
            .and_then(|o| event(EventType::Deleted, o)),
        ChangeKind::Modified => {
            let cur = change.object.as_ref()?;
            let now = matches(cur);
            let before = change
                .prev
                .as_ref()
                .map_or(now, |p| everything || p.matches(&change.key, pred));
            match (before, now) {
                (true, true) => event(EventType::Modified, cur),
                (false, true) => event(EventType::Added, cur),
                (true, false) => change
                    .prev
                    .as_ref()
                    .and_then(|p| p.stamped(change.revision))
                    .and_then(|o| event(EventType::Deleted, &o)),
                (false, false) => None,
            }
        }
    }
}

/// A BOOKMARK event: an object carrying only `metadata.resourceVersion` (the registry adds
/// `apiVersion`/`kind`).
pub(crate) fn bookmark(revision: Revision) -> Event {
    let obj = Object::from_value(json!({"metadata": {"resourceVersion": revision.to_string()}}))
        .unwrap_or_default();
    Event {
        event_type: EventType::Bookmark,
        object: Arc::new(obj),
        revision,
    }
}

/// `obj` with `resourceVersion` set to `revision`.
pub(crate) fn with_revision(mut obj: Object, revision: Revision) -> Object {
    obj.set_resource_version(&revision.to_string());
    obj
}

/// Encodes an object for storage: JSON without `resourceVersion` (it is the key's revision).
pub(crate) fn encode_for_storage(obj: &Object) -> Vec<u8> {
    if obj
        .metadata()
        .is_some_and(|m| m.contains_key("resourceVersion"))
    {
        let mut o = obj.clone();
        o.metadata_mut().remove("resourceVersion");
        o.to_vec()
    } else {
        obj.to_vec()
    }
}

/// An object's JSON as an item of a list: typed lists' items carry no `apiVersion`/`kind`,
/// the other fields keep their order. The endpoints' list writer removes them the same way,
/// so both forms are byte-identical.
pub fn encode_list_item(obj: &Object) -> bytes::Bytes {
    bytes::Bytes::from(list_item_json(obj))
}

/// [`encode_list_item`]'s bytes, written without copying the object.
pub(crate) fn list_item_json(obj: &Object) -> Vec<u8> {
    // Serializing a map of values cannot fail: every key is a string.
    serde_json::to_vec(&ListForm(obj.as_map())).unwrap_or_default()
}

/// A map serialized without its type fields.
struct ListForm<'a>(&'a serde_json::Map<String, Value>);

impl serde::Serialize for ListForm<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (k, v) in self.0 {
            if !TYPE_FIELDS.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// Decodes stored bytes and stamps the revision.
pub(crate) fn decode_stored(key: &str, bytes: &[u8], revision: Revision) -> crate::Result<Object> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| crate::Error::Corrupt {
        key: key.into(),
        message: e.to_string(),
    })?;
    let obj = Object::from_value(v).map_err(|e| crate::Error::Corrupt {
        key: key.into(),
        message: e.message,
    })?;
    Ok(with_revision(obj, revision))
}

/// The smallest key greater than every key starting with `prefix`.
pub(crate) fn prefix_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    while let Some(last) = bytes.pop() {
        if last < 0x7f {
            bytes.push(last.saturating_add(1));
            // Only an ASCII byte was changed, so this stays valid UTF-8.
            return String::from_utf8(bytes).unwrap_or_else(|_| format!("{prefix}\u{10FFFF}"));
        }
    }
    format!("{prefix}\u{10FFFF}")
}

/// The bookmark ticker of a watch: first tick one `period` from now, not at once.
pub(crate) fn bookmark_ticker(period: std::time::Duration) -> tokio::time::Interval {
    let now = tokio::time::Instant::now();
    tokio::time::interval_at(now.checked_add(period).unwrap_or(now), period)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_machinery::LabelSelector;

    fn obj(label: &str) -> Arc<Object> {
        Arc::new(
            Object::from_value(json!({"metadata": {"name": "a", "labels": {"app": label}}}))
                .unwrap(),
        )
    }

    #[test]
    fn predicate_transitions() {
        let pred = SelectionPredicate {
            label: LabelSelector::parse("app=web").unwrap(),
            ..Default::default()
        };
        let modified = |before: &str, after: &str| Change {
            revision: 5,
            key: "/k".into(),
            kind: ChangeKind::Modified,
            object: Some(obj(after)),
            prev: Some(obj(before)),
        };
        assert_eq!(
            to_event(&modified("web", "web"), &pred).unwrap().event_type,
            EventType::Modified
        );
        assert_eq!(
            to_event(&modified("db", "web"), &pred).unwrap().event_type,
            EventType::Added
        );
        let gone = to_event(&modified("web", "db"), &pred).unwrap();
        assert_eq!(gone.event_type, EventType::Deleted);
        assert_eq!(gone.object.labels()["app"], "web");
        assert!(to_event(&modified("db", "db"), &pred).is_none());
        assert_eq!(prefix_end("/configmaps/"), "/configmaps0");
    }
}
