//! Keeps the RBAC index current: a list of each of the four RBAC resources, then a watch from
//! the list's resourceVersion; when a watch ends or fails, a fresh list replaces the kind's
//! objects and a new watch starts. Every change also wakes the aggregation controller.

use super::{find_storage, RBAC_GROUP};
use futures::StreamExt;
use kapi_auth::authz::rbac::{RbacIndex, RbacKind};
use kapi_machinery::{ApiError, EventType, ListOptions};
use kapi_registry::rest::{self, ApiGroupInfo, Context};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// How long to wait before listing again after a failure.
const RETRY: Duration = Duration::from_secs(1);

/// One kind's storage, fed into the index.
#[derive(Clone)]
pub(super) struct Feed {
    kind: RbacKind,
    storage: Arc<dyn rest::Storage>,
}

/// The feeds of the four kinds; `None` when the RBAC group is not installed.
pub(super) fn feeds(groups: &[ApiGroupInfo]) -> Option<Vec<Feed>> {
    RbacKind::ALL
        .iter()
        .map(|k| {
            find_storage(groups, RBAC_GROUP, k.resource()).map(|storage| Feed { kind: *k, storage })
        })
        .collect()
}

impl Feed {
    /// Lists the kind into the index; returns the list's resourceVersion.
    pub(super) async fn sync(&self, index: &RbacIndex) -> Result<String, ApiError> {
        let lister = self
            .storage
            .as_lister()
            .ok_or_else(|| ApiError::internal("the RBAC storage cannot list"))?;
        let list = lister
            .list(&Context::default(), &ListOptions::default())
            .await?;
        index.replace(self.kind, &list.items);
        Ok(list.resource_version)
    }

    /// Watches from `rv` until the watch ends or shutdown; returns why it stopped.
    async fn watch_from(
        &self,
        index: &RbacIndex,
        rv: String,
        changed: &Notify,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<(), ApiError> {
        let watcher = self
            .storage
            .as_watcher()
            .ok_or_else(|| ApiError::internal("the RBAC storage cannot watch"))?;
        let opts = ListOptions {
            resource_version: Some(rv),
            watch: true,
            ..Default::default()
        };
        let mut stream = watcher.watch(&Context::default(), &opts).await?;
        loop {
            let event = tokio::select! {
                e = stream.next() => e,
                _ = shutdown.changed() => return Ok(()),
            };
            let Some(event) = event else { return Ok(()) };
            let event = event?;
            let obj = &event.object;
            match event.event_type {
                EventType::Added | EventType::Modified => index.apply(self.kind, obj),
                EventType::Deleted => index.remove(self.kind, obj.namespace(), obj.name()),
                EventType::Bookmark | EventType::Error => continue,
            }
            changed.notify_one();
        }
    }

    /// Watches for as long as the server runs, listing again after every break.
    pub(super) async fn run(
        self,
        index: Arc<RbacIndex>,
        mut rv: String,
        changed: Arc<Notify>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        loop {
            if *shutdown.borrow() {
                return;
            }
            if let Err(e) = self
                .watch_from(&index, rv.clone(), &changed, &mut shutdown)
                .await
            {
                tracing::debug!(resource = self.kind.resource(), error = %e.message, "RBAC watch ended; listing again");
            }
            loop {
                if *shutdown.borrow() {
                    return;
                }
                match self.sync(&index).await {
                    Ok(new_rv) => {
                        rv = new_rv;
                        changed.notify_one();
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(resource = self.kind.resource(), error = %e.message, "listing RBAC objects failed; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(RETRY) => {}
                            _ = shutdown.changed() => return,
                        }
                    }
                }
            }
        }
    }
}
