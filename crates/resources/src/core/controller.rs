//! core/v1 replicationcontrollers (with `/status` and `/scale`) and podtemplates.

use crate::core::pod::validate_pod_spec;
use crate::workload::{default_template, validate_template, TemplateRules};
use crate::{at, info, set_status, typed};

/// The workloads' template rules with the selector as `matchLabels`: it defaults to the
/// template's labels, so an absent one is no error here.
const RC_RULES: TemplateRules = TemplateRules {
    selector_required: false,
    absent_matches_nothing: false,
    empty_invalid_for: Some("deployment"),
    pod_spec: true,
    restart: &["Always"],
};
use k8s_openapi::api::core::v1 as core;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::{FieldLabelConversion, Strategy};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub struct ReplicationControllerStrategy;
impl Strategy for ReplicationControllerStrategy {
    typed!(core::ReplicationController);
    fn info(&self) -> ResourceInfo {
        info(
            "",
            "v1",
            "replicationcontrollers",
            "ReplicationController",
            true,
            &["rc"],
            &["all"],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::controllers::REPLICATION_CONTROLLERS.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn has_status(&self) -> bool {
        true
    }
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.name",
            "metadata.namespace",
            "status.replicas",
        ]))
    }
    /// `SetDefaults_ReplicationController`: selector and labels from the template's labels.
    fn defaults(&self, obj: &mut Object) {
        let labels = at(obj, &["spec", "template", "metadata", "labels"])
            .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
            .cloned();
        if let Some(labels) = labels {
            let spec = crate::obj_mut(obj, &["spec"]);
            if spec
                .get("selector")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
            {
                spec.insert("selector".into(), labels.clone());
            }
            let meta = obj.metadata_mut();
            if meta
                .get("labels")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
            {
                meta.insert("labels".into(), labels);
            }
        }
        if let Some(Value::Object(spec)) = obj.get_mut("spec") {
            crate::default_in(spec, "replicas", json!(1));
        }
        default_template(obj, &["spec", "template", "spec"]);
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({"replicas": 0})));
    }
    /// `ValidateReplicationControllerStatus`.
    fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        crate::group_util::non_negative_status(
            &mut errs,
            new,
            &[
                "replicas",
                "fullyLabeledReplicas",
                "readyReplicas",
                "availableReplicas",
                "observedGeneration",
            ],
        );
        let n = |f: &str| at(new, &["status", f]).and_then(Value::as_i64).unwrap_or(0);
        for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
            if n(f) > n("replicas") {
                errs.push(FieldError::invalid(
                    format!("status.{f}"),
                    n(f),
                    "cannot be greater than status.replicas",
                ));
            }
        }
        if n("availableReplicas") > n("readyReplicas") {
            errs.push(FieldError::invalid(
                "status.availableReplicas",
                n("availableReplicas"),
                "cannot be greater than readyReplicas",
            ));
        }
        errs
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        crate::non_negative(
            &mut errs,
            obj,
            &["spec", "minReadySeconds"],
            "spec.minReadySeconds",
        );
        let selector = at(obj, &["spec", "selector"])
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
            .cloned();
        if selector.is_none() {
            errs.push(FieldError::required("spec.selector", ""));
        }
        if at(obj, &["spec", "template"]).is_none_or(Value::is_null) {
            errs.push(FieldError::required("spec.template", ""));
            crate::non_negative(&mut errs, obj, &["spec", "replicas"], "spec.replicas");
            return errs;
        }
        // the template rules are the workloads' ones with the selector as matchLabels
        let mut as_workload = obj.clone();
        let spec = crate::obj_mut(&mut as_workload, &["spec"]);
        match selector {
            Some(m) => {
                spec.insert("selector".into(), json!({"matchLabels": m}));
            }
            None => {
                spec.remove("selector");
            }
        }
        let mut template_errs = Vec::new();
        validate_template(&mut template_errs, &as_workload, &RC_RULES);
        errs.extend(template_errs.into_iter().map(|mut e| {
            if e.field == "spec.selector.matchLabels" {
                e.field = "spec.selector".into();
            }
            e
        }));
        if at(obj, &["spec", "template", "spec", "activeDeadlineSeconds"])
            .is_some_and(|v| !v.is_null())
        {
            errs.push(FieldError::forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in ReplicationController is not Supported",
            ));
        }
        errs
    }
}

pub struct PodTemplateStrategy;
impl Strategy for PodTemplateStrategy {
    typed!(core::PodTemplate);
    fn info(&self) -> ResourceInfo {
        info("", "v1", "podtemplates", "PodTemplate", true, &[], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::controllers::POD_TEMPLATES.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        default_template(obj, &["template", "spec"]);
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        errs.extend(kapi_registry::meta::validate_labels(
            at(obj, &["template", "metadata", "labels"]),
            "template.metadata.labels",
        ));
        validate_pod_spec(&mut errs, at(obj, &["template", "spec"]), "template.spec");
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_registry::rest::FieldValidation;

    fn rc(v: Value) -> Object {
        ReplicationControllerStrategy
            .decode(Object::from_value(v).unwrap(), FieldValidation::Strict)
            .unwrap()
            .0
    }

    #[test]
    fn selector_and_labels_default_from_the_template() {
        let o = rc(
            json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        );
        assert_eq!(at(&o, &["spec", "selector"]), Some(&json!({"app": "web"})));
        assert_eq!(
            at(&o, &["metadata", "labels"]),
            Some(&json!({"app": "web"}))
        );
        assert_eq!(at(&o, &["spec", "replicas"]), Some(&json!(1)));
        assert!(ReplicationControllerStrategy.validate(&o).is_empty());

        let mismatch = rc(
            json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "other"},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        );
        let errs: Vec<String> = ReplicationControllerStrategy
            .validate(&mismatch)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("spec.template.metadata.labels: Invalid value"));
        assert!(errs[0].ends_with("`selector` does not match template `labels`"));

        let empty = rc(json!({"metadata": {"name": "web"}, "spec": {}}));
        let errs: Vec<String> = ReplicationControllerStrategy
            .validate(&empty)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "spec.selector: Required value",
                "spec.template: Required value"
            ]
        );

        let mut st = o.clone();
        st.insert("status", json!({"replicas": 1, "readyReplicas": 2}));
        assert_eq!(
            ReplicationControllerStrategy.validate_status_update(&st, &o)[0].to_string(),
            "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"
        );
    }
}
