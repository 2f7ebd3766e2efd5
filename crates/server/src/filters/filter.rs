//! The tower plumbing every filter shares, written once (in the spirit of axum's `from_fn`):
//! a filter is a [`Filter`], a function of the request and [`Next`] (the rest of the chain),
//! and [`FilterLayer`] makes it a tower `Layer`. Each filter file is then its logic only.

use crate::body::{HttpResponse, Request};
use futures::future::BoxFuture;
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// What a filter answers: the response, later.
pub type Answer = BoxFuture<'static, Result<HttpResponse, Infallible>>;

/// The rest of the chain, ready to take the request.
pub struct Next(Box<dyn FnOnce(Request) -> Answer + Send>);

impl Next {
    /// Passes the request on. The inner service is called at once (not when the answer is
    /// first polled), so a filter sees what it does while it is called, as a tower service.
    pub fn call(self, req: Request) -> Answer {
        (self.0)(req)
    }
}

/// An answer that is ready now (a filter refusing the request).
pub fn answer(resp: HttpResponse) -> Answer {
    Box::pin(futures::future::ready(Ok(resp)))
}

/// One filter: its logic around the rest of the chain.
pub trait Filter: Clone + Send + Sync + 'static {
    fn call(&self, req: Request, next: Next) -> Answer;

    /// This filter as a tower `Layer`.
    fn layer(self) -> FilterLayer<Self> {
        FilterLayer(self)
    }
}

/// The `Layer` of a [`Filter`].
#[derive(Clone, Copy, Debug, Default)]
pub struct FilterLayer<F>(F);

impl<S, F: Clone> Layer<S> for FilterLayer<F> {
    type Service = Filtered<F, S>;
    fn layer(&self, inner: S) -> Self::Service {
        Filtered {
            filter: self.0.clone(),
            inner,
        }
    }
}

/// A [`Filter`] in front of the service `S`.
#[derive(Clone, Debug)]
pub struct Filtered<F, S> {
    filter: F,
    inner: S,
}

impl<F, S> Service<Request> for Filtered<F, S>
where
    F: Filter,
    S: Service<Request, Response = HttpResponse, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Answer {
        // The ready service goes on with the request; a fresh clone stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let next = Next(Box::new(move |req| Box::pin(inner.call(req))));
        self.filter.call(req, next)
    }
}
