//! Timeout for non-long-running requests: a request that takes longer than `--request-timeout`
//! (or its own `?timeout=`, whichever is shorter) is answered with kube-apiserver's 504
//! `Timeout` Status and its handler is dropped. Watches and other long-running requests are
//! exempt. An unparsable `?timeout=` is a 400, as upstream's request-deadline filter answers.

use crate::body::{status_response, HttpResponse, Request};
use crate::duration::parse_go_duration;
use futures::future::BoxFuture;
use kapi_machinery::{ApiError, RequestInfo};
use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{Layer, Service};

pub use kapi_machinery::error::{TIMEOUT_MESSAGE, WRITE_TIMEOUT_MESSAGE};

#[derive(Clone, Copy, Debug)]
pub struct TimeoutLayer {
    request_timeout: Duration,
}

impl TimeoutLayer {
    pub fn new(request_timeout: Duration) -> Self {
        Self { request_timeout }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Timeout {
            inner,
            request_timeout: self.request_timeout,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Timeout<S> {
    inner: S,
    request_timeout: Duration,
}

/// The `timeout` query parameter, if present.
fn query_timeout(query: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "timeout")
        .map(|(_, v)| v.into_owned())
}

impl<S> Service<Request> for Timeout<S>
where
    S: Service<Request, Response = HttpResponse, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let (long_running, write) = match req.extensions().get::<RequestInfo>() {
            Some(info) => (
                info.is_long_running(),
                info.is_resource_request && info.is_mutating(),
            ),
            None => (false, false),
        };
        if long_running {
            return Box::pin(self.inner.call(req));
        }
        let mut timeout = self.request_timeout;
        if let Some(t) = query_timeout(req.uri().query().unwrap_or_default()) {
            match parse_go_duration(&t) {
                Ok(d) if !d.is_zero() => timeout = timeout.min(d),
                Ok(_) => {}
                Err(e) => {
                    let err = ApiError::bad_request(format!(
                        "invalid timeout specified in the request URL - {e}"
                    ));
                    return Box::pin(futures::future::ready(Ok(status_response(&err))));
                }
            }
        }
        let fut = super::call_boxed(&mut self.inner, req);
        Box::pin(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r,
                Err(_) => {
                    let message = if write {
                        WRITE_TIMEOUT_MESSAGE
                    } else {
                        TIMEOUT_MESSAGE
                    };
                    Ok(status_response(&ApiError::timeout(message, 0)))
                }
            }
        })
    }
}
