//! Update (PUT and PATCH): the new object is computed inside the storage's compare-and-swap
//! loop, checked against the current one, and written; a deleting object whose last finalizer
//! goes is deleted.

use super::{Store, Subresource};
use crate::meta::{spec_part, validate_object_meta_update};
use crate::rest::{
    Context, UpdateResult, UpdatedObjectFn, Updater, ValidateObjectFn, ValidateObjectUpdateFn,
    WriteOptions,
};
use async_trait::async_trait;
use futures::future::BoxFuture;
use kapi_machinery::{ApiError, FieldError, Object, Preconditions};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Everything one update needs besides the current object.
struct UpdateCall<'a> {
    ctx: &'a Context,
    name: &'a str,
    new_object: &'a UpdatedObjectFn,
    create_validation: &'a ValidateObjectFn,
    update_validation: &'a ValidateObjectUpdateFn,
    allow_create: bool,
    opts: &'a WriteOptions,
}

/// Allocation bookkeeping across compare-and-swap attempts.
#[derive(Default)]
struct AttemptState {
    created: bool,
    attempt: Option<(Object, Option<Object>)>,
}

impl Store {
    /// Applies the subresource's scope: `/status` keeps all but status and metadata (as the
    /// kind's status strategy says), `/finalize` all but
    /// `spec.finalizers`, and main writes of a resource with `/status` keep the old status.
    fn scope_update(&self, new: Object, old: &Object) -> Object {
        match self.sub {
            Subresource::Main => {
                let mut new = new;
                if self.strategy.has_status() {
                    crate::strategy::copy_status(&mut new, old);
                }
                new
            }
            Subresource::Status => {
                // Upstream's status strategies: status and metadata from the request, the rest
                // (spec) from the stored object, with each kind's own metadata exceptions.
                let mut out = new;
                self.strategy.prepare_for_status_update(&mut out, old);
                out
            }
            Subresource::Finalize => {
                let mut out = old.clone();
                let finalizers = new.get("spec").and_then(|s| s.get("finalizers")).cloned();
                let spec = out
                    .as_map_mut()
                    .entry("spec")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(spec) = spec {
                    match finalizers {
                        Some(f) => {
                            spec.insert("finalizers".into(), f);
                        }
                        None => {
                            spec.remove("finalizers");
                        }
                    }
                }
                out.set_resource_version(new.resource_version());
                out
            }
        }
    }

