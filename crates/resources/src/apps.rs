//! apps/v1: deployments, replicasets, statefulsets, daemonsets (each with `/status`) and
//! controllerrevisions.

use crate::group_util::immutable;
use crate::workload::{
    default_template, validate_selector_immutable, validate_template, TemplateRules,
};
use crate::BuildContext;
use crate::{at, default_in, info, set_status, typed};
use k8s_openapi::api::apps::v1 as apps;
use kapi_machinery::{FieldError, Object};
use kapi_registry::kind::push;
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo, Storage};
use kapi_registry::scale::ScaleStore;
use kapi_registry::strategy::{keep_all_but_status_and_metadata, keep_old_metadata, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let mut s: Vec<Arc<dyn Storage>> = Vec::new();
    for scalable in [
        Arc::new(DeploymentStrategy) as Arc<dyn Strategy>,
        Arc::new(ReplicaSetStrategy),
        Arc::new(StatefulSetStrategy),
    ] {
        let store = push(&mut s, ctx, scalable);
        s.push(Arc::new(ScaleStore::new(store)));
    }
    push(&mut s, ctx, Arc::new(DaemonSetStrategy));
    push(&mut s, ctx, Arc::new(ControllerRevisionStrategy));
    vec![ApiGroupInfo::single_version("apps", "v1", s)]
}

fn spec_mut(obj: &mut Object) -> Option<&mut serde_json::Map<String, Value>> {
    obj.get_mut("spec").and_then(Value::as_object_mut)
}

/// The template rules of an apps/v1 kind: a required, non-empty selector and a valid pod
/// spec; `empty_invalid_for` names the kind as upstream's message does (ReplicaSets share
/// Deployments' wording there).
const fn apps_rules(empty_invalid_for: &'static str) -> TemplateRules {
    TemplateRules {
        selector_required: true,
        absent_matches_nothing: true,
        empty_invalid_for: Some(empty_invalid_for),
        pod_spec: true,
        restart: &["Always"],
    }
}
const DEPLOYMENT_RULES: TemplateRules = apps_rules("deployment");
/// `ValidatePodTemplateSpecForStatefulSet` leaves the pod spec itself unvalidated.
const STATEFUL_SET_RULES: TemplateRules = TemplateRules {
    pod_spec: false,
    ..apps_rules("statefulset")
};
/// `ValidateDaemonSetSpec` does not require the selector; an absent one matches nothing.
const DAEMON_SET_RULES: TemplateRules = TemplateRules {
    selector_required: false,
    ..apps_rules("daemonset")
};

/// A pointer in Go that the OpenAPI schema (and so `k8s-openapi`) makes required.
const SELECTOR: &[&[&str]] = &[&["spec", "selector"]];

fn validate_apps(obj: &Object, rules: &TemplateRules) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_template(&mut errs, obj, rules);
    errs
}

/// Fields every apps/v1 strategy shares.
/// `$on_create` runs last in `prepare_for_create`; `$update_errors` adds a kind's own field
/// errors of an update.
macro_rules! apps_common {
    ($rules:expr, $status:expr) => {
        apps_common!(
            $rules,
            $status,
            |_: &mut Object| {},
            validate_selector_immutable
        );
    };
    ($rules:expr, $status:expr, $on_create:expr, $update_errors:expr) => {
        fn tracks_generation(&self) -> bool {
            true
        }
        fn has_status(&self) -> bool {
            true
        }
        // the status a new object is answered with: its Go type's fields that are not
        // `omitempty`, at zero
        fn prepare_for_create(&self, obj: &mut Object) {
            set_status(obj, Some($status));
            let on_create: fn(&mut Object) = $on_create;
            on_create(obj);
        }
        fn validate(&self, obj: &Object) -> Vec<FieldError> {
            validate_apps(obj, &$rules)
        }
        fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
            let mut errs = validate_apps(new, &$rules);
            let update_errors: fn(&mut Vec<FieldError>, &Object, &Object) = $update_errors;
            update_errors(&mut errs, new, old);
            errs
        }
    };
}

