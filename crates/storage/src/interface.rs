//! The `Storage` trait and the types it speaks.

use crate::error::Result;
use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use kapi_machinery::{EventType, ListOptions, Object, Preconditions, SelectionPredicate};
use std::sync::Arc;
use std::time::Duration;

/// A storage revision (etcd's `mod_revision`); `resourceVersion` is its decimal string.
pub type Revision = i64;

/// Options for [`Storage::get`].
#[derive(Clone, Debug, Default)]
pub struct GetOptions {
    /// `None`/`"0"`-like semantics are decided by the caller; a backend reads the latest
    /// value when this is `None`, or the value at that revision (or later, for the cache).
    pub resource_version: Option<Revision>,
    /// Return `Ok(None)` instead of `NotFound`.
    pub ignore_not_found: bool,
}

/// A list's result: the objects, the revision the list was read at, and paging state.
#[derive(Clone, Debug, Default)]
pub struct ListResult {
    /// Shared with the watch cache when it answers: a list copies no object.
    pub items: Vec<Arc<Object>>,
    /// The revision the whole list (every page) is consistent at.
    pub revision: Revision,
    /// Set when more items remain; pass back as `ListOptions.continue_token`.
    pub continue_token: Option<String>,
    /// How many items remain after this page, where known.
    pub remaining_item_count: Option<i64>,
    /// Each item's encodings, in order, when the storage keeps objects encoded (the watch
    /// cache): a list response is then written by concatenating them. From
    /// [`Storage::list_encoded`], `items` may then be empty ([`ListResult::decode_items`]).
    pub encoded: Option<Vec<EncodedItem>>,
}

impl ListResult {
    /// Fills `items` from `encoded` when a list left them encoded.
    pub fn decode_items(&mut self) -> Result<()> {
        if let Some(encoded) = &self.encoded {
            if self.items.len() != encoded.len() {
                self.items = encoded
                    .iter()
                    .map(|e| e.decode().map(Arc::new))
                    .collect::<Result<_>>()?;
            }
        }
        Ok(())
    }
}

/// One list item's encodings, shared with the watch cache that keeps them.
#[derive(Clone, Debug)]
pub struct EncodedItem {
    /// The JSON of the item in a list's form (without `apiVersion`/`kind`, see
    /// [`encode_list_item`](crate::encode_list_item)).
    pub json: bytes::Bytes,
    /// The item's protobuf message, filled by the first protobuf list that needs it (the
    /// storage knows no protobuf schema) and reused by every later one.
    pub protobuf: Arc<std::sync::OnceLock<bytes::Bytes>>,
    /// What the list-item form left out (`apiVersion`, `kind`), to decode the object.
    pub(crate) type_meta: Arc<crate::list_item::TypeMeta>,
}

impl EncodedItem {
    /// The object, decoded from its JSON (the watch cache keeps no decoded object).
    pub fn decode(&self) -> Result<Object> {
        self.type_meta.decode(&self.json)
    }
}

/// Options for [`Storage::watch`].
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    /// Deliver every change after this revision. `None` = from now (no initial state).
    pub from_revision: Option<Revision>,
    /// Watch every key under the prefix, rather than exactly one key.
    pub recursive: bool,
    /// Only events whose object (or, for a transition, whose old object) matches are sent;
    /// an object that stops matching is delivered as DELETED, one that starts as ADDED.
    pub predicate: SelectionPredicate,
    /// Emit BOOKMARK events carrying only the current revision.
    pub bookmarks: bool,
    /// How long the watch is served (its `timeoutSeconds`): the watch cache sends a watcher
    /// that asked for bookmarks one shortly before then, as upstream's cacher does. `None`:
    /// no deadline (only the periodic bookmarks).
    pub timeout: Option<Duration>,
}

/// One event of a watch stream. The object is shared: many watchers, one copy.
#[derive(Clone, Debug)]
pub struct Event {
    pub event_type: EventType,
    pub object: Arc<Object>,
    pub revision: Revision,
}

/// A watch stream: events in revision order; an `Err` item ends it (e.g. `ResourceExpired`).
pub type WatchStream = BoxStream<'static, Result<Event>>;

/// The closure [`Storage::guaranteed_update`] applies to the current object. It gets the
/// current object (`None` if absent and `ignore_not_found`) and returns the new one; it may be
/// called several times if the compare-and-swap loses. Returning the input unchanged means no
/// write.
pub type UpdateFn<'a> = dyn FnMut(Option<Object>) -> BoxFuture<'a, Result<Object>> + Send + 'a;

/// The arguments of one [`Storage::guaranteed_update`]: the preconditions checked against each
/// current object read, whether a missing key is created (`try_update(None)`) instead of
/// NotFound, and the update.
pub struct GuaranteedUpdate<'a, 'f> {
    pub preconditions: Option<&'a Preconditions>,
    pub ignore_not_found: bool,
    pub try_update: &'a mut UpdateFn<'f>,
    /// The object as a watch cache holds it (with its `resourceVersion`), perhaps stale: a
    /// store may start from it instead of reading the key (upstream's `cachedExistingObject`).
    /// Its compare-and-swap catches a stale one, and what the first attempt decides from it
    /// alone (a failed precondition, an error of the update, no change) is decided again on a
    /// fresh read.
    pub cached: Option<Object>,
}

