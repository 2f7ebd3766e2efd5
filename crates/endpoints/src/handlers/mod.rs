//! One handler per verb, each reading top to bottom as upstream's `handlers/<verb>.go`:
//! parameters → body (bounded, decoded) → mutating admission → storage (with validating
//! admission passed in) → negotiated encoding.

pub mod connect;
pub mod create;
pub mod delete;
pub mod get;
pub mod list;
pub mod patch;
pub mod update;
pub mod watch;

use crate::body::{decode_for, read_limited};
use crate::negotiation::negotiate_input_for;
use crate::params::write_options;
use crate::scope::{method_not_allowed, RequestScope};
use crate::verbs::Verb;
use crate::{RequestBody, ResponseBody};
use http::{Response, StatusCode};
use kapi_admission::Operation;
use kapi_machinery::{ApiError, Object};
use kapi_registry::rest::{UpdateResult, UpdatedObjectFn, Updater, WriteOptions};

/// Runs the handler of `verb`; a failure is a Status response.
pub async fn serve(scope: RequestScope, verb: Verb, body: RequestBody) -> Response<ResponseBody> {
    let result = match verb {
        Verb::Create => create::create(&scope, body).await,
        Verb::Get => get::get(&scope).await,
        Verb::List => list::list(&scope).await,
        Verb::Watch => watch::watch(&scope).await,
        Verb::Update => update::update(&scope, body).await,
        Verb::Patch => patch::patch(&scope, body).await,
        Verb::Delete => delete::delete(&scope, body).await,
        Verb::DeleteCollection => delete::delete_collection(&scope, body).await,
    };
    match result {
        Ok(resp) => resp,
        Err(e) => scope.error(&e),
    }
}

/// 405 unless the storage has the capability (the installer's table already said yes; this
/// keeps the handler honest if a storage changes its mind).
pub(crate) fn capability<'a, T: ?Sized>(
    scope: &RequestScope,
    cap: Option<&'a T>,
    verb: &str,
) -> Result<&'a T, ApiError> {
    cap.ok_or_else(|| method_not_allowed(&scope.resource, verb))
}

/// Upstream's `EnsureObjectNamespaceMatchesRequestNamespace`: fills an empty namespace from
/// the request, clears it for cluster-scoped resources, and refuses a different one.
pub(crate) fn ensure_namespace(scope: &RequestScope, obj: &mut Object) -> Result<(), ApiError> {
    let requested = if scope.resource.namespaced {
        scope.namespace.as_str()
    } else {
        ""
    };
    let found = obj.namespace().to_string();
    if found == requested {
        return Ok(());
    }
    if found.is_empty() {
        obj.set_namespace(requested);
        return Ok(());
    }
    if requested.is_empty() {
        obj.set_namespace("");
        return Ok(());
    }
    Err(ApiError::bad_request(
        "the namespace of the provided object does not match the namespace sent on the request",
    ))
}

/// Upstream's `checkName` for named writes (update, patch): an empty name is taken from the
/// URL, a different one is refused.
pub(crate) fn ensure_name(scope: &RequestScope, obj: &mut Object) -> Result<(), ApiError> {
    let found = obj.name().to_string();
    if found.is_empty() {
        obj.set_name(&scope.name);
        return Ok(());
    }
    if found != scope.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({found}) does not match the name on the URL ({})",
            scope.name
        )));
    }
    Ok(())
}

/// A create or update body: read within the size limit, the write options of the query (for
/// `options_kind`'s messages), the negotiated input format, then decoded for the storage with
/// `fieldValidation` (the decoder's warnings alongside). Each step's error stops the request in
/// that order.
pub(crate) async fn write_body(
    scope: &RequestScope,
    body: RequestBody,
    options_kind: &str,
) -> Result<(WriteOptions, Object, Vec<String>), ApiError> {
    let bytes = read_limited(body, scope.config.max_request_body_bytes).await?;
    let opts = write_options(&scope.query, options_kind)?;
    let format = negotiate_input_for(
        scope.content_type(),
        crate::protobuf::serves(&scope.resource),
    )?;
    let (obj, warnings) = decode_for(
        scope.storage.as_ref(),
        &bytes,
        format,
        opts.field_validation,
    )?;
    Ok((opts, obj, warnings))
}

/// An update or patch through `updater` with the request's create and update validation; the
/// status is 201 when the write created the object, else 200.
pub(crate) async fn run_update(
    scope: &RequestScope,
    updater: &dyn Updater,
    new_object: UpdatedObjectFn,
    force_allow_create: bool,
    opts: &WriteOptions,
) -> Result<(StatusCode, UpdateResult), ApiError> {
    let result = updater
        .update(
            &scope.ctx(),
            &scope.name,
            new_object,
            scope.validate_create_fn(Operation::Create, opts.dry_run),
            scope.validate_update_fn(opts.dry_run),
            force_allow_create,
            opts,
        )
        .await?;
    let status = if result.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, result))
}
