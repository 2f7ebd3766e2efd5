//! PUT of one named object: 200, or 201 when the update created it. Without a
//! `resourceVersion` in the body the update is unconditional (the registry's rule). The
//! writer's changes are recorded in managedFields against the object current at each attempt.

use super::{capability, ensure_name, ensure_namespace};
use crate::body::{decode_for, read_limited};
use crate::negotiation::negotiate_input_for;
use crate::params::write_options;
use crate::scope::{admit_with, RequestScope};
use crate::transform::Payload;
use crate::{RequestBody, ResponseBody};
use http::{Response, StatusCode};
use kapi_admission::Operation;
use kapi_machinery::{ApiError, Object};
use kapi_registry::rest::UpdatedObjectFn;
use std::sync::Arc;

pub async fn update(
    scope: &RequestScope,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let updater = capability(scope, scope.storage.as_updater(), "update")?;
    let bytes = read_limited(body, scope.config.max_request_body_bytes).await?;
    let mut opts = write_options(&scope.query, "UpdateOptions")?;
    let format = negotiate_input_for(scope.content_type(), crate::protobuf::serves(scope))?;
    let (mut obj, mut warnings) = decode_for(
        scope.storage.as_ref(),
        &bytes,
        format,
        opts.field_validation,
    )?;
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
    let result = updater
        .update(
            &scope.ctx(),
            &scope.name,
            new_object,
            scope.validate_create_fn(Operation::Create, opts.dry_run),
            scope.validate_update_fn(opts.dry_run),
            false,
            &opts,
        )
        .await?;
    warnings.extend(result.warnings);
    let status = if result.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(scope.respond(status, Payload::Object(result.object), &warnings))
}
