//! Connect subresources (`pods/log`, `pods/exec`, `pods/attach`, `pods/portforward`, the
//! proxies), as upstream's `ConnectResource` (handlers/rest.go): the storage resolves where
//! the request goes from its query (its options) and, for the proxies, the path after the
//! subresource; `kapi-proxy` carries the request there (upgrades included) and streams the
//! answer back. Admission sees the options object first (the `CONNECT` operation). Errors
//! before anything was sent are Status responses.

use crate::scope::RequestScope;
use crate::{RequestBody, ResponseBody};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use kapi_admission::Operation;
use kapi_machinery::{ApiError, StatusReason};
use kapi_registry::rest::ConnectRequest;

/// go-restful's answer to a method no route of the path serves.
pub fn method_not_allowed() -> ApiError {
    ApiError::new(
        405,
        StatusReason::MethodNotAllowed,
        "the server does not allow this method on the requested resource",
    )
    .with_details(Default::default())
}

/// The path after `/<name>/<subresource>` (`""` when the URL ends there, `"/"` after a
/// trailing slash), kept as the client sent it.
fn subpath(path: &str, scope: &RequestScope) -> String {
    let segments: Vec<&str> = path.split('/').collect();
    let sub = scope.resource.subresource.as_str();
    let found = segments.windows(3).position(|w| {
        w.get(1).is_some_and(|n| *n == scope.name) && w.get(2).is_some_and(|s| *s == sub)
    });
    match found.and_then(|i| i.checked_add(3)) {
        Some(rest) if rest < segments.len() => {
            format!("/{}", segments.get(rest..).unwrap_or_default().join("/"))
        }
        _ => String::new(),
    }
}

/// Serves one connect request.
pub async fn connect(
    scope: RequestScope,
    mut parts: http::request::Parts,
    body: RequestBody,
) -> Response<ResponseBody> {
    let Some(connecter) = scope.storage.as_connecter() else {
        return scope.error(&method_not_allowed());
    };
    if !connecter.connect_methods().contains(&parts.method.as_str()) {
        return scope.error(&method_not_allowed());
    }
    let request = ConnectRequest {
        query: scope.query.clone(),
        subpath: subpath(parts.uri.path(), &scope),
    };
    // Admission sees the options of a CONNECT before anything is resolved, as upstream's
    // `ConnectResource` runs it.
    match connecter.connect_options(&request) {
        Ok(Some(options)) => {
            let mut attrs = scope.attributes(Operation::Connect, Some(options), None, false);
            if let Err(e) = scope.admission.admit(&mut attrs).await {
                return scope.error(&e);
            }
            if let Err(e) = scope.admission.validate(&attrs).await {
                return scope.error(&e);
            }
        }
        Ok(None) => {}
        Err(e) => return scope.error(&e),
    }
    let target = match connecter.connect(&scope.ctx(), &scope.name, &request).await {
        Ok(Some(t)) => t,
        Ok(None) => {
            // Nothing to stream: upstream's `StreamObject` with no stream.
            let mut resp = Response::new(
                http_body_util::Empty::new()
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            );
            *resp.status_mut() = StatusCode::NO_CONTENT;
            return resp;
        }
        Err(e) => return scope.error(&e),
    };
    parts.headers = scope.headers.clone();
    let req = Request::from_parts(parts, body);
    match kapi_proxy::serve(req, target, &scope.config.proxy).await {
        Ok(resp) => resp,
        Err(e) => scope.error(&e),
    }
}
