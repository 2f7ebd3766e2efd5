//! DELETE of one object (the object while finalizers or a grace period keep it, or when the
//! resource returns deleted objects; else a `Success` Status) and of a collection (the list of what was deleted).

use super::capability;
use crate::body::read_limited;
use crate::scope::RequestScope;
use crate::transform::{ListPayload, Payload};
use crate::{RequestBody, ResponseBody};
use http::{Response, StatusCode};
use kapi_admission::Operation;
use kapi_machinery::error::success_status;
use kapi_machinery::{ApiError, DeleteOptions, ListOptions};

/// Mutating admission sees a delete with no object, as upstream's delete handler runs it.
async fn admit_delete(scope: &RequestScope, dry_run: bool) -> Result<(), ApiError> {
    let mut attrs = scope.attributes(Operation::Delete, None, None, dry_run);
    scope.admission.admit(&mut attrs).await
}

pub async fn delete(
    scope: &RequestScope,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let deleter = capability(scope, scope.storage.as_graceful_deleter(), "delete")?;
    let bytes = read_limited(body, scope.config.max_request_body_bytes).await?;
    scope.audit_request_body(&bytes);
    let opts = DeleteOptions::from_body_and_query(&bytes, &scope.query)?;
    admit_delete(scope, opts.dry_run).await?;
    let validate = scope.validate_create_fn(Operation::Delete, opts.dry_run);
    let result = deleter
        .delete(&scope.ctx(), &scope.name, validate, &opts)
        .await?;
    if result.deleted && !scope.storage.return_deleted_object() {
        let gr = scope.group_resource();
        let status = success_status(Some((&gr, &scope.name, result.object.uid())));
        return Ok(scope.respond(StatusCode::OK, Payload::Status(status), &[]));
    }
    // 202 when a cascading delete was asked for and the object is still there (upstream).
    let code = if !result.deleted && opts.orphan_dependents == Some(false) {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok(scope.respond(code, Payload::Object(result.object), &[]))
}

pub async fn delete_collection(
    scope: &RequestScope,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let deleter = capability(
        scope,
        scope.storage.as_collection_deleter(),
        "deletecollection",
    )?;
    let bytes = read_limited(body, scope.config.max_request_body_bytes).await?;
    scope.audit_request_body(&bytes);
    let list_opts = ListOptions::from_query(&scope.query)?;
    let opts = DeleteOptions::from_body_and_query(&bytes, &scope.query)?;
    admit_delete(scope, opts.dry_run).await?;
    let validate = scope.validate_create_fn(Operation::Delete, opts.dry_run);
    let list = deleter
        .delete_collection(&scope.ctx(), validate, &opts, &list_opts)
        .await?;
    let payload = ListPayload {
        items: list.items,
        resource_version: list.resource_version,
        continue_token: list.continue_token,
        remaining_item_count: list.remaining_item_count,
    };
    Ok(scope.respond(StatusCode::OK, Payload::List(payload), &[]))
}
