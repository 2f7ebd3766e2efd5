//! Panic recovery, the outermost filter: a panic while serving a request becomes a 500 for that
//! request only, with kube-apiserver's plain-text message, and is logged.

use crate::body::{text_error, HttpResponse, Request};
use futures::future::{BoxFuture, FutureExt};
use http::StatusCode;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Upstream's text (`WithPanicRecovery`).
pub const PANIC_MESSAGE: &str =
    "This request caused apiserver to panic. Look in the logs for details.";

#[derive(Clone, Copy, Debug, Default)]
pub struct PanicRecoveryLayer;

impl<S> Layer<S> for PanicRecoveryLayer {
    type Service = PanicRecovery<S>;
    fn layer(&self, inner: S) -> Self::Service {
        PanicRecovery { inner }
    }
}

#[derive(Clone, Debug)]
pub struct PanicRecovery<S> {
    inner: S,
}

fn recovered(
    method: &http::Method,
    uri: &str,
    panic: Box<dyn std::any::Any + Send>,
) -> HttpResponse {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    tracing::error!(%method, uri, panic = what, "apiserver panic'd");
    text_error(StatusCode::INTERNAL_SERVER_ERROR, PANIC_MESSAGE)
}

impl<S> Service<Request> for PanicRecovery<S>
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
        let method = req.method().clone();
        let uri = req.uri().to_string();
        // A panic can happen while building the future as well as while polling it.
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(req))) {
            Ok(fut) => Box::pin(AssertUnwindSafe(fut).catch_unwind().map(move |r| match r {
                Ok(resp) => resp,
                Err(panic) => Ok(recovered(&method, &uri, panic)),
            })),
            Err(panic) => Box::pin(futures::future::ready(Ok(recovered(&method, &uri, panic)))),
        }
    }
}
