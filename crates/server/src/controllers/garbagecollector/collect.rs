//! One uid's reconcile, as upstream's `attemptToDeleteItem`, `processDeletingDependentsItem`
//! and `orphanDependents`.

use super::graph::{owner_refs, Node, OwnerRef};
use super::Collector;
use crate::controllers::framework::storage_for_kind;
use crate::controllers::ops;
use kapi_machinery::options::PropagationPolicy;
use kapi_machinery::ApiError;
use serde_json::Value;
use std::collections::HashSet;

/// `metav1.FinalizerOrphanDependents` / `FinalizerDeleteDependents`.
pub const ORPHAN: &str = "orphan";
pub const FOREGROUND: &str = "foregroundDeletion";
const NAME: &str = "generic-garbage-collector";

/// What an owner reference points at, checked live.
enum Owner {
    /// Exists with the referenced uid and is not waiting for its dependents.
    Solid,
    /// Absent, or another object of that name.
    Dangling,
    /// Being deleted in the foreground.
    Waiting,
}

impl Collector {
    pub(super) async fn reconcile(&self, uid: &str) -> Result<(), ApiError> {
        let (node, synced) = {
            let g = self.graph();
            (g.nodes.get(uid).cloned(), g.unsynced.is_empty())
        };
        let Some(node) = node else {
            return Ok(());
        };
        if node.deleting && (node.has_finalizer(ORPHAN) || node.has_finalizer(FOREGROUND)) {
            // Acting on dependents needs all of them known.
            if !synced {
                return Err(ApiError::internal("waiting for the informers' first lists"));
            }
            if node.has_finalizer(ORPHAN) {
                return self.orphan_dependents(&node).await;
            }
            return self.process_deleting_dependents(&node).await;
        }
        if node.deleting || node.owners.is_empty() {
            return Ok(());
        }
        self.attempt_to_delete(&node).await
    }

    async fn orphan_dependents(&self, owner: &Node) -> Result<(), ApiError> {
        let dependents = self.graph().dependents(&owner.uid);
        for dep in dependents {
            let ctx = ops::context(&dep.namespace, NAME);
            let owner_uid = owner.uid.clone();
            ops::update(dep.storage.as_ref(), &ctx, &dep.name, move |obj| {
                remove_refs(obj, &HashSet::from([owner_uid.clone()]))
            })
            .await?;
        }
        remove_finalizer(owner, ORPHAN).await?;
        tracing::info!(object = %owner.resource(), "garbage collector: dependents orphaned");
        Ok(())
    }

    async fn process_deleting_dependents(&self, owner: &Node) -> Result<(), ApiError> {
        let blocking: Vec<Node> = self
            .graph()
            .dependents(&owner.uid)
            .into_iter()
            .filter(|d| {
                d.owners
                    .iter()
                    .any(|o| o.uid == owner.uid && o.block_owner_deletion)
            })
            .collect();
        if blocking.is_empty() {
            remove_finalizer(owner, FOREGROUND).await?;
            tracing::info!(object = %owner.resource(), "garbage collector: foreground deletion done");
            return Ok(());
        }
        for dep in blocking {
            if !(dep.deleting && dep.has_finalizer(FOREGROUND)) {
                self.queue.add(dep.uid.clone());
            }
        }
        Ok(())
    }

    async fn classify(&self, node: &Node, r: &OwnerRef) -> Result<Owner, ApiError> {
        let groups = self.handler.groups();
        let Some(storage) = storage_for_kind(&groups, &r.api_version, &r.kind) else {
            // A kind not served (yet: a CRD just created is served a moment later) cannot be
            // checked: the dependent is looked at again with the queue's backoff, as upstream
            // retries its REST-mapping errors, rather than at the next resync.
            return Err(ApiError::internal(format!(
                "unable to get REST mapping for {}, Kind={}",
                r.api_version, r.kind
            )));
        };
        let namespace = if storage.info().namespaced {
            if node.namespace.is_empty() {
                // A cluster-scoped dependent cannot name a namespaced owner: unresolvable,
                // never collected.
                return Ok(Owner::Solid);
            }
            node.namespace.as_str()
        } else {
            ""
        };
        let ctx = ops::context(namespace, NAME);
        match ops::get(storage.as_ref(), &ctx, &r.name).await {
            Err(e) if e.is_not_found() => Ok(Owner::Dangling),
            Err(e) => Err(e),
            Ok(owner) if owner.uid() != r.uid => Ok(Owner::Dangling),
            Ok(owner)
                if owner.deletion_timestamp().is_some()
                    && owner.finalizers().iter().any(|f| f == FOREGROUND) =>
            {
                Ok(Owner::Waiting)
            }
            Ok(_) => Ok(Owner::Solid),
        }
    }

