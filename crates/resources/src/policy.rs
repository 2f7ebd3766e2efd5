//! policy/v1 poddisruptionbudgets (with `/status`), validated as upstream's
//! `pkg/apis/policy/validation`.

use crate::group_util::go_invalid;
use crate::strategy_group;
use crate::BuildContext;
use crate::{at, info, set_status, typed};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::Strategy;
use serde_json::{json, Value};
use std::sync::Arc;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [Arc::new(PodDisruptionBudgetStrategy) as Arc<dyn Strategy>];
    vec![strategy_group(ctx, "policy", "v1", table)]
}

/// `IsValidPercent`'s message.
pub const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// Go's `%#v` of an `intstr.IntOrString`.
pub fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{s:?}}}"),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.as_i64().unwrap_or(0)
        ),
    }
}

/// Upstream's `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`.
pub fn validate_int_or_percent(errs: &mut Vec<FieldError>, v: &Value, field: &str) {
    match v {
        Value::String(s) => {
            let digits = s.strip_suffix('%').unwrap_or_default();
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                errs.push(go_invalid(field, &go_int_or_string(v), PERCENT_MSG));
            } else if digits.parse::<u64>().is_ok_and(|n| n > 100) {
                errs.push(go_invalid(
                    field,
                    &go_int_or_string(v),
                    "must not be greater than 100%",
                ));
            }
        }
        other => {
            let n = other.as_i64().unwrap_or(0);
            if n < 0 {
                errs.push(FieldError::invalid(
                    field,
                    n,
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
}

/// Upstream's `ValidateLabelSelector` for the parts that can be checked here.
pub fn validate_label_selector(errs: &mut Vec<FieldError>, sel: Option<&Value>, field: &str) {
    let Some(sel) = sel.filter(|v| !v.is_null()) else {
        return;
    };
    errs.extend(kapi_registry::meta::validate_labels(
        sel.get("matchLabels"),
        &format!("{field}.matchLabels"),
    ));
    for (i, e) in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{field}.matchExpressions[{i}]");
        let op = e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let n = e
            .get("values")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match op {
            "In" | "NotIn" if n == 0 => errs.push(FieldError::required(
                format!("{p}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if n > 0 => errs.push(FieldError::forbidden(
                format!("{p}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(
                format!("{p}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
    }
}

const UNHEALTHY_POD_EVICTION_POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];

pub struct PodDisruptionBudgetStrategy;
impl Strategy for PodDisruptionBudgetStrategy {
    typed!(PodDisruptionBudget);
    fn info(&self) -> ResourceInfo {
        info(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            &["pdb"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::groups::POD_DISRUPTION_BUDGETS.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn has_status(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(
            obj,
            Some(
                json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
            ),
        );
    }
    fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        crate::group_util::non_negative_status(
            &mut errs,
            new,
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
        );
        errs
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let min = at(obj, &["spec", "minAvailable"]).filter(|v| !v.is_null());
        let max = at(obj, &["spec", "maxUnavailable"]).filter(|v| !v.is_null());
        if min.is_some() && max.is_some() {
            let spec = at(obj, &["spec"]).cloned().unwrap_or(Value::Null);
            errs.push(go_invalid(
                "spec",
                &spec.to_string(),
                "minAvailable and maxUnavailable cannot be both set",
            ));
        }
        if let Some(v) = min {
            validate_int_or_percent(&mut errs, v, "spec.minAvailable");
        }
        if let Some(v) = max {
            validate_int_or_percent(&mut errs, v, "spec.maxUnavailable");
        }
        validate_label_selector(&mut errs, at(obj, &["spec", "selector"]), "spec.selector");
        if let Some(p) = at(obj, &["spec", "unhealthyPodEvictionPolicy"]).and_then(Value::as_str) {
            if !UNHEALTHY_POD_EVICTION_POLICIES.contains(&p) {
                errs.push(FieldError::not_supported(
                    "spec.unhealthyPodEvictionPolicy",
                    p,
                    UNHEALTHY_POD_EVICTION_POLICIES,
                ));
            }
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        let o = |v: Value| Object::from_value(v).unwrap();
        let s = PodDisruptionBudgetStrategy;
        assert!(s
            .validate(&o(
                json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}})
            ))
            .is_empty());
        let errs: Vec<String> = s
            .validate(&o(
                json!({"spec": {"minAvailable": "150%", "maxUnavailable": -1}}),
            ))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs.len(), 3);
        assert!(errs[0].ends_with("minAvailable and maxUnavailable cannot be both set"));
        assert_eq!(
            errs[1],
            r#"spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%"#
        );
        assert_eq!(
            errs[2],
            "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"
        );
    }
}
