//! What the two backends (etcd and the embedded store) do alike around their own reads and
//! writes: the stored form carries no `resourceVersion`, a point read answers the same way, and
//! an update or a delete decides each attempt the same way, from a read or from the watch
//! cache's copy.

use crate::error::{too_large_resource_version, Error, Result};
use crate::interface::{GetOptions, GuaranteedUpdate, Revision, ValidateDeleteFn};
use kapi_machinery::{Object, Preconditions};

/// The object as stored: its `resourceVersion` is the key's revision, never part of the value.
pub(crate) fn strip_revision(mut obj: Object) -> Object {
    if obj
        .metadata()
        .is_some_and(|m| m.contains_key("resourceVersion"))
    {
        obj.metadata_mut().remove("resourceVersion");
    }
    obj
}

/// Whether `object`, already through [`strip_revision`], is `current` but for its
/// resourceVersion; compared in place rather than on a stripped copy of `current`.
fn same_but_revision(object: &Object, current: &Object) -> bool {
    let (a, b) = (object.as_map(), current.as_map());
    a.len() == b.len()
        && a.iter().all(|(k, v)| match (k.as_str(), v, b.get(k)) {
            ("metadata", serde_json::Value::Object(ma), Some(serde_json::Value::Object(mb))) => {
                let revision = usize::from(mb.contains_key("resourceVersion"));
                ma.len().saturating_add(revision) == mb.len()
                    && ma.iter().all(|(k, v)| mb.get(k) == Some(v))
            }
            (_, v, other) => other == Some(v),
        })
}

/// A point read of `key` at revision `current`: "too large resource version" when the caller
/// asked for a newer one, else the object `found` gives, `None` under `ignore_not_found`, or
/// NotFound.
pub(crate) fn get_answer(
    key: &str,
    opts: &GetOptions,
    current: Revision,
    found: Option<impl FnOnce() -> Result<Object>>,
) -> Result<Option<Object>> {
    if let Some(min) = opts.resource_version.filter(|r| *r > current) {
        return Err(too_large_resource_version(min, current));
    }
    match found {
        Some(object) => object().map(Some),
        None if opts.ignore_not_found => Ok(None),
        None => Err(Error::NotFound { key: key.into() }),
    }
}

/// The watch cache's copy an update may start from, with its revision (none if it carries
/// none it can be compared at).
pub(crate) fn cached_copy(u: &mut GuaranteedUpdate<'_, '_>) -> Option<(Object, Revision)> {
    u.cached.take().and_then(with_its_revision)
}

/// A watch cache's copy with the revision it was read at (none if it carries none).
pub(crate) fn with_its_revision(obj: Object) -> Option<(Object, Revision)> {
    let rev = obj.resource_version().parse::<Revision>().ok()?;
    Some((obj, rev))
}

/// The state a delete decides on: the watch cache's copy, or what a read of the key found.
pub(crate) struct DeleteState {
    pub object: Object,
    pub revision: Revision,
    /// Read from the store just now, not the cache's copy.
    pub read: bool,
}

impl DeleteState {
    /// The watch cache's copy as a delete's first state (none without a copy, or one without
    /// a revision).
    pub fn from_copy(cached: Option<Object>) -> Option<DeleteState> {
        let (object, revision) = cached.and_then(with_its_revision)?;
        Some(DeleteState {
            object,
            revision,
            read: false,
        })
    }
}

/// Whether a delete may go ahead on `state`: its preconditions (errors name `error_key`) and
/// `validate` pass. `Ok(false)` when one refused the cache's copy, which may only be stale:
/// the caller reads the key and asks again (upstream's conditionalDelete); on a read, the
/// refusal is the answer.
pub(crate) async fn delete_allowed(
    state: &DeleteState,
    error_key: &str,
    preconditions: Option<&Preconditions>,
    validate: &ValidateDeleteFn<'_>,
) -> Result<bool> {
    let checked = match crate::error::check_preconditions(preconditions, error_key, &state.object) {
        Ok(()) => validate(&state.object).await,
        Err(e) => Err(e),
    };
    match checked {
        Ok(()) => Ok(true),
        Err(_) if !state.read => Ok(false),
        Err(e) => Err(e),
    }
}

/// What one attempt of an update does next.
pub(crate) enum UpdateStep {
    /// Write `object` (stored as `value`, plain) over `current`.
    Write {
        object: Object,
        value: Vec<u8>,
        current: Object,
    },
    /// Decided on the cache's copy alone: read the key and attempt again.
    ReadAgain,
    /// Nothing changed: no write, no event (upstream's short cut); `current` is the answer.
    Unchanged(Object),
}

/// One attempt of `u` on `current`: its preconditions (errors name `error_key`), its closure,
/// and whether anything changed. `stored` is the current value's plain bytes when the attempt
/// starts from a read, `None` when from the cache's copy: then a failed precondition, an error
/// of the closure or "no change" may only mean the copy is stale, and the key is read again
/// (upstream's refresh before its short cut).
pub(crate) async fn update_step(
    u: &mut GuaranteedUpdate<'_, '_>,
    error_key: &str,
    current: Object,
    stored: Option<&[u8]>,
) -> Result<UpdateStep> {
    let from_cache = stored.is_none();
    let attempt = match crate::error::check_preconditions(u.preconditions, error_key, &current) {
        Ok(()) => (u.try_update)(Some(current.clone())).await,
        Err(e) => Err(e),
    };
    let object = match attempt {
        Ok(object) => strip_revision(object),
        Err(_) if from_cache => return Ok(UpdateStep::ReadAgain),
        Err(e) => return Err(e),
    };
    let value = crate::events::encode_for_storage(&object);
    let unchanged = match stored {
        Some(stored) => value == stored,
        None => same_but_revision(&object, &current),
    };
    Ok(match (unchanged, from_cache) {
        (true, true) => UpdateStep::ReadAgain,
        (true, false) => UpdateStep::Unchanged(current),
        (false, _) => UpdateStep::Write {
            object,
            value,
            current,
        },
    })
}
