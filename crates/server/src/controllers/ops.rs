//! What controllers do to objects, through the storages' REST capabilities as a client would:
//! get, delete with options, and read-modify-write updates.

use kapi_machinery::options::PropagationPolicy;
use kapi_machinery::{ApiError, DeleteOptions, GetOptions, Object, UserInfo};
use kapi_registry::rest::{
    validate_nothing, validate_update_nothing, Context, Storage, UpdateResult, UpdatedObjectFn,
    Updater, WriteOptions,
};
use std::sync::Arc;

/// The identity controllers act as (upstream's controller manager runs each controller under
/// its own service account in kube-system).
pub fn context(namespace: &str, controller: &str) -> Context {
    Context {
        namespace: namespace.to_string(),
        user: UserInfo {
            name: format!("system:serviceaccount:kube-system:{controller}"),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:kube-system".into(),
                "system:authenticated".into(),
            ],
            ..Default::default()
        },
    }
}

fn unsupported(storage: &dyn Storage, verb: &str) -> ApiError {
    ApiError::method_not_supported(&storage.info().group_resource(), verb)
}

pub async fn get(storage: &dyn Storage, ctx: &Context, name: &str) -> Result<Object, ApiError> {
    storage
        .as_getter()
        .ok_or_else(|| unsupported(storage, "get"))?
        .get(ctx, name, &GetOptions::default())
        .await
}

/// Deletes `name` (only the object of `uid` when given) with `policy`; a missing object is fine.
pub async fn delete(
    storage: &dyn Storage,
    ctx: &Context,
    name: &str,
    uid: Option<&str>,
    policy: Option<PropagationPolicy>,
) -> Result<(), ApiError> {
    let deleter = storage
        .as_graceful_deleter()
        .ok_or_else(|| unsupported(storage, "delete"))?;
    let mut opts = DeleteOptions {
        propagation_policy: policy,
        ..Default::default()
    };
    opts.preconditions.uid = uid.map(String::from);
    match deleter.delete(ctx, name, validate_nothing(), &opts).await {
        Ok(_) => Ok(()),
        // Gone already, or replaced by another object of that name.
        Err(e) if e.is_not_found() || (uid.is_some() && e.is_conflict()) => Ok(()),
        Err(e) => Err(e),
    }
}

/// An update as controllers make it: no validation hooks, never a create, default options.
pub async fn write(
    updater: &dyn Updater,
    ctx: &Context,
    name: &str,
    new_object: UpdatedObjectFn,
) -> Result<UpdateResult, ApiError> {
    updater
        .update(
            ctx,
            name,
            new_object,
            validate_nothing(),
            validate_update_nothing(),
            false,
            &WriteOptions::default(),
        )
        .await
}

/// What the update closure answers when `change` had nothing to do, so nothing is written (a
/// write would bump the resourceVersion and wake every watcher, this controller included).
const UNCHANGED: &str = "no change to write";

/// Rewrites `name` with `change` (given the current object; returning false leaves it alone),
/// retrying on conflicts inside the storage's own read-modify-write.
pub async fn update<F>(
    storage: &dyn Storage,
    ctx: &Context,
    name: &str,
    change: F,
) -> Result<(), ApiError>
where
    F: Fn(&mut Object) -> bool + Send + Sync + 'static,
{
    let updater = storage
        .as_updater()
        .ok_or_else(|| unsupported(storage, "update"))?;
    let change = Arc::new(change);
    let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
        let change = change.clone();
        Box::pin(async move {
            let mut obj = current.ok_or_else(|| ApiError::internal("gone meanwhile"))?;
            if change(&mut obj) {
                Ok(obj)
            } else {
                Err(ApiError::internal(UNCHANGED))
            }
        })
    });
    match write(updater, ctx, name, new_object).await {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() || (e.code == 500 && e.message == UNCHANGED) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes `finalizer` from `metadata.finalizers` of `name` (of `uid`).
pub async fn remove_finalizer(
    storage: &dyn Storage,
    ctx: &Context,
    name: &str,
    uid: &str,
    finalizer: &'static str,
) -> Result<(), ApiError> {
    let uid = uid.to_string();
    update(storage, ctx, name, move |obj| {
        if obj.uid() != uid {
            return false;
        }
        let mut f = obj.finalizers();
        let before = f.len();
        f.retain(|x| x != finalizer);
        obj.set_finalizers(&f);
        f.len() != before
    })
    .await
}
