//! autoscaling/v2 and autoscaling/v1 horizontalpodautoscalers (with `/status`). Objects are
//! stored as v2, as upstream; v1 reads and writes are converted (the CPU utilization target
//! maps to a `Resource` metric; other v2 metrics are not visible through v1).

pub mod conversion;

use crate::BuildContext;
use crate::{at, default_in, info, obj_mut, set_status, str_at, typed};
use k8s_openapi::api::autoscaling::{v1, v2};
use kapi_machinery::validation::is_valid_path_segment_name;
use kapi_machinery::{FieldError, Object};
use kapi_registry::kind::push;
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo, ResourceInfo, Storage};
use kapi_registry::strategy::Strategy;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use conversion::{cpu_metric, v1_to_v2, v2_to_v1};

/// Upstream's `DefaultCPUUtilization`.
pub const DEFAULT_CPU_UTILIZATION: i64 = 80;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let mut v2s: Vec<Arc<dyn Storage>> = Vec::new();
    push(&mut v2s, ctx, Arc::new(HpaV2Strategy));
    let mut v1s: Vec<Arc<dyn Storage>> = Vec::new();
    push(&mut v1s, ctx, Arc::new(HpaV1Strategy));
    vec![ApiGroupInfo {
        group: "autoscaling".into(),
        preferred_version: "v2".into(),
        versions: vec![
            ApiVersionInfo {
                version: "v2".into(),
                storages: v2s,
            },
            ApiVersionInfo {
                version: "v1".into(),
                storages: v1s,
            },
        ],
    }]
}

fn hpa_info(version: &str) -> ResourceInfo {
    info(
        "autoscaling",
        version,
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
        &["all"],
    )
}

