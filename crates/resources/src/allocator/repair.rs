//! Upstream's repair loops (`ipallocator/controller/repair.go`,
//! `portallocator/controller/repair.go`): rebuild each range's bitmap from the Services that
//! exist and write it back with a compare-and-swap. An item taken in storage that no Service
//! holds may belong to a create still in flight in another process, so it is only released
//! once three repairs in a row found it unused; a Service holding an item another Service
//! holds too is reported (it must be recreated).

use super::bitmap::Bitmap;
use super::range::{RangeStore, WriteError};
use super::{AllocationError, IpAllocator, PortAllocator};
use kapi_machinery::{ListOptions, Object};
use kapi_storage::DynStorage;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upstream's `ServiceClusterIPInterval` and `ServiceNodePortInterval`.
pub const REPAIR_INTERVAL: Duration = Duration::from_secs(180);

/// How many repairs must find an item unused before it is released (upstream's
/// `numRepairsBeforeLeakCleanup`): it avoids racing a create between allocation and write.
const REPAIRS_BEFORE_LEAK_CLEANUP: u32 = 3;

/// Attempts when another writer changes the bitmap during a repair (client-go's
/// `retry.DefaultBackoff` has 4 steps).
const CONFLICT_ATTEMPTS: usize = 5;

/// What a repair found, one line per finding, worded as upstream's log lines.
#[derive(Debug, Default)]
pub struct RepairReport {
    pub findings: Vec<String>,
}

