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

/// `spec.selector` required, non-empty and matching the template's labels; the template's
/// pod spec valid; `restartPolicy` among `allowed_restart`.
pub fn validate_template(
    errs: &mut Vec<FieldError>,
    obj: &Object,
    selector_required: bool,
    allowed_restart: &[&str],
) {
    let labels = template_labels(obj, &["spec", "template"]);
    match at(obj, &["spec", "selector"]) {
        None | Some(Value::Null) => {
            if selector_required {
                errs.push(FieldError::required("spec.selector", ""));
            }
        }
        Some(sel) => {
            if selector_is_empty(sel) {
                errs.push(FieldError::invalid(
                    "spec.selector",
                    Value::Null,
                    "empty selector is invalid for deployment",
                ));
            } else if !selector_matches(sel, &labels) {
                errs.push(FieldError::invalid(
                    "spec.template.metadata.labels",
                    BadValue::string_map(at(obj, &["spec", "template", "metadata", "labels"])),
                    "`selector` does not match template `labels`",
                ));
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
    validate_pod_spec(errs, spec, "spec.template.spec");
    let rp = spec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if !allowed_restart.contains(&rp) {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            rp,
            allowed_restart,
        ));
    }
    crate::non_negative(errs, obj, &["spec", "replicas"], "spec.replicas");
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
