//! RequestInfo: the path is parsed once, here ([`RequestInfo::resolve`]), and the result put in
//! the request extensions for every later filter and the handlers. A copy goes into the response
//! extensions so that the metrics filter, which sits outside this one, can label the request.

use crate::body::{HttpResponse, Request};
use futures::future::{BoxFuture, FutureExt};
use kapi_machinery::RequestInfo;
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower::{Layer, Service};

#[derive(Clone, Copy, Debug, Default)]
pub struct RequestInfoLayer;

impl<S> Layer<S> for RequestInfoLayer {
    type Service = RequestInfoFilter<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RequestInfoFilter { inner }
    }
}

#[derive(Clone, Debug)]
pub struct RequestInfoFilter<S> {
    inner: S,
}

impl<S> Service<Request> for RequestInfoFilter<S>
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

    fn call(&mut self, mut req: Request) -> Self::Future {
        let info = RequestInfo::resolve(
            req.method().as_str(),
            req.uri().path(),
            req.uri().query().unwrap_or_default(),
        );
        req.extensions_mut().insert(info.clone());
        Box::pin(self.inner.call(req).map(move |r| {
            r.map(|mut resp| {
                resp.extensions_mut().insert(info);
                resp
            })
        }))
    }
}
