//! Request metrics: `apiserver_request_total` and `apiserver_request_duration_seconds`, labelled
//! as upstream's `MonitorRequest` does (verb `LIST`/`GET`/`WATCH`/`POST`/`PUT`/`PATCH`/`APPLY`/
//! `DELETE`/`DELETECOLLECTION`, scope `resource`/`namespace`/`cluster`). It sits outside the
//! RequestInfo filter and reads the RequestInfo that filter copies into the response.

use super::filter::{Answer, Filter, Next};
use super::hooked::{hooked, Hook};
use crate::body::Request;
use crate::metrics::{Metrics, RequestLabels};
use kapi_machinery::RequestInfo;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone)]
pub struct MetricsFilter {
    metrics: Arc<Metrics>,
    known: Option<KnownResource>,
}

/// Whether a request addresses an installed resource. A 404 for anything else is counted
/// without its resource labels, so that made-up paths cannot grow the metrics without bound.
pub type KnownResource = Arc<dyn Fn(&RequestInfo) -> bool + Send + Sync>;

impl MetricsFilter {
    pub fn new(metrics: Arc<Metrics>, known: Option<KnownResource>) -> Self {
        Self { metrics, known }
    }
}

/// What the labels need from the request, taken before it moves on.
struct Seen {
    method: http::Method,
    apply: bool,
    dry_run: bool,
}

/// Upstream's `CleanVerb` + `CleanScope`, for a request with its RequestInfo.
fn labels(seen: &Seen, info: &RequestInfo) -> RequestLabels {
    let dry_run = if seen.dry_run { "All" } else { "" }.to_string();
    if !info.is_resource_request {
        // Health endpoints are labelled by path (upstream instruments them with the path as the
        // subresource); other non-resource paths are counted without it, keeping cardinality low.
        let root = info
            .path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default();
        let subresource = if matches!(root, "healthz" | "livez" | "readyz") {
            info.path.clone()
        } else {
            String::new()
        };
        return RequestLabels {
            verb: seen.method.as_str().to_string(),
            dry_run,
            subresource,
            ..Default::default()
        };
    }
    let verb = match info.verb.as_str() {
        "list" => "LIST",
        "watch" => "WATCH",
        "get" => "GET",
        "create" => "POST",
        "update" => "PUT",
        "patch" if seen.apply => "APPLY",
        "patch" => "PATCH",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        _ => seen.method.as_str(),
    };
    let scope = if !info.name.is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    };
    RequestLabels {
        verb: verb.to_string(),
        dry_run,
        group: info.api_group.clone(),
        version: info.api_version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        scope: scope.to_string(),
    }
}

impl Filter for MetricsFilter {
    fn call(&self, req: Request, next: Next) -> Answer {
        let seen = Seen {
            method: req.method().clone(),
            apply: req
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/apply-patch")),
            dry_run: form_urlencoded::parse(req.uri().query().unwrap_or_default().as_bytes())
                .any(|(k, v)| k == "dryRun" && !v.is_empty()),
        };
        let metrics = self.metrics.clone();
        let known = self.known.clone();
        let start = Instant::now();
        let fut = next.call(req);
        Box::pin(async move {
            let Ok(resp) = fut.await;
            let Some(info) = resp.extensions().get::<RequestInfo>() else {
                return Ok(resp);
            };
            let mut labels = labels(&seen, info);
            if resp.status() == http::StatusCode::NOT_FOUND
                && info.is_resource_request
                && known.as_ref().is_some_and(|k| !k(info))
            {
                labels = RequestLabels {
                    verb: labels.verb,
                    dry_run: labels.dry_run,
                    ..Default::default()
                };
            }
            let code = resp.status().as_u16();
            // Every request is observed when its body has been sent (or the client went away),
            // as upstream's handler returns only once it has written the body: a large LIST's
            // time includes writing it. A watch is counted, with its whole duration, when its
            // stream ends; meanwhile it shows in the long-running gauge.
            let gauge = (info.is_long_running() && resp.status().is_success()).then(|| {
                let gauge = metrics.longrunning_gauge(&labels);
                gauge.inc();
                gauge
            });
            let done = Done {
                metrics,
                labels,
                code,
                start,
                gauge,
            };
            Ok(resp.map(|body| hooked(body, done)))
        })
    }
}

/// Records a request when dropped (its body finished or the client went away).
struct Done {
    metrics: Arc<Metrics>,
    labels: RequestLabels,
    code: u16,
    start: Instant,
    /// The long-running gauge this request counts in, for a watch or another long-running one.
    gauge: Option<prometheus::IntGauge>,
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(gauge) = &self.gauge {
            gauge.dec();
        }
        self.metrics
            .observe_request(&self.labels, self.code, self.start.elapsed().as_secs_f64());
    }
}

/// The response body's hook: nothing but the record it makes when dropped.
impl Hook for Done {}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(method: &str, path: &str, query: &str) -> RequestLabels {
        let seen = Seen {
            method: method.parse().unwrap(),
            apply: false,
            dry_run: false,
        };
        labels(&seen, &RequestInfo::resolve(method, path, query))
    }

    #[test]
    fn labels_like_upstream() {
        let x = l("GET", "/api/v1/namespaces/default/configmaps", "");
        assert_eq!(
            (x.verb.as_str(), x.scope.as_str(), x.resource.as_str()),
            ("LIST", "namespace", "configmaps")
        );
        let x = l("GET", "/api/v1/configmaps", "watch=true");
        assert_eq!((x.verb.as_str(), x.scope.as_str()), ("WATCH", "cluster"));
        let x = l("POST", "/api/v1/namespaces/default/configmaps", "");
        assert_eq!((x.verb.as_str(), x.scope.as_str()), ("POST", "resource"));
        let x = l("PUT", "/apis/apps/v1/namespaces/d/deployments/w/status", "");
        assert_eq!(
            (
                x.verb.as_str(),
                x.group.as_str(),
                x.subresource.as_str(),
                x.scope.as_str()
            ),
            ("PUT", "apps", "status", "resource")
        );
        let x = l("DELETE", "/api/v1/namespaces/d/secrets", "");
        assert_eq!(x.verb, "DELETECOLLECTION");
        let x = l("GET", "/readyz", "");
        assert_eq!(
            (x.verb.as_str(), x.subresource.as_str(), x.scope.as_str()),
            ("GET", "/readyz", "")
        );
    }
}
