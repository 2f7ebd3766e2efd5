//! API Priority and Fairness (`WithPriorityAndFairness`), in max-in-flight's place when
//! `--enable-priority-and-fairness` is on: each request is classified by the FlowSchemas, waits
//! in its priority level's queues for seats, and is answered 429 when its level cannot take it.
//! Responses name the FlowSchema and priority level by UID
//! (`X-Kubernetes-PF-FlowSchema-UID`, `X-Kubernetes-PF-PriorityLevel-UID`). Long-running
//! requests other than watches go by without flow control, as upstream's `LongRunningFunc`
//! has it; a watch holds its seats only while it starts.

use super::filter::{answer, Answer, Filter, Next};
use super::hooked::{hooked, Hook, Polled};
use super::max_in_flight::{request_kind, InFlight};
use crate::body::{text_error, HttpResponse, Request};
use crate::metrics::Metrics;
use http::{HeaderValue, StatusCode};
use kapi_flowcontrol::{
    Admitted, Classification, Controller, ForgetWatch, RequestDigest, HEADER_FLOW_SCHEMA_UID,
    HEADER_PRIORITY_LEVEL_UID, TOO_MANY_REQUESTS_MESSAGE,
};
use kapi_machinery::{RequestInfo, UserInfo};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Clone)]
pub struct PriorityAndFairness {
    apf: Controller,
    request_timeout: Duration,
    metrics: Arc<Metrics>,
}

impl PriorityAndFairness {
    pub fn new(apf: Controller, request_timeout: Duration, metrics: Arc<Metrics>) -> Self {
        Self {
            apf,
            request_timeout,
            metrics,
        }
    }
}

fn set_headers(resp: &mut HttpResponse, c: &Classification) {
    for (name, value) in [
        (HEADER_FLOW_SCHEMA_UID, &c.flow_schema_uid),
        (HEADER_PRIORITY_LEVEL_UID, &c.priority_level_uid),
    ] {
        if let Ok(v) = HeaderValue::from_str(value) {
            resp.headers_mut().insert(name, v);
        }
    }
}

/// What a response body holds while it is written: the seats until the body ends (a watch's
/// once its initial events are out: the first time it has nothing more to send at once), and
/// a watch's registration for as long as it lasts.
struct Seats {
    executing: Option<InFlight<Admitted>>,
    watch: bool,
    _forget: Option<ForgetWatch>,
}

impl Hook for Seats {
    fn polled(&mut self, polled: &Polled) {
        let initialized = self.watch && polled.is_pending();
        if initialized || matches!(polled, Poll::Ready(None)) {
            self.executing.take();
        }
    }
}

impl Filter for PriorityAndFairness {
    fn call(&self, req: Request, next: Next) -> Answer {
        let (Some(info), Some(user)) = (
            req.extensions().get::<RequestInfo>().cloned(),
            req.extensions().get::<UserInfo>().cloned(),
        ) else {
            // upstream: "no RequestInfo found in the context" / "no User found in the context"
            return answer(text_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error",
            ));
        };
        let watch = info.verb == "watch";
        if info.is_long_running() && !watch {
            return next.call(req);
        }
        let (apf, metrics, timeout) =
            (self.apf.clone(), self.metrics.clone(), self.request_timeout);
        Box::pin(async move {
            let query = req.uri().query().unwrap_or_default().to_string();
            let received_at = Instant::now();
            let digest = RequestDigest {
                info: &info,
                user: &user,
                query: &query,
                received_at,
                deadline: (!watch).then(|| received_at.checked_add(timeout)).flatten(),
            };
            match apf.handle(&digest).await {
                Ok(admitted) => {
                    let class = admitted.classification().clone();
                    let forget = watch
                        .then(|| admitted.register_watch(&info, &query))
                        .flatten();
                    let gauge = metrics
                        .current_inflight
                        .with_label_values(&[request_kind(&info)]);
                    // held across the handler: a client gone meanwhile gives the seats back
                    let executing = InFlight::new(admitted, gauge);
                    let mut resp = next.call(req).await?;
                    set_headers(&mut resp, &class);
                    let seats = Seats {
                        executing: Some(executing),
                        watch,
                        _forget: forget,
                    };
                    Ok(resp.map(|body| hooked(body, seats)))
                }
                Err(rejected) => {
                    metrics
                        .dropped_requests
                        .with_label_values(&[request_kind(&info)])
                        .inc();
                    let mut resp =
                        text_error(StatusCode::TOO_MANY_REQUESTS, TOO_MANY_REQUESTS_MESSAGE);
                    set_headers(&mut resp, &rejected.classification);
                    if let Ok(v) = HeaderValue::from_str(&rejected.retry_after.to_string()) {
                        resp.headers_mut().insert(http::header::RETRY_AFTER, v);
                    }
                    // The metrics filter labels the request from the RequestInfo in the response.
                    resp.extensions_mut().insert(info);
                    Ok(resp)
                }
            }
        })
    }
}