pub struct DeploymentStrategy;
impl Strategy for DeploymentStrategy {
    typed!(apps::Deployment, keep_absent = SELECTOR);
    apps_common!(DEPLOYMENT_RULES, json!({}));
    /// Upstream's deployment status strategy also keeps the stored labels.
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        keep_all_but_status_and_metadata(new, old);
        keep_old_metadata(new, old, &["labels"]);
    }
    fn info(&self) -> ResourceInfo {
        info(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            &["deploy"],
            &["all"],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::apps::DEPLOYMENTS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = spec_mut(obj) {
            default_in(spec, "replicas", json!(1));
            default_in(spec, "strategy", json!({"type": "RollingUpdate"}));
            if let Some(st) = spec.get_mut("strategy").and_then(Value::as_object_mut) {
                default_in(st, "type", json!("RollingUpdate"));
                if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    default_in(st, "rollingUpdate", json!({}));
                    if let Some(ru) = st.get_mut("rollingUpdate").and_then(Value::as_object_mut) {
                        default_in(ru, "maxUnavailable", json!("25%"));
                        default_in(ru, "maxSurge", json!("25%"));
                    }
                }
            }
            default_in(spec, "revisionHistoryLimit", json!(10));
            default_in(spec, "progressDeadlineSeconds", json!(600));
        }
        default_template(obj, &["spec", "template", "spec"]);
    }
}

