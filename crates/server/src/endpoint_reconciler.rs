//! The `kubernetes` Service's Endpoints and EndpointSlice in `default`, listing the live
//! replicas (upstream's lease endpoint reconciler, `pkg/controlplane/reconcilers/lease.go`,
//! and its `EndpointsAdapter`). Every replica writes its master lease, a key
//! `/masterleases/<ip>` under the etcd prefix that lives for [`MASTER_LEASE_TTL`] unless
//! rewritten, every [`RECONCILE_INTERVAL`]; then it sets the endpoints to the IPs of the leases
//! that exist (always including its own), writing only when they differ. On a graceful
//! shutdown it removes its lease and itself from the endpoints. A replica that dies drops out
//! when its lease expires.
//!
//! On the embedded store there is a single replica: the endpoints list its address alone.
//! Upstream keys leases by IP, so replicas must differ by IP and share one port.

use crate::controllers::ops;
use crate::rbac::find_storage;
use kapi_machinery::{ApiError, GetOptions, Object};
use kapi_registry::rest::{
    validate_nothing, ApiGroupInfo, Context, FieldValidation, Storage, WriteOptions,
};
use kapi_storage::etcd::EtcdStorage;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Upstream's `DefaultEndpointReconcilerTTL` and `--endpoint-reconciler` interval.
pub const MASTER_LEASE_TTL: Duration = Duration::from_secs(15);
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(10);
const MASTER_LEASES: &str = "/masterleases/";
const SERVICE: &str = "kubernetes";
const NAMESPACE: &str = "default";

/// Where the master leases are kept.
pub enum MasterLeases {
    Etcd(Box<EtcdStorage>),
    /// One replica: only this one.
    Single,
}

impl MasterLeases {
    async fn update(&self, ip: IpAddr) -> Result<(), String> {
        let Self::Etcd(etcd) = self else {
            return Ok(());
        };
        let value = json!({"kind": "Endpoints", "apiVersion": "v1",
            "metadata": {"name": ip.to_string(), "creationTimestamp": null},
            "subsets": [{"addresses": [{"ip": ip.to_string()}]}]});
        etcd.put_with_ttl(
            &format!("{MASTER_LEASES}{ip}"),
            value.to_string().into_bytes(),
            MASTER_LEASE_TTL,
        )
        .await
        .map_err(|e| e.to_string())
    }

    async fn remove(&self, ip: IpAddr) -> Result<(), String> {
        match self {
            Self::Etcd(etcd) => etcd
                .delete_key(&format!("{MASTER_LEASES}{ip}"))
                .await
                .map_err(|e| e.to_string()),
            Self::Single => Ok(()),
        }
    }

    async fn list(&self) -> Result<BTreeSet<String>, String> {
        match self {
            Self::Etcd(etcd) => Ok(etcd
                .get_prefixed(MASTER_LEASES)
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|(k, _)| k)
                .collect()),
            Self::Single => Ok(BTreeSet::new()),
        }
    }
}

/// The reconciler of one replica.
pub struct EndpointReconciler {
    leases: MasterLeases,
    ip: IpAddr,
    port: u16,
    endpoints: Arc<dyn Storage>,
    slices: Arc<dyn Storage>,
    ctx: Context,
}

impl EndpointReconciler {
    pub fn new(
        groups: &[ApiGroupInfo],
        leases: MasterLeases,
        ip: IpAddr,
        port: u16,
    ) -> Option<Self> {
        Some(Self {
            leases,
            ip,
            port,
            endpoints: find_storage(groups, "", "endpoints")?,
            slices: find_storage(groups, "discovery.k8s.io", "endpointslices")?,
            ctx: Context {
                namespace: NAMESPACE.into(),
                user: kapi_machinery::UserInfo {
                    name: "system:apiserver".into(),
                    ..Default::default()
                },
            },
        })
    }

    /// Reconciles every interval until `stop` fires, then removes this replica.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        loop {
            if let Err(e) = self.reconcile(true).await {
                tracing::warn!(error = %e, "reconciling the kubernetes endpoints failed");
            }
            tokio::select! {
                _ = tokio::time::sleep(RECONCILE_INTERVAL) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        if let Err(e) = self.reconcile(false).await {
            tracing::warn!(error = %e, "removing this replica from the kubernetes endpoints failed");
        }
    }

