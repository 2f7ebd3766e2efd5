//! Panic recovery, the outermost filter: a panic while serving a request becomes a 500 for that
//! request only, with kube-apiserver's plain-text message, and is logged.

use super::filter::{answer, Answer, Filter, Next};
use crate::body::{text_error, HttpResponse, Request};
use futures::future::FutureExt;
use http::StatusCode;
use std::panic::AssertUnwindSafe;

/// Upstream's text (`WithPanicRecovery`).
pub const PANIC_MESSAGE: &str =
    "This request caused apiserver to panic. Look in the logs for details.";

#[derive(Clone, Copy, Debug, Default)]
pub struct PanicRecovery;

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

impl Filter for PanicRecovery {
    fn call(&self, req: Request, next: Next) -> Answer {
        let method = req.method().clone();
        let uri = req.uri().to_string();
        // A panic can happen while building the future as well as while polling it.
        match std::panic::catch_unwind(AssertUnwindSafe(|| next.call(req))) {
            Ok(fut) => Box::pin(AssertUnwindSafe(fut).catch_unwind().map(move |r| match r {
                Ok(resp) => resp,
                Err(panic) => Ok(recovered(&method, &uri, panic)),
            })),
            Err(panic) => answer(recovered(&method, &uri, panic)),
        }
    }
}
