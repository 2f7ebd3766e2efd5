//! Objects decoded for reads that only look at them ([`Storage::get_shared`]): the cache keeps
//! bytes, and a key read on every write of other resources (the namespace of each create)
//! would otherwise be decoded each time. An entry is used only while the cache still holds the
//! very bytes it was decoded from, so it is always what decoding the current item would give.
//!
//! [`Storage::get_shared`]: crate::Storage::get_shared

use crate::error::Result;
use crate::interface::EncodedItem;
use bytes::Bytes;
use kapi_machinery::Object;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many keys' decoded objects are kept; past it the memory is cleared (the next read of
/// each decodes again).
const DECODED_KEPT: usize = 256;

#[derive(Default)]
pub(super) struct Decoded {
    /// By key: the bytes the object was decoded from (held, so their allocation cannot be
    /// reused by a later state while the entry exists) and the object.
    entries: Mutex<HashMap<String, (Bytes, Arc<Object>)>>,
}

impl Decoded {
    /// The object of `item` (the cache's item for `key`), decoded once per state.
    pub fn get_or_decode(&self, key: &str, item: &EncodedItem) -> Result<Arc<Object>> {
        let lock = || self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((json, object)) = lock().get(key) {
            if same_allocation(json, &item.json) {
                return Ok(object.clone());
            }
        }
        // Decoded outside the lock.
        let object = Arc::new(item.decode()?);
        let mut entries = lock();
        if entries.len() >= DECODED_KEPT && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(key.to_string(), (item.json.clone(), object.clone()));
        Ok(object)
    }
}

/// Whether two handles share one allocation: every state the cache keeps has its own.
fn same_allocation(a: &Bytes, b: &Bytes) -> bool {
    a.as_ptr() == b.as_ptr() && a.len() == b.len()
}