/// Why a repair could not finish.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error("unable to refresh the service {what} block: {message}")]
    Read { what: &'static str, message: String },
    #[error("unable to persist the updated service {what} allocations: {message}")]
    Write { what: &'static str, message: String },
}

/// One item a Service holds, as `(owner, offset or why it has none, text)`; `None` when the
/// text is not an address or port at all.
type Held = (String, Option<Result<usize, AllocationError>>, String);

/// The repair of both ranges; its leak counters live as long as it does.
pub struct Repair {
    storage: DynStorage,
    ips: Arc<IpAllocator>,
    ports: Arc<PortAllocator>,
    ip_leaks: Mutex<HashMap<usize, u32>>,
    port_leaks: Mutex<HashMap<usize, u32>>,
}

fn owner(svc: &Object) -> String {
    format!("{}/{}", svc.namespace(), svc.name())
}

fn spec_str<'a>(svc: &'a Object, field: &str) -> &'a str {
    svc.get("spec")
        .and_then(|s| s.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Repair {
    pub fn new(storage: DynStorage, ips: Arc<IpAllocator>, ports: Arc<PortAllocator>) -> Self {
        Self {
            storage,
            ips,
            ports,
            ip_leaks: Mutex::default(),
            port_leaks: Mutex::default(),
        }
    }

    /// Repairs both ranges once.
    pub async fn run_once(&self) -> Result<RepairReport, RepairError> {
        let mut report = RepairReport::default();
        let ips = |svc: &Object| -> Vec<Held> {
            let ip = spec_str(svc, "clusterIP");
            if ip.is_empty() || ip == "None" || spec_str(svc, "type") == "ExternalName" {
                return Vec::new();
            }
            let item = ip.parse::<IpAddr>().ok().map(|ip| self.ips.offset_of(ip));
            vec![(owner(svc), item, ip.to_string())]
        };
        let ip_text = |i: usize| self.ips.at(i).to_string();
        self.repair_range(
            "IP",
            "ClusterIP",
            self.ips.store(),
            &ips,
            &ip_text,
            &self.ip_leaks,
            &mut report,
        )
        .await?;
        let ports = |svc: &Object| -> Vec<Held> {
            let spec = svc.get("spec");
            let mut held: BTreeSet<u64> = spec
                .and_then(|s| s.get("ports"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
                .collect();
            held.extend(
                spec.and_then(|s| s.get("healthCheckNodePort"))
                    .and_then(Value::as_u64),
            );
            held.into_iter()
                .filter(|p| *p != 0)
                .map(|p| {
                    let item = u16::try_from(p).ok().map(|p| self.ports.offset_of(p));
                    (owner(svc), item, p.to_string())
                })
                .collect()
        };
        let port_text = |i: usize| self.ports.at(i).to_string();
        self.repair_range(
            "port",
            "node port",
            self.ports.store(),
            &ports,
            &port_text,
            &self.port_leaks,
            &mut report,
        )
        .await?;
        Ok(report)
    }

    /// Upstream's `runOnce` for one range, retried while another writer wins the swap.
    #[allow(clippy::too_many_arguments)]
    async fn repair_range(
        &self,
        what: &'static str,
        noun: &'static str,
        store: &RangeStore,
        held: &(dyn Fn(&Object) -> Vec<Held> + Sync),
        text: &(dyn Fn(usize) -> String + Sync),
        leaks: &Mutex<HashMap<usize, u32>>,
        report: &mut RepairReport,
    ) -> Result<(), RepairError> {
        let read_err = |message: String| RepairError::Read { what, message };
        let mut attempt = 0usize;
        loop {
            attempt = attempt.saturating_add(1);
            // The snapshot first, then the Services: an allocation in between changes the
            // snapshot's revision and the write below conflicts.
            let snapshot = store.get().await.map_err(|e| read_err(e.to_string()))?;
            let services = self
                .storage
                .list("/services/specs/", &ListOptions::default())
                .await
                .map_err(|e| read_err(e.to_string()))?;
            let mut findings = Vec::new();
            let mut stored = if snapshot.range == store.spec() {
                Bitmap::restore(store.max(), &snapshot.data)
            } else {
                if !snapshot.range.is_empty() {
                    findings.push(format!(
                        "the service {what} range changed from {} to {}; rebuilding its allocations",
                        snapshot.range,
                        store.spec()
                    ));
                }
                Bitmap::new(store.max())
            };
            let mut leaks_now = leaks.lock().map(|l| l.clone()).unwrap_or_default();
            let mut rebuilt = Bitmap::new(store.max());
            for svc in &services.items {
                for (who, item, shown) in held(svc) {
                    match item {
                        Some(Ok(i)) if rebuilt.set(i) => {
                            if stored.has(i) {
                                // Accounted for: what stays in `stored` may have leaked.
                                stored.clear(i);
                            } else {
                                findings.push(format!(
                                    "the {noun} {shown} for Service {who} is not allocated; repairing"
                                ));
                            }
                            leaks_now.remove(&i);
                        }
                        Some(Ok(_)) => findings.push(format!(
                            "the {noun} {shown} for Service {who} was assigned to multiple services; please recreate"
                        )),
                        None => findings.push(format!(
                            "the {noun} {shown} for Service {who} is not valid; please recreate"
                        )),
                        Some(Err(_)) => findings.push(format!(
                            "the {noun} {shown} for Service {who} is not within the range {}; please recreate",
                            store.spec()
                        )),
                    }
                }
            }
            for i in stored.iter() {
                let count = match leaks_now.get(&i) {
                    None => {
                        findings.push(format!(
                            "the {noun} {} may have leaked: flagging for later clean up",
                            text(i)
                        ));
                        REPAIRS_BEFORE_LEAK_CLEANUP - 1
                    }
                    Some(c) => *c,
                };
                if count > 0 {
                    // Still counted as in use until the count runs out.
                    leaks_now.insert(i, count.saturating_sub(1));
                    rebuilt.set(i);
                } else {
                    leaks_now.remove(&i);
                    findings.push(format!(
                        "the {noun} {} appears to have leaked: cleaning up",
                        text(i)
                    ));
                }
            }
            match store
                .create_or_update(&snapshot.resource_version, &rebuilt)
                .await
            {
                Ok(()) => {
                    for f in &findings {
                        tracing::warn!("{f}");
                    }
                    if let Ok(mut l) = leaks.lock() {
                        *l = leaks_now;
                    }
                    report.findings.extend(findings);
                    return Ok(());
                }
                Err(WriteError::Conflict) if attempt < CONFLICT_ATTEMPTS => {
                    tokio::time::sleep(Duration::from_millis(10u64.saturating_mul(attempt as u64)))
                        .await;
                }
                Err(WriteError::Conflict) => {
                    return Err(RepairError::Write {
                        what,
                        message: "the allocations kept changing".into(),
                    })
                }
                Err(WriteError::Storage(message)) => {
                    return Err(RepairError::Write { what, message })
                }
            }
        }
    }

    /// Repairs every `interval` until the repair is dropped.
    pub fn spawn(self: &Arc<Self>, interval: Duration) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(repair) = weak.upgrade() else {
                    return;
                };
                if let Err(e) = repair.run_once().await {
                    tracing::warn!("service allocation repair: {e}");
                }
            }
        });
    }
}
