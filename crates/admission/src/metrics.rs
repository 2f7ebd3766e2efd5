//! kube-apiserver's admission histograms: per plugin
//! `apiserver_admission_controller_admission_duration_seconds{name,operation,rejected,type}`
//! and per step `apiserver_admission_step_admission_duration_seconds{operation,rejected,type}`.

use prometheus::{HistogramOpts, HistogramVec, Registry};

const BUCKETS: &[f64] = &[0.005, 0.025, 0.1, 0.5, 1.0, 2.5];

/// The two histograms, registered once in the server's registry.
#[derive(Clone)]
pub struct AdmissionMetrics {
    controller: HistogramVec,
    step: HistogramVec,
}

/// `type` label values.
pub const ADMIT: &str = "admit";
pub const VALIDATE: &str = "validate";

impl AdmissionMetrics {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let controller = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_admission_controller_admission_duration_seconds",
                "[STABLE] Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            )
            .buckets(BUCKETS.to_vec()),
            &["name", "operation", "rejected", "type"],
        )?;
        let step = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_admission_step_admission_duration_seconds",
                "[STABLE] Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
            )
            .buckets(BUCKETS.to_vec()),
            &["operation", "rejected", "type"],
        )?;
        registry.register(Box::new(controller.clone()))?;
        registry.register(Box::new(step.clone()))?;
        Ok(Self { controller, step })
    }

    pub fn observe_plugin(&self, name: &str, op: &str, rejected: bool, ty: &str, secs: f64) {
        self.controller
            .with_label_values(&[name, op, if rejected { "true" } else { "false" }, ty])
            .observe(secs);
    }

    pub fn observe_step(&self, op: &str, rejected: bool, ty: &str, secs: f64) {
        self.step
            .with_label_values(&[op, if rejected { "true" } else { "false" }, ty])
            .observe(secs);
    }
}
