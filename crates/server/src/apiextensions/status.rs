//! Writes to a CRD: its status (accepted names, conditions) through the `/status` store, and
//! the removal of the cleanup finalizer through the main store, each retried on conflicts.

use super::naming::Condition;
use kapi_apiextensions::Names;
use kapi_machinery::{ApiError, Object};
use kapi_registry::rest::{Context, Storage, UpdatedObjectFn};
use serde_json::{json, Value};
use std::sync::Arc;

/// Upstream's `SetCRDCondition` (apimachinery's rule: the transition time moves only when the
/// status changes), in upstream's field order.
pub fn set_condition(obj: &mut Object, cond: &Condition) {
    kapi_registry::kind::set_condition(
        obj,
        json!({
            "type": cond.kind,
            "status": cond.status,
            "lastTransitionTime": null,
            "reason": cond.reason,
            "message": cond.message,
        }),
    );
}

/// Whether `obj` already carries `cond` (type, status, reason and message).
pub fn has_condition(obj: &Object, cond: &Condition) -> bool {
    kapi_apiextensions::crd::condition(obj, cond.kind).is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some(cond.status)
            && c.get("reason").and_then(Value::as_str) == Some(cond.reason.as_str())
            && c.get("message").and_then(Value::as_str) == Some(cond.message.as_str())
    })
}

/// Sets accepted names (when given) and conditions on the stored CRD `name`.
pub async fn write_status(
    status_store: &Arc<dyn Storage>,
    name: &str,
    names: Option<Names>,
    conditions: Vec<Condition>,
) -> Result<(), ApiError> {
    let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
        let names = names.clone();
        let conditions = conditions.clone();
        Box::pin(async move {
            let mut obj = current.ok_or_else(|| ApiError::internal("the CRD is gone"))?;
            if let Some(names) = &names {
                let status = obj
                    .as_map_mut()
                    .entry("status")
                    .or_insert_with(|| json!({}));
                if let Value::Object(s) = status {
                    s.insert("acceptedNames".into(), names.to_value());
                }
            }
            for c in &conditions {
                set_condition(&mut obj, c);
            }
            Ok(obj)
        })
    });
    update(status_store, name, new_object).await
}

/// Removes `finalizer` from the CRD `name` (the store deletes it once none is left).
pub async fn remove_finalizer(
    store: &Arc<dyn Storage>,
    name: &str,
    finalizer: &'static str,
) -> Result<(), ApiError> {
    let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
        Box::pin(async move {
            let mut obj = current.ok_or_else(|| ApiError::internal("the CRD is gone"))?;
            let left: Vec<String> = obj
                .finalizers()
                .into_iter()
                .filter(|f| f != finalizer)
                .collect();
            obj.set_finalizers(&left);
            Ok(obj)
        })
    });
    match update(store, name, new_object).await {
        Err(e) if e.is_not_found() => Ok(()),
        other => other,
    }
}

async fn update(
    store: &Arc<dyn Storage>,
    name: &str,
    new_object: UpdatedObjectFn,
) -> Result<(), ApiError> {
    let updater = store
        .as_updater()
        .ok_or_else(|| ApiError::internal("customresourcedefinitions cannot be updated"))?;
    crate::controllers::ops::write(updater, &Context::default(), name, new_object)
        .await
        .map(|_| ())
}
