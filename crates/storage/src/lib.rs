//! `kapi-storage`: kapi's revisioned key-value store with etcd's semantics.
//!
//! It owns the [`Storage`] trait (create, get, list with paging, guaranteed_update with
//! preconditions, delete, watch from a revision, compaction), its typed [`Error`], the backends
//! (`etcd` over etcd-client, `embedded` on disk, the default), the watch cache that serves
//! LIST and WATCH from memory, and one conformance suite (`testing`) run against every backend.
//!
//! The trait speaks keys, objects and revisions — never HTTP or resources. The interface
//! module imports neither etcd-client nor rusqlite.

mod backend;
pub mod cacher;
pub mod continuation;
pub mod embedded;
mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
mod events;
mod interface;
mod list;
mod list_item;
pub mod testing;
pub mod transformer;

pub use error::{
    check_preconditions, continue_expired, too_large_resource_version, too_old_message, Error,
    Result, CONTINUE_EXPIRED_MESSAGE,
};
pub use events::encode_list_item;
pub use interface::*;
