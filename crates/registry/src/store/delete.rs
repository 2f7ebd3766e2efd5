//! Delete and deletecollection: preconditions, graceful deletion, finalizers (including the
//! `orphan` / `foregroundDeletion` ones that record `propagationPolicy`), then removal.

use super::Store;
use crate::meta::now_rfc3339;
use crate::rest::{
    CollectionDeleter, Context, DeleteResult, GracefulDeleter, ObjectList, ValidateObjectFn,
};
use crate::strategy::GracefulDelete;
use async_trait::async_trait;
use futures::future::BoxFuture;
use kapi_machinery::options::PropagationPolicy;
use kapi_machinery::{ApiError, DeleteOptions, GroupResource, ListOptions, Object};

/// Upstream's `metav1.FinalizerOrphanDependents`.
pub const FINALIZER_ORPHAN: &str = "orphan";
/// Upstream's `metav1.FinalizerDeleteDependents`.
pub const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// The finalizers after applying the delete's propagation policy, as upstream's
/// `deletionFinalizersForGarbageCollection`.
fn finalizers_for_policy(current: &[String], opts: &DeleteOptions) -> Vec<String> {
    let policy = match (opts.propagation_policy, opts.orphan_dependents) {
        (Some(p), _) => Some(p),
        (None, Some(true)) => Some(PropagationPolicy::Orphan),
        (None, Some(false)) => Some(PropagationPolicy::Background),
        (None, None) => None,
    };
    let mut out: Vec<String> = current.to_vec();
    let (add, remove): (Option<&str>, &[&str]) = match policy {
        None => return out,
        Some(PropagationPolicy::Orphan) => (Some(FINALIZER_ORPHAN), &[FINALIZER_FOREGROUND]),
        Some(PropagationPolicy::Foreground) => (Some(FINALIZER_FOREGROUND), &[FINALIZER_ORPHAN]),
        Some(PropagationPolicy::Background) => (None, &[FINALIZER_ORPHAN, FINALIZER_FOREGROUND]),
    };
    out.retain(|f| !remove.contains(&f.as_str()));
    if let Some(a) = add {
        if !out.iter().any(|f| f == a) {
            out.push(a.to_string());
        }
    }
    out
}

