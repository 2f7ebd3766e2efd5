//! `Cache-Control: no-cache, private` on every response that does not set its own, as
//! kube-apiserver's `WithCacheControl`: API answers are per user and change at any time.

use crate::body::{HttpResponse, Request};
use futures::future::{BoxFuture, FutureExt};
use http::header::CACHE_CONTROL;
use http::HeaderValue;
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower::{Layer, Service};

#[derive(Clone, Copy, Debug, Default)]
pub struct CacheControlLayer;

impl<S> Layer<S> for CacheControlLayer {
    type Service = CacheControl<S>;
    fn layer(&self, inner: S) -> Self::Service {
        CacheControl { inner }
    }
}

#[derive(Clone, Debug)]
pub struct CacheControl<S> {
    inner: S,
}

impl<S> Service<Request> for CacheControl<S>
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
        Box::pin(self.inner.call(req).map(|r| {
            r.map(|mut resp| {
                resp.headers_mut()
                    .entry(CACHE_CONTROL)
                    .or_insert(HeaderValue::from_static("no-cache, private"));
                resp
            })
        }))
    }
}
