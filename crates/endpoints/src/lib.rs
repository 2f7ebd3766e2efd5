//! `kapi-endpoints`: turns the registry's REST storages into HTTP.
//!
//! It owns the installer (routes generated from each storage's capabilities), the router
//! (a snapshot map that can change at run time), one handler per verb, content negotiation
//! (JSON, YAML, `as=Table`, `as=PartialObjectMetadata`), discovery (legacy and aggregated) and
//! OpenAPI v2/v3. It reads `RequestInfo` and `UserInfo` from request extensions, put there by
//! the server's filters; it never parses TLS or authenticates.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;

/// Error type of request and response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A request body as the server hands it over.
pub type RequestBody = UnsyncBoxBody<Bytes, BoxError>;
/// A response body: a full buffer or a stream (watch).
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// Serves `/api`, `/apis`, `/openapi` and every installed resource.
#[derive(Clone, Default)]
pub struct ApiServerHandler {}

impl ApiServerHandler {
    /// Answers one request. Never fails: errors are `metav1.Status` responses.
    pub async fn handle(&self, _req: Request<RequestBody>) -> Response<ResponseBody> {
        use http_body_util::{BodyExt, Full};
        let body = Full::new(Bytes::from_static(b"{}")).map_err(|never| match never {}).boxed_unsync();
        let mut resp = Response::new(body);
        *resp.status_mut() = http::StatusCode::NOT_FOUND;
        resp
    }
}
