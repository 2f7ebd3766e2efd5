//! Body types and the few response shapes the server writes itself (Status JSON, plain text).

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use kapi_endpoints::{RequestBody, ResponseBody};
use kapi_machinery::ApiError;

/// The client's address, in every request's extensions (set where the connection is accepted).
#[derive(Clone, Copy, Debug)]
pub struct RemoteAddr(pub std::net::SocketAddr);

/// A request as it travels through the filters.
pub type Request = http::Request<RequestBody>;
/// A response as it travels back.
pub type HttpResponse = Response<ResponseBody>;

/// A whole body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A `metav1.Status` JSON response for an error, as kube-apiserver writes it.
pub fn status_response(err: &ApiError) -> HttpResponse {
    let mut body = serde_json::to_vec(&err.to_status()).unwrap_or_default();
    body.push(b'\n');
    let mut resp = Response::new(full(body));
    *resp.status_mut() =
        StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(retry) = err
        .details
        .as_ref()
        .and_then(|d| d.retry_after_seconds)
        .filter(|r| *r > 0)
    {
        if let Ok(v) = HeaderValue::from_str(&retry.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    resp
}

/// A plain-text response, like Go's `http.Error` (which appends a newline).
pub fn text_error(code: StatusCode, message: &str) -> HttpResponse {
    let mut resp = text_ok(format!("{message}\n"));
    *resp.status_mut() = code;
    resp
}

/// A 200 plain-text response without a trailing newline (`ok`).
pub fn text_ok(body: impl Into<Bytes>) -> HttpResponse {
    let mut resp = Response::new(full(body));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Converts hyper's incoming body (or a wrapper of it) into the body type the handlers take.
pub fn request_body<B>(body: B) -> RequestBody
where
    B: http_body::Body<Data = Bytes, Error = hyper::Error> + Send + 'static,
{
    body.map_err(|e| Box::new(e) as kapi_endpoints::BoxError)
        .boxed_unsync()
}