impl Store {
    /// Marks `obj` as being deleted (the Store's part of upstream's
    /// `updateForGracefulDeletionAndFinalizers`).
    /// Upstream's `BeforeDelete` check of `preconditions` against the object read for the
    /// delete: a 409 on the kind (`Operation cannot be fulfilled on ConfigMap "x": the UID in
    /// the precondition ...`), before the storage enforces them again on the write.
    fn check_delete_preconditions(
        &self,
        current: &Object,
        opts: &DeleteOptions,
    ) -> Result<(), ApiError> {
        let on_kind = GroupResource::new(self.info.group.clone(), self.info.kind.clone());
        let p = &opts.preconditions;
        if let Some(uid) = p.uid.as_deref().filter(|u| *u != current.uid()) {
            return Err(ApiError::conflict(
                &on_kind,
                current.name(),
                format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                    current.uid()
                ),
            ));
        }
        if let Some(rv) = p
            .resource_version
            .as_deref()
            .filter(|rv| *rv != current.resource_version())
        {
            return Err(ApiError::conflict(
                &on_kind,
                current.name(),
                format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                    current.resource_version()
                ),
            ));
        }
        Ok(())
    }

    fn mark_deleting(
        &self,
        obj: Object,
        finalizers: &[String],
        grace: GracefulDelete,
    ) -> Result<Object, ApiError> {
        let unmarked = obj.deletion_timestamp().is_none();
        let mut obj = self.strategy.before_delete(&obj)?.unwrap_or(obj);
        if unmarked && obj.deletion_timestamp().is_some() {
            // The strategy marked the object itself (upstream's CRD delete): stored as it is.
            return Ok(obj);
        }
        obj.set_finalizers(finalizers);
        match grace {
            GracefulDelete::Graceful(secs) => {
                // A grace period past chrono's range is the far future, not a panic.
                let when = chrono::Duration::try_seconds(secs)
                    .and_then(|d| chrono::Utc::now().checked_add_signed(d))
                    .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
                if obj.deletion_timestamp().is_none() {
                    obj.set_deletion_timestamp(Some(
                        &when.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    ));
                }
                obj.set_deletion_grace_period_seconds(Some(secs));
            }
            GracefulDelete::Immediate => {
                if obj.deletion_timestamp().is_none() {
                    obj.set_deletion_timestamp(Some(&now_rfc3339()));
                }
                obj.set_deletion_grace_period_seconds(Some(0));
            }
        }
        Ok(obj)
    }

    pub(super) async fn delete_impl(
        &self,
        ctx: &Context,
        name: &str,
        validate: &ValidateObjectFn,
        opts: &DeleteOptions,
    ) -> Result<DeleteResult, ApiError> {
        let gr = self.gr();
        let namespace = if self.info.namespaced {
            ctx.namespace.as_str()
        } else {
            ""
        };
        let key = self.key(namespace, name);
        let current = self
            .storage
            .get(&key, &crate::reads::LATEST_IF_EXISTS)
            .await
            .map_err(|e| e.into_api_error(&gr, name))?
            .ok_or_else(|| ApiError::not_found(&gr, name))?;
        let current = self.read_stored(current);
        match self.strategy.check_delete_preconditions(&current, opts) {
            Some(checked) => checked?,
            None => self.check_delete_preconditions(&current, opts)?,
        }

        let finalizers = finalizers_for_policy(&current.finalizers(), opts);
        let mut grace = match opts.grace_period_seconds {
            Some(0) => GracefulDelete::Immediate,
            _ => self.strategy.graceful_delete(&current, opts),
        };
        if let (GracefulDelete::Graceful(_), Some(g)) = (grace, opts.grace_period_seconds) {
            grace = GracefulDelete::Graceful(g);
        }
        let replacement = self.strategy.before_delete(&current)?;
        let held = !finalizers.is_empty()
            || replacement
                .as_ref()
                .is_some_and(|r| self.strategy.holds_deletion(r) || !r.finalizers().is_empty())
            || matches!(grace, GracefulDelete::Graceful(_));

        validate(current.clone()).await?;
        if !opts.dry_run && self.holds_namespaces() {
            // The namespace check reads its cache, which may not show this one going yet.
            if let Some(ns) = &self.namespaces {
                ns.deleting(name);
            }
        }
        if held {
            let marked = self.mark_deleting(current.clone(), &finalizers, grace)?;
            if opts.dry_run {
                return Ok(DeleteResult {
                    object: marked,
                    deleted: false,
                });
            }
            if marked == current {
                return Ok(DeleteResult {
                    object: current,
                    deleted: false,
                });
            }
            let preconditions = (!opts.preconditions.is_empty()).then_some(&opts.preconditions);
            let mut try_update =
                |cur: Option<Object>| -> BoxFuture<'_, kapi_storage::Result<Object>> {
                    let res = match cur {
                        Some(cur) => self
                            .mark_deleting(self.read_stored(cur), &finalizers, grace)
                            .map(|o| self.to_stored(o))
                            .map_err(kapi_storage::Error::from),
                        None => Err(ApiError::not_found(&gr, name).into()),
                    };
                    Box::pin(async move { res })
                };
            let stored = self
                .storage
                .guaranteed_update(&key, preconditions, false, &mut try_update)
                .await
                .map_err(|e| e.into_api_error(&gr, name))?;
            return Ok(DeleteResult {
                object: self.read_stored(stored),
                deleted: false,
            });
        }

        if opts.dry_run {
            return Ok(DeleteResult {
                object: current,
                deleted: true,
            });
        }
        let mut pre = opts.preconditions.clone();
        if pre.resource_version.is_none() {
            // Delete exactly what was checked: a concurrent change makes this a conflict.
            pre.resource_version = Some(current.resource_version().to_string());
        }
        let accept =
            |_: &Object| -> BoxFuture<'_, kapi_storage::Result<()>> { Box::pin(async { Ok(()) }) };
        let deleted = match self.storage.delete(&key, Some(&pre), &accept).await {
            Ok(d) => d,
            Err(kapi_storage::Error::Conflict { .. })
                if opts.preconditions.resource_version.is_none() =>
            {
                // Changed in between: retry once against the new state (it may have gained finalizers).
                return Box::pin(self.delete_impl(ctx, name, validate, opts)).await;
            }
            Err(e) => return Err(e.into_api_error(&gr, name)),
        };
        self.strategy.release(&deleted, None).await;
        Ok(DeleteResult {
            object: self.read_stored(deleted),
            deleted: true,
        })
    }
}

#[async_trait]
impl GracefulDeleter for Store {
    async fn delete(
        &self,
        ctx: &Context,
        name: &str,
        validate: ValidateObjectFn,
        opts: &DeleteOptions,
    ) -> Result<DeleteResult, ApiError> {
        if let Some(refused) = self.strategy.refuse_delete(name) {
            return Err(refused);
        }
        self.delete_impl(ctx, name, &validate, opts).await
    }
}

#[async_trait]
impl CollectionDeleter for Store {
    async fn delete_collection(
        &self,
        ctx: &Context,
        validate: ValidateObjectFn,
        opts: &DeleteOptions,
        list_opts: &ListOptions,
    ) -> Result<ObjectList, ApiError> {
        let mut list_opts = list_opts.clone();
        list_opts.limit = None;
        list_opts.continue_token = None;
        let listed = self.list_impl(ctx, &list_opts).await?;
        let mut items = Vec::new();
        for item in listed.items {
            let item_ctx = Context {
                namespace: item.namespace().to_string(),
                user: ctx.user.clone(),
            };
            match self
                .delete_impl(&item_ctx, item.name(), &validate, opts)
                .await
            {
                Ok(r) => items.push(r.object),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(ObjectList {
            items,
            resource_version: listed.resource_version,
            continue_token: None,
            remaining_item_count: None,
            encoded: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn propagation_policy_finalizers() {
        let o = DeleteOptions {
            propagation_policy: Some(PropagationPolicy::Orphan),
            ..Default::default()
        };
        assert_eq!(
            finalizers_for_policy(&["x".into(), "foregroundDeletion".into()], &o),
            vec!["x".to_string(), "orphan".to_string()]
        );
        let f = DeleteOptions {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..Default::default()
        };
        assert_eq!(
            finalizers_for_policy(&[], &f),
            vec!["foregroundDeletion".to_string()]
        );
        let b = DeleteOptions {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        };
        assert!(finalizers_for_policy(&["orphan".into()], &b).is_empty());
        assert!(finalizers_for_policy(&[], &DeleteOptions::default()).is_empty());
    }
}
