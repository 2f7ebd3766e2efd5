//! Printer of `autoscaling` horizontal pod autoscalers (both versions; v1 objects are read as
//! their v2 form, as upstream prints the internal type).

use super::column::kind_slash_name;
use super::{Column, Printer, Row, AGE, NAME};
use kapi_registry::fields::{arr_at, at, opt_i64_at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

pub const HORIZONTAL_POD_AUTOSCALERS: Printer = Printer::new(HPA_COLUMNS);

// Only the metrics differ between v1 and v2 (`targetCPUUtilizationPercentage`): the other
// columns read both alike.
const HPA_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Reference", "string", "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.")
        .values(jsonpath!(".spec.scaleTargetRef"), kind_slash_name),
    Column::new("Targets", "string", "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond.")
        .computed(targets),
    Column::new("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.")
        .values(jsonpath!(".spec.minReplicas"), min_replicas),
    Column::new("MaxPods", "integer", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.")
        .integer(jsonpath!(".spec.maxReplicas")),
    Column::new("Replicas", "integer", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.")
        .integer(jsonpath!(".status.currentReplicas")),
    AGE,
];

/// A `*int32` as text, `<unset>` when nil.
fn min_replicas(min: &[&Value]) -> Value {
    json!(match min.first().and_then(|m| m.as_i64()) {
        Some(m) => m.to_string(),
        None => "<unset>".into(),
    })
}

/// TARGETS, from the v2 form of the object.
fn targets(r: &Row) -> Value {
    let metrics = |v: &Value| {
        format_metrics(
            arr_at(v, &["spec", "metrics"]),
            arr_at(v, &["status", "currentMetrics"]),
        )
    };
    json!(if r.obj.api_version() == "autoscaling/v1" {
        let v2 = crate::autoscaling::conversion::v1_to_v2(r.obj.clone());
        metrics(&v2.into_value())
    } else {
        metrics(r.v)
    })
}

fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

/// Upstream's `formatHPAMetrics`: at most two metrics, `current/target` each.
fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    const MAX: usize = 2;
    if specs.is_empty() {
        return "<none>".into();
    }
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let kind = str_at(spec, &["type"]);
        let mut key = kind.to_string();
        if let Some(first) = key.get_mut(..1) {
            first.make_ascii_lowercase();
        }
        let src = spec.get(&key).unwrap_or(&Value::Null);
        let cur = status.and_then(|s| s.get(&key)).filter(|v| !v.is_null());
        let unknown = || "<unknown>".to_string();
        let item = match kind {
            "External" | "Object" => {
                if let Some(avg) = at(src, &["target", "averageValue"]) {
                    let c = cur
                        .and_then(|c| at(c, &["current", "averageValue"]))
                        .map_or_else(unknown, |q| quantity(Some(q)));
                    format!("{c}/{} (avg)", quantity(Some(avg)))
                } else {
                    let c = cur.map_or_else(unknown, |c| quantity(at(c, &["current", "value"])));
                    format!("{c}/{}", quantity(at(src, &["target", "value"])))
                }
            }
            "Pods" => {
                let c = cur.map_or_else(unknown, |c| quantity(at(c, &["current", "averageValue"])));
                format!("{c}/{}", quantity(at(src, &["target", "averageValue"])))
            }
            "Resource" | "ContainerResource" => {
                let name = str_at(src, &["name"]);
                let name = if kind == "ContainerResource" {
                    format!("{name}/{}", str_at(src, &["container"]))
                } else {
                    name.to_string()
                };
                if let Some(avg) = at(src, &["target", "averageValue"]) {
                    let c =
                        cur.map_or_else(unknown, |c| quantity(at(c, &["current", "averageValue"])));
                    format!("{name}: {c}/{}", quantity(Some(avg)))
                } else {
                    let c = cur
                        .and_then(|c| opt_i64_at(c, &["current", "averageUtilization"]))
                        .map_or_else(unknown, |u| format!("{u}%"));
                    let t = opt_i64_at(src, &["target", "averageUtilization"])
                        .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                    format!("{name}: {c}/{t}")
                }
            }
            _ => "<unknown type>".into(),
        };
        list.push(item);
    }
    let count = list.len();
    if count > MAX {
        list.truncate(MAX);
        return format!(
            "{} + {} more...",
            list.join(", "),
            count.saturating_sub(MAX)
        );
    }
    list.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printers::testing::cells_of;

    #[test]
    fn hpa_rows() {
        let p = HORIZONTAL_POD_AUTOSCALERS;
        let cells = cells_of(
            &p,
            json!({"apiVersion": "autoscaling/v2", "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
                "status": {"currentReplicas": 2, "desiredReplicas": 2}}),
        );
        assert_eq!(
            cells[..6],
            [
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: <unknown>/80%"),
                json!("1"),
                json!(5),
                json!(2)
            ]
        );
        let v1 = cells_of(
            &p,
            json!({"apiVersion": "autoscaling/v1", "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
                "status": {"currentCPUUtilizationPercentage": 10}}),
        );
        assert_eq!(v1[2..4], [json!("cpu: 10%/50%"), json!("<unset>")]);
        let none = cells_of(&p, json!({"metadata": {"name": "x"}}));
        assert_eq!(none[2], json!("<none>"));
    }
}
