//! Leader election over a `coordination.k8s.io/v1` Lease with client-go's semantics
//! (`tools/leaderelection`): candidates try to acquire every retry period (with jitter); a
//! Lease is free when its holder is empty or when it has not changed for its
//! `leaseDurationSeconds` as timed by this candidate's own clock (never by comparing
//! `renewTime` with another machine's clock); the leader renews every retry period and gives
//! up when a renewal has not succeeded within the renew deadline. Taking over from another
//! holder increments `leaseTransitions`; renewing keeps `acquireTime`.
//!
//! Unlike kube-controller-manager, which exits when it loses the Lease, kapi stops what runs
//! under the Lease and becomes a candidate again. On a graceful shutdown the leader releases
//! the Lease (client-go's `ReleaseOnCancel`), so another replica, or this one restarted, takes
//! over at once instead of after the lease duration.

use crate::leaselock::{micro_time_now, LeaseLock, LeaseRecord};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// client-go's `JitterFactor`: acquire attempts wait retry period × [1, 1.2).
const JITTER_FACTOR: f64 = 1.2;

/// kube-controller-manager's `--leader-elect-*` flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// `--leader-elect`: false runs everything in this process without a Lease.
    pub enabled: bool,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl Default for LeaderElectionConfig {
    /// kube-controller-manager's defaults: 15s, 10s, 2s.
    fn default() -> Self {
        Self {
            enabled: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl LeaderElectionConfig {
    /// client-go's `NewLeaderElector` checks.
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration <= self.renew_deadline {
            return Err("leaseDuration must be greater than renewDeadline".into());
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err("renewDeadline must be greater than retryPeriod*JitterFactor".into());
        }
        if self.lease_duration.is_zero() || self.retry_period.is_zero() {
            return Err("leaseDuration and retryPeriod must be greater than zero".into());
        }
        Ok(())
    }
}

/// kube-controller-manager's identity: `<hostname>_<uuid>`.
pub fn identity() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// One candidate for one Lease.
pub struct LeaderElector {
    lock: LeaseLock,
    config: LeaderElectionConfig,
    identity: String,
    /// The record last seen, and when (this process's clock) it was seen to change.
    observed: LeaseRecord,
    observed_at: Option<Instant>,
    reported_leader: String,
}

impl LeaderElector {
    pub fn new(lock: LeaseLock, config: LeaderElectionConfig, identity: String) -> Self {
        Self {
            lock,
            config,
            identity,
            observed: LeaseRecord::default(),
            observed_at: None,
            reported_leader: String::new(),
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn is_leader(&self) -> bool {
        self.observed.holder_identity == self.identity
    }

    fn lease_valid(&self, now: Instant) -> bool {
        let secs = u64::try_from(self.observed.lease_duration_seconds).unwrap_or(0);
        self.observed_at
            .and_then(|at| at.checked_add(Duration::from_secs(secs)))
            .is_some_and(|end| end > now)
    }

    fn set_observed(&mut self, record: LeaseRecord) {
        self.observed = record;
        self.observed_at = Some(Instant::now());
    }

    fn report_transition(&mut self) {
        if self.observed.holder_identity != self.reported_leader {
            self.reported_leader = self.observed.holder_identity.clone();
            tracing::info!(lease = %self.lock.describe(), leader = %self.reported_leader, "new leader observed");
        }
    }

    /// client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let now = micro_time_now();
        let mut record = LeaseRecord {
            holder_identity: self.identity.clone(),
            lease_duration_seconds: i64::try_from(self.config.lease_duration.as_secs())
                .unwrap_or(i64::MAX),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: 0,
        };
        // 1. The leader's fast path: update over the record it wrote last.
        if self.is_leader() && self.lease_valid(Instant::now()) {
            record.acquire_time = self.observed.acquire_time.clone();
            record.lease_transitions = self.observed.lease_transitions;
            match self.lock.update(&record).await {
                Ok(()) => {
                    self.set_observed(record);
                    return true;
                }
                Err(e) => {
                    tracing::warn!(lease = %self.lock.describe(), error = %e.message, "failed to update lock optimistically, falling back to slow path")
                }
            }
        }
        // 2. Read, or create, the record.
        let old = match self.lock.get().await {
            Ok(old) => old,
            Err(e) if e.is_not_found() => {
                return match self.lock.create(&record).await {
                    Ok(()) => {
                        self.set_observed(record);
                        true
                    }
                    Err(e) => {
                        tracing::warn!(lease = %self.lock.describe(), error = %e.message, "error initially creating leader election record");
                        false
                    }
                };
            }
            Err(e) => {
                tracing::warn!(lease = %self.lock.describe(), error = %e.message, "error retrieving resource lock");
                return false;
            }
        };
        // 3. A changed record restarts the clock on its holder.
        if old != self.observed || self.observed_at.is_none() {
            self.set_observed(old.clone());
        }
        if !old.holder_identity.is_empty() && self.lease_valid(Instant::now()) && !self.is_leader()
        {
            tracing::debug!(lease = %self.lock.describe(), holder = %old.holder_identity, "lock is held and has not yet expired");
            return false;
        }
        // 4. Take over (a new transition) or renew (same acquireTime).
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.lease_transitions = old.lease_transitions;
        } else {
            record.lease_transitions = old.lease_transitions.saturating_add(1);
        }
        match self.lock.update(&record).await {
            Ok(()) => {
                self.set_observed(record);
                true
            }
            Err(e) => {
                tracing::warn!(lease = %self.lock.describe(), error = %e.message, "failed to update lock");
                false
            }
        }
    }

    /// client-go's `release`: an empty holder and a one-second lease, transitions unchanged.
    async fn release(&mut self) {
        if !self.is_leader() {
            return;
        }
        let now = micro_time_now();
        let record = LeaseRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: self.observed.lease_transitions,
        };
        match self.lock.update(&record).await {
            Ok(()) => {
                tracing::info!(lease = %self.lock.describe(), "released the lease");
                self.set_observed(record);
            }
            Err(e) => {
                tracing::warn!(lease = %self.lock.describe(), error = %e.message, "failed to release lock")
            }
        }
    }

    /// Tries until it holds the Lease; false when `stop` fired first.
    async fn acquire(&mut self, stop: &mut watch::Receiver<bool>) -> bool {
        tracing::info!(lease = %self.lock.describe(), identity = %self.identity, "attempting to acquire leader lease");
        loop {
            let ok = self.try_acquire_or_renew().await;
            self.report_transition();
            if ok {
                tracing::info!(lease = %self.lock.describe(), "successfully acquired lease");
                return true;
            }
            let jitter = 1.0 + rand::random::<f64>() * (JITTER_FACTOR - 1.0);
            let wait = self.config.retry_period.mul_f64(jitter);
            if stopped_within(stop, wait).await {
                return false;
            }
        }
    }

    /// Renews every retry period until a renewal misses the renew deadline (false) or `stop`
    /// fires (true).
    async fn renew(&mut self, stop: &mut watch::Receiver<bool>) -> bool {
        loop {
            if stopped_within(stop, self.config.retry_period).await {
                return true;
            }
            let started = Instant::now();
            let deadline = started
                .checked_add(self.config.renew_deadline)
                .unwrap_or(started);
            let renewed = loop {
                match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(true) => break true,
                    Ok(false) => {}
                    Err(_) => break false,
                }
                if Instant::now()
                    .checked_add(self.config.retry_period)
                    .is_none_or(|next| next >= deadline)
                {
                    break false;
                }
                if stopped_within(stop, self.config.retry_period).await {
                    return true;
                }
            };
            self.report_transition();
            if !renewed {
                tracing::warn!(lease = %self.lock.describe(), "failed to renew lease: leader election lost");
                return false;
            }
        }
    }

    /// Leads whenever it can until `stop` fires: `on_started` starts what runs under the
    /// Lease and returns a guard; dropping the guard stops it (on lost leadership, and before
    /// the Lease is released at shutdown).
    pub async fn run<G, F>(mut self, mut stop: watch::Receiver<bool>, mut on_started: F)
    where
        F: FnMut() -> G,
    {
        loop {
            if !self.acquire(&mut stop).await {
                return;
            }
            let guard = on_started();
            let stopping = self.renew(&mut stop).await;
            drop(guard);
            if stopping {
                self.release().await;
                return;
            }
            // client-go forgets nothing here: the next acquire sees its own stale record.
        }
    }
}

/// Waits `d`; true when `stop` fired (or its sender is gone) meanwhile.
async fn stopped_within(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        _ = tokio::time::sleep(d) => false,
        r = stop.wait_for(|s| *s) => {
            let _ = r;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kube_controller_managers_and_valid() {
        let c = LeaderElectionConfig::default();
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.retry_period, Duration::from_secs(2));
        assert!(c.validate().is_ok());
        let bad = LeaderElectionConfig {
            renew_deadline: Duration::from_secs(15),
            ..c.clone()
        };
        assert!(bad.validate().is_err());
        let bad = LeaderElectionConfig {
            retry_period: Duration::from_secs(9),
            ..c
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn identity_is_hostname_underscore_uuid() {
        let id = identity();
        let (_, uuid) = id.rsplit_once('_').unwrap();
        assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{id}");
    }
}
