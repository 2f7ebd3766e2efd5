//! apiregistration.k8s.io/v1 apiservices (with `/status`), as kube-aggregator's
//! `pkg/registry/apiservice` strategy and `pkg/apis/apiregistration/validation` have them, and
//! the local APIServices kube-apiserver registers for its own group/versions
//! (`cmd/kube-apiserver/app/aggregator.go`, the crdregistration controller).

use crate::strategy_group;
use crate::BuildContext;
use crate::{at, info, set_status, str_at, typed};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kapi_machinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_valid_path_segment_name,
};
use kapi_machinery::{FieldError, Object};
use kapi_registry::meta::now_rfc3339;
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::{keep_old_metadata, NameRule, Strategy};
use serde_json::{json, Value};
use std::sync::Arc;

pub use kapi_registry::group_priority::{
    builtin_priority, API_VERSION_PRIORITIES, CRD_GROUP_PRIORITY_MINIMUM, CRD_VERSION_PRIORITY,
    GROUP,
};
pub const RESOURCE: &str = "apiservices";
/// The label the autoregister controller marks the APIServices it manages with.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
/// Registered once at start (built-in group/versions).
pub const MANAGE_ON_START: &str = "onstart";
/// Kept in step continuously (custom resources' group/versions).
pub const MANAGE_CONTINUOUSLY: &str = "true";
/// The name of a group/version's APIService: `<version>.<group>` (`v1.` for the core group).
pub fn apiservice_name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// A local APIService (no `spec.service`) as the autoregister controller creates it; an empty
/// group is left out, as Go's `omitempty` writes it.
pub fn local_apiservice(
    group: &str,
    version: &str,
    priorities: (i64, i64),
    managed: &str,
) -> Value {
    let mut spec = serde_json::Map::new();
    if !group.is_empty() {
        spec.insert("group".into(), json!(group));
    }
    spec.insert("groupPriorityMinimum".into(), json!(priorities.0));
    spec.insert("version".into(), json!(version));
    spec.insert("versionPriority".into(), json!(priorities.1));
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "APIService",
        "metadata": {"name": apiservice_name(group, version),
            "labels": {AUTOMANAGED_LABEL: managed}},
        "spec": spec})
}

/// `NewLocalAvailableAPIServiceCondition`.
pub fn local_available_condition() -> Value {
    json!({"type": "Available", "status": "True", "lastTransitionTime": now_rfc3339(),
        "reason": "Local", "message": "Local APIServices are always available"})
}

/// The `Available` condition of an APIService, if any.
pub fn available_condition(obj: &Object) -> Option<&Value> {
    at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
}

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [Arc::new(ApiServiceStrategy) as Arc<dyn Strategy>];
    vec![strategy_group(ctx, GROUP, "v1", table)]
}

const CONDITION_STATUSES: &[&str] = &["True", "False", "Unknown"];

pub struct ApiServiceStrategy;
impl Strategy for ApiServiceStrategy {
    // The two priorities are plain int32s upstream: absent decodes as 0 (and is refused)
    typed!(
        APIService,
        zeros = &[
            (&["spec", "groupPriorityMinimum"], json!(0)),
            (&["spec", "versionPriority"], json!(0)),
        ]
    );
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            RESOURCE,
            "APIService",
            false,
            &[],
            &["api-extensions"],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::groups::APISERVICES.table_convertor()
    }
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
    fn defaults(&self, obj: &mut Object) {
        // `SetDefaults_ServiceReference`
        if let Some(service) = obj
            .as_map_mut()
            .get_mut("spec")
            .and_then(|s| s.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            crate::default_in(service, "port", json!(443));
        }
    }
    fn has_status(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({})));
        // local APIServices are available from the start
        if is_local(obj) {
            kapi_registry::kind::set_condition(obj, local_available_condition());
        }
    }
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        match at(old, &["spec"]) {
            Some(spec) => {
                new.insert("spec", spec.clone());
            }
            None => {
                new.remove("spec");
            }
        }
        keep_old_metadata(
            new,
            old,
            &["labels", "annotations", "finalizers", "ownerReferences"],
        );
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        validate_apiservice(obj)
    }
    fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let conditions = at(new, &["status", "conditions"]).and_then(Value::as_array);
        for (i, c) in conditions.into_iter().flatten().enumerate() {
            let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
            if !CONDITION_STATUSES.contains(&status) {
                errs.push(FieldError::not_supported(
                    format!("status.conditions[{i}].status"),
                    status,
                    CONDITION_STATUSES,
                ));
            }
        }
        errs
    }
}

/// Whether an APIService is served by this server (no `spec.service`).
pub fn is_local(obj: &Object) -> bool {
    at(obj, &["spec", "service"]).is_none_or(Value::is_null)
}

/// `ValidateAPIService` (object metadata is the Store's; the name's own rule is here).
pub fn validate_apiservice(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = str_at(obj, &["spec", "group"]);
    let version = str_at(obj, &["spec", "version"]);
    let required_name = apiservice_name(group, version);
    let name = obj.name();
    // the Store reports a name that is no path segment; otherwise it must be version.group
    if !name.is_empty() && is_valid_path_segment_name(name).is_empty() && name != required_name {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            format!("must be `spec.version+\".\"+spec.group`: {required_name:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for msg in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid("spec.group", group, msg));
        }
    }
    for msg in is_dns1035_label(version) {
        errs.push(FieldError::invalid("spec.version", version, msg));
    }
    let int = |path: &[&str]| at(obj, path).and_then(Value::as_i64).unwrap_or(0);
    let group_priority = int(&["spec", "groupPriorityMinimum"]);
    if group_priority <= 0 || group_priority > 20000 {
        errs.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            group_priority,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int(&["spec", "versionPriority"]);
    if version_priority <= 0 || version_priority > 1000 {
        errs.push(FieldError::invalid(
            "spec.versionPriority",
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = ca_bundle_len(obj);
    let insecure = at(obj, &["spec", "insecureSkipTLSVerify"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if is_local(obj) {
        if ca_bundle != 0 {
            errs.push(FieldError::invalid(
                "spec.caBundle",
                format!("{ca_bundle} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    }
    if str_at(obj, &["spec", "service", "namespace"]).is_empty() {
        errs.push(FieldError::required("spec.service.namespace", ""));
    }
    if str_at(obj, &["spec", "service", "name"]).is_empty() {
        errs.push(FieldError::required("spec.service.name", ""));
    }
    if insecure && ca_bundle > 0 {
        errs.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            true,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// The decoded length of `spec.caBundle` (base64 in JSON; decoding already checked it).
fn ca_bundle_len(obj: &Object) -> usize {
    use base64::Engine;
    let b64 = str_at(obj, &["spec", "caBundle"]);
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_or(0, |b| b.len())
}