/// Checks the current object before a delete; an `Err` aborts the delete.
pub type ValidateDeleteFn<'a> = dyn Fn(&Object) -> BoxFuture<'a, Result<()>> + Send + Sync + 'a;

/// A revisioned object store with etcd's semantics. Keys are paths without the backend's
/// prefix (`/configmaps/default/x`, `/namespaces/default`); lists and watches take a prefix
/// ending in `/`. Every object returned carries its revision as `metadata.resourceVersion`.
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Creates `key`; fails with `KeyExists` if present. `ttl` expires the key (events).
    async fn create(&self, key: &str, obj: Object, ttl: Option<Duration>) -> Result<Object>;

    /// Reads one key.
    async fn get(&self, key: &str, opts: &GetOptions) -> Result<Option<Object>>;

    /// [`Storage::get`] for a caller that only reads the object: the watch cache hands out
    /// the object it decoded for an earlier read of the same state rather than decoding it
    /// again (every create reads its namespace this way, twice).
    async fn get_shared(&self, key: &str, opts: &GetOptions) -> Result<Option<Arc<Object>>> {
        Ok(self.get(key, opts).await?.map(Arc::new))
    }

    /// Lists every key under `prefix` (which should end in `/`), honouring the resource
    /// version semantics, selectors, `limit` and `continue` of `opts`.
    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult>;

    /// [`Storage::list`] whose items may stay encoded: when the result's `encoded` is set,
    /// `items` may be empty ([`ListResult::decode_items`] makes them). The watch cache keeps
    /// only bytes, so a response written from them decodes nothing.
    async fn list_encoded(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult> {
        self.list(prefix, opts).await
    }

    /// Read-modify-write with compare-and-swap on the revision, retried on conflict.
    /// Preconditions are checked against each current object read.
    async fn guaranteed_update(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        ignore_not_found: bool,
        try_update: &mut UpdateFn<'_>,
    ) -> Result<Object> {
        let update = GuaranteedUpdate {
            preconditions,
            ignore_not_found,
            try_update,
            cached: None,
        };
        self.update(key, update).await
    }

    /// Whether [`Storage::update`] and [`Storage::delete_from`] start from the watch cache's
    /// copy when given one; a watch cache over a store that does not decodes no copy for it.
    fn starts_from_cached_copy(&self) -> bool {
        false
    }

    /// What a store implements for [`Storage::guaranteed_update`], its arguments in one.
    async fn update(&self, key: &str, update: GuaranteedUpdate<'_, '_>) -> Result<Object>;

    /// Deletes `key` if the preconditions and `validate` pass; returns the deleted object.
    async fn delete(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: &ValidateDeleteFn<'_>,
    ) -> Result<Object> {
        self.delete_from(key, preconditions, validate, None).await
    }

    /// What a store implements for [`Storage::delete`]: `cached` is the object as a watch
    /// cache holds it (with its `resourceVersion`), perhaps stale, which a store that
    /// [`Storage::starts_from_cached_copy`] checks and deletes at its revision instead of
    /// reading the key first (upstream's `cachedExistingObject` for deletes). The
    /// compare-and-delete catches a stale copy, and a precondition or validation that refuses
    /// the copy is checked again on a read of the key.
    async fn delete_from(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: &ValidateDeleteFn<'_>,
        cached: Option<Object>,
    ) -> Result<Object>;

    /// Watches a key or prefix.
    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream>;

    /// The latest revision of the store.
    async fn current_revision(&self) -> Result<Revision>;

    /// Forgets history up to `revision`; watches and paged lists from before it become Gone.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// Counts the keys under a prefix (for `apiserver_storage_objects`).
    async fn count(&self, prefix: &str) -> Result<i64>;

    /// Whether [`Storage::count`] reads more than the keys it counts (the embedded store reads
    /// each key's history), so that a watch cache over it counts from memory instead; etcd
    /// counts from its in-memory index, and a cache over it asks etcd, as upstream's does.
    fn counts_slowly(&self) -> bool {
        false
    }

    /// Whether the backend answers right now (for `/readyz`).
    async fn health(&self) -> Result<()>;

    /// Asks every open watch that has `bookmarks` set to send, soon, a BOOKMARK at a revision
    /// up to which it has delivered every change (etcd's progress request). The watch cache
    /// uses it to learn it is current when its prefix is quiet. An `Err` means no such
    /// bookmark will come (the default, and etcd before 3.4.31/3.5.13, whose progress
    /// notifications can run ahead of events); the cache then reads from the backend.
    async fn request_progress(&self) -> Result<()> {
        Err(crate::Error::Unavailable(
            "this storage does not report watch progress".into(),
        ))
    }

    /// The newest change under `prefix` and how many keys it holds, read in one request at
    /// the store's current revision. The watch cache uses it to prove it is current without
    /// progress reports. `None` (the default): the backend cannot tell cheaply.
    async fn prefix_stamp(&self, _prefix: &str) -> Result<Option<PrefixStamp>> {
        Ok(None)
    }
}

/// What [`Storage::prefix_stamp`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixStamp {
    /// The revision the read was made at (the store's current one).
    pub revision: Revision,
    /// The highest `mod_revision` of a key under the prefix (0 when it holds none).
    pub newest: Revision,
    /// How many keys the prefix holds.
    pub count: i64,
}

/// Shared handle to a storage.
pub type DynStorage = Arc<dyn Storage>;
