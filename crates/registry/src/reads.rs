//! Storage read options shared by the Store, the allocators and the namespace check, which
//! read objects straight from storage.

use kapi_storage::GetOptions;

/// A read of the latest value that answers `None` rather than `NotFound` when the key is absent.
pub const LATEST_IF_EXISTS: GetOptions = GetOptions {
    resource_version: None,
    ignore_not_found: true,
};
