//! Audit: the place in the chain where audit events will be recorded (`--audit-*`). No policy
//! is configured yet, so it passes every request through unchanged.

use crate::body::{HttpResponse, Request};
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower::{Layer, Service};

#[derive(Clone, Copy, Debug, Default)]
pub struct AuditLayer;

impl<S> Layer<S> for AuditLayer {
    type Service = Audit<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Audit { inner }
    }
}

#[derive(Clone, Debug)]
pub struct Audit<S> {
    inner: S,
}

impl<S> Service<Request> for Audit<S>
where
    S: Service<Request, Response = HttpResponse, Error = Infallible>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        self.inner.call(req)
    }
}
