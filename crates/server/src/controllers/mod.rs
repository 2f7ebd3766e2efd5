//! In-process controllers standing in for the parts of kube-controller-manager that users of
//! an API server alone miss: the namespace lifecycle (`namespace`), the garbage collector
//! (`garbagecollector`), quota usage (`resourcequota`), finished Jobs' TTL
//! (`ttl-after-finished`), the `default` ServiceAccount of every namespace (`serviceaccount`) and
//! its `kube-root-ca.crt` ConfigMap (`root-ca-cert-publisher`). They act through the registry's
//! storages as a client would (list, watch, delete, update), so they behave the same on every
//! backend. `--controllers` picks them with kube-controller-manager's syntax, so each can be
//! handed over to the real controller manager.
//!
//! [`framework`] holds what they share: informers and a work queue with retries.

mod elected;
pub mod framework;
mod garbagecollector;
mod namespace;
mod namespaced;
pub(crate) mod ops;
mod resourcequota;
mod ttlafterfinished;

pub use elected::{start_elected, RunningControllers, LEASE_NAME, LEASE_NAMESPACE};
pub use namespaced::{RESYNC_PERIOD, ROOT_CA_DESCRIPTION};

use crate::ServerError;
use framework::{ControllerMetrics, WorkQueue};
use kapi_endpoints::ApiServerHandler;
use kapi_registry::rest::{ApiGroupInfo, Storage};
use kapi_storage::DynStorage;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// kube-controller-manager's names for the controllers kapi runs (its older short names; the
/// `-controller` long names are accepted as well).
pub const NAMESPACE: &str = "namespace";
pub const GARBAGE_COLLECTOR: &str = "garbagecollector";
pub const SERVICE_ACCOUNT: &str = "serviceaccount";
pub const ROOT_CA_CERT_PUBLISHER: &str = "root-ca-cert-publisher";
pub const RESOURCE_QUOTA: &str = "resourcequota";
pub const TTL_AFTER_FINISHED: &str = "ttl-after-finished";

/// Every controller kapi runs.
pub const ALL: [&str; 6] = [
    SERVICE_ACCOUNT,
    ROOT_CA_CERT_PUBLISHER,
    NAMESPACE,
    GARBAGE_COLLECTOR,
    RESOURCE_QUOTA,
    TTL_AFTER_FINISHED,
];

fn canonical(name: &str) -> &str {
    match name {
        "namespace-controller" => NAMESPACE,
        "garbage-collector-controller" => GARBAGE_COLLECTOR,
        "serviceaccount-controller" => SERVICE_ACCOUNT,
        "root-ca-certificate-publisher-controller" => ROOT_CA_CERT_PUBLISHER,
        "resourcequota-controller" => RESOURCE_QUOTA,
        "ttl-after-finished-controller" => TTL_AFTER_FINISHED,
        other => other,
    }
}

/// `--controllers`: a list of names, `-name` and `*`, read as kube-controller-manager reads it
/// (the first entry naming a controller decides; otherwise `*` turns it on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection(Vec<String>);

impl Default for Selection {
    fn default() -> Self {
        Self(vec!["*".into()])
    }
}

impl Selection {
    /// Checks the syntax; names kapi does not run (other kube-controller-manager controllers)
    /// are accepted, as they mean nothing here.
    pub fn parse(items: &[String]) -> Result<Self, String> {
        let mut out = Vec::new();
        for item in items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let name = item.strip_prefix('-').unwrap_or(item);
            if name.is_empty() || (name != "*" && name.contains('*')) {
                return Err(format!("{item:?} is not a controller name, '*' or '-name'"));
            }
            out.push(item.to_string());
        }
        Ok(Self(out))
    }

    /// No controllers at all.
    pub fn none() -> Self {
        Self(Vec::new())
    }

    pub fn enabled(&self, name: &str) -> bool {
        let mut star = false;
        for item in &self.0 {
            if item == "-*" {
                return false;
            }
            if item == "*" {
                star = true;
            } else if let Some(off) = item.strip_prefix('-') {
                if canonical(off) == name {
                    return false;
                }
            } else if canonical(item) == name {
                return true;
            }
        }
        star
    }
}

