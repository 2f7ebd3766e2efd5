//! Each replica's identity Lease in `kube-system`, as kube-apiserver keeps it (its
//! `APIServerIdentity` feature): named `apiserver-<hash>`, labelled
//! `apiserver.kubernetes.io/identity: kube-apiserver` and `kubernetes.io/hostname`, held by
//! `<name>_<uuid>`, 3600 s long and renewed every 10 s; every replica also deletes the
//! identity Leases that expired (hourly, as upstream's `apiserverleasegc` controller), which
//! are the leases of replicas that are gone.
//!
//! Upstream hashes the hostname alone, assuming one apiserver per host; kapi hashes the
//! hostname with the advertised address and port, so replicas sharing a host (as on a test
//! machine) keep distinct leases while a restarted replica keeps its own.

use crate::leaselock::{micro_time_now, parse_time, LeaseLock, LeaseRecord};
use kapi_machinery::{DeleteOptions, ListOptions};
use kapi_registry::rest::{validate_nothing, Context, Storage};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

pub const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
pub const KUBE_APISERVER: &str = "kube-apiserver";
/// Upstream's `IdentityLeaseDurationSeconds`, `IdentityLeaseRenewIntervalPeriod` and
/// `IdentityLeaseGCPeriod`.
pub const LEASE_DURATION_SECONDS: i64 = 3600;
pub const RENEW_INTERVAL: Duration = Duration::from_secs(10);
pub const GC_PERIOD: Duration = Duration::from_secs(3600);

fn hostname() -> String {
    hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}

/// `apiserver-<base32(sha256(...)[:16]) in lower case>`.
pub fn lease_name(host: &str, advertise: SocketAddr) -> String {
    let hash = Sha256::digest(format!("{host}/{advertise}").as_bytes());
    format!(
        "apiserver-{}",
        data_encoding::BASE32_NOPAD
            .encode(hash.get(..16).unwrap_or_default())
            .to_ascii_lowercase()
    )
}

/// Keeps this replica's identity Lease and collects expired ones until `stop` fires.
pub async fn run(leases: Arc<dyn Storage>, advertise: SocketAddr, stop: watch::Receiver<bool>) {
    let host = hostname();
    let name = lease_name(&host, advertise);
    let holder = format!("{name}_{}", uuid::Uuid::new_v4());
    let labels = json!({ IDENTITY_LABEL: KUBE_APISERVER, HOSTNAME_LABEL: host });
    let mut lock = LeaseLock::new(
        leases.clone(),
        "kube-system",
        &name,
        "system:apiserver",
        labels,
    );
    tracing::info!(lease = %lock.describe(), holder = %holder, "keeping the apiserver identity lease");
    let heartbeat = async {
        loop {
            if let Err(e) = renew(&mut lock, &holder).await {
                tracing::warn!(lease = %lock.describe(), error = %e.message, "failed to renew the apiserver identity lease");
            }
            tokio::time::sleep(RENEW_INTERVAL).await;
        }
    };
    let gc = async {
        loop {
            collect_expired(&*leases).await;
            tokio::time::sleep(GC_PERIOD).await;
        }
    };
    let mut stop = stop;
    tokio::select! {
        _ = heartbeat => {}
        _ = gc => {}
        _ = stop.wait_for(|s| *s) => {}
    }
}

async fn renew(lock: &mut LeaseLock, holder: &str) -> Result<(), kapi_machinery::ApiError> {
    let record = LeaseRecord {
        holder_identity: holder.to_string(),
        lease_duration_seconds: LEASE_DURATION_SECONDS,
        acquire_time: None,
        renew_time: Some(micro_time_now()),
        lease_transitions: 0,
    };
    match lock.get().await {
        Ok(old) => {
            let record = LeaseRecord {
                acquire_time: old.acquire_time,
                lease_transitions: old.lease_transitions,
                ..record
            };
            lock.update(&record).await
        }
        Err(e) if e.is_not_found() => lock.create(&record).await,
        Err(e) => Err(e),
    }
}

/// Whether an identity Lease's `renewTime + leaseDurationSeconds` has passed.
fn expired(record: &LeaseRecord, now: chrono::DateTime<chrono::Utc>) -> bool {
    match record.renew_time.as_deref().and_then(parse_time) {
        Some(renewed) => chrono::Duration::try_seconds(record.lease_duration_seconds)
            .and_then(|d| renewed.checked_add_signed(d))
            .is_none_or(|end| end < now),
        None => true,
    }
}

/// Deletes expired kube-apiserver identity Leases (each guarded by its uid and
/// resourceVersion, so a lease renewed meanwhile stays).
pub async fn collect_expired(leases: &dyn Storage) {
    let ctx = Context {
        namespace: "kube-system".into(),
        user: kapi_machinery::UserInfo {
            name: "system:apiserver".into(),
            ..Default::default()
        },
    };
    let (Some(lister), Some(deleter)) = (leases.as_lister(), leases.as_graceful_deleter()) else {
        return;
    };
    let list = match lister.list(&ctx, &ListOptions::default()).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e.message, "listing identity leases failed");
            return;
        }
    };
    let now = chrono::Utc::now();
    for lease in list.items {
        if lease.labels().get(IDENTITY_LABEL).map(String::as_str) != Some(KUBE_APISERVER)
            || !expired(&LeaseRecord::from_lease(&lease), now)
        {
            continue;
        }
        let mut opts = DeleteOptions::default();
        opts.preconditions.uid = Some(lease.uid().to_string());
        opts.preconditions.resource_version = Some(lease.resource_version().to_string());
        match deleter
            .delete(&ctx, lease.name(), validate_nothing(), &opts)
            .await
        {
            Ok(_) => tracing::info!(
                lease = lease.name(),
                "deleted an expired apiserver identity lease"
            ),
            Err(e) if e.is_not_found() || e.is_conflict() => {}
            Err(e) => {
                tracing::warn!(lease = lease.name(), error = %e.message, "deleting an expired identity lease failed")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_are_stable_and_distinct() {
        let a: SocketAddr = "127.0.0.1:6443".parse().unwrap();
        let b: SocketAddr = "127.0.0.2:6443".parse().unwrap();
        let name = lease_name("host", a);
        assert!(name.starts_with("apiserver-"), "{name}");
        assert_eq!(name.len(), "apiserver-".len() + 26);
        assert_eq!(name, name.to_ascii_lowercase());
        assert_eq!(name, lease_name("host", a));
        assert_ne!(name, lease_name("host", b));
    }

    #[test]
    fn expiry_is_renew_time_plus_duration() {
        let now = chrono::Utc::now();
        let mut r = LeaseRecord {
            lease_duration_seconds: 10,
            renew_time: Some((now - chrono::Duration::seconds(11)).to_rfc3339()),
            ..Default::default()
        };
        assert!(expired(&r, now));
        r.renew_time = Some((now - chrono::Duration::seconds(5)).to_rfc3339());
        assert!(!expired(&r, now));
    }
}
