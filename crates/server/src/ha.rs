//! What each replica keeps about itself in the shared storage: its identity Lease
//! ([`crate::apiserver_identity`]) and its place in the `kubernetes` Service's endpoints
//! ([`crate::endpoint_reconciler`]).

use crate::endpoint_reconciler::{default_advertise_address, EndpointReconciler, MasterLeases};
use crate::leaselock::leases_storage;
use crate::{EndpointReconcilerType, ServerConfig};
use kapi_endpoints::ApiServerHandler;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The replica's own background tasks; dropping it aborts them.
pub struct Replica {
    tasks: Vec<JoinHandle<()>>,
}

impl Replica {
    /// After the stop signal: lets the reconciler take this replica out of the endpoints
    /// (briefly).
    pub async fn stopped(mut self) {
        for task in std::mem::take(&mut self.tasks) {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Starts the identity lease and the endpoint reconciler of the replica serving at `addr`.
pub fn start(
    config: &ServerConfig,
    handler: &ApiServerHandler,
    etcd: Option<kapi_storage::etcd::EtcdStorage>,
    addr: SocketAddr,
    stop: watch::Receiver<bool>,
) -> Replica {
    let advertise = config
        .advertise_address
        .unwrap_or_else(|| default_advertise_address(config.bind_address));
    let advertised = SocketAddr::new(advertise, addr.port());
    let groups = handler.groups();
    let mut tasks = Vec::new();
    if let Some(leases) = leases_storage(&groups) {
        tasks.push(tokio::spawn(crate::apiserver_identity::run(
            leases,
            advertised,
            stop.clone(),
        )));
    }
    if config.endpoint_reconciler_type == EndpointReconcilerType::Lease {
        let leases = match etcd {
            Some(etcd) => MasterLeases::Etcd(Box::new(etcd)),
            None => MasterLeases::Single,
        };
        match EndpointReconciler::new(&groups, leases, advertise, addr.port()) {
            Some(r) => tasks.push(tokio::spawn(r.run(stop))),
            None => tracing::warn!(
                "endpoints are not served: the kubernetes endpoints are not reconciled"
            ),
        }
    }
    Replica { tasks }
}
