//! core/v1 pods: upstream's server-side defaults, QoS class, basic validation and graceful
//! deletion for pods bound to a node.

use crate::{at, default_in, info, str_at, typed};
use k8s_openapi::api::core::v1::Pod;
use kapi_machinery::validation::is_dns1123_label;
use kapi_machinery::{DeleteOptions, FieldError, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::{
    keep_all_but_status_and_metadata, keep_old_metadata, FieldLabelConversion, GracefulDelete,
    Strategy,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub struct PodStrategy;

// in upstream's order, which its message keeps
const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];

/// `Always` for `:latest` or untagged images, `IfNotPresent` otherwise (upstream's rule).
fn pull_policy(image: &str) -> &'static str {
    let without_digest = image.split('@').next().unwrap_or_default();
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = without_digest.rsplit('/').next().unwrap_or_default();
    match last.split_once(':') {
        None => "Always",
        Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn default_container(c: &mut Map<String, Value>) {
    default_in(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_in(c, "terminationMessagePolicy", json!("File"));
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    default_in(c, "imagePullPolicy", json!(pull_policy(&image)));
    default_in(c, "resources", json!({}));
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_in(p, "protocol", json!("TCP"));
        }
    }
}

/// A request left unset takes the container's limit (`SetDefaults_Pod`: pods only, so that
/// admission such as LimitRanger sees it; templates keep what they were given).
fn default_requests_to_limits(c: &mut Map<String, Value>) {
    let Some(Value::Object(resources)) = c.get_mut("resources") else {
        return;
    };
    let Some(Value::Object(limits)) = resources.get("limits") else {
        return;
    };
    let limits = limits.clone();
    if limits.is_empty() {
        return;
    }
    let requests = resources
        .entry("requests")
        .or_insert_with(|| Value::Object(Map::new()));
    if requests.is_null() {
        *requests = Value::Object(Map::new());
    }
    if let Value::Object(requests) = requests {
        for (name, limit) in limits {
            requests.entry(name).or_insert(limit);
        }
    }
}

/// Upstream's pod spec defaults (also used for templates of workloads).
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    default_in(spec, "restartPolicy", json!("Always"));
    default_in(spec, "dnsPolicy", json!("ClusterFirst"));
    default_in(spec, "schedulerName", json!("default-scheduler"));
    default_in(spec, "terminationGracePeriodSeconds", json!(30));
    default_in(spec, "securityContext", json!({}));
    for key in ["containers", "initContainers"] {
        if let Some(Value::Array(cs)) = spec.get_mut(key) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
                super::pod_defaults::default_container_handlers(c);
            }
        }
    }
    super::pod_defaults::default_pod_spec_parts(spec);
}

