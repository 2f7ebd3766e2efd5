//! kube-apiserver's webhook metrics: `apiserver_admission_webhook_admission_duration_seconds`,
//! `apiserver_admission_webhook_rejection_count` and `apiserver_admission_webhook_request_total`.

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

#[derive(Clone)]
pub struct WebhookMetrics {
    duration: HistogramVec,
    rejection: IntCounterVec,
    requests: IntCounterVec,
}

/// `error_type` of a rejection.
pub const CALLING_WEBHOOK_ERROR: &str = "calling_webhook_error";
pub const NO_ERROR: &str = "no_error";
pub const APISERVER_INTERNAL_ERROR: &str = "apiserver_internal_error";

fn b(v: bool) -> &'static str {
    if v {
        "true"
    } else {
        "false"
    }
}

impl WebhookMetrics {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_admission_webhook_admission_duration_seconds",
                "[STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            )
            .buckets(vec![0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0]),
            &["name", "operation", "rejected", "type"],
        )?;
        let rejection = IntCounterVec::new(
            Opts::new(
                "apiserver_admission_webhook_rejection_count",
                "[ALPHA] Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
            ),
            &["name", "type", "operation", "error_type", "rejection_code"],
        )?;
        let requests = IntCounterVec::new(
            Opts::new(
                "apiserver_admission_webhook_request_total",
                "[ALPHA] Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
            ),
            &["name", "type", "operation", "code", "rejected"],
        )?;
        for c in [&rejection, &requests] {
            registry.register(Box::new(c.clone()))?;
        }
        registry.register(Box::new(duration.clone()))?;
        Ok(Self {
            duration,
            rejection,
            requests,
        })
    }

    /// One webhook call: `ty` is `admit` or `validating`, `code` the HTTP status (0 when none).
    pub fn observe(&self, name: &str, ty: &str, op: &str, rejected: bool, code: u16, secs: f64) {
        self.duration
            .with_label_values(&[name, op, b(rejected), ty])
            .observe(secs);
        let code = code.min(600).to_string();
        self.requests
            .with_label_values(&[name, ty, op, &code, b(rejected)])
            .inc();
    }

    pub fn rejection(&self, name: &str, ty: &str, op: &str, error_type: &str, code: u16) {
        self.rejection
            .with_label_values(&[name, ty, op, error_type, &code.min(600).to_string()])
            .inc();
    }
}
