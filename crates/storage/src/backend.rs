//! What the two backends (etcd and the embedded store) do alike around their own reads and
//! writes: the stored form carries no `resourceVersion`, and a point read answers the same way.

use crate::error::{too_large_resource_version, Error, Result};
use crate::interface::{GetOptions, Revision};
use kapi_machinery::Object;

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
