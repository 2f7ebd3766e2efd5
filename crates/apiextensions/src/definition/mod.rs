//! apiextensions.k8s.io/v1 `customresourcedefinitions` (crd, crds; cluster-scoped, `/status`):
//! the definitions custom resources are served from (`crate::storage`, `crate::strategy`).
//!
//! Upstream's `pkg/registry/customresourcedefinition` (strategy.go, etcd.go), the v1 defaults
//! (`pkg/apis/apiextensions/v1/defaults.go`) and `ValidateCustomResourceDefinition*`
//! (`pkg/apis/apiextensions/validation/validation.go`, in [`validation`] and [`schema`]).

mod conversion;
mod defaults;
mod extensions;
mod gofmt;
mod internal;
mod schema;
mod selectable;
mod validation;

#[cfg(test)]
mod tests;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kapi_machinery::{ApiError, DeleteOptions, FieldError, GroupResource, Object};
use kapi_registry::kind::strategy_group;
use kapi_registry::kind::{info, obj_mut};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::{keep_all_but_status_and_metadata, Strategy};
use kapi_registry::typed;
use kapi_registry::Stores;
use serde_json::{json, Value};
use std::sync::Arc;

pub use validation::{
    validate_crd, validate_crd_status_update, validate_crd_update, validate_simple_json_path,
};

pub const GROUP: &str = "apiextensions.k8s.io";

/// The finalizer a CRD carries from its first delete until its custom resources are gone
/// (upstream's `apiextensions.CustomResourceCleanupFinalizer`).
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub fn groups(ctx: &Stores) -> Vec<ApiGroupInfo> {
    let table = [Arc::new(CustomResourceDefinitionStrategy) as Arc<dyn Strategy>];
    vec![strategy_group(ctx, GROUP, "v1", table)]
}

/// The name of the version marked `storage: true` (the first one, as upstream's loops stop
/// there).
pub fn storage_version(obj: &Object) -> Option<&str> {
    versions(obj)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
}

fn versions(obj: &Object) -> &[Value] {
    obj.get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Whether a condition of `type_` is present with status `True` (`IsCRDConditionTrue`).
pub fn condition_true(obj: &Object, type_: &str) -> bool {
    obj.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        })
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// Upstream's `SetCRDCondition` (apimachinery's rule: the transition time moves only when the
/// status changes), in upstream's field order.
pub fn set_condition(obj: &mut Object, type_: &str, status: &str, reason: &str, message: &str) {
    kapi_registry::kind::set_condition(
        obj,
        json!({
            "type": type_,
            "status": status,
            "lastTransitionTime": null,
            "reason": reason,
            "message": message,
        }),
    );
}

/// Appends the storage version to `status.storedVersions` when it is not there yet (the
/// step upstream's `PrepareForCreate` and `PrepareForUpdate` share).
fn record_storage_version(obj: &mut Object) {
    let Some(v) = storage_version(obj).map(str::to_string) else {
        return;
    };
    let st = obj_mut(obj, &["status"]);
    let stored = st
        .entry("storedVersions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !stored.is_array() {
        *stored = Value::Array(Vec::new());
    }
    if let Value::Array(list) = stored {
        if !list.iter().any(|s| s.as_str() == Some(v.as_str())) {
            list.push(Value::String(v));
        }
    }
}

pub struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            &["api-extensions"],
        )
    }

    // Go decodes an omitted required field as its zero value, which validation then
    // reports (422); the typed struct would refuse the body instead (400).
    typed!(
        CustomResourceDefinition,
        fill = |body| *body = defaults::fill_go_zeros(std::mem::take(body))
    );

    fn defaults(&self, obj: &mut Object) {
        defaults::set_defaults(obj);
    }

    fn has_status(&self) -> bool {
        true
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// Upstream clears the status and records the storage version; the feature gates whose
    /// fields `dropDisabledFields` removes are on by default, so nothing is dropped.
    fn prepare_for_create(&self, obj: &mut Object) {
        obj.insert(
            "status",
            json!({"acceptedNames": {"plural": "", "kind": ""}}),
        );
        record_storage_version(obj);
    }

    fn prepare_for_update(&self, new: &mut Object, old: &Object) {
        kapi_registry::strategy::copy_status(new, old);
        record_storage_version(new);
    }

    /// Only the status changes on `/status`: the spec is the stored one. Upstream's status
    /// strategy resets the new metadata against itself (`ResetObjectMetaForStatus(new, new)`),
    /// so metadata sent with a status write is kept.
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        keep_all_but_status_and_metadata(new, old);
    }

    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        validate_crd(obj)
    }

    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        validate_crd_update(new, old)
    }

    fn validate_status_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        validate_crd_status_update(new, old)
    }

    /// Upstream's `REST.Delete` checks the preconditions itself, with its own wording.
    fn check_delete_preconditions(
        &self,
        current: &Object,
        opts: &DeleteOptions,
    ) -> Option<Result<(), ApiError>> {
        let gr = GroupResource::new(GROUP, "customresourcedefinitions");
        let p = &opts.preconditions;
        if let Some(uid) = p.uid.as_deref().filter(|u| *u != current.uid()) {
            return Some(Err(ApiError::conflict(
                &gr,
                current.name(),
                format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    current.uid()
                ),
            )));
        }
        if let Some(rv) = p
            .resource_version
            .as_deref()
            .filter(|rv| *rv != current.resource_version())
        {
            return Some(Err(ApiError::conflict(
                &gr,
                current.name(),
                format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    current.resource_version()
                ),
            )));
        }
        Some(Ok(()))
    }

    /// Upstream's `REST.Delete`: the first delete only marks the definition (deletionTimestamp,
    /// the cleanup finalizer, `Terminating=True`), with no grace period and whatever the
    /// propagation policy; the finalizer goes once the custom resources are deleted.
    fn before_delete(&self, obj: &Object) -> Result<Option<Object>, ApiError> {
        if obj.deletion_timestamp().is_some() {
            return Ok(None);
        }
        let mut o = obj.clone();
        o.set_deletion_timestamp(Some(&kapi_registry::meta::now_rfc3339()));
        let mut finalizers = o.finalizers();
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_string());
            o.set_finalizers(&finalizers);
        }
        set_condition(
            &mut o,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
        Ok(Some(o))
    }
}
