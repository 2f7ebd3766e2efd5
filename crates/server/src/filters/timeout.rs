//! Timeout for non-long-running requests: a request that takes longer than `--request-timeout`
//! (or its own `?timeout=`, whichever is shorter) is answered with kube-apiserver's 504
//! `Timeout` Status and its handler is dropped. Watches and other long-running requests are
//! exempt. An unparsable `?timeout=` is a 400, as upstream's request-deadline filter answers.
//!
//! Upstream's filter words every timeout alike ("the allotted timeout"), writes included: its
//! timer is the request's deadline, which the write handlers share and lose the race for. The
//! write handlers' own words ("requested timeout - context deadline exceeded") reach the client
//! only when their fixed bound, [`WRITE_TIMEOUT_UPPER_BOUND`], comes before the deadline.

use super::filter::{answer, Answer, Filter, Next};
use crate::body::{status_response, Request};
use crate::duration::parse_go_duration;
use kapi_machinery::{ApiError, RequestInfo};
use std::time::Duration;

pub use kapi_machinery::error::{TIMEOUT_MESSAGE, WRITE_TIMEOUT_MESSAGE};

/// upstream's `requestTimeoutUpperBound` (`endpoints/handlers/rest.go`): create, update, patch
/// and delete give up after 34 s whatever the request's own deadline.
pub const WRITE_TIMEOUT_UPPER_BOUND: Duration = Duration::from_secs(34);

#[derive(Clone, Copy, Debug)]
pub struct Timeout {
    request_timeout: Duration,
}

impl Timeout {
    pub fn new(request_timeout: Duration) -> Self {
        Self { request_timeout }
    }
}

/// The `timeout` query parameter, if present.
fn query_timeout(query: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "timeout")
        .map(|(_, v)| v.into_owned())
}

impl Filter for Timeout {
    fn call(&self, req: Request, next: Next) -> Answer {
        let (long_running, write) = match req.extensions().get::<RequestInfo>() {
            Some(info) => (
                info.is_long_running(),
                info.is_resource_request && info.is_mutating(),
            ),
            None => (false, false),
        };
        if long_running {
            return next.call(req);
        }
        let mut timeout = self.request_timeout;
        if let Some(t) = query_timeout(req.uri().query().unwrap_or_default()) {
            match parse_go_duration(&t) {
                Ok(d) if !d.is_zero() => timeout = timeout.min(d),
                Ok(_) => {}
                Err(e) => {
                    let err = ApiError::bad_request(format!(
                        "invalid timeout specified in the request URL - {e}"
                    ));
                    return answer(status_response(&err));
                }
            }
        }
        // The write handler's bound ends a write first only when it is shorter.
        let (timeout, message) = if write && WRITE_TIMEOUT_UPPER_BOUND < timeout {
            (WRITE_TIMEOUT_UPPER_BOUND, WRITE_TIMEOUT_MESSAGE)
        } else {
            (timeout, TIMEOUT_MESSAGE)
        };
        let fut = next.call(req);
        Box::pin(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r,
                Err(_) => Ok(status_response(&ApiError::timeout(message, 0))),
            }
        })
    }
}
