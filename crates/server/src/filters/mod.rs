//! The filter stack every request passes through before the API handlers, one file per filter,
//! assembled in one place: [`build_handler_chain`]. Filters answer with Status (or, where
//! kube-apiserver does, plain-text) responses, never with an `Err`: an error would make hyper
//! drop the connection with no reply. They share data only through request extensions
//! (`RequestInfo`, `UserInfo`, [`request_id::AuditId`]), each inserted by one filter.

pub mod audit;
pub mod authentication;
pub mod authorization;
pub mod cache_control;
pub mod compression;
pub mod filter;
pub mod hooked;
pub mod impersonation;
pub mod max_in_flight;
pub mod metrics;
pub mod panic;
pub mod priority_and_fairness;
pub mod request_id;
pub mod request_info;
pub mod timeout;
pub mod watch_termination;

use crate::body::{HttpResponse, Request};
use crate::metrics::Metrics;
use authentication::{Authentication, Authenticator};
use authorization::{Authorization, Authorizer};
use filter::Filter;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceBuilder};

/// What the filters need.
pub struct ChainConfig {
    pub metrics: Arc<Metrics>,
    /// Which resources are installed (for metric labels); `None` trusts every path.
    pub known_resource: Option<metrics::KnownResource>,
    pub request_timeout: Duration,
    pub authenticators: Vec<Arc<dyn Authenticator>>,
    /// The front-proxy headers (`--requestheader-*`), removed once a request authenticated.
    pub request_header: Option<Arc<authentication::RequestHeaderConfig>>,
    pub anonymous_auth: bool,
    pub authorizer: Arc<dyn Authorizer>,
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
    /// API Priority and Fairness (`--enable-priority-and-fairness`), in max-in-flight's place.
    pub apf: Option<kapi_flowcontrol::Controller>,
    /// Becomes true when the server starts shutting down.
    pub shutdown: watch::Receiver<bool>,
    /// The policy and log of `--audit-*`; `None` audits nothing.
    pub auditor: Option<Arc<crate::audit::Auditor>>,
}

/// The handler chain as the server runs it: cloned per connection, its future boxed. A
/// concrete type, because generic futures inside the spawned connection task trip the
/// compiler's higher-ranked `Send` check.
pub type Chain = BoxCloneSyncService<Request, HttpResponse, Infallible>;

/// Every filter a request passes through, outermost first (kube-apiserver's order). A new
/// filter is a new line here.
pub fn build_handler_chain<S>(api: S, c: ChainConfig) -> Chain
where
    S: Service<Request, Response = HttpResponse, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let chain = ServiceBuilder::new()
        .layer(panic::PanicRecovery.layer()) // 500 for this request only
        .layer(request_id::RequestId.layer()) // Audit-Id, tracing span, request log
        .layer(cache_control::CacheControl.layer()) // no-cache, private
        .layer(metrics::MetricsFilter::new(c.metrics.clone(), c.known_resource).layer())
        .layer(request_info::RequestInfoFilter.layer()) // the path is parsed once, here
        .layer(watch_termination::WatchTermination::new(c.shutdown).layer()) // watches end at shutdown
        .layer(timeout::Timeout::new(c.request_timeout).layer()) // 504; skips long-running requests
        .layer(
            Authentication::new(c.authenticators, c.anonymous_auth)
                .clearing(c.request_header)
                .layer(),
        ) // 401
        .layer(audit::Audit::new(c.auditor).layer())
        .layer(impersonation::Impersonation::new(c.authorizer.clone()).layer())
        .layer(
            match c.apf {
                Some(apf) => {
                    ConcurrencyLimit::Apf(priority_and_fairness::PriorityAndFairness::new(
                        apf,
                        c.request_timeout,
                        c.metrics,
                    ))
                }
                None => ConcurrencyLimit::MaxInFlight(max_in_flight::MaxInFlight::new(
                    c.max_requests_inflight,
                    c.max_mutating_requests_inflight,
                    c.metrics,
                )),
            }
            .layer(),
        ) // 429; APF queues; skips long-running requests (APF: but watches)
        .layer(Authorization::new(audit::record_decisions(c.authorizer)).layer()) // 403
        .map_response(
            |r: http::Response<
                tower_http::compression::CompressionBody<kapi_endpoints::ResponseBody>,
            >| { r.map(http_body_util::BodyExt::boxed_unsync) },
        )
        .layer(compression::layer()) // gzip for large complete bodies
        .service(api);
    BoxCloneSyncService::new(chain)
}

/// The server's concurrency limit: API Priority and Fairness, or max-in-flight when APF is
/// off (upstream puts either at the same place in the chain).
#[derive(Clone)]
enum ConcurrencyLimit {
    Apf(priority_and_fairness::PriorityAndFairness),
    MaxInFlight(max_in_flight::MaxInFlight),
}

impl Filter for ConcurrencyLimit {
    fn call(&self, req: Request, next: filter::Next) -> filter::Answer {
        match self {
            ConcurrencyLimit::Apf(f) => f.call(req, next),
            ConcurrencyLimit::MaxInFlight(f) => f.call(req, next),
        }
    }
}
