//! ClusterRole aggregation, as kube-controller-manager's clusterrole-aggregation controller
//! does it, run in-process: a ClusterRole with an `aggregationRule` has its `rules` kept as
//! the union of the rules of the cluster roles its selectors pick. It runs whenever an RBAC
//! object changes; a write it makes is itself a change, so chains (`view` into `edit` into
//! `admin`) settle after a few rounds.

use kapi_auth::authz::rbac::RbacIndex;
use kapi_machinery::{ApiError, Object};
use kapi_registry::rest::{self, Context, UpdatedObjectFn, WriteOptions};
use std::sync::Arc;
use tokio::sync::{watch, Notify};

/// Brings every aggregated cluster role's rules up to date; returns how many it rewrote.
pub(super) async fn reconcile(
    index: &RbacIndex,
    cluster_roles: &Arc<dyn rest::Storage>,
) -> Result<usize, ApiError> {
    let updater = cluster_roles
        .as_updater()
        .ok_or_else(|| ApiError::internal("the clusterroles storage cannot update"))?;
    let mut written = 0usize;
    for role in index.aggregated_cluster_roles() {
        let Some(rules) = index.aggregated_rules(&role.name) else {
            continue;
        };
        if *role.rules == rules {
            continue;
        }
        let wanted = serde_json::to_value(&rules).map_err(ApiError::internal)?;
        let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
            let wanted = wanted.clone();
            Box::pin(async move {
                let mut obj = current
                    .ok_or_else(|| ApiError::internal("the aggregated cluster role is gone"))?;
                obj.insert("rules", wanted);
                Ok(obj)
            })
        });
        let result = updater
            .update(
                &Context::default(),
                &role.name,
                new_object,
                rest::validate_nothing(),
                rest::validate_update_nothing(),
                false,
                &WriteOptions::default(),
            )
            .await;
        match result {
            Ok(_) => written = written.saturating_add(1),
            // Deleted meanwhile: nothing to aggregate into.
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(written)
}

/// Reconciles on every change until shutdown.
pub(super) async fn run(
    index: Arc<RbacIndex>,
    cluster_roles: Arc<dyn rest::Storage>,
    changed: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = changed.notified() => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
        if let Err(e) = reconcile(&index, &cluster_roles).await {
            tracing::warn!(error = %e.message, "aggregating cluster roles failed");
            // Try again at the next change, or shortly.
            let changed = changed.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                changed.notify_one();
            });
        }
    }
}
