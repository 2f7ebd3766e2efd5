//! Request id and tracing: every request gets an audit id (the client's `Audit-ID` header, or a
//! new UUID), echoed in the `Audit-Id` response header as kube-apiserver does, a tracing span
//! carrying it, and one log line when it finishes (at debug level, like upstream's `-v=3`).

use super::filter::{Answer, Filter, Next};
use crate::body::Request;
use http::HeaderValue;
use std::time::Instant;
use tracing::Instrument;

/// The request's audit id, in the request extensions for later filters and handlers.
#[derive(Clone, Debug)]
pub struct AuditId(pub HeaderValue);

/// The request's fields for its log line.
struct RequestLog {
    method: http::Method,
    uri: http::Uri,
    user_agent: Option<HeaderValue>,
    src_ip: Option<std::net::IpAddr>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct RequestId;

impl Filter for RequestId {
    fn call(&self, mut req: Request, next: Next) -> Answer {
        let id = req
            .headers()
            .get("audit-id")
            .filter(|v| !v.is_empty() && v.len() <= 128)
            .cloned()
            .unwrap_or_else(|| {
                HeaderValue::from_str(&uuid::Uuid::new_v4().to_string())
                    .unwrap_or(HeaderValue::from_static(""))
            });
        req.extensions_mut().insert(AuditId(id.clone()));
        // What the request log line needs, captured only when it will be written.
        let logged = tracing::enabled!(tracing::Level::DEBUG).then(|| RequestLog {
            method: req.method().clone(),
            uri: req.uri().clone(),
            user_agent: req.headers().get(http::header::USER_AGENT).cloned(),
            src_ip: req
                .extensions()
                .get::<crate::RemoteAddr>()
                .map(|a| a.0.ip()),
        });
        let span = tracing::debug_span!("request", audit_id = id.to_str().unwrap_or_default(), method = %req.method(), path = req.uri().path());
        let start = Instant::now();
        let fut = next.call(req);
        Box::pin(
            async move {
                let Ok(mut resp) = fut.await;
                resp.headers_mut().insert("audit-id", id);
                if let Some(l) = logged {
                    let user_agent = l.user_agent.as_ref().and_then(|v| v.to_str().ok()).unwrap_or_default();
                    tracing::debug!(verb = %l.method, uri = %l.uri, latency = ?start.elapsed(), user_agent,
                        src_ip = ?l.src_ip, resp = resp.status().as_u16(), "HTTP");
                }
                Ok(resp)
            }
            .instrument(span),
        )
    }
}
