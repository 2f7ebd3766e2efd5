//! In-process controllers standing in for the parts of kube-controller-manager that admission
//! relies on: every active namespace gets the `default` ServiceAccount (the serviceaccount
//! controller) and the `kube-root-ca.crt` ConfigMap with kapi's CA (the root-ca-cert-publisher),
//! so the ServiceAccount admission plugin finds the account and the projected token volume its
//! CA. Objects are created through the registry (so they carry uid, timestamps and defaults).
//! A namespace watch reacts to new namespaces; a periodic resync recreates deleted objects and
//! puts a changed CA bundle back.

mod namespaced;

pub use namespaced::{RESYNC_PERIOD, ROOT_CA_DESCRIPTION};

use crate::ServerError;
use kapi_registry::rest::{ApiGroupInfo, Storage};
use kapi_storage::DynStorage;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The running controllers; dropping it stops them.
pub struct Controllers {
    task: JoinHandle<()>,
}

impl Drop for Controllers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn find(groups: &[ApiGroupInfo], resource: &str) -> Option<Arc<dyn Storage>> {
    groups
        .iter()
        .filter(|g| g.group.is_empty())
        .flat_map(|g| g.versions.iter())
        .flat_map(|v| v.storages.iter())
        .find(|s| s.info().resource == resource && s.info().subresource.is_empty())
        .cloned()
}

/// Starts the controllers over `storage` (namespace watch) and the served `groups` (writes).
pub fn start(
    groups: &[ApiGroupInfo],
    storage: DynStorage,
    ca_pem: String,
) -> Result<Controllers, ServerError> {
    let missing = |r: &str| ServerError::Config(format!("controllers: {r} are not served"));
    let accounts = find(groups, "serviceaccounts").ok_or_else(|| missing("serviceaccounts"))?;
    let configmaps = find(groups, "configmaps").ok_or_else(|| missing("configmaps"))?;
    let c = namespaced::NamespacedObjects {
        storage,
        accounts,
        configmaps,
        ca_pem,
    };
    Ok(Controllers {
        task: tokio::spawn(c.run()),
    })
}
