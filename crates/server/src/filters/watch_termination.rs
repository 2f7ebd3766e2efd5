//! Watch termination during shutdown (upstream `WithWatchTerminationDuringShutdown`): the
//! body of a long-running response ends cleanly when the server starts shutting down, so
//! open watches do not hold the drain open; clients re-establish them against another server
//! (or this one, when it is back).

use super::filter::{Answer, Filter, Next};
use crate::body::Request;
use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use kapi_endpoints::{BoxError, ResponseBody};
use kapi_machinery::RequestInfo;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::watch;

#[derive(Clone)]
pub struct WatchTermination {
    shutdown: watch::Receiver<bool>,
}

impl WatchTermination {
    pub fn new(shutdown: watch::Receiver<bool>) -> Self {
        Self { shutdown }
    }
}

/// A body that ends when shutdown begins.
struct UntilShutdown {
    inner: ResponseBody,
    shutdown: BoxFuture<'static, ()>,
}

impl Body for UntilShutdown {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.shutdown.poll_unpin(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Filter for WatchTermination {
    fn call(&self, req: Request, next: Next) -> Answer {
        let long_running = req
            .extensions()
            .get::<RequestInfo>()
            .is_some_and(|i| i.is_long_running());
        if !long_running {
            return next.call(req);
        }
        let mut rx = self.shutdown.clone();
        Box::pin(next.call(req).map(move |r| {
            r.map(|resp| {
                resp.map(|inner| {
                    let shutdown = async move {
                        // A dropped sender also means the server is gone.
                        let _ = rx.wait_for(|down| *down).await;
                    }
                    .boxed();
                    UntilShutdown { inner, shutdown }.boxed_unsync()
                })
            })
        }))
    }
}