/// The running controllers; dropping it stops them.
pub struct Controllers {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn find(groups: &[ApiGroupInfo], resource: &str, sub: &str) -> Option<Arc<dyn Storage>> {
    groups
        .iter()
        .filter(|g| g.group.is_empty())
        .flat_map(|g| g.versions.iter())
        .flat_map(|v| v.storages.iter())
        .find(|s| s.info().resource == resource && s.info().subresource == sub)
        .cloned()
}

/// Starts the selected controllers over `handler`'s served resources (read again at every
/// reconcile, so custom resources count) and `storage` (the namespace watch of the per-namespace
/// objects).
pub fn start(
    handler: &ApiServerHandler,
    storage: DynStorage,
    ca_pem: String,
    selection: &Selection,
    metrics: &ControllerMetrics,
) -> Result<Controllers, ServerError> {
    let groups = handler.groups();
    // A controller whose resources `--runtime-config` turned off does not start, as
    // kube-controller-manager skips a controller whose resources are not available.
    let served = |controller: &str, resource: &str, storage: Option<Arc<dyn Storage>>| {
        if storage.is_none() && selection.enabled(controller) {
            tracing::warn!("controller {controller} not started: {resource} are not served");
        }
        storage.filter(|_| selection.enabled(controller))
    };
    let metrics = metrics.clone();
    let mut tasks = Vec::new();
    let accounts = served(
        SERVICE_ACCOUNT,
        "serviceaccounts",
        find(&groups, "serviceaccounts", ""),
    );
    let configmaps = served(
        ROOT_CA_CERT_PUBLISHER,
        "configmaps",
        find(&groups, "configmaps", ""),
    );
    if accounts.is_some() || configmaps.is_some() {
        let c = namespaced::NamespacedObjects {
            storage,
            accounts,
            configmaps,
            ca_pem,
        };
        tasks.push(tokio::spawn(c.run()));
    }
    let namespaces = (
        served(NAMESPACE, "namespaces", find(&groups, "namespaces", "")),
        served(
            NAMESPACE,
            "namespaces/status",
            find(&groups, "namespaces", "status"),
        ),
        served(
            NAMESPACE,
            "namespaces/finalize",
            find(&groups, "namespaces", "finalize"),
        ),
    );
    if let (Some(namespaces), Some(status), Some(finalize)) = namespaces {
        let c = namespace::NamespaceController {
            handler: handler.clone(),
            namespaces,
            status,
            finalize,
            queue: WorkQueue::new(NAMESPACE, Some(metrics.clone())),
        };
        tasks.push(tokio::spawn(Arc::new(c).run()));
    }
    let quotas = (
        served(
            RESOURCE_QUOTA,
            "resourcequotas",
            find(&groups, "resourcequotas", ""),
        ),
        served(
            RESOURCE_QUOTA,
            "resourcequotas/status",
            find(&groups, "resourcequotas", "status"),
        ),
    );
    if let (Some(quotas), Some(status)) = quotas {
        let c = resourcequota::QuotaController::new(
            handler.clone(),
            quotas,
            status,
            WorkQueue::new(RESOURCE_QUOTA, Some(metrics.clone())),
        );
        tasks.push(tokio::spawn(Arc::new(c).run()));
    }
    let jobs = served(
        TTL_AFTER_FINISHED,
        "batch/v1 jobs",
        framework::storage_for_kind(&groups, "batch/v1", "Job"),
    );
    if let Some(jobs) = jobs {
        let c = ttlafterfinished::TtlAfterFinished {
            jobs,
            queue: WorkQueue::new(TTL_AFTER_FINISHED, Some(metrics.clone())),
        };
        tasks.push(tokio::spawn(Arc::new(c).run()));
    }
    if selection.enabled(GARBAGE_COLLECTOR) {
        tasks.push(tokio::spawn(garbagecollector::run(
            handler.clone(),
            WorkQueue::new(GARBAGE_COLLECTOR, Some(metrics)),
        )));
    }
    tracing::info!(
        controllers = ?ALL
            .iter()
            .filter(|n| selection.enabled(n))
            .collect::<Vec<_>>(),
        "starting controllers"
    );
    Ok(Controllers { tasks })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> Selection {
        let items: Vec<String> = s.split(',').map(String::from).collect();
        Selection::parse(&items).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn selection_reads_as_kube_controller_manager() {
        assert!(sel("*").enabled(NAMESPACE));
        assert!(!sel("*,-garbagecollector").enabled(GARBAGE_COLLECTOR));
        assert!(sel("*,-garbagecollector").enabled(NAMESPACE));
        assert!(sel("namespace").enabled(NAMESPACE));
        assert!(!sel("namespace").enabled(GARBAGE_COLLECTOR));
        assert!(!sel("-namespace,*").enabled(NAMESPACE));
        assert!(!sel("*,-root-ca-certificate-publisher-controller").enabled(ROOT_CA_CERT_PUBLISHER));
        assert!(!sel("").enabled(NAMESPACE));
        assert!(!sel("-*").enabled(SERVICE_ACCOUNT));
        assert!(Selection::parse(&["-".to_string()]).is_err());
        assert!(Selection::parse(&["na*".to_string()]).is_err());
    }
}
