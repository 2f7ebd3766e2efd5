//! PUT of one named object: 200, or 201 when the update created it. Without a
//! `resourceVersion` in the body the update is unconditional (the registry's rule). The
//! writer's changes are recorded in managedFields against the object current at each attempt.

use super::{capability, ensure_name, ensure_namespace, run_update, write_body};
use crate::scope::{admit_with, RequestScope};
use crate::transform::Payload;
use crate::{RequestBody, ResponseBody};
use http::Response;
use kapi_admission::Operation;
use kapi_machinery::{ApiError, Object};
use kapi_registry::rest::UpdatedObjectFn;
use std::sync::Arc;

pub async fn update(
    scope: &RequestScope,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let updater = capability(scope, scope.storage.as_updater(), "update")?;
    let (mut opts, mut obj, mut warnings) = write_body(scope, body, "UpdateOptions").await?;
    ensure_name(scope, &mut obj)?;
    ensure_namespace(scope, &mut obj)?;
    // A body naming a uid updates only that object, not one recreated under its name.
    if !obj.uid().is_empty() {
        opts.preconditions.uid = Some(obj.uid().to_string());
    }
    scope.audit_request_object(&obj);

    // Mutating admission runs inside the storage's compare-and-swap loop, against the object
    // current at each attempt (upstream's `DefaultUpdatedObjectInfo` transformers).
    let chain = scope.admission.clone();
    let create_attrs = scope.attributes(Operation::Create, None, None, opts.dry_run);
    let update_attrs = scope.attributes(Operation::Update, None, None, opts.dry_run);
    let body_obj = obj;
    let fields = super::patch::field_manager(scope, opts.field_manager.as_deref());
    let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
        let chain = chain.clone();
        let mut obj = body_obj.clone();
        fields.update(current.as_ref(), &mut obj);
        let attrs = match current {
            Some(old) => {
                let mut a = update_attrs.clone();
                a.old_object = Some(old);
                a
            }
            None => create_attrs.clone(),
        };
        Box::pin(async move { admit_with(&chain, attrs, obj).await })
    });
    let (status, result) = run_update(scope, updater, new_object, false, &opts).await?;
    warnings.extend(result.warnings);
    Ok(scope.respond(status, Payload::Object(result.object), &warnings))
}
