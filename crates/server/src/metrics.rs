//! The server's Prometheus metrics, named and labelled as kube-apiserver's so existing
//! dashboards and queries work: `apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_current_inflight_requests`, `apiserver_dropped_requests_total`,
//! `apiserver_storage_objects` and `etcd_request_duration_seconds` (storage operations,
//! whichever backend is in use).

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::sync::Arc;

const REQUEST_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];
const STORAGE_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 10.0, 15.0,
    20.0, 30.0, 45.0, 60.0,
];

/// `request_kind` label values of the in-flight gauges.
pub const READ_ONLY_KIND: &str = "readOnly";
pub const MUTATING_KIND: &str = "mutating";

/// Every metric the server records, in one registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub request_total: IntCounterVec,
    pub request_duration: HistogramVec,
    pub current_inflight: IntGaugeVec,
    pub dropped_requests: IntCounterVec,
    pub storage_duration: HistogramVec,
    pub longrunning: IntGaugeVec,
    /// Objects stored per resource (`pods`, `deployments.apps`) at the last count, -1 where
    /// the count failed.
    pub storage_objects: IntGaugeVec,
}

/// The labels of one served request.
#[derive(Clone, Debug, Default)]
pub struct RequestLabels {
    pub verb: String,
    pub dry_run: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: String,
}

impl RequestLabels {
    /// The label values both request metrics share, in their label order (`component` last).
    fn values(&self) -> [&str; 8] {
        [
            &self.verb,
            &self.dry_run,
            &self.group,
            &self.version,
            &self.resource,
            &self.subresource,
            &self.scope,
            "apiserver",
        ]
    }
}

impl Metrics {
    pub fn new() -> Result<Arc<Self>, prometheus::Error> {
        let registry = Registry::new();
        let request_total = IntCounterVec::new(
            Opts::new(
                "apiserver_request_total",
                "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            ),
            &["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"],
        )?;
        let request_duration = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_request_duration_seconds",
                "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            )
            .buckets(REQUEST_BUCKETS.to_vec()),
            &["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"],
        )?;
        let current_inflight = IntGaugeVec::new(
            Opts::new(
                "apiserver_current_inflight_requests",
                "[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            ),
            &["request_kind"],
        )?;
        let dropped_requests = IntCounterVec::new(
            Opts::new(
                "apiserver_dropped_requests_total",
                "[ALPHA] Number of requests dropped with 'Try again later' response",
            ),
            &["request_kind"],
        )?;
        let storage_duration = HistogramVec::new(
            HistogramOpts::new(
                "etcd_request_duration_seconds",
                "[ALPHA] Etcd request latency in seconds for each operation and object type.",
            )
            .buckets(STORAGE_BUCKETS.to_vec()),
            &["operation", "type"],
        )?;
        let longrunning = IntGaugeVec::new(
            Opts::new(
                "apiserver_longrunning_requests",
                "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
            ),
            &["verb", "group", "version", "resource", "subresource", "scope", "component"],
        )?;
        let storage_objects = IntGaugeVec::new(
            Opts::new(
                "apiserver_storage_objects",
                "[STABLE] Number of stored objects at the time of last check split by kind.",
            ),
            &["resource"],
        )?;
        registry.register(Box::new(longrunning.clone()))?;
        registry.register(Box::new(storage_objects.clone()))?;
        registry.register(Box::new(request_total.clone()))?;
        registry.register(Box::new(request_duration.clone()))?;
        registry.register(Box::new(current_inflight.clone()))?;
        registry.register(Box::new(dropped_requests.clone()))?;
        registry.register(Box::new(storage_duration.clone()))?;
        // Both kinds appear from the start, at zero, as upstream's gauges do.
        current_inflight.with_label_values(&[READ_ONLY_KIND]).set(0);
        current_inflight.with_label_values(&[MUTATING_KIND]).set(0);
        Ok(Arc::new(Self {
            registry,
            request_total,
            request_duration,
            current_inflight,
            dropped_requests,
            storage_duration,
            longrunning,
            storage_objects,
        }))
    }

    /// Records one finished request.
    pub fn observe_request(&self, l: &RequestLabels, code: u16, seconds: f64) {
        let labels = l.values();
        let code = code.to_string();
        let mut with_code = labels.to_vec();
        with_code.push(&code);
        self.request_total.with_label_values(&with_code).inc();
        self.request_duration
            .with_label_values(&labels)
            .observe(seconds);
    }

    /// The gauge of open long-running requests with these labels.
    pub fn longrunning_gauge(&self, l: &RequestLabels) -> prometheus::IntGauge {
        self.longrunning.with_label_values(&[
            &l.verb,
            &l.group,
            &l.version,
            &l.resource,
            &l.subresource,
            &l.scope,
            "apiserver",
        ])
    }

    /// The registry, for metrics other crates define (admission).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        // Encoding into a Vec cannot fail for the text format.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        buf
    }
}