    /// Upstream's `ReconcileEndpoints` (`present`) and `RemoveEndpoints` (not `present`).
    pub async fn reconcile(&self, present: bool) -> Result<(), String> {
        if present {
            self.leases.update(self.ip).await?;
        } else {
            self.leases.remove(self.ip).await?;
        }
        let mut ips = self.leases.list().await?;
        if present {
            ips.insert(self.ip.to_string());
        } else {
            ips.remove(&self.ip.to_string());
        }
        let ips: Vec<String> = ips
            .into_iter()
            .filter(|ip| {
                ip.parse::<IpAddr>()
                    .is_ok_and(|a| a.is_ipv4() == self.ip.is_ipv4())
            })
            .collect();
        let ports = json!([{"name": "https", "port": self.port, "protocol": "TCP"}]);
        let endpoints = json!({
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
            "subsets": [{
                "addresses": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
                "ports": ports,
            }],
        });
        self.sync(&*self.endpoints, "Endpoints", "v1", endpoints)
            .await
            .map_err(|e| e.message)?;
        let slice = json!({
            "labels": {"kubernetes.io/service-name": SERVICE},
            "addressType": if self.ip.is_ipv4() { "IPv4" } else { "IPv6" },
            "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>(),
            "ports": ports,
        });
        self.sync(&*self.slices, "EndpointSlice", "discovery.k8s.io/v1", slice)
            .await
            .map_err(|e| e.message)
    }

    /// Makes `kubernetes`'s labels and the other fields of `want` as given; writes only when
    /// they differ (a create racing another replica's is retried as an update).
    async fn sync(
        &self,
        storage: &dyn Storage,
        kind: &str,
        api_version: &str,
        want: Value,
    ) -> Result<(), ApiError> {
        let (Some(getter), Some(creater)) = (storage.as_getter(), storage.as_creater()) else {
            return Err(ApiError::internal(format!("{kind} cannot be reconciled")));
        };
        for _ in 0..3 {
            match getter.get(&self.ctx, SERVICE, &GetOptions::default()).await {
                Ok(mut current) => {
                    if !apply(&want, &mut current) {
                        return Ok(());
                    }
                    tracing::info!(kind, addresses = ?want, "resetting the endpoints of the kubernetes service");
                    let want = want.clone();
                    return ops::update(storage, &self.ctx, SERVICE, move |obj| apply(&want, obj))
                        .await;
                }
                Err(e) if e.is_not_found() => {
                    let mut obj = Object::from_value(json!({
                        "apiVersion": api_version, "kind": kind,
                        "metadata": {"name": SERVICE, "namespace": NAMESPACE},
                    }))?;
                    apply(&want, &mut obj);
                    let (obj, _) = storage.decode(obj, FieldValidation::Strict)?;
                    match creater
                        .create(&self.ctx, obj, validate_nothing(), &WriteOptions::default())
                        .await
                    {
                        Err(e) if e.is_already_exists() => continue,
                        other => return other.map(|_| ()),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(ApiError::internal(format!(
            "{kind} kubernetes kept changing while being reconciled"
        )))
    }
}

/// Sets the labels and top-level fields of `want` on `obj`; whether anything changed.
fn apply(want: &Value, obj: &mut Object) -> bool {
    let mut changed = false;
    for (k, v) in want.as_object().into_iter().flatten() {
        if k == "labels" {
            if obj.metadata().and_then(|m| m.get("labels")) != Some(v) {
                obj.metadata_mut().insert("labels".into(), v.clone());
                changed = true;
            }
        } else if obj.get(k) != Some(v) {
            obj.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    changed
}

/// kube-apiserver's default advertise address: the bind address, or when that is unspecified
/// the host's first non-loopback address (the one its default route leaves from), else
/// loopback.
pub fn default_advertise_address(bind: IpAddr) -> IpAddr {
    if !bind.is_unspecified() {
        return bind;
    }
    // Connecting a UDP socket sends nothing; it only picks the route's source address.
    let probe = || -> Option<IpAddr> {
        let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        s.connect("192.0.2.1:443").ok()?;
        Some(s.local_addr().ok()?.ip()).filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
    };
    probe().unwrap_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
}
