//! Object metadata rules the Store applies to every resource (upstream's
//! `ValidateObjectMetaAccessor` / `ValidateObjectMetaAccessorUpdate`), plus small helpers for
//! the system fields it fills.

use crate::strategy::NameRule;
use kapi_machinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    is_valid_path_segment_name,
};
use kapi_machinery::{FieldError, Object};
use serde_json::Value;

/// Upstream's `TotalAnnotationSizeLimitB`.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// Upstream's `maxGeneratedNameLength` (63 minus the random suffix).
const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// `<generateName><5 random characters>`, as upstream's `SimpleNameGenerator`.
pub fn generate_name(base: &str) -> String {
    let base: String = if base.len() > MAX_GENERATED_NAME_LENGTH {
        base.chars().take(MAX_GENERATED_NAME_LENGTH).collect()
    } else {
        base.to_string()
    };
    format!("{base}{}", kapi_machinery::validation::random_suffix(5))
}

/// RFC 3339 in seconds with `Z`, as `metav1.Time` encodes.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The messages of a name rule for `name`.
pub fn name_errors(rule: NameRule, name: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => is_dns1123_subdomain(name),
        NameRule::Label => is_dns1123_label(name),
        NameRule::PathSegment => is_valid_path_segment_name(name),
    }
}

/// Labels: keys are qualified names, values label values; all reported at `path`.
pub fn validate_labels(labels: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(m) = labels.and_then(Value::as_object) else {
        return errs;
    };
    for (k, v) in m {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(path, k.as_str(), msg));
        }
        let v = v.as_str().unwrap_or_default();
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path, v, msg));
        }
    }
    errs
}

fn validate_annotations(annotations: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(m) = annotations.and_then(Value::as_object) else {
        return errs;
    };
    let mut total = 0usize;
    for (k, v) in m {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid("metadata.annotations", k.as_str(), msg));
        }
        total = total
            .saturating_add(k.len())
            .saturating_add(v.as_str().map(str::len).unwrap_or_default());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(
            "metadata.annotations",
            format!("must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"),
        ));
    }
    errs
}

fn validate_finalizers(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for f in obj.finalizers() {
        for msg in is_qualified_name(&f) {
            errs.push(FieldError::invalid("metadata.finalizers", f.as_str(), msg));
        }
        if !seen.insert(f.clone()) {
            errs.push(FieldError::duplicate("metadata.finalizers", f));
        }
    }
    errs
}

/// Upstream's `ValidateObjectMeta` for a new object.
pub fn validate_object_meta(obj: &Object, namespaced: bool, rule: NameRule) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = obj.name();
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_errors(rule, name) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
    }
    if !obj.generate_name().is_empty() {
        // upstream checks generateName with the same rule, allowing a trailing '-'
        let g = obj.generate_name().trim_end_matches('-');
        if !g.is_empty() {
            for msg in name_errors(rule, g) {
                errs.push(FieldError::invalid(
                    "metadata.generateName",
                    obj.generate_name(),
                    msg,
                ));
            }
        }
    }
    if namespaced {
        if obj.namespace().is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for msg in is_dns1123_label(obj.namespace()) {
                errs.push(FieldError::invalid(
                    "metadata.namespace",
                    obj.namespace(),
                    msg,
                ));
            }
        }
    } else if !obj.namespace().is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    let meta = obj.metadata();
    errs.extend(validate_labels(
        meta.and_then(|m| m.get("labels")),
        "metadata.labels",
    ));
    errs.extend(validate_annotations(
        meta.and_then(|m| m.get("annotations")),
    ));
    errs.extend(validate_finalizers(obj));
    errs
}

/// Upstream's `ValidateObjectMetaUpdate`: the new metadata's own rules plus immutability.
pub fn validate_object_meta_update(
    new: &Object,
    old: &Object,
    namespaced: bool,
    rule: NameRule,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta(new, namespaced, rule);
    let immutable = "field is immutable";
    if new.name() != old.name() {
        errs.push(FieldError::invalid("metadata.name", new.name(), immutable));
    }
    if new.namespace() != old.namespace() {
        errs.push(FieldError::invalid(
            "metadata.namespace",
            new.namespace(),
            immutable,
        ));
    }
    if new.uid() != old.uid() {
        errs.push(FieldError::invalid("metadata.uid", new.uid(), immutable));
    }
    if new.creation_timestamp() != old.creation_timestamp() {
        errs.push(FieldError::invalid(
            "metadata.creationTimestamp",
            new.creation_timestamp(),
            immutable,
        ));
    }
    errs
}

/// The object without metadata and status: what a spec change (generation bump) compares.
pub fn spec_part(obj: &Object) -> serde_json::Map<String, Value> {
    obj.as_map()
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_names() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        assert!(n[4..]
            .bytes()
            .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)));
        assert_eq!(generate_name(&"a".repeat(70)).len(), 63);
    }

    #[test]
    fn metadata_rules() {
        let o = Object::from_value(json!({"metadata": {"name": "Bad_Name", "namespace": "default", "labels": {"a/b/c": "x", "ok": "-bad"}}})).unwrap();
        let errs = validate_object_meta(&o, true, NameRule::Subdomain);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec!["metadata.name", "metadata.labels", "metadata.labels"]
        );
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        let o = Object::from_value(json!({"metadata": {"name": "a", "annotations": {"k": big}}}))
            .unwrap();
        let errs = validate_object_meta(&o, false, NameRule::Subdomain);
        assert_eq!(
            errs[0].to_string(),
            "metadata.annotations: Too long: must have at most 262144 bytes"
        );
    }
}
