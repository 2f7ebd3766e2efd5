//! Max-in-flight: at most `--max-requests-inflight` read-only and `--max-mutating-requests-inflight`
//! mutating requests are served at once (0 = no limit). Beyond that, kube-apiserver's answer:
//! 429 with `Retry-After: 1` and the plain-text body `Too many requests, please try again
//! later.` Long-running requests (watches) and health probes are not counted, and
//! `system:masters` is never turned away (it still takes a slot when one is free), as upstream.

use super::filter::{answer, Answer, Filter, Next};
use crate::body::{text_error, Request};
use crate::metrics::{Metrics, MUTATING_KIND, READ_ONLY_KIND};
use http::{HeaderValue, StatusCode};
use kapi_machinery::{RequestInfo, UserInfo};
use prometheus::IntGauge;
use std::sync::Arc;
use tokio::sync::Semaphore;

pub use kapi_flowcontrol::TOO_MANY_REQUESTS_MESSAGE;
const PRIVILEGED_GROUP: &str = "system:masters";

#[derive(Clone)]
struct Bucket {
    slots: Arc<Semaphore>,
    gauge: IntGauge,
    kind: &'static str,
}

#[derive(Clone)]
pub struct MaxInFlight {
    read_only: Option<Bucket>,
    mutating: Option<Bucket>,
    metrics: Arc<Metrics>,
}

impl MaxInFlight {
    pub fn new(max_read_only: usize, max_mutating: usize, metrics: Arc<Metrics>) -> Self {
        let bucket = |n: usize, kind: &'static str| {
            (n > 0).then(|| Bucket {
                slots: Arc::new(Semaphore::new(n)),
                gauge: metrics.current_inflight.with_label_values(&[kind]),
                kind,
            })
        };
        Self {
            read_only: bucket(max_read_only, READ_ONLY_KIND),
            mutating: bucket(max_mutating, MUTATING_KIND),
            metrics: metrics.clone(),
        }
    }
}

/// Health probes are never queued or refused (upstream's `probes` flow schema is exempt).
fn is_probe(info: &RequestInfo) -> bool {
    !info.is_resource_request
        && matches!(
            info.path.trim_start_matches('/').split('/').next(),
            Some("healthz" | "livez" | "readyz")
        )
}

/// The `request_kind` label of a request, as upstream's in-flight filters (max-in-flight and
/// priority and fairness alike) tell them: anything but get, list and watch is mutating.
pub(super) fn request_kind(info: &RequestInfo) -> &'static str {
    if matches!(info.verb.as_str(), "get" | "list" | "watch") {
        READ_ONLY_KIND
    } else {
        MUTATING_KIND
    }
}

/// What a request holds while it executes (a max-in-flight slot, priority and fairness'
/// seats), counted in `apiserver_current_inflight_requests`; both given back however the
/// request ends.
pub(super) struct InFlight<T> {
    _held: T,
    gauge: IntGauge,
}

impl<T> InFlight<T> {
    pub(super) fn new(held: T, gauge: IntGauge) -> Self {
        gauge.inc();
        InFlight { _held: held, gauge }
    }
}

impl<T> Drop for InFlight<T> {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

impl Filter for MaxInFlight {
    fn call(&self, req: Request, next: Next) -> Answer {
        let (long_running, mutating) = match req.extensions().get::<RequestInfo>() {
            Some(info) => (
                info.is_long_running() || is_probe(info),
                request_kind(info) == MUTATING_KIND,
            ),
            None => (false, false),
        };
        let bucket = if mutating {
            &self.mutating
        } else {
            &self.read_only
        };
        let Some(bucket) = bucket.as_ref().filter(|_| !long_running) else {
            return next.call(req);
        };
        let slot = bucket
            .slots
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|permit| InFlight::new(permit, bucket.gauge.clone()));
        let privileged = || {
            req.extensions()
                .get::<UserInfo>()
                .is_some_and(|u| u.groups.iter().any(|g| g == PRIVILEGED_GROUP))
        };
        if slot.is_none() && !privileged() {
            self.metrics
                .dropped_requests
                .with_label_values(&[bucket.kind])
                .inc();
            let mut resp = text_error(StatusCode::TOO_MANY_REQUESTS, TOO_MANY_REQUESTS_MESSAGE);
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            // The metrics filter labels the request from the RequestInfo in the response.
            if let Some(info) = req.extensions().get::<RequestInfo>() {
                resp.extensions_mut().insert(info.clone());
            }
            return answer(resp);
        }
        let fut = next.call(req);
        Box::pin(async move {
            let r = fut.await;
            drop(slot);
            r
        })
    }
}
