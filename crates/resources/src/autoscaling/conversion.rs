//! Conversion between the HorizontalPodAutoscaler versions (autoscaling/v2 is stored): plain
//! data, shared by the kind's strategies and its printer, which reads v1 objects as v2.

use kapi_machinery::Object;
use serde_json::{json, Value};

/// One `Resource` metric on CPU utilization.
pub(crate) fn cpu_metric(utilization: i64) -> Value {
    json!([{"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}}])
}

/// autoscaling/v1 -> autoscaling/v2.
pub fn v1_to_v2(mut obj: Object) -> Object {
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        if let Some(u) = spec.remove("targetCPUUtilizationPercentage") {
            if let Some(u) = u.as_i64() {
                spec.insert("metrics".into(), cpu_metric(u));
            }
        }
    }
    if let Some(Value::Object(status)) = obj.get_mut("status") {
        if let Some(u) = status.remove("currentCPUUtilizationPercentage") {
            if let Some(u) = u.as_i64() {
                status.insert(
                    "currentMetrics".into(),
                    json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}}]),
                );
            }
        }
    }
    obj.set_api_version_kind("autoscaling/v2", "HorizontalPodAutoscaler");
    obj
}

/// autoscaling/v2 -> autoscaling/v1: the CPU utilization metric is kept, the rest dropped.
pub fn v2_to_v1(mut obj: Object) -> Object {
    let cpu = |metrics: Option<Value>, path: &str| -> Option<Value> {
        metrics?
            .as_array()?
            .iter()
            .find(|m| {
                m.get("type").and_then(Value::as_str) == Some("Resource")
                    && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
            })?
            .pointer(path)
            .cloned()
    };
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        let metrics = spec.remove("metrics");
        spec.remove("behavior");
        if let Some(u) = cpu(metrics, "/resource/target/averageUtilization") {
            spec.insert("targetCPUUtilizationPercentage".into(), u);
        }
    }
    if let Some(Value::Object(status)) = obj.get_mut("status") {
        let metrics = status.remove("currentMetrics");
        status.remove("conditions");
        if let Some(u) = cpu(metrics, "/resource/current/averageUtilization") {
            status.insert("currentCPUUtilizationPercentage".into(), u);
        }
        if status.get("currentReplicas").is_none_or(Value::is_null) {
            status.insert("currentReplicas".into(), json!(0));
        }
    }
    obj.set_api_version_kind("autoscaling/v1", "HorizontalPodAutoscaler");
    obj
}