    /// Upstream's `rest.BeforeUpdate`: system fields from the old object, strategy, generation,
    /// validation.
    fn before_update(
        &self,
        ctx: &Context,
        name: &str,
        new: Object,
        old: &Object,
    ) -> Result<Object, ApiError> {
        let mut new = self.with_type_meta(new);
        self.check_namespace(ctx, &mut new)?;
        if new.name() != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                new.name()
            )));
        }
        let mut new = self.scope_update(new, old);
        new.set_generation(old.generation());
        if new.uid().is_empty() {
            new.set_uid(old.uid());
        }
        if !old.creation_timestamp().is_empty() {
            new.set_creation_timestamp(old.creation_timestamp());
        }
        if let Some(ts) = old.deletion_timestamp() {
            new.set_deletion_timestamp(Some(ts));
        } else {
            new.set_deletion_timestamp(None);
        }
        new.set_deletion_grace_period_seconds(old.deletion_grace_period_seconds());
        if self.sub == Subresource::Main {
            self.strategy.prepare_for_update(&mut new, old);
            if self.strategy.tracks_generation() && spec_part(&new) != spec_part(old) {
                new.set_generation(old.generation().max(1).saturating_add(1));
            }
        }
        let mut errs =
            validate_object_meta_update(&new, old, self.info.namespaced, self.strategy.name_rule());
        if old.deletion_timestamp().is_some() {
            let old_f = old.finalizers();
            let extra: Vec<String> = new
                .finalizers()
                .into_iter()
                .filter(|f| !old_f.contains(f))
                .collect();
            if !extra.is_empty() {
                let list: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
                errs.push(FieldError::forbidden(
                    "metadata.finalizers",
                    format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}", list.join(", ")),
                ));
            }
        }
        errs.extend(match self.sub {
            Subresource::Main => self.strategy.validate_update(&new, old),
            Subresource::Status => self.strategy.validate_status_update(&new, old),
            Subresource::Finalize => Vec::new(),
        });
        if !errs.is_empty() {
            return Err(self.invalid(name, &errs));
        }
        Ok(new)
    }

    /// Computes the object to write from the current one; the bool says it is a create.
    async fn compute_update(
        &self,
        call: &UpdateCall<'_>,
        current: Option<Object>,
    ) -> Result<(Object, bool), ApiError> {
        let Some(current) = current else {
            if !call.allow_create {
                return Err(ApiError::not_found(&self.gr(), call.name));
            }
            let mut obj = self.with_type_meta((call.new_object)(None).await?);
            if obj.name() != call.name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({}) does not match the name on the URL ({})",
                    obj.name(),
                    call.name
                )));
            }
            obj.set_resource_version("");
            self.check_namespace(call.ctx, &mut obj)?;
            if self.info.namespaced {
                if let Some(ns) = &self.namespaces {
                    ns.admit_create(obj.namespace(), &self.gr(), obj.name())
                        .await?;
                }
            }
            self.before_create(call.ctx, &mut obj)?;
            self.validate_new(&obj)?;
            (call.create_validation)(obj.clone()).await?;
            return Ok((obj, true));
        };
        let current = self.read_stored(current);
        let mut new = (call.new_object)(Some(current.clone())).await?;
        if new.resource_version().is_empty() {
            new.set_resource_version(current.resource_version());
        } else if new.resource_version() != current.resource_version() {
            return Err(ApiError::conflict_modified(&self.gr(), call.name));
        }
        let new = self.before_update(call.ctx, call.name, new, &current)?;
        let (new, _) = (call.update_validation)(new, current).await?;
        Ok((new, false))
    }

    /// Whether a deleting object has nothing left holding it.
    fn ready_to_go(&self, obj: &Object) -> bool {
        obj.deletion_timestamp().is_some()
            && obj.finalizers().is_empty()
            && !self.strategy.holds_deletion(obj)
            && obj.deletion_grace_period_seconds().unwrap_or(0) == 0
    }

    async fn update_impl(&self, call: UpdateCall<'_>) -> Result<UpdateResult, ApiError> {
        let gr = self.gr();
        let namespace = if self.info.namespaced {
            call.ctx.namespace.as_str()
        } else {
            ""
        };
        let key = self.key(namespace, call.name);
        let preconditions =
            (!call.opts.preconditions.is_empty()).then_some(&call.opts.preconditions);
        if call.opts.dry_run {
            let current = self
                .storage
                .get(&key, &crate::reads::LATEST_IF_EXISTS)
                .await
                .map_err(|e| e.into_api_error(&gr, call.name))?;
            if let Some(cur) = &current {
                kapi_storage::check_preconditions(preconditions, &key, cur)
                    .map_err(|e| e.into_api_error(&gr, call.name))?;
            }
            let current = current.map(|o| self.read_stored(o));
            let old = current.clone();
            let (mut obj, created) = self.compute_update(&call, current).await?;
            self.strategy.allocate(&mut obj, old.as_ref()).await?;
            self.strategy.release(&obj, old.as_ref()).await;
            return Ok(UpdateResult {
                object: self.read_stored(self.to_stored(obj)),
                created,
                warnings: Vec::new(),
            });
        }
        // What the last attempt allocated, as (new, old): given back when the attempt is
        // retried or fails, and the old object's leftovers given back when it succeeds.
        let state: Arc<Mutex<AttemptState>> = Arc::default();
        let call_ref = &call;
        let state_ref = state.clone();
        let mut try_update =
            move |current: Option<Object>| -> BoxFuture<'_, kapi_storage::Result<Object>> {
                let state = state_ref.clone();
                Box::pin(async move {
                    if let Some((prev_new, prev_old)) =
                        state.lock().ok().and_then(|mut s| s.attempt.take())
                    {
                        self.strategy.release(&prev_new, prev_old.as_ref()).await;
                    }
                    let current = current.map(|o| self.read_stored(o));
                    // Only what allocates keeps copies, to give back what an attempt took.
                    let allocates = self.strategy.allocates();
                    let old = if allocates { current.clone() } else { None };
                    let (mut obj, is_create) = self.compute_update(call_ref, current).await?;
                    if allocates {
                        self.strategy.allocate(&mut obj, old.as_ref()).await?;
                    }
                    if let Ok(mut s) = state.lock() {
                        s.created = is_create;
                        if allocates {
                            s.attempt = Some((obj.clone(), old));
                        }
                    }
                    Ok(self.to_stored(obj))
                })
            };
        let result = self
            .storage
            .guaranteed_update(&key, preconditions, true, &mut try_update)
            .await;
        let (created, attempt) = state
            .lock()
            .map(|mut s| (s.created, s.attempt.take()))
            .unwrap_or((false, None));
        let stored = match result {
            Ok(stored) => {
                if let Some((_, Some(old))) = &attempt {
                    self.strategy.release(old, Some(&stored)).await;
                }
                stored
            }
            Err(e) => {
                // Given back only when the write surely did not land (see
                // `write_may_have_landed`).
                match &attempt {
                    Some((new, old)) if !e.write_may_have_landed() => {
                        self.strategy.release(new, old.as_ref()).await;
                    }
                    _ => {}
                }
                return Err(e.into_api_error(&gr, call.name));
            }
        };
        let stored = self.read_stored(stored);
        if self.ready_to_go(&stored) {
            let pre = Preconditions {
                uid: None,
                resource_version: Some(stored.resource_version().to_string()),
            };
            let accept = |_: &Object| -> BoxFuture<'_, kapi_storage::Result<()>> {
                Box::pin(async { Ok(()) })
            };
            match self.storage.delete(&key, Some(&pre), &accept).await {
                Ok(deleted) => {
                    self.strategy.release(&deleted, None).await;
                    return Ok(UpdateResult {
                        object: self.read_stored(deleted),
                        created,
                        warnings: Vec::new(),
                    });
                }
                // Someone else changed or removed it meanwhile; what we stored stands.
                Err(
                    kapi_storage::Error::NotFound { .. } | kapi_storage::Error::Conflict { .. },
                ) => {}
                Err(e) => return Err(e.into_api_error(&gr, call.name)),
            }
        }
        Ok(UpdateResult {
            object: stored,
            created,
            warnings: Vec::new(),
        })
    }
}

#[async_trait]
impl Updater for Store {
    async fn update(
        &self,
        ctx: &Context,
        name: &str,
        new_object: UpdatedObjectFn,
        create_validation: ValidateObjectFn,
        update_validation: ValidateObjectUpdateFn,
        force_allow_create: bool,
        opts: &WriteOptions,
    ) -> Result<UpdateResult, ApiError> {
        let allow_create = self.sub == Subresource::Main
            && (self.strategy.allow_create_on_update() || force_allow_create);
        let call = UpdateCall {
            ctx,
            name,
            new_object: &new_object,
            create_validation: &create_validation,
            update_validation: &update_validation,
            allow_create,
            opts,
        };
        self.update_impl(call).await
    }
}
