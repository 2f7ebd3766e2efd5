//! Writing responses: encoding a value as JSON or YAML, `Status` error bodies, `Warning`
//! headers, `Retry-After` (upstream's `responsewriters`).

use crate::negotiation::{self, Encoding};
use crate::params::form_urlencoded_pairs;
use crate::{BoxError, ResponseBody};
use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use kapi_machinery::ApiError;
use serde_json::Value;

/// A whole-buffer body.
pub fn full_body(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into())
        .map_err(|never: std::convert::Infallible| -> BoxError { match never {} })
        .boxed_unsync()
}

/// A response with a body and content type.
pub fn bytes_response(
    status: StatusCode,
    content_type: &str,
    bytes: impl Into<Bytes>,
) -> Response<ResponseBody> {
    body_response(status, content_type, full_body(bytes))
}

/// A response with a (possibly streaming) body and content type.
pub fn body_response(
    status: StatusCode,
    content_type: &str,
    body: ResponseBody,
) -> Response<ResponseBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(CONTENT_TYPE, v);
    }
    resp
}

/// Encodes a value. JSON ends with a newline as Go's encoder writes it.
pub fn encode(value: &Value, encoding: Encoding, pretty: bool) -> Result<Vec<u8>, ApiError> {
    match encoding {
        Encoding::Json => {
            let mut out = if pretty {
                serde_json::to_vec_pretty(value)
            } else {
                serde_json::to_vec(value)
            }
            .map_err(ApiError::internal)?;
            out.push(b'\n');
            Ok(out)
        }
        Encoding::Yaml => serde_saphyr::to_string(value)
            .map(String::into_bytes)
            .map_err(ApiError::internal),
        Encoding::Protobuf => crate::protobuf::encode(value).map_err(ApiError::internal),
    }
}

/// The `metav1.Status` of an error. Errors built with (possibly empty) details keep a
/// `details: {}` as upstream's non-nil pointer serializes.
pub fn status_of(err: &ApiError) -> Value {
    let mut status = err.to_status();
    if err.details.is_some() {
        if let Value::Object(m) = &mut status {
            if !m.contains_key("details") {
                // Keep upstream's field order: details sits before code.
                let code = m.remove("code");
                m.insert("details".into(), Value::Object(Default::default()));
                if let Some(c) = code {
                    m.insert("code".into(), c);
                }
            }
        }
    }
    status
}

/// Writes an error as a Status in the encoding the client accepts (JSON when it accepts
/// nothing kapi can write), with `Retry-After` when the error carries one.
pub fn error_response(
    err: &ApiError,
    accept: Option<&str>,
    pretty: bool,
) -> Response<ResponseBody> {
    let media = negotiation::negotiate_output_for(accept, false, false, true).unwrap_or_default();
    let status = status_of(err);
    let body = encode(&status, media.encoding, pretty || media.pretty)
        .unwrap_or_else(|_| status.to_string().into_bytes());
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = bytes_response(code, media.encoding.content_type(), body);
    if let Some(secs) = err
        .details
        .as_ref()
        .and_then(|d| d.retry_after_seconds)
        .filter(|s| *s > 0)
    {
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    } else if err.code == 429 || err.code == 503 {
        // Clients back off on Retry-After; upstream always sends one with 429.
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}

/// 404 for a path no API serves (upstream's mux answers in plain text).
pub fn page_not_found() -> Response<ResponseBody> {
    bytes_response(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        Bytes::from_static(b"404 page not found\n"),
    )
}

/// 404 NotFound Status for an unknown resource under a served API path.
pub fn resource_not_found() -> ApiError {
    ApiError::new(
        404,
        kapi_machinery::StatusReason::NotFound,
        "the server could not find the requested resource",
    )
    .with_details(Default::default())
}

/// Adds one `Warning: 299 - "<text>"` header per distinct warning.
pub fn add_warnings(headers: &mut HeaderMap, warnings: &[String]) {
    let mut seen: Vec<&str> = Vec::new();
    for w in warnings {
        if w.is_empty() || seen.contains(&w.as_str()) {
            continue;
        }
        seen.push(w);
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        // Header values must be visible ASCII; upstream replaces what it cannot send.
        let text: String = escaped
            .chars()
            .map(|c| {
                if c.is_ascii() && !c.is_ascii_control() {
                    c
                } else {
                    '?'
                }
            })
            .collect();
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            headers.append(http::header::WARNING, v);
        }
    }
}

/// Whether the response should be indented: `?pretty=true`, or curl/wget without `pretty=false`.
pub fn wants_pretty(query: &str, headers: &HeaderMap) -> bool {
    for (k, v) in form_urlencoded_pairs(query) {
        if k == "pretty" {
            return matches!(v.as_str(), "true" | "1" | "True" | "TRUE" | "t" | "T");
        }
    }
    let ua = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ua.starts_with("curl") || ua.starts_with("Wget")
}

/// The Content-Type of a JSON watch stream (upstream adds `;stream=watch` only for non-JSON).
pub const STREAM_CONTENT_TYPE: &str = "application/json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decoding() {
        let q = form_urlencoded_pairs("a=b%3Dc&pretty=true&x=%ZZ&y=1+2");
        assert_eq!(q[0], ("a".into(), "b=c".into()));
        assert_eq!(q[3], ("y".into(), "1 2".into()));
        assert!(wants_pretty("pretty=true", &HeaderMap::new()));
    }

    #[test]
    fn generic_not_found_keeps_empty_details() {
        let s = status_of(&resource_not_found());
        assert_eq!(
            s.to_string(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#
        );
    }

    #[test]
    fn throttling_sets_retry_after() {
        let r = error_response(&ApiError::too_many_requests("slow down", 3), None, false);
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[RETRY_AFTER], "3");
        let r = error_response(
            &ApiError::service_unavailable("later"),
            Some("application/yaml"),
            false,
        );
        assert_eq!(r.headers()[RETRY_AFTER], "1");
        assert_eq!(r.headers()[CONTENT_TYPE], "application/yaml");
    }

    #[test]
    fn warnings_are_quoted() {
        let mut h = HeaderMap::new();
        add_warnings(
            &mut h,
            &[
                "unknown field \"spec.foo\"".to_string(),
                "unknown field \"spec.foo\"".to_string(),
            ],
        );
        let all: Vec<_> = h.get_all(http::header::WARNING).iter().collect();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0], r#"299 - "unknown field \"spec.foo\"""#);
    }
}
