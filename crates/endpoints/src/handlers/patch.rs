//! PATCH of one named object with `application/json-patch+json` (RFC 6902),
//! `application/merge-patch+json` (RFC 7386) or `application/strategic-merge-patch+json`
//! (built-in kinds only, as upstream). The patch is applied inside the storage's
//! compare-and-swap loop, so a conflict retry re-applies it to the fresh object.
//! Server-side apply is answered with 415 for now.

use super::capability;
use crate::body::read_limited;
use crate::negotiation::{negotiate_patch, PatchType};
use crate::params::write_options;
use crate::patch::meta::PatchSchema;
use crate::patch::strategic;
use crate::scope::{admit_with, RequestScope};
use crate::transform::Payload;
use crate::{RequestBody, ResponseBody};
use http::{Response, StatusCode};
use kapi_admission::Operation;
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, Object, StatusReason};
use kapi_registry::rest::{FieldValidation, UpdatedObjectFn};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A parsed patch document.
#[derive(Clone)]
enum PatchDoc {
    Json(json_patch::Patch),
    Merge(Value),
    Strategic(serde_json::Map<String, Value>, PatchSchema),
}

const STRATEGIC: &str = "application/strategic-merge-patch+json";

/// Patch types accepted for built-in kinds.
const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    STRATEGIC,
];

fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Parses the body per its content type. Strategic merge needs the kind's upstream patch
/// metadata: kinds without it (custom resources) get 415, as upstream.
fn parse_patch(scope: &RequestScope, bytes: &[u8]) -> Result<PatchDoc, ApiError> {
    let media = media_type(scope.content_type());
    if media == STRATEGIC {
        let Some(schema) = PatchSchema::for_storage(scope.storage.as_ref()) else {
            return Err(ApiError::unsupported_media_type(
                &media,
                &BUILTIN_PATCH_TYPES[..2],
            ));
        };
        let map = serde_json::from_slice::<serde_json::Map<String, Value>>(bytes)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        return Ok(PatchDoc::Strategic(map, schema));
    }
    let kind = negotiate_patch(scope.content_type()).map_err(|_| {
        let builtin = PatchSchema::for_storage(scope.storage.as_ref()).is_some();
        let n = if builtin { 3 } else { 2 };
        ApiError::unsupported_media_type(&media, &BUILTIN_PATCH_TYPES[..n])
    })?;
    match kind {
        PatchType::Json => serde_json::from_slice::<json_patch::Patch>(bytes).map(PatchDoc::Json),
        PatchType::Merge => serde_json::from_slice::<Value>(bytes).map(PatchDoc::Merge),
    }
    .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Applies the patch to the current object's JSON.
fn apply(doc: &PatchDoc, current: Object) -> Result<Object, ApiError> {
    let mut value = current.into_value();
    match doc {
        PatchDoc::Json(p) => {
            json_patch::patch(&mut value, p).map_err(|e| {
                // Upstream answers a failed JSON patch with a generic 422 carrying the reason.
                let mut err = ApiError::new(
                    422,
                    StatusReason::Invalid,
                    "the server rejected our request due to an error in our request",
                );
                err = err.with_details(kapi_machinery::error::StatusDetails {
                    causes: vec![StatusCause {
                        reason: "UnexpectedServerResponse".into(),
                        message: e.to_string(),
                        field: String::new(),
                    }],
                    ..Default::default()
                });
                err
            })?;
        }
        PatchDoc::Merge(p) => json_patch::merge(&mut value, p),
        PatchDoc::Strategic(p, schema) => {
            let Value::Object(current) = value else {
                return Err(ApiError::bad_request("the current object is not a map"));
            };
            let merged = strategic::apply(current, p.clone(), schema).map_err(|e| match e {
                strategic::Error::BadRequest(m) => ApiError::bad_request(m),
                // Upstream answers these with a generic 422 carrying the message.
                strategic::Error::Unprocessable(m) => ApiError::new(422, StatusReason::Invalid, m),
            })?;
            value = Value::Object(merged);
        }
    }
    match value {
        Value::Object(m) => Ok(Object::from(m)),
        _ => Err(ApiError::bad_request(
            "the patched document is not an object",
        )),
    }
}

pub async fn patch(
    scope: &RequestScope,
    body: RequestBody,
) -> Result<Response<ResponseBody>, ApiError> {
    let patcher = capability(scope, scope.storage.as_patcher(), "patch")?;
    let bytes = read_limited(body, scope.config.max_request_body_bytes).await?;
    scope.audit_request_body(&bytes);
    let opts = write_options(&scope.query, "PatchOptions")?;
    let doc = parse_patch(scope, &bytes)?;

    let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
    let storage = scope.storage.clone();
    let chain = scope.admission.clone();
    let attrs = scope.attributes(Operation::Update, None, None, opts.dry_run);
    let gr = scope.group_resource();
    let name = scope.name.clone();
    let validation: FieldValidation = opts.field_validation;
    let sink = warnings.clone();
    let new_object: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
        let storage = storage.clone();
        let chain = chain.clone();
        let mut attrs = attrs.clone();
        let doc = doc.clone();
        let gr = gr.clone();
        let name = name.clone();
        let sink = sink.clone();
        Box::pin(async move {
            let Some(old) = current else {
                return Err(ApiError::not_found(&gr, &name));
            };
            let patched = apply(&doc, old.clone())?;
            let (obj, found) = storage.decode(patched, validation)?;
            if let Ok(mut w) = sink.lock() {
                // A retry starts over: keep only the warnings of the attempt that wins.
                *w = found;
            }
            attrs.old_object = Some(old);
            admit_with(&chain, attrs, obj).await
        })
    });
    let result = patcher
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
    let mut all = warnings.lock().map(|w| w.clone()).unwrap_or_default();
    all.extend(result.warnings);
    let status = if result.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(scope.respond(status, Payload::Object(result.object), &all))
}