pub struct ReplicaSetStrategy;
impl Strategy for ReplicaSetStrategy {
    typed!(apps::ReplicaSet, keep_absent = SELECTOR);
    apps_common!(DEPLOYMENT_RULES, json!({"replicas": 0}));
    fn info(&self) -> ResourceInfo {
        info(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            true,
            &["rs"],
            &["all"],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::apps::REPLICA_SETS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = spec_mut(obj) {
            default_in(spec, "replicas", json!(1));
        }
        default_template(obj, &["spec", "template", "spec"]);
    }
}

/// `ValidateStatefulSetUpdate`: only these fields of the spec may change (the selector
/// among the rest, with no error of its own).
fn stateful_set_spec_update(errs: &mut Vec<FieldError>, new: &Object, old: &Object) {
    const MUTABLE: &[&str] = &[
        "replicas",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "ordinals",
        "persistentVolumeClaimRetentionPolicy",
    ];
    let rest = |obj: &Object| {
        let mut spec = at(obj, &["spec"]).cloned().unwrap_or(Value::Null);
        if let Some(m) = spec.as_object_mut() {
            m.retain(|k, _| !MUTABLE.contains(&k.as_str()));
        }
        spec
    };
    if rest(new) != rest(old) {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}

pub struct StatefulSetStrategy;
impl Strategy for StatefulSetStrategy {
    typed!(apps::StatefulSet, keep_absent = SELECTOR);
    apps_common!(
        STATEFUL_SET_RULES,
        json!({"replicas": 0, "availableReplicas": 0}),
        |_| {},
        stateful_set_spec_update
    );
    fn info(&self) -> ResourceInfo {
        info(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            true,
            &["sts"],
            &["all"],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::apps::STATEFUL_SETS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = spec_mut(obj) {
            default_in(spec, "replicas", json!(1));
            default_in(spec, "podManagementPolicy", json!("OrderedReady"));
            default_in(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
            if let Some(st) = spec
                .get_mut("updateStrategy")
                .and_then(Value::as_object_mut)
            {
                if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    default_in(st, "rollingUpdate", json!({"partition": 0}));
                }
            }
            default_in(spec, "revisionHistoryLimit", json!(10));
            default_in(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
            // each claim template gets a claim's defaults (`SetDefaults_PersistentVolumeClaim`)
            for claim in spec
                .get_mut("volumeClaimTemplates")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                if let Some(claim_spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
                    default_in(claim_spec, "volumeMode", json!("Filesystem"));
                }
                default_in(claim, "status", json!({}));
                if let Some(status) = claim.get_mut("status").and_then(Value::as_object_mut) {
                    default_in(status, "phase", json!("Pending"));
                }
            }
        }
        default_template(obj, &["spec", "template", "spec"]);
    }
}

/// Where apps/v1 keeps a DaemonSet's template generation (`spec.templateGeneration` of the
/// internal type, written out by upstream's conversion).
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

fn template_generation(obj: &Object) -> i64 {
    at(obj, &["metadata", "annotations", TEMPLATE_GENERATION])
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn set_template_generation(obj: &mut Object, generation: i64) {
    crate::obj_mut(obj, &["metadata", "annotations"])
        .insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
}

pub struct DaemonSetStrategy;
impl Strategy for DaemonSetStrategy {
    typed!(apps::DaemonSet, keep_absent = SELECTOR);
    apps_common!(
        DAEMON_SET_RULES,
        json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0}),
        |obj| {
            let generation = template_generation(obj).max(1);
            set_template_generation(obj, generation);
        },
        validate_selector_immutable
    );
    /// The template's generation goes up with each change of the template.
    fn prepare_for_update(&self, new: &mut Object, old: &Object) {
        let generation = if at(new, &["spec", "template"]) != at(old, &["spec", "template"]) {
            template_generation(old).saturating_add(1)
        } else if template_generation(new) > 0 {
            template_generation(new)
        } else {
            template_generation(old)
        };
        set_template_generation(new, generation);
    }
    fn info(&self) -> ResourceInfo {
        info(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            true,
            &["ds"],
            &["all"],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::apps::DAEMON_SETS.table_convertor()
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = spec_mut(obj) {
            default_in(spec, "updateStrategy", json!({"type": "RollingUpdate"}));
            if let Some(st) = spec
                .get_mut("updateStrategy")
                .and_then(Value::as_object_mut)
            {
                if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    default_in(
                        st,
                        "rollingUpdate",
                        json!({"maxUnavailable": 1, "maxSurge": 0}),
                    );
                }
            }
            default_in(spec, "revisionHistoryLimit", json!(10));
        }
        default_template(obj, &["spec", "template", "spec"]);
    }
}

/// `apps/v1` controller revisions: the immutable snapshots deployments' and stateful sets'
/// controllers keep (`pkg/registry/apps/controllerrevision`).
pub struct ControllerRevisionStrategy;
impl Strategy for ControllerRevisionStrategy {
    typed!(
        apps::ControllerRevision,
        zeros = &[(&["revision"], json!(0))]
    );
    fn info(&self) -> ResourceInfo {
        info(
            "apps",
            "v1",
            "controllerrevisions",
            "ControllerRevision",
            true,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::apps::CONTROLLER_REVISIONS.table_convertor()
    }
    /// `ValidateControllerRevision`.
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if obj.get("data").is_none_or(Value::is_null) {
            errs.push(FieldError::required("data", "data is mandatory"));
        }
        crate::non_negative(&mut errs, obj, &["revision"], "revision");
        errs
    }
    /// `ValidateControllerRevisionUpdate`: the data may not change.
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        immutable(&mut errs, new, old, &["data"], "data");
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(v: Value) -> Object {
        Object::from_value(v).unwrap()
    }

    #[test]
    fn controller_revision_validation() {
        let s = ControllerRevisionStrategy;
        let ok =
            revision(json!({"metadata": {"name": "r"}, "data": {"spec": {"x": 1}}, "revision": 2}));
        assert!(s.validate(&ok).is_empty());
        let bad = revision(json!({"metadata": {"name": "r"}, "revision": -1}));
        let msgs: Vec<String> = s.validate(&bad).iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            vec![
                "data: Required value: data is mandatory",
                "revision: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let changed =
            revision(json!({"metadata": {"name": "r"}, "data": {"spec": {"x": 2}}, "revision": 2}));
        let msgs: Vec<String> = s
            .validate_update(&changed, &ok)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                r#"data: Invalid value: map[string]interface {}{"spec":map[string]interface {}{"x":2}}: field is immutable"#
            ]
        );
    }
}
