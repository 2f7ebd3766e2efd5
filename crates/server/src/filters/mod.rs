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
pub mod impersonation;
pub mod max_in_flight;
pub mod metrics;
pub mod panic;
pub mod request_id;
pub mod request_info;
pub mod timeout;
pub mod watch_termination;

use crate::body::{HttpResponse, Request};
use crate::metrics::Metrics;
use authentication::{AuthenticationLayer, Authenticator};
use authorization::{AuthorizationLayer, Authorizer};
use futures::future::BoxFuture;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tower::{Service, ServiceBuilder};

/// What the filters need.
pub struct ChainConfig {
    pub metrics: Arc<Metrics>,
    /// Which resources are installed (for metric labels); `None` trusts every path.
    pub known_resource: Option<metrics::KnownResource>,
    pub request_timeout: Duration,
    pub authenticators: Vec<Arc<dyn Authenticator>>,
    pub anonymous_auth: bool,
    pub authorizer: Arc<dyn Authorizer>,
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
    /// Becomes true when the server starts shutting down.
    pub shutdown: watch::Receiver<bool>,
    /// The policy and log of `--audit-*`; `None` audits nothing.
    pub auditor: Option<Arc<crate::audit::Auditor>>,
}

/// Every filter a request passes through, outermost first (kube-apiserver's order). A new
/// filter is a new line here.
pub fn build_handler_chain<S>(
    api: S,
    c: ChainConfig,
) -> impl Service<
    Request,
    Response = HttpResponse,
    Error = Infallible,
    Future = BoxFuture<'static, Result<HttpResponse, Infallible>>,
> + Clone
       + Send
       + Sync
       + 'static
where
    S: Service<Request, Response = HttpResponse, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    ServiceBuilder::new()
        .layer(panic::PanicRecoveryLayer) // 500 for this request only
        .layer(request_id::RequestIdLayer) // Audit-Id, tracing span, request log
        .layer(cache_control::CacheControlLayer) // no-cache, private
        .layer(metrics::MetricsLayer::new(
            c.metrics.clone(),
            c.known_resource,
        ))
        .layer(request_info::RequestInfoLayer) // the path is parsed once, here
        .layer(watch_termination::WatchTerminationLayer::new(c.shutdown)) // watches end at shutdown
        .layer(timeout::TimeoutLayer::new(c.request_timeout)) // 504; skips long-running requests
        .layer(AuthenticationLayer::new(c.authenticators, c.anonymous_auth)) // 401
        .layer(audit::AuditLayer::new(c.auditor))
        .layer(impersonation::ImpersonationLayer::new(c.authorizer.clone()))
        .layer(max_in_flight::MaxInFlightLayer::new(
            c.max_requests_inflight,
            c.max_mutating_requests_inflight,
            c.metrics,
        )) // 429; skips watches
        .layer(AuthorizationLayer::new(audit::record_decisions(
            c.authorizer,
        ))) // 403
        .map_response(
            |r: http::Response<
                tower_http::compression::CompressionBody<kapi_endpoints::ResponseBody>,
            >| { r.map(http_body_util::BodyExt::boxed_unsync) },
        )
        .layer(compression::layer()) // gzip for large complete bodies
        .service(api)
}

/// Calls a service and boxes its future. Async blocks await this instead of `S::Future`
/// directly: naming the generic future inside an async block trips the compiler's
/// higher-ranked `Send` check.
pub(crate) fn call_boxed<S>(
    svc: &mut S,
    req: Request,
) -> BoxFuture<'static, Result<HttpResponse, Infallible>>
where
    S: Service<Request, Response = HttpResponse, Error = Infallible>,
    S::Future: Send + 'static,
{
    Box::pin(svc.call(req))
}