/// Validation shared by pods and pod templates, with `prefix` (`spec`,
/// `spec.template.spec`).
pub fn validate_pod_spec(errs: &mut Vec<FieldError>, spec: Option<&Value>, prefix: &str) {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if containers.is_empty() {
        errs.push(FieldError::required(format!("{prefix}.containers"), ""));
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(
                format!("{prefix}.containers[{i}].name"),
                "",
            ));
        } else {
            for msg in is_dns1123_label(name) {
                errs.push(FieldError::invalid(
                    format!("{prefix}.containers[{i}].name"),
                    name,
                    msg,
                ));
            }
            if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(
                    format!("{prefix}.containers[{i}].name"),
                    name,
                ));
            }
        }
        if c.get("image")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .is_empty()
        {
            errs.push(FieldError::required(
                format!("{prefix}.containers[{i}].image"),
                "",
            ));
        }
    }
    let rp = spec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if !RESTART_POLICIES.contains(&rp) {
        errs.push(FieldError::not_supported(
            format!("{prefix}.restartPolicy"),
            rp,
            RESTART_POLICIES,
        ));
    }
    let dp = spec
        .and_then(|s| s.get("dnsPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("ClusterFirst");
    if !DNS_POLICIES.contains(&dp) {
        errs.push(FieldError::not_supported(
            format!("{prefix}.dnsPolicy"),
            dp,
            DNS_POLICIES,
        ));
    }
    validate_sysctls(
        errs,
        spec.and_then(|s| s.get("securityContext"))
            .and_then(|c| c.get("sysctls")),
        &format!("{prefix}.securityContext.sysctls"),
    );
}

/// Upstream's `SysctlContainSlashFmt`, anchored, as its error prints it.
const SYSCTL_NAME: &str = r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
/// Upstream's `SysctlMaxLength`.
const SYSCTL_MAX_LENGTH: usize = 253;

/// Upstream's `validateSysctls`: each name present, a sysctl name, and not repeated.
fn validate_sysctls(errs: &mut Vec<FieldError>, sysctls: Option<&Value>, path: &str) {
    static NAME: std::sync::LazyLock<Option<regex::Regex>> =
        std::sync::LazyLock::new(|| regex::Regex::new(SYSCTL_NAME).ok());
    let Some(items) = sysctls.and_then(Value::as_array) else {
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, s) in items.iter().enumerate() {
        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
        let field = format!("{path}[{i}].name");
        let valid =
            name.len() <= SYSCTL_MAX_LENGTH && NAME.as_ref().is_some_and(|re| re.is_match(name));
        if name.is_empty() {
            errs.push(FieldError::required(field, ""));
        } else if !valid {
            errs.push(FieldError::invalid(
                field,
                name,
                format!(
                    "must have at most {SYSCTL_MAX_LENGTH} characters and match regex {SYSCTL_NAME}"
                ),
            ));
        } else if seen.contains(name) {
            errs.push(FieldError::duplicate(field, name));
        }
        seen.insert(name.to_string());
    }
}

/// Upstream's `GetPodQOS` over JSON.
fn qos_class(obj: &Object) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| {
            at(obj, &["spec", k])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let req = c
            .get("resources")
            .and_then(|r| r.get("requests"))
            .and_then(Value::as_object);
        let lim = c
            .get("resources")
            .and_then(|r| r.get("limits"))
            .and_then(Value::as_object);
        let has = |m: Option<&Map<String, Value>>, k: &str| m.and_then(|m| m.get(k)).is_some();
        if req.is_some_and(|m| !m.is_empty()) || lim.is_some_and(|m| !m.is_empty()) {
            any = true;
        }
        for r in ["cpu", "memory"] {
            if !has(lim, r) {
                guaranteed = false;
            }
            if let (Some(q), Some(l)) = (req.and_then(|m| m.get(r)), lim.and_then(|m| m.get(r))) {
                if q != l {
                    guaranteed = false;
                }
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Spec with what a pod update may change blanked out.
fn immutable_view(obj: &Object) -> Value {
    let mut spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(s) = spec.as_object_mut() {
        for k in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
        ] {
            s.remove(k);
        }
        for key in ["containers", "initContainers"] {
            if let Some(Value::Array(cs)) = s.get_mut(key) {
                for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                    c.remove("image");
                }
            }
        }
    }
    spec
}

impl Strategy for PodStrategy {
    fn watch_trigger_field(&self) -> Option<&'static str> {
        Some("spec.nodeName")
    }
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(Pod);

    /// Upstream's pod status strategy keeps the stored owner references (old kubelets
    /// corrupted them through `/status`).
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        keep_all_but_status_and_metadata(new, old);
        keep_old_metadata(new, old, &["ownerReferences"]);
    }

    fn info(&self) -> ResourceInfo {
        info("", "v1", "pods", "Pod", true, &["po"], &["all"])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::pod::PODS.table_convertor()
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
            "spec.nodeName",
            // old v1 clients' name for spec.nodeName
            "spec.host",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ]))
    }
    fn field_label_paths(&self) -> &'static [(&'static str, &'static str)] {
        &[("spec.host", "spec.nodeName")]
    }
    fn bool_field_labels(&self) -> &'static [&'static str] {
        &["spec.hostNetwork"]
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(Value::Object(spec)) = obj.get_mut("spec") {
            default_pod_spec(spec);
            // SetDefaults_Pod, not the pod spec defaults: templates do not get it
            default_in(spec, "enableServiceLinks", json!(true));
            for key in ["containers", "initContainers"] {
                if let Some(Value::Array(cs)) = spec.get_mut(key) {
                    for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                        default_requests_to_limits(c);
                    }
                }
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        let qos = qos_class(obj);
        obj.insert("status", json!({"phase": "Pending", "qosClass": qos}));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_pod_spec(&mut errs, obj.get("spec"), "spec");
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        if immutable_view(new) != immutable_view(old) {
            errs.push(FieldError::forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            ));
        }
        errs
    }
    fn graceful_delete(&self, obj: &Object, opts: &DeleteOptions) -> GracefulDelete {
        let phase = str_at(obj, &["status", "phase"]);
        if str_at(obj, &["spec", "nodeName"]).is_empty()
            || phase == "Succeeded"
            || phase == "Failed"
        {
            return GracefulDelete::Immediate;
        }
        let secs = opts
            .grace_period_seconds
            .or_else(|| at(obj, &["spec", "terminationGracePeriodSeconds"]).and_then(Value::as_i64))
            .unwrap_or(30);
        if secs <= 0 {
            GracefulDelete::Immediate
        } else {
            GracefulDelete::Graceful(secs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policy_rules() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("nginx:1.25"), "IfNotPresent");
        assert_eq!(pull_policy("localhost:5000/nginx"), "Always");
        assert_eq!(pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }

    /// As kube-apiserver 1.28.7 answers e2e `sysctl.go`'s pod.
    #[test]
    fn sysctl_names_are_checked() {
        let mut errs = Vec::new();
        let sysctls = json!([{"name": "foo-"}, {"name": "kernel.shmmax"},
            {"name": "safe-and-unsafe"}, {"name": "bar.."}, {"name": "kernel.shmmax"}, {"name": ""}]);
        validate_sysctls(&mut errs, Some(&sysctls), "spec.securityContext.sysctls");
        let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        let rule = r"must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
        assert_eq!(
            shown,
            [
                format!(r#"spec.securityContext.sysctls[0].name: Invalid value: "foo-": {rule}"#),
                format!(r#"spec.securityContext.sysctls[3].name: Invalid value: "bar..": {rule}"#),
                r#"spec.securityContext.sysctls[4].name: Duplicate value: "kernel.shmmax""#
                    .to_string(),
                "spec.securityContext.sysctls[5].name: Required value".to_string(),
            ]
        );
    }

    /// kube-apiserver 1.28.7 copies an unset request from the limit before admission, so
    /// LimitRanger's default request (e2e `limit_range.go`'s partial pod) does not replace it.
    #[test]
    fn requests_default_to_limits() {
        let mut pod = Object::from_value(json!({"metadata": {"name": "p"}, "spec": {
            "containers": [
                {"name": "a", "image": "i", "resources": {
                    "limits": {"cpu": "300m"},
                    "requests": {"memory": "150Mi", "ephemeral-storage": "150Gi"}}},
                {"name": "b", "image": "i", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "c", "image": "i", "resources": {"limits": {}}},
                {"name": "d", "image": "i", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}},
            ],
            "initContainers": [{"name": "i", "image": "i", "resources": {"limits": {"memory": "1Gi"}}}],
            "ephemeralContainers": [{"name": "e", "image": "i", "resources": {"limits": {"cpu": "1"}}}],
        }}))
        .unwrap();
        PodStrategy.defaults(&mut pod);
        let spec = &pod.as_map()["spec"];
        let requests = |key: &str, i: usize| spec[key][i]["resources"].get("requests").cloned();
        assert_eq!(
            requests("containers", 0),
            Some(json!({"cpu": "300m", "memory": "150Mi", "ephemeral-storage": "150Gi"}))
        );
        assert_eq!(
            requests("containers", 1),
            Some(json!({"cpu": "1", "memory": "1Gi"}))
        );
        // Go omits the empty map it makes
        assert_eq!(requests("containers", 2), None);
        assert_eq!(requests("containers", 3), Some(json!({"cpu": "1"})));
        assert_eq!(
            requests("initContainers", 0),
            Some(json!({"memory": "1Gi"}))
        );
        assert_eq!(requests("ephemeralContainers", 0), None);
    }
}
