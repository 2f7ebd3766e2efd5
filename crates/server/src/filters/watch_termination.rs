//! Watch termination during shutdown (upstream `WithWatchTerminationDuringShutdown`): the
//! body of a long-running response ends cleanly when the server starts shutting down, so
//! open watches do not hold the drain open; clients re-establish them against another server
//! (or this one, when it is back).

use super::filter::{Answer, Filter, Next};
use super::hooked::{hooked, Hook};
use crate::body::Request;
use futures::future::{BoxFuture, FutureExt};
use kapi_machinery::RequestInfo;
use std::task::Context;
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
struct UntilShutdown(BoxFuture<'static, ()>);

impl Hook for UntilShutdown {
    fn ends(&mut self, cx: &mut Context<'_>) -> bool {
        self.0.poll_unpin(cx).is_ready()
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
                    hooked(inner, UntilShutdown(shutdown))
                })
            })
        }))
    }
}
