//! A fault planted on purpose, for the consistency checker to prove it catches one
//! (hack/consistency, `run.sh --planted`): with `KAPI_PLANTED_FAULT_DROP_WATCH_EVENT` set to a
//! piece of storage key (e.g. `/configmaps/consistency-`), the watch cache leaves out, once,
//! the [`DROPPED_DELIVERY`]th event it would have sent to a watcher whose watched key contains
//! it (so a namespace's watchers can be singled out from the controllers' cluster-wide ones). The
//! event stays in the cache's window and store, so only that one live stream has a hole, the
//! kind of bug upstream's cacher has shipped. Never set it anywhere else: the server logs a
//! warning when it is set.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

/// The environment variable that plants the fault.
pub const ENV: &str = "KAPI_PLANTED_FAULT_DROP_WATCH_EVENT";
/// Which delivery is dropped: late enough that the run's watches are established.
pub const DROPPED_DELIVERY: u64 = 200;

static KEY_PART: LazyLock<Option<String>> = LazyLock::new(|| {
    let part = std::env::var(ENV).ok().filter(|p| !p.is_empty())?;
    tracing::warn!(
        "{ENV} is set: the watch cache will drop one event to a watcher of a key containing {part:?} on purpose (a planted fault for consistency tests)"
    );
    Some(part)
});
static DELIVERIES: AtomicU64 = AtomicU64::new(0);

/// Reads the switch (once), so a server that has it set says so as it starts.
pub(super) fn announce() {
    LazyLock::force(&KEY_PART);
}

/// Whether the delivery of an event to a watcher of `watched_key` is the one to drop.
pub(super) fn drops_delivery(watched_key: &str) -> bool {
    match KEY_PART.as_deref() {
        Some(part) if watched_key.contains(part) => {
            DELIVERIES.fetch_add(1, Ordering::Relaxed).saturating_add(1) == DROPPED_DELIVERY
        }
        _ => false,
    }
}
