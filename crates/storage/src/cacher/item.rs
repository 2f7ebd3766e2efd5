//! One object of the watch cache as it is kept (upstream's `storeElement`): its list-item JSON,
//! made once at insertion in an allocation of its own size, its protobuf message once a
//! protobuf list has made it, and what selectors read: the labels, and the values of the
//! resource's selectable fields (upstream's `Fields`; name and namespace come from the key).
//! The decoded object is not kept — it costs several times its JSON — so the paths that need
//! one (a GET, a list of objects, a field selector on a field the resource does not declare, a
//! watcher seeing an object leave its selector) decode the JSON.

use crate::events::{list_item_json, with_revision, Change, ChangeKind, Prior};
use crate::interface::{EncodedItem, Revision};
use crate::list_item::TypeMeta;
use crate::Result;
use bytes::Bytes;
use kapi_machinery::{Object, SelectionPredicate};
use std::sync::{Arc, OnceLock};

/// Makes the items of one cache: items of one kind share one type meta, and each keeps the
/// values of the resource's selectable fields.
#[derive(Default)]
pub(super) struct ItemEncoder {
    /// The last type meta seen, reused when equal (and replaced when not).
    type_meta: Option<Arc<TypeMeta>>,
    /// The field labels whose values items keep (`metadata.name` and `metadata.namespace`
    /// left out: the key has them).
    fields: Box<[&'static str]>,
}

impl ItemEncoder {
    pub fn new(fields: &'static [&'static str]) -> ItemEncoder {
        ItemEncoder {
            type_meta: None,
            fields: fields
                .iter()
                .copied()
                .filter(|f| !matches!(*f, "metadata.name" | "metadata.namespace"))
                .collect(),
        }
    }

    /// Encodes `obj` as the cache keeps it.
    pub fn encode(&mut self, obj: &Object) -> Cached {
        let json = list_item_json(obj);
        let type_meta = TypeMeta::of(obj);
        let type_meta = match &self.type_meta {
            Some(s) if **s == type_meta => s.clone(),
            _ => self.type_meta.insert(Arc::new(type_meta)).clone(),
        };
        Cached {
            // The encoder's buffer grew by doubling; the cache keeps this one for the
            // object's lifetime.
            json: Bytes::from(json.into_boxed_slice()),
            protobuf: Arc::default(),
            type_meta,
            labels: obj
                .labels()
                .into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
                .collect(),
            fields: self
                .fields
                .iter()
                .map(|f| (*f, obj.field_value(f).into_boxed_str()))
                .collect(),
        }
    }
}

