//! The innermost service: the server's own non-resource endpoints (`/healthz`, `/livez`,
//! `/readyz`, `/version`, `/metrics`), and everything else to the API handler.

use crate::body::{full, text_ok, HttpResponse, Request};
use crate::health::Health;
use crate::metrics::Metrics;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{header, HeaderValue, Method};
use kapi_endpoints::ApiServerHandler;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;

struct Inner {
    handler: ApiServerHandler,
    health: Health,
    metrics: Arc<Metrics>,
    version: Bytes,
}

/// Routes a request to the server's endpoints or to the API handler.
#[derive(Clone)]
pub struct ApiService {
    inner: Arc<Inner>,
}

impl ApiService {
    pub fn new(handler: ApiServerHandler, health: Health, metrics: Arc<Metrics>) -> Self {
        Self {
            inner: Arc::new(Inner {
                handler,
                health,
                metrics,
                version: Bytes::from(crate::version::body()),
            }),
        }
    }
}

impl Service<Request> for ApiService {
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move {
            let readable = req.method() == Method::GET || req.method() == Method::HEAD;
            let path = req.uri().path();
            if readable && path == "/version" {
                let mut resp = http::Response::new(full(inner.version.clone()));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                return Ok(resp);
            }
            if readable && path == "/metrics" {
                let mut resp = text_ok(inner.metrics.render());
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                return Ok(resp);
            }
            if readable && Health::serves(path) {
                if let Some(resp) = inner
                    .health
                    .handle(path, req.uri().query().unwrap_or_default())
                    .await
                {
                    return Ok(resp);
                }
            }
            Ok(inner.handler.handle(req).await)
        })
    }
}
