//! One handler per verb, each reading top to bottom as upstream's `handlers/<verb>.go`:
//! parameters → body (bounded, decoded) → mutating admission → storage (with validating
//! admission passed in) → negotiated encoding.

pub mod create;
pub mod delete;
pub mod get;
pub mod list;
pub mod patch;
pub mod update;
pub mod watch;

use crate::installer::Verb;
use crate::scope::{method_not_allowed, RequestScope};
use crate::{RequestBody, ResponseBody};
use http::Response;
use kapi_machinery::{ApiError, Object};

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