/// One cached object.
pub(super) struct Cached {
    json: Bytes,
    protobuf: Arc<OnceLock<Bytes>>,
    type_meta: Arc<TypeMeta>,
    labels: Box<[(Box<str>, Box<str>)]>,
    /// The values of the resource's selectable fields, as `Object::field_value` reads them.
    fields: Box<[(&'static str, Box<str>)]>,
}

impl Cached {
    /// The encodings, shared with the cache.
    pub fn encoded(&self) -> EncodedItem {
        EncodedItem {
            json: self.json.clone(),
            protobuf: self.protobuf.clone(),
            type_meta: self.type_meta.clone(),
        }
    }

    /// The object, decoded.
    pub fn decode(&self) -> Result<Object> {
        self.type_meta.decode(&self.json)
    }

    /// [`Cached::decode`] for a watch event: an item that does not decode is logged and the
    /// event left out.
    fn decode_for_event(&self) -> Option<Object> {
        self.decode()
            .map_err(|e| tracing::error!(error = %e, "watch cache: an item does not decode"))
            .ok()
    }

    /// The value of field label `field` when the cache keeps it (name and namespace from
    /// `rest`, the key below the cache's prefix).
    pub fn field<'a>(&'a self, rest: &'a str, field: &str) -> Option<&'a str> {
        let (namespace, name) = rest.split_once('/').unwrap_or(("", rest));
        match field {
            "metadata.name" => Some(name),
            "metadata.namespace" => Some(namespace),
            field => self
                .fields
                .iter()
                .find(|(f, _)| *f == field)
                .map(|(_, value)| &**value),
        }
    }

    /// Whether the object matches `pred`; `rest` is its key below the cache's prefix
    /// (`ns/name`, or `name` for a cluster-scoped one). Labels, name, namespace and the
    /// resource's selectable fields are read from what is kept; any other field from the
    /// decoded object.
    pub fn matches(&self, rest: &str, pred: &SelectionPredicate) -> bool {
        // Kept in key order (taken from a sorted map), so a key is found by binary search.
        let label = |key: &str| {
            self.labels
                .binary_search_by(|(k, _)| (**k).cmp(key))
                .ok()
                .and_then(|i| self.labels.get(i))
                .map(|(_, v)| &**v)
        };
        if !pred.label.is_empty() && !pred.label.matches_with(label) {
            return false;
        }
        if pred.field.is_empty() {
            return true;
        }
        let mut other = false;
        for r in &pred.field.requirements {
            let Some(value) = self.field(rest, &r.field) else {
                other = true;
                continue;
            };
            if (value == r.value) == r.negated {
                return false;
            }
        }
        !other || self.decode().is_ok_and(|o| pred.field.matches(&o))
    }
}

/// The state an update replaced, kept as the cache kept it: only a watcher whose selector
/// sees the object leave needs it decoded.
#[derive(Clone)]
pub(super) struct Former {
    pub item: Arc<Cached>,
    /// Where the object's key continues below the cache's prefix.
    pub prefix_len: usize,
}

impl Prior for Former {
    fn matches(&self, key: &str, pred: &SelectionPredicate) -> bool {
        self.item
            .matches(key.get(self.prefix_len..).unwrap_or_default(), pred)
    }

    fn stamped(&self, revision: Revision) -> Option<Arc<Object>> {
        let object = self.item.decode_for_event()?;
        Some(Arc::new(with_revision(object, revision)))
    }
}

/// A change as the window of recent changes keeps it: the new state as the store keeps it
/// (the same allocation while it is current), not decoded. Watchers registered when the change
/// is applied get the backend's decoded object; a watch that starts from an earlier revision
/// decodes what it replays.
#[derive(Clone)]
pub(super) struct Kept {
    pub revision: Revision,
    pub key: String,
    pub kind: ChangeKind,
    /// The new state; for a deletion the last state, whose `resourceVersion` becomes the
    /// deletion's when decoded.
    pub item: Arc<Cached>,
    pub prev: Option<Former>,
}

impl Kept {
    /// Whether a watcher with `pred` gets an event for this change ([`crate::events::to_event`]'s
    /// rule read from the kept items: the new state matches, or the former one did), decided
    /// without decoding where the selector reads only what items keep. `prefix_len` is where
    /// the key continues below the cache's prefix.
    pub fn may_concern(&self, prefix_len: usize, pred: &SelectionPredicate) -> bool {
        if pred.is_everything() {
            return true;
        }
        let rest = self.key.get(prefix_len..).unwrap_or_default();
        self.item.matches(rest, pred)
            || (self.kind == ChangeKind::Modified
                && self
                    .prev
                    .as_ref()
                    .is_some_and(|p| p.matches(&self.key, pred)))
    }

    /// The change with its object decoded, or `None` (logged) if it does not decode.
    pub fn decoded(&self) -> Option<Change<Former>> {
        let object = self.item.decode_for_event()?;
        let object = match self.kind {
            ChangeKind::Deleted => with_revision(object, self.revision),
            _ => object,
        };
        Some(Change {
            revision: self.revision,
            key: self.key.clone(),
            kind: self.kind,
            object: Some(Arc::new(object)),
            prev: self.prev.clone(),
        })
    }
}
