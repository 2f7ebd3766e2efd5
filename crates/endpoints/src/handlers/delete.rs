//! DELETE of one object (the object while finalizers or a grace period keep it, or when the
//! resource returns deleted objects; else a `Success` Status) and of a collection (the list of what was deleted).

use super::capability;
use crate::body::{decode_value, read_limited};
use crate::negotiation::{media_type_of, negotiate_input_for, InputFormat};
use crate::scope::RequestScope;
use crate::transform::{ListPayload, Payload};
use crate::{RequestBody, ResponseBody};
use http::{Response, StatusCode};
use kapi_admission::Operation;
use kapi_machinery::error::{success_status, StatusReason};
use kapi_machinery::{ApiError, DeleteOptions, ListOptions};
use serde_json::Value;

/// The DeleteOptions of a DELETE as upstream's delete handlers read them: an empty body leaves
/// the query parameters; a body is decoded in its Content-Type (none means JSON, the first
/// type meta.k8s.io serves; protobuf as client-go sends it; anything else is 415), and any
/// group version's `DeleteOptions` is accepted.
fn delete_options(scope: &RequestScope, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    if body.is_empty() {
        return DeleteOptions::from_body_and_query(body, &scope.query);
    }
    let format = if media_type_of(scope.content_type()).is_empty() {
        InputFormat::Json
    } else {
        negotiate_input_for(scope.content_type(), true)?
    };
    if format == InputFormat::Json {
        return DeleteOptions::from_body_and_query(body, &scope.query);
    }
    let decoded = decode_value(body, format)?;
    match decoded.get("kind").and_then(Value::as_str) {
        None | Some("DeleteOptions") => {}
        // Not an apimachinery status error upstream, so a 500 with no reason.
        Some(_) => {
            return Err(ApiError::new(
                500,
                StatusReason::Unknown,
                "decoded object cannot be converted to DeleteOptions",
            ))
        }
    }
    let json = serde_json::to_vec(&decoded).map_err(ApiError::internal)?;
    DeleteOptions::from_body_and_query(&json, &scope.query)
}

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
    let opts = delete_options(scope, &bytes)?;
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
    let opts = delete_options(scope, &bytes)?;
    admit_delete(scope, opts.dry_run).await?;
    let validate = scope.validate_create_fn(Operation::Delete, opts.dry_run);
    let list = deleter
        .delete_collection(&scope.ctx(), validate, &opts, &list_opts)
        .await?;
    let payload = ListPayload {
        items: list.items.into_iter().map(std::sync::Arc::new).collect(),
        resource_version: list.resource_version,
        continue_token: list.continue_token,
        remaining_item_count: list.remaining_item_count,
        encoded: list.encoded,
    };
    Ok(scope.respond(StatusCode::OK, Payload::List(payload), &[]))
}