/// The checks both versions share (`ValidateHorizontalPodAutoscalerSpec`, less metrics).
fn validate_common(errs: &mut Vec<FieldError>, obj: &Object) {
    let min = at(obj, &["spec", "minReplicas"]).and_then(Value::as_i64);
    let max = at(obj, &["spec", "maxReplicas"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(m) = min.filter(|m| *m < 1) {
        errs.push(FieldError::invalid(
            "spec.minReplicas",
            m,
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    for k in ["kind", "name"] {
        let v = str_at(obj, &["spec", "scaleTargetRef", k]);
        let field = format!("spec.scaleTargetRef.{k}");
        if v.is_empty() {
            errs.push(FieldError::required(field, ""));
        } else {
            for msg in is_valid_path_segment_name(v) {
                errs.push(FieldError::invalid(field.clone(), v, msg));
            }
        }
    }
}

const METRIC_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

/// Scale-up / scale-down rules as `GenerateHPAScaleUpRules` / `GenerateHPAScaleDownRules`
/// fill them.
fn default_rules(behavior: &mut Map<String, Value>, key: &str) {
    let (window, policies) = if key == "scaleUp" {
        (
            Some(0),
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        )
    } else {
        (
            None,
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        )
    };
    let rules = behavior.entry(key.to_string()).or_insert_with(|| json!({}));
    if !rules.is_object() {
        *rules = json!({});
    }
    if let Some(r) = rules.as_object_mut() {
        if let Some(w) = window {
            default_in(r, "stabilizationWindowSeconds", json!(w));
        }
        default_in(r, "selectPolicy", json!("Max"));
        if r.get("policies")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            r.insert("policies".into(), policies);
        }
    }
}

pub struct HpaV2Strategy;
impl Strategy for HpaV2Strategy {
    typed!(v2::HorizontalPodAutoscaler);
    fn info(&self) -> ResourceInfo {
        hpa_info("v2")
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::autoscaling::HORIZONTAL_POD_AUTOSCALERS.table_convertor()
    }
    fn has_status(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        let spec = obj_mut(obj, &["spec"]);
        default_in(spec, "minReplicas", json!(1));
        if spec
            .get("metrics")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            spec.insert("metrics".into(), cpu_metric(DEFAULT_CPU_UTILIZATION));
        }
        if let Some(Value::Object(b)) = spec.get_mut("behavior") {
            default_rules(b, "scaleUp");
            default_rules(b, "scaleDown");
        }
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({"desiredReplicas": 0})));
    }
    fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        validate_hpa_status(new)
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_common(&mut errs, obj);
        for (i, m) in at(obj, &["spec", "metrics"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let t = m.get("type").and_then(Value::as_str).unwrap_or_default();
            let p = format!("spec.metrics[{i}]");
            if t.is_empty() {
                errs.push(FieldError::required(
                    format!("{p}.type"),
                    "must specify a metric source type",
                ));
            } else if !METRIC_TYPES.contains(&t) {
                errs.push(FieldError::not_supported(
                    format!("{p}.type"),
                    t,
                    METRIC_TYPES,
                ));
            } else {
                // the source named by the type, e.g. `resource` for `Resource`
                let mut key = t.to_string();
                key[..1].make_ascii_lowercase();
                if m.get(&key).is_none_or(Value::is_null) {
                    errs.push(FieldError::required(
                        format!("{p}.{key}"),
                        "must populate information for the given metric source",
                    ));
                }
            }
            if let Some(u) = m
                .pointer("/resource/target/averageUtilization")
                .and_then(Value::as_i64)
            {
                if u < 1 {
                    errs.push(FieldError::invalid(
                        format!("{p}.resource.target.averageUtilization"),
                        u,
                        "must be greater than 0",
                    ));
                }
            }
        }
        errs
    }
}

/// `ValidateHorizontalPodAutoscalerStatusUpdate`: replica counts are not negative.
fn validate_hpa_status(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    crate::group_util::non_negative_status(&mut errs, obj, &["currentReplicas", "desiredReplicas"]);
    errs
}

pub struct HpaV1Strategy;
impl Strategy for HpaV1Strategy {
    typed!(v1::HorizontalPodAutoscaler);
    fn info(&self) -> ResourceInfo {
        hpa_info("v1")
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::autoscaling::HORIZONTAL_POD_AUTOSCALERS.table_convertor()
    }
    fn has_status(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        default_in(obj_mut(obj, &["spec"]), "minReplicas", json!(1));
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(
            obj,
            Some(json!({"currentReplicas": 0, "desiredReplicas": 0})),
        );
    }
    fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        validate_hpa_status(new)
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_common(&mut errs, obj);
        if let Some(u) =
            at(obj, &["spec", "targetCPUUtilizationPercentage"]).and_then(Value::as_i64)
        {
            if u < 1 {
                errs.push(FieldError::invalid(
                    "spec.metrics[0].resource.target.averageUtilization",
                    u,
                    "must be greater than 0",
                ));
            }
        }
        errs
    }
    fn key_prefix(&self) -> String {
        "horizontalpodautoscalers".into()
    }
    // stored as v2 with v2's defaults, which upstream applies when it decodes the stored
    // object: a v1 HPA without a CPU target reads back with the 80% one
    fn to_storage(&self, obj: Object) -> Object {
        let mut v2 = v1_to_v2(obj);
        HpaV2Strategy.defaults(&mut v2);
        v2
    }
    fn converts_from_storage(&self) -> bool {
        true
    }

    fn convert_from_storage(&self, obj: Object) -> Object {
        v2_to_v1(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_registry::rest::FieldValidation;

    #[test]
    fn v2_defaults() {
        let (o, _) = HpaV2Strategy
            .decode(
                Object::from_value(json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3,
                    "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}))
                .unwrap(),
                FieldValidation::Strict,
            )
            .unwrap();
        assert_eq!(at(&o, &["spec", "minReplicas"]), Some(&json!(1)));
        assert_eq!(at(&o, &["spec", "metrics"]), Some(&cpu_metric(80)));
        assert_eq!(
            at(&o, &["spec", "behavior", "scaleDown"]),
            Some(
                &json!({"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
            )
        );
        assert_eq!(
            at(&o, &["spec", "behavior", "scaleUp", "policies"])
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert!(HpaV2Strategy.validate(&o).is_empty());
    }

    #[test]
    fn v1_round_trips_through_v2() {
        let v1 = Object::from_value(json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"}, "spec": {"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 50,
            "scaleTargetRef": {"kind": "Deployment", "name": "web"}}, "status": {"currentReplicas": 0, "desiredReplicas": 0}}))
        .unwrap();
        let stored = v1_to_v2(v1.clone());
        assert_eq!(at(&stored, &["spec", "metrics"]), Some(&cpu_metric(50)));
        assert_eq!(v2_to_v1(stored).into_value(), v1.into_value());
        let errs = HpaV1Strategy.validate(
            &Object::from_value(json!({"spec": {"maxReplicas": 0, "minReplicas": 2, "scaleTargetRef": {"kind": "Deployment"}}})).unwrap(),
        );
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
                "spec.scaleTargetRef.name: Required value",
            ]
        );
    }
}
