//! scheduling.k8s.io/v1 priorityclasses, with upstream's system classes
//! (`pkg/apis/scheduling`): names starting `system-` are reserved for them.

use crate::strategy_group;
use crate::BuildContext;
use crate::{at, default_at, info, str_at, typed};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kapi_machinery::{ApiError, FieldError, GroupResource, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::Strategy;
use serde_json::{json, Value};
use std::sync::Arc;

pub const GROUP: &str = "scheduling.k8s.io";
/// Names with this prefix are reserved for [`SYSTEM_PRIORITY_CLASSES`].
pub const SYSTEM_PREFIX: &str = "system-";
/// The largest value a user-defined class may have (`HighestUserDefinablePriority`).
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The classes the scheduling post-start hook creates: (name, value, description).
pub const SYSTEM_PRIORITY_CLASSES: &[(&str, i64, &str)] = &[
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [Arc::new(PriorityClassStrategy) as Arc<dyn Strategy>];
    vec![strategy_group(ctx, GROUP, "v1", table)]
}

/// The body of a system priority class, as the post-start hook creates it.
pub fn system_priority_class(name: &str, value: i64, description: &str) -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": value, "description": description})
}

/// `IsKnownSystemPriorityClass`'s error, if any.
fn system_class_error(name: &str, value: i64, global_default: bool) -> Option<String> {
    match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, ..)| *n == name) {
        None => Some(format!("{name} is not a known system priority class")),
        Some((n, v, _)) if *v != value => Some(format!("value of {n} PriorityClass must be {v}")),
        Some((n, ..)) if global_default => {
            Some(format!("globalDefault of {n} PriorityClass must be false"))
        }
        Some(_) => None,
    }
}

const PREEMPTION_POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];

pub struct PriorityClassStrategy;
impl Strategy for PriorityClassStrategy {
    // `value` is a plain int32 upstream: absent decodes as 0
    typed!(PriorityClass, zeros = &[(&["value"], json!(0))]);
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "priorityclasses",
            "PriorityClass",
            false,
            &["pc"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::groups::PRIORITY_CLASSES.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        default_at(obj, &[], "preemptionPolicy", json!("PreemptLowerPriority"));
    }
    fn refuse_delete(&self, name: &str) -> Option<ApiError> {
        SYSTEM_PRIORITY_CLASSES
            .iter()
            .any(|(n, ..)| *n == name)
            .then(|| {
                ApiError::forbidden(
                    &GroupResource::new(GROUP, "priorityclasses"),
                    name,
                    "this is a system priority class and cannot be deleted",
                )
            })
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let value = at(obj, &["value"]).and_then(Value::as_i64).unwrap_or(0);
        let global_default = at(obj, &["globalDefault"])
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if obj.name().starts_with(SYSTEM_PREFIX) {
            if let Some(e) = system_class_error(obj.name(), value, global_default) {
                errs.push(FieldError::forbidden(
                    "metadata.name",
                    format!("priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {e}"),
                ));
            }
        } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
            errs.push(FieldError::forbidden(
                "value",
                format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
            ));
        }
        if let Some(p) = at(obj, &["preemptionPolicy"]).and_then(Value::as_str) {
            if p.is_empty() {
                errs.push(FieldError::required("preemptionPolicy", ""));
            } else if !PREEMPTION_POLICIES.contains(&p) {
                errs.push(FieldError::not_supported(
                    "preemptionPolicy",
                    p,
                    PREEMPTION_POLICIES,
                ));
            }
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        // upstream checks only immutability on update
        let mut errs = Vec::new();
        if at(new, &["value"]) != at(old, &["value"]) {
            errs.push(FieldError::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        let (np, op) = (
            str_at(new, &["preemptionPolicy"]),
            str_at(old, &["preemptionPolicy"]),
        );
        if np != op {
            errs.push(FieldError::invalid(
                "preemptionPolicy",
                np,
                "field is immutable",
            ));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_registry::rest::FieldValidation;

    fn pc(v: Value) -> Object {
        PriorityClassStrategy
            .decode(Object::from_value(v).unwrap(), FieldValidation::Strict)
            .unwrap()
            .0
    }

    #[test]
    fn system_classes_refuse_a_delete_by_name() {
        let refused = PriorityClassStrategy
            .refuse_delete("system-node-critical")
            .unwrap();
        assert_eq!(refused.code, 403);
        assert_eq!(
            refused.message,
            r#"priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted"#
        );
        assert!(PriorityClassStrategy.refuse_delete("high").is_none());
    }

    #[test]
    fn defaults_and_rules() {
        let p = pc(json!({"metadata": {"name": "high"}, "value": 10}));
        assert_eq!(str_at(&p, &["preemptionPolicy"]), "PreemptLowerPriority");
        assert!(PriorityClassStrategy.validate(&p).is_empty());
        let zero = pc(json!({"metadata": {"name": "zero"}}));
        assert_eq!(zero.get("value"), Some(&json!(0)));

        let sys = pc(json!({"metadata": {"name": "system-foo"}, "value": 1}));
        assert_eq!(
            PriorityClassStrategy.validate(&sys)[0].to_string(),
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-foo is not a known system priority class"
        );
        let (n, v, d) = SYSTEM_PRIORITY_CLASSES[0];
        assert!(PriorityClassStrategy
            .validate(&pc(system_priority_class(n, v, d)))
            .is_empty());
        let big = pc(json!({"metadata": {"name": "big"}, "value": 1_000_000_001}));
        assert_eq!(
            PriorityClassStrategy.validate(&big)[0].to_string(),
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
        );
        let mut changed = p.clone();
        changed.insert("value", json!(11));
        assert_eq!(
            PriorityClassStrategy.validate_update(&changed, &p)[0].to_string(),
            "value: Forbidden: may not be changed in an update."
        );
    }
}
