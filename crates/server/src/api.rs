//! The innermost service: the server's own non-resource endpoints (`/healthz`, `/livez`,
//! `/readyz`, `/version`, `/metrics`), the aggregator's (group/versions of APIServices served
//! by other API servers, and their groups in `/apis`), and everything else to the API handler.

use crate::aggregator::remote::Remotes;
use crate::body::{full, text_ok, HttpResponse, Request};
use crate::health::Health;
use crate::metrics::Metrics;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{header, HeaderValue, Method};
use kapi_endpoints::ApiServerHandler;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;

struct Inner {
    handler: ApiServerHandler,
    /// The APIServices served elsewhere (the aggregator's proxy and discovery).
    remotes: Option<Remotes>,
    health: Health,
    metrics: Arc<Metrics>,
    version: Bytes,
    /// API Priority and Fairness, for its `/debug/api_priority_and_fairness/` dumps.
    apf: Option<kapi_flowcontrol::Controller>,
}

/// Routes a request to the server's endpoints or to the API handler.
#[derive(Clone)]
pub struct ApiService {
    inner: Arc<Inner>,
}

impl ApiService {
    /// `remotes`: the APIServices served by other API servers (`None` when `apiservices` are
    /// not served).
    pub fn new(
        handler: ApiServerHandler,
        health: Health,
        metrics: Arc<Metrics>,
        remotes: Option<Remotes>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                handler,
                remotes,
                health,
                metrics,
                version: Bytes::from(crate::version::body()),
                apf: None,
            }),
        }
    }

    /// Serves the APF debug dumps of `apf`.
    pub fn with_apf(mut self, apf: Option<kapi_flowcontrol::Controller>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.apf = apf;
        }
        self
    }
}

/// The aggregator's part of the request path: a remote group/version proxied, `/apis/<group>`
/// of a remote group answered, `/apis` with the remote groups added. `Err` gives the request
/// back for the API handler.
async fn aggregate(
    inner: &Inner,
    remotes: &Remotes,
    mut req: Request,
) -> Result<HttpResponse, Request> {
    if remotes.is_empty() {
        return Err(req);
    }
    let path = req.uri().path().to_string();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let readable = req.method() == Method::GET || req.method() == Method::HEAD;
    match segments.as_slice() {
        ["apis", group, version, ..] => match remotes.lookup(group, version) {
            Some(remote) => Ok(crate::aggregator::proxy::serve(remotes, remote, req).await),
            None => Err(req),
        },
        ["apis", group] if readable => {
            match crate::aggregator::discovery::group_document(remotes, group) {
                Some(resp) => Ok(resp),
                None => Err(req),
            }
        }
        ["openapi", "v2"] | ["openapi", "v3"] if readable && !remotes.openapi.is_empty() => {
            let api = remotes.openapi.documents(&inner.handler.snapshot()).await;
            match api.serve(&path, req.uri().query(), req.headers()) {
                Some(resp) => Ok(resp.map(full)),
                None => Err(req),
            }
        }
        ["openapi", "v3", key @ ..] if readable => {
            let key = key.join("/");
            let local = inner.handler.snapshot().openapi().has_v3(&key);
            match (!local)
                .then(|| remotes.openapi.v3_owner(&key))
                .flatten()
                .and_then(|name| remotes.get(&name))
            {
                Some(remote) => Ok(crate::aggregator::proxy::serve(remotes, remote, req).await),
                None => Err(req),
            }
        }
        ["apis"] if readable => {
            // kapi's own ETag would revalidate a copy without the remote groups.
            let if_none_match = req
                .headers_mut()
                .remove(header::IF_NONE_MATCH)
                .and_then(|v| v.to_str().ok().map(str::to_string));
            let resp = inner.handler.handle(req).await;
            Ok(crate::aggregator::discovery::merge_apis(remotes, if_none_match, resp).await)
        }
        _ => Err(req),
    }
}

impl Service<Request> for ApiService {
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move {
            let readable = req.method() == Method::GET || req.method() == Method::HEAD;
            let path = req.uri().path();
            if readable && path == "/version" {
                let mut resp = http::Response::new(full(inner.version.clone()));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                return Ok(resp);
            }
            if readable && path == "/metrics" {
                let mut resp = text_ok(inner.metrics.render());
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                return Ok(resp);
            }
            if let Some(dump) = inner.apf.as_ref().filter(|_| readable).and_then(|apf| {
                crate::flowcontrol::debug_dump(apf, path, req.uri().query().unwrap_or_default())
            }) {
                return Ok(text_ok(dump));
            }
            if readable && Health::serves(path) {
                if let Some(resp) = inner
                    .health
                    .handle(path, req.uri().query().unwrap_or_default())
                    .await
                {
                    return Ok(resp);
                }
            }
            let req = match &inner.remotes {
                Some(remotes) => match aggregate(&inner, remotes, req).await {
                    Ok(resp) => return Ok(resp),
                    Err(req) => req,
                },
                None => req,
            };
            Ok(inner.handler.handle(req).await)
        })
    }
}
