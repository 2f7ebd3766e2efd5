//! The etcd leases of objects that expire (Events): writes close in time share one lease, as
//! kube-apiserver's `leaseManager` (k8s.io/apiserver `storage/etcd3`) does. Each grant is a
//! raft proposal and each expiry a revoke, so a lease per Event doubled etcd's writes under a
//! cluster's event load.
//!
//! A new lease lives the object's TTL plus a reuse window (5% of the TTL, at most 60 s). A
//! later write reuses it while the lease outlives the new object's TTL by less than that
//! window, for at most 1,000 objects; an object may so live up to the window past its TTL.
//! Short TTLs (under 20 s: a window of 0 s) always get a lease of their own.

use crate::error::Result;
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// Upstream's bounds on the reuse window and the objects per lease
/// (`storagebackend.DefaultLeaseReuseDurationSeconds`, `DefaultLeaseMaxObjectCount`).
const REUSE_SECONDS_MAX: i64 = 60;
const REUSE_SHARE_OF_TTL: f64 = 0.05;
const MAX_OBJECTS_PER_LEASE: u64 = 1000;

/// The last lease granted, shared by the writes that can use it.
#[derive(Default)]
pub(super) struct LeaseManager {
    last: Mutex<Option<Granted>>,
}

struct Granted {
    id: i64,
    expires: Instant,
    /// Objects given this lease, counting every request since it was granted (as upstream).
    attached: u64,
}

fn reuse_seconds(ttl: i64) -> i64 {
    // Truncated as upstream's int64 conversion.
    ((REUSE_SHARE_OF_TTL * ttl as f64) as i64).min(REUSE_SECONDS_MAX)
}

fn seconds(s: i64) -> Duration {
    Duration::from_secs(u64::try_from(s).unwrap_or(0))
}

impl LeaseManager {
    /// The lease for an object that must live `ttl` seconds from `now`: the last one when it
    /// can serve, else one of `ttl` plus the reuse window from `grant` (which takes the TTL to
    /// ask etcd for). The lock is held across the grant, so concurrent writes share it.
    pub(super) async fn lease_at<F, Fut>(&self, now: Instant, ttl: i64, grant: F) -> Result<i64>
    where
        F: FnOnce(i64) -> Fut,
        Fut: Future<Output = Result<i64>>,
    {
        let mut last = self.last.lock().await;
        let reuse = reuse_seconds(ttl);
        let granted = ttl.saturating_add(reuse);
        // `None`: past what an Instant can hold, later than any lease.
        let after = |s: i64| now.checked_add(seconds(s));
        if let Some(g) = last.as_mut() {
            g.attached = g.attached.saturating_add(1);
            let outlives = after(ttl).is_some_and(|t| t < g.expires);
            let not_by_much = after(granted).is_none_or(|t| t > g.expires);
            if outlives && not_by_much && g.attached <= MAX_OBJECTS_PER_LEASE {
                return Ok(g.id);
            }
        }
        let id = grant(granted).await?;
        *last = Some(Granted {
            id,
            // A TTL past what an Instant holds: a lease no later write can share.
            expires: after(granted).unwrap_or(now),
            attached: 1,
        });
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    /// Grants numbered leases and remembers the TTL asked for.
    struct Etcd {
        next: AtomicI64,
        asked: AtomicI64,
    }

    impl Etcd {
        fn new() -> Self {
            Self {
                next: AtomicI64::new(1),
                asked: AtomicI64::new(0),
            }
        }
        async fn grant(&self, ttl: i64) -> Result<i64> {
            self.asked.store(ttl, Ordering::Relaxed);
            Ok(self.next.fetch_add(1, Ordering::Relaxed))
        }
    }

    #[tokio::test]
    async fn an_hour_ttl_shares_a_lease_for_a_minute() {
        let (m, etcd, t0) = (LeaseManager::default(), Etcd::new(), Instant::now());
        let at = |s: u64| t0.checked_add(Duration::from_secs(s)).unwrap();
        assert_eq!(m.lease_at(at(0), 3600, |t| etcd.grant(t)).await.unwrap(), 1);
        assert_eq!(
            etcd.asked.load(Ordering::Relaxed),
            3660,
            "the TTL plus 60 s"
        );
        assert_eq!(m.lease_at(at(1), 3600, |t| etcd.grant(t)).await.unwrap(), 1);
        assert_eq!(
            m.lease_at(at(59), 3600, |t| etcd.grant(t)).await.unwrap(),
            1
        );
        // At 60 s the lease would no longer outlive a new object's hour.
        assert_eq!(
            m.lease_at(at(60), 3600, |t| etcd.grant(t)).await.unwrap(),
            2
        );
        assert_eq!(
            m.lease_at(at(61), 3600, |t| etcd.grant(t)).await.unwrap(),
            2
        );
    }

    #[tokio::test]
    async fn a_short_ttl_gets_its_own_lease() {
        let (m, etcd, t0) = (LeaseManager::default(), Etcd::new(), Instant::now());
        assert_eq!(m.lease_at(t0, 15, |t| etcd.grant(t)).await.unwrap(), 1);
        assert_eq!(etcd.asked.load(Ordering::Relaxed), 15);
        assert_eq!(m.lease_at(t0, 15, |t| etcd.grant(t)).await.unwrap(), 2);
    }

    #[tokio::test]
    async fn a_lease_holds_at_most_a_thousand_objects() {
        let (m, etcd, t0) = (LeaseManager::default(), Etcd::new(), Instant::now());
        let t1 = t0.checked_add(Duration::from_secs(1)).unwrap();
        assert_eq!(m.lease_at(t0, 3600, |t| etcd.grant(t)).await.unwrap(), 1);
        for _ in 1..1000 {
            assert_eq!(m.lease_at(t1, 3600, |t| etcd.grant(t)).await.unwrap(), 1);
        }
        assert_eq!(m.lease_at(t1, 3600, |t| etcd.grant(t)).await.unwrap(), 2);
    }

    #[tokio::test]
    async fn a_longer_ttl_does_not_take_a_shorter_lease() {
        let (m, etcd, t0) = (LeaseManager::default(), Etcd::new(), Instant::now());
        assert_eq!(m.lease_at(t0, 600, |t| etcd.grant(t)).await.unwrap(), 1);
        assert_eq!(m.lease_at(t0, 3600, |t| etcd.grant(t)).await.unwrap(), 2);
    }
}
