//! Rules shared by workloads with a pod template (apps/v1, batch/v1): selectors that must
//! match the template's labels, template defaults and validation.

use crate::at;
use crate::core::pod::{default_pod_spec, validate_pod_spec};
use kapi_machinery::{goformat, BadValue, FieldError, Object};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Upstream's `metav1.LabelSelectorAsSelector(...).Matches(labels)`.
pub fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            if labels.get(k).map(String::as_str) != v.as_str() {
                return false;
            }
        }
    }
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let got = labels.get(key);
        let ok = match e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" => got.is_some_and(|v| values.contains(&v.as_str())),
            "NotIn" => got.is_none_or(|v| !values.contains(&v.as_str())),
            "Exists" => got.is_some(),
            "DoesNotExist" => got.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

fn selector_is_empty(selector: &Value) -> bool {
    selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
        && selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
}

/// Template labels at `template_path` (e.g. `["spec", "template"]`).
pub fn template_labels(obj: &Object, template_path: &[&str]) -> BTreeMap<String, String> {
    let mut path: Vec<&str> = template_path.to_vec();
    path.extend(["metadata", "labels"]);
    at(obj, &path)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// How a kind checks its `spec.selector` and template, in upstream's words for it.
pub struct TemplateRules {
    /// "Required value" when the selector is absent (not for DaemonSets, nor for
    /// ReplicationControllers, whose selector defaults to the template's labels).
    pub selector_required: bool,
    /// An absent selector matches no labels (`metav1.LabelSelectorAsSelector(nil)`), so the
    /// template's labels are reported as not matching it; a ReplicationController's absent
    /// map selects nothing to compare.
    pub absent_matches_nothing: bool,
    /// The kind named in "empty selector is invalid for <kind>"; `None`: an empty selector
    /// is allowed (it matches every label set).
    pub empty_invalid_for: Option<&'static str>,
    /// Whether the template's pod spec is validated (upstream leaves a StatefulSet's alone).
    pub pod_spec: bool,
    /// The `restartPolicy` values the template may have.
    pub restart: &'static [&'static str],
}

/// `spec.selector` required, non-empty and matching the template's labels; the template's
/// pod spec valid; `restartPolicy` among the allowed ones: per `rules`.
pub fn validate_template(errs: &mut Vec<FieldError>, obj: &Object, rules: &TemplateRules) {
    let labels = template_labels(obj, &["spec", "template"]);
    let mismatch = || {
        FieldError::invalid(
            "spec.template.metadata.labels",
            BadValue::string_map(at(obj, &["spec", "template", "metadata", "labels"])),
            "`selector` does not match template `labels`",
        )
    };
    match at(obj, &["spec", "selector"]) {
        None | Some(Value::Null) => {
            if rules.selector_required {
                errs.push(FieldError::required("spec.selector", ""));
            }
            if rules.absent_matches_nothing {
                errs.push(mismatch());
            }
        }
        Some(sel) => {
            if selector_is_empty(sel) {
                if let Some(kind) = rules.empty_invalid_for {
                    errs.push(FieldError::invalid(
                        "spec.selector",
                        selector_value(obj),
                        format!("empty selector is invalid for {kind}"),
                    ));
                }
            } else if !selector_matches(sel, &labels) {
                errs.push(mismatch());
            }
            errs.extend(kapi_registry::meta::validate_labels(
                sel.get("matchLabels"),
                "spec.selector.matchLabels",
            ));
        }
    }
    errs.extend(kapi_registry::meta::validate_labels(
        at(obj, &["spec", "template", "metadata", "labels"]),
        "spec.template.metadata.labels",
    ));
    let spec = at(obj, &["spec", "template", "spec"]);
    if rules.pod_spec {
        validate_pod_spec(errs, spec, "spec.template.spec");
    }
    errs.extend(template_restart_policy(
        spec,
        "spec.template.spec.restartPolicy",
        rules.restart,
    ));
    crate::non_negative(errs, obj, &["spec", "replicas"], "spec.replicas");
}

/// A template's `restartPolicy` (defaulted to `Always`) outside `allowed`: `Always` where it
/// is not allowed (a Job's) is "Required" with the valid values, as kube-apiserver 1.28
/// words it; any other value is "Unsupported".
pub fn template_restart_policy(
    spec: Option<&Value>,
    path: &str,
    allowed: &[&str],
) -> Option<FieldError> {
    let rp = spec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if allowed.contains(&rp) {
        None
    } else if rp == "Always" {
        let valid: Vec<String> = allowed.iter().map(|v| format!("{v:?}")).collect();
        Some(FieldError::required(
            path,
            format!("valid values: {}", valid.join(", ")),
        ))
    } else {
        Some(FieldError::not_supported(path, rp, allowed))
    }
}

/// `spec.selector` as upstream prints it in a field error (a `metav1.LabelSelector`).
pub fn selector_value(obj: &Object) -> BadValue {
    BadValue::Go(goformat::label_selector(at(obj, &["spec", "selector"])))
}

/// The selector may not change after creation (apps/v1).
pub fn validate_selector_immutable(errs: &mut Vec<FieldError>, new: &Object, old: &Object) {
    if at(new, &["spec", "selector"]) != at(old, &["spec", "selector"]) {
        errs.push(FieldError::invalid(
            "spec.selector",
            selector_value(new),
            "field is immutable",
        ));
    }
}

/// Pod defaults inside `spec.template.spec` (or the given path).
pub fn default_template(obj: &mut Object, path: &[&str]) {
    let mut cur = obj.as_map_mut();
    for k in path {
        match cur.get_mut(*k) {
            Some(Value::Object(m)) => cur = m,
            _ => return,
        }
    }
    default_pod_spec(cur);
}