    async fn attempt_to_delete(&self, node: &Node) -> Result<(), ApiError> {
        let ctx = ops::context(&node.namespace, NAME);
        // Owner references as stored now, not as last seen.
        let latest = match ops::get(node.storage.as_ref(), &ctx, &node.name).await {
            Ok(o) if o.uid() == node.uid => o,
            Ok(_) => return Ok(()),
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        let refs = owner_refs(&latest);
        if refs.is_empty() {
            return Ok(());
        }
        let (mut solid, mut dangling, mut waiting) = (Vec::new(), Vec::new(), Vec::new());
        for r in refs {
            match self.classify(node, &r).await? {
                Owner::Solid => solid.push(r),
                Owner::Dangling => dangling.push(r),
                Owner::Waiting => waiting.push(r),
            }
        }
        if !solid.is_empty() {
            if dangling.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            let gone: HashSet<String> = dangling
                .iter()
                .chain(&waiting)
                .map(|r| r.uid.clone())
                .collect();
            tracing::info!(object = %node.resource(), owners = ?gone, "garbage collector: removing references to deleted owners");
            return ops::update(node.storage.as_ref(), &ctx, &node.name, move |obj| {
                remove_refs(obj, &gone)
            })
            .await;
        }
        let dependents = self.graph().dependents(&node.uid);
        if !waiting.is_empty() && !dependents.is_empty() {
            if dependents
                .iter()
                .any(|d| d.deleting && d.has_finalizer(FOREGROUND))
            {
                // A cycle through foreground deletions would wait for ever: stop blocking the
                // owners that wait for this object, as upstream does.
                let waiting: HashSet<String> = waiting.iter().map(|r| r.uid.clone()).collect();
                ops::update(node.storage.as_ref(), &ctx, &node.name, move |obj| {
                    unblock_refs(obj, &waiting)
                })
                .await?;
            }
            tracing::info!(object = %node.resource(), "garbage collector: deleting in the foreground, as its owner");
            return ops::delete(
                node.storage.as_ref(),
                &ctx,
                &node.name,
                Some(&node.uid),
                Some(PropagationPolicy::Foreground),
            )
            .await;
        }
        let policy = if latest.finalizers().iter().any(|f| f == ORPHAN) {
            PropagationPolicy::Orphan
        } else if latest.finalizers().iter().any(|f| f == FOREGROUND) {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        tracing::info!(object = %node.resource(), "garbage collector: deleting an object whose owners are gone");
        ops::delete(
            node.storage.as_ref(),
            &ctx,
            &node.name,
            Some(&node.uid),
            Some(policy),
        )
        .await
    }
}

fn refs_mut(obj: &mut kapi_machinery::Object) -> Option<&mut Vec<Value>> {
    obj.metadata_mut()
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
}

/// Drops the owner references to `uids`; false when there were none.
fn remove_refs(obj: &mut kapi_machinery::Object, uids: &HashSet<String>) -> bool {
    let Some(refs) = refs_mut(obj) else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| {
        !r.get("uid")
            .and_then(Value::as_str)
            .is_some_and(|u| uids.contains(u))
    });
    let changed = refs.len() != before;
    if refs.is_empty() {
        obj.metadata_mut().remove("ownerReferences");
    }
    changed
}

/// Sets `blockOwnerDeletion: false` on the references to `uids`.
fn unblock_refs(obj: &mut kapi_machinery::Object, uids: &HashSet<String>) -> bool {
    let Some(refs) = refs_mut(obj) else {
        return false;
    };
    let mut changed = false;
    for r in refs.iter_mut() {
        let hit = r
            .get("uid")
            .and_then(Value::as_str)
            .is_some_and(|u| uids.contains(u));
        if hit {
            if let Some(m) = r.as_object_mut() {
                m.insert("blockOwnerDeletion".into(), Value::Bool(false));
                changed = true;
            }
        }
    }
    changed
}

/// Takes `finalizer` off `owner`, as the garbage collector.
async fn remove_finalizer(owner: &Node, finalizer: &'static str) -> Result<(), ApiError> {
    let ctx = ops::context(&owner.namespace, NAME);
    ops::remove_finalizer(
        owner.storage.as_ref(),
        &ctx,
        &owner.name,
        &owner.uid,
        finalizer,
    )
    .await
}
