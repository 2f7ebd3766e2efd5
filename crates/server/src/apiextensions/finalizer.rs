//! Upstream's CRD finalizer controller (`controller/finalizer/crd_finalizer.go`): a deleting
//! CRD turns `Terminating` (InstanceDeletionInProgress), every custom object of it is deleted
//! through its storage (all namespaces), and once none is left the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer goes, so the store deletes the CRD.

use super::naming::Condition;
use super::status::{remove_finalizer, write_status};
use kapi_apiextensions::{Crd, ServedCrd, CLEANUP_FINALIZER};
use kapi_machinery::{ApiError, DeleteOptions, ListOptions};
use kapi_registry::rest::{validate_nothing, CollectionDeleter, Context, Lister, Storage};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// How often, and how long, the remaining objects are counted after the deletes.
const POLL_INTERVAL: Duration = Duration::from_secs(5);
const POLL_TIMEOUT: Duration = Duration::from_secs(60);

fn terminating(status: &'static str, reason: &str, message: String) -> Condition {
    Condition::new("Terminating", status, reason, &message)
}

async fn count(served: &ServedCrd) -> Result<usize, ApiError> {
    let list = served
        .storage_store
        .list(&Context::default(), &ListOptions::default())
        .await?;
    Ok(list.items.len())
}

/// Upstream's `deleteInstances`: the condition to set and whether it failed.
async fn delete_instances(served: &ServedCrd) -> (Condition, bool) {
    let failed = |reason: &str, message: String| (terminating("True", reason, message), true);
    let all = match served
        .storage_store
        .list(&Context::default(), &ListOptions::default())
        .await
    {
        Ok(l) => l,
        Err(e) => {
            return failed(
                "InstanceDeletionFailed",
                format!("could not list instances: {}", e.message),
            )
        }
    };
    let namespaces: BTreeSet<String> = all
        .items
        .iter()
        .map(|o| o.namespace().to_string())
        .collect();
    let mut errors = Vec::new();
    for ns in namespaces {
        let ctx = Context {
            namespace: ns,
            ..Default::default()
        };
        if let Err(e) = served
            .storage_store
            .delete_collection(
                &ctx,
                validate_nothing(),
                &DeleteOptions::default(),
                &ListOptions::default(),
            )
            .await
        {
            errors.push(e.message);
        }
    }
    if !errors.is_empty() {
        let msg = if errors.len() == 1 {
            errors.remove(0)
        } else {
            format!("[{}]", errors.join(", "))
        };
        return failed(
            "InstanceDeletionFailed",
            format!("could not issue all deletes: {msg}"),
        );
    }
    let started = tokio::time::Instant::now();
    loop {
        match count(served).await {
            Ok(0) => break,
            Ok(n) => {
                tracing::debug!(crd = %served.crd.name, remaining = n, "waiting for custom objects to go")
            }
            Err(e) => {
                return failed(
                    "InstanceDeletionCheck",
                    format!(
                        "could not confirm zero CustomResources remaining: {}",
                        e.message
                    ),
                )
            }
        }
        if started.elapsed() >= POLL_TIMEOUT {
            return failed(
                "InstanceDeletionCheck",
                "could not confirm zero CustomResources remaining: timed out waiting for the condition".into(),
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    (
        terminating(
            "False",
            "InstanceDeletionCompleted",
            "removed all instances".into(),
        ),
        false,
    )
}

/// Cleans up one deleting CRD; `served` is its storages when it was ever established.
pub async fn finalize(
    crd: Crd,
    served: Option<Arc<ServedCrd>>,
    main_store: Arc<dyn Storage>,
    status_store: Arc<dyn Storage>,
) -> Result<(), ApiError> {
    if !crd.has_cleanup_finalizer() {
        return Ok(());
    }
    let in_progress = terminating(
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress".into(),
    );
    write_status(&status_store, &crd.name, None, vec![in_progress]).await?;
    let (cond, failed) = match &served {
        Some(served) => delete_instances(served).await,
        None => (
            terminating(
                "False",
                "NeverEstablished",
                "resource was never established".into(),
            ),
            false,
        ),
    };
    write_status(&status_store, &crd.name, None, vec![cond.clone()]).await?;
    if failed {
        return Err(ApiError::internal(cond.message));
    }
    remove_finalizer(&main_store, &crd.name, CLEANUP_FINALIZER).await
}
