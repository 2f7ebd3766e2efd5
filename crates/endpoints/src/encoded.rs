//! Encoded watch events, shared between watchers. Many watchers of one resource receive the
//! same `Arc<Object>` per event; each (object, format) pair is encoded once and the bytes are
//! reused (upstream's `cachingObject`). The cache is a fixed number of slots keyed by the
//! object's address, validated through a `Weak` so a reused address never matches.

use crate::negotiation::Transform;
use crate::transform::IncludeObject;
use bytes::Bytes;
use kapi_machinery::{EventType, Object};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock, Weak};

const SLOTS: usize = 4096;

/// Everything that changes an event's encoded bytes besides the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FormatKey {
    pub event_type: EventType,
    pub transform: Option<Transform>,
    pub include: IncludeObject,
    pub headers: bool,
    /// A protobuf frame rather than a JSON line.
    pub protobuf: bool,
}

struct Entry {
    object: Weak<Object>,
    key: FormatKey,
    bytes: Bytes,
}

struct Cache {
    slots: Mutex<Vec<Option<Entry>>>,
}

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Cache {
        slots: Mutex::new((0..SLOTS).map(|_| None).collect()),
    })
}

fn slot_of(obj: &Arc<Object>, key: &FormatKey) -> usize {
    let mut h = DefaultHasher::new();
    (Arc::as_ptr(obj) as usize).hash(&mut h);
    key.hash(&mut h);
    (h.finish() as usize) % SLOTS
}

/// The encoded bytes of `obj` in format `key`, encoding with `encode` on a miss. Objects no
/// one else holds are encoded directly: there is nobody to share with.
pub fn get_or_encode(obj: &Arc<Object>, key: FormatKey, encode: impl FnOnce() -> Bytes) -> Bytes {
    if Arc::strong_count(obj) <= 1 {
        return encode();
    }
    let slot = slot_of(obj, &key);
    {
        let slots = match cache().slots.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(Some(e)) = slots.get(slot) {
            if e.key == key && e.object.upgrade().is_some_and(|o| Arc::ptr_eq(&o, obj)) {
                return e.bytes.clone();
            }
        }
    }
    // Encode outside the lock; two watchers racing encode twice, which is harmless.
    let bytes = encode();
    let mut slots = match cache().slots.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if let Some(s) = slots.get_mut(slot) {
        *s = Some(Entry {
            object: Arc::downgrade(obj),
            key,
            bytes: bytes.clone(),
        });
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn shared_objects_are_encoded_once_per_format() {
        let obj = Arc::new(Object::new());
        let other_holder = obj.clone();
        let calls = Cell::new(0);
        let key = FormatKey {
            event_type: EventType::Added,
            transform: None,
            include: IncludeObject::Metadata,
            headers: false,
            protobuf: false,
        };
        let enc = || {
            calls.set(calls.get() + 1);
            Bytes::from_static(b"x")
        };
        assert_eq!(get_or_encode(&obj, key, enc), Bytes::from_static(b"x"));
        get_or_encode(&obj, key, enc);
        assert_eq!(calls.get(), 1);
        get_or_encode(
            &obj,
            FormatKey {
                event_type: EventType::Modified,
                ..key
            },
            enc,
        );
        assert_eq!(calls.get(), 2);
        drop(other_holder);
    }
}
