//! The controllers run once per cluster: under kube-controller-manager's Lease
//! (`kube-system/kube-controller-manager`) when several replicas may share the storage (etcd),
//! started when this replica acquires it and stopped when it loses it. The embedded store has
//! one writer, so there they simply run (as with `--leader-elect=false`).

use super::framework::ControllerMetrics;
use super::{Controllers, Selection, ALL};
use crate::leaderelection::{identity, LeaderElectionConfig, LeaderElector};
use crate::leaselock::{leases_storage, LeaseLock};
use crate::ServerError;
use kapi_endpoints::ApiServerHandler;
use kapi_storage::DynStorage;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// kube-controller-manager's Lease.
pub const LEASE_NAMESPACE: &str = "kube-system";
pub const LEASE_NAME: &str = "kube-controller-manager";

/// The controllers as started: running, or waiting for / holding the Lease.
pub enum RunningControllers {
    None,
    Direct(Controllers),
    Elected(Elector),
}

/// The election task; dropping it aborts it (and so stops the controllers it runs).
pub struct Elector(Option<JoinHandle<()>>);

impl Drop for Elector {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

impl RunningControllers {
    /// After the stop signal: waits (briefly) for the elector to stop its controllers and
    /// release the Lease.
    pub async fn stopped(self) {
        if let RunningControllers::Elected(mut elector) = self {
            if let Some(task) = elector.0.take() {
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
}

/// Starts the selected controllers, under the Lease when `elect` is set.
#[allow(clippy::too_many_arguments)]
pub fn start_elected(
    handler: &ApiServerHandler,
    storage: DynStorage,
    ca_pem: String,
    selection: &Selection,
    registry: &prometheus::Registry,
    election: &LeaderElectionConfig,
    elect: bool,
    stop: watch::Receiver<bool>,
) -> Result<RunningControllers, ServerError> {
    if !ALL.iter().any(|c| selection.enabled(c)) {
        return Ok(RunningControllers::None);
    }
    let metrics = ControllerMetrics::new(registry)
        .map_err(|e| ServerError::Config(format!("controller metrics: {e}")))?;
    if !(elect && election.enabled) {
        return super::start(handler, storage, ca_pem, selection, &metrics)
            .map(RunningControllers::Direct);
    }
    let leases = leases_storage(&handler.groups())
        .ok_or_else(|| ServerError::Config("leader election: leases are not served".into()))?;
    let lock = LeaseLock::new(
        leases,
        LEASE_NAMESPACE,
        LEASE_NAME,
        "system:kube-controller-manager",
        serde_json::json!({}),
    );
    let elector = LeaderElector::new(lock, election.clone(), identity());
    let (handler, selection) = (handler.clone(), selection.clone());
    let task = tokio::spawn(elector.run(stop, move || {
        match super::start(
            &handler,
            storage.clone(),
            ca_pem.clone(),
            &selection,
            &metrics,
        ) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "starting the controllers failed");
                None
            }
        }
    }));
    Ok(RunningControllers::Elected(Elector(Some(task))))
}
