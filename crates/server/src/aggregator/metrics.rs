//! The availability metrics of kube-aggregator 1.28 (`pkg/controllers/status/metrics.go`),
//! named, labelled and worded as kube-apiserver 1.28.7 prints them on `/metrics`:
//! `aggregator_unavailable_apiservice` (1 while an APIService is not `Available=True`, one
//! series per APIService, gone with it) and `aggregator_unavailable_apiservice_total` (counted
//! when a status write turns an APIService from available to not, by its new reason).
//! kube-apiserver 1.28.7 has no `aggregator_openapi_v2_regeneration_*` metrics (its OpenAPI
//! aggregation regenerates lazily and counts nothing), so kapi has none either.

use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};
use serde_json::Value;

/// The two availability metrics, registered in the server's registry.
#[derive(Clone)]
pub struct AvailabilityMetrics {
    unavailable: IntGaugeVec,
    unavailable_total: IntCounterVec,
}

/// The reason upstream counts when the new status has no `Available` condition.
const UNKNOWN_REASON: &str = "UnknownReason";

fn available_condition(status: Option<&Value>) -> Option<&Value> {
    status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
}

fn is_available(status: Option<&Value>) -> bool {
    available_condition(status).and_then(|c| c.get("status").and_then(Value::as_str))
        == Some("True")
}

impl AvailabilityMetrics {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let unavailable = IntGaugeVec::new(
            Opts::new(
                "aggregator_unavailable_apiservice",
                "[ALPHA] Gauge of APIServices which are marked as unavailable broken down by APIService name.",
            ),
            &["name"],
        )?;
        let unavailable_total = IntCounterVec::new(
            Opts::new(
                "aggregator_unavailable_apiservice_total",
                "[ALPHA] Counter of APIServices which are marked as unavailable broken down by APIService name and reason.",
            ),
            &["name", "reason"],
        )?;
        registry.register(Box::new(unavailable.clone()))?;
        registry.register(Box::new(unavailable_total.clone()))?;
        Ok(Self {
            unavailable,
            unavailable_total,
        })
    }

    /// Every sync: the gauge says whether `name` is unavailable now (`status` is its status).
    pub fn set_gauge(&self, name: &str, status: Option<&Value>) {
        let value = i64::from(!is_available(status));
        self.unavailable.with_label_values(&[name]).set(value);
    }

    /// After a status write from `old` to `new`: counted when it stopped being available.
    pub fn count_transition(&self, name: &str, old: Option<&Value>, new: Option<&Value>) {
        if is_available(old) && !is_available(new) {
            let reason = available_condition(new)
                .and_then(|c| c.get("reason").and_then(Value::as_str))
                .unwrap_or(UNKNOWN_REASON);
            self.unavailable_total
                .with_label_values(&[name, reason])
                .inc();
        }
    }

    /// The APIService is gone: its gauge series goes with it (upstream's `ForgetAPIService`).
    pub fn forget(&self, name: &str) {
        let _ = self.unavailable.remove_label_values(&[name]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(s: &str, reason: &str) -> Value {
        json!({"conditions": [{"type": "Available", "status": s, "reason": reason}]})
    }

    fn render(registry: &Registry) -> String {
        let mut buf = Vec::new();
        let encoder = prometheus::TextEncoder::new();
        prometheus::Encoder::encode(&encoder, &registry.gather(), &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn counted_only_when_it_stops_being_available() {
        let registry = Registry::new();
        let m = AvailabilityMetrics::new(&registry).unwrap();
        let up = status("True", "Passed");
        let down = status("False", "FailedDiscoveryCheck");
        // never available: a new APIService failing from the start is not counted
        m.count_transition("v1.x", None, Some(&down));
        m.count_transition("v1.x", Some(&up), Some(&down));
        m.count_transition("v1.x", Some(&down), Some(&down));
        m.count_transition("v1.y", Some(&up), Some(&json!({})));
        m.set_gauge("v1.x", Some(&down));
        m.set_gauge("v1.z", Some(&up));
        let text = render(&registry);
        assert!(text.contains(
            "aggregator_unavailable_apiservice_total{name=\"v1.x\",reason=\"FailedDiscoveryCheck\"} 1\n"
        ));
        assert!(text.contains(
            "aggregator_unavailable_apiservice_total{name=\"v1.y\",reason=\"UnknownReason\"} 1\n"
        ));
        assert!(text.contains("aggregator_unavailable_apiservice{name=\"v1.x\"} 1\n"));
        assert!(text.contains("aggregator_unavailable_apiservice{name=\"v1.z\"} 0\n"));
        m.forget("v1.x");
        assert!(!render(&registry).contains("aggregator_unavailable_apiservice{name=\"v1.x\"}"));
    }
}
