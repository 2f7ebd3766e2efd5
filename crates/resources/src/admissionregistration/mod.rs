//! admissionregistration.k8s.io: mutating and validating webhook configurations,
//! validating admission policies (with `/status`) and their bindings, with upstream's
//! defaults (`pkg/apis/admissionregistration/v1/defaults.go`) and validation
//! (`pkg/apis/admissionregistration/validation`). v1 is served by default; v1beta1 (the
//! policies and bindings, stored as v1) only when `--runtime-config` turns it on, as upstream;
//! v1alpha1 (mutating admission policies and bindings) likewise.

mod mutating_policy;
mod policy_validation;
mod validation;

use crate::strategy_group;
use crate::BuildContext;
use crate::{default_in, info, typed};
use k8s_openapi::api::admissionregistration::{v1 as api, v1beta1};
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::{reset_object_meta_for_status, Strategy};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const GROUP: &str = "admissionregistration.k8s.io";

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [
        Arc::new(MutatingWebhookConfigurationStrategy) as Arc<dyn Strategy>,
        Arc::new(ValidatingWebhookConfigurationStrategy),
        Arc::new(ValidatingAdmissionPolicyStrategy),
        Arc::new(ValidatingAdmissionPolicyBindingStrategy),
    ];
    let v1beta1 = [
        Arc::new(ValidatingAdmissionPolicyV1beta1Strategy) as Arc<dyn Strategy>,
        Arc::new(ValidatingAdmissionPolicyBindingV1beta1Strategy),
    ];
    let v1alpha1 = [
        Arc::new(mutating_policy::MutatingAdmissionPolicyStrategy) as Arc<dyn Strategy>,
        Arc::new(mutating_policy::MutatingAdmissionPolicyBindingStrategy),
    ];
    let mut group = strategy_group(ctx, GROUP, "v1", table);
    group
        .versions
        .extend(strategy_group(ctx, GROUP, "v1beta1", v1beta1).versions);
    group
        .versions
        .extend(strategy_group(ctx, GROUP, "v1alpha1", v1alpha1).versions);
    vec![group]
}

/// Fills the fields the typed structs require with Go's zero values, so an incomplete body
/// reaches validation (422 with the field named) instead of failing to decode.
fn fill_webhook_zeros(body: &mut Object) {
    if let Some(Value::Array(hooks)) = body.get_mut("webhooks") {
        for h in hooks.iter_mut().filter_map(Value::as_object_mut) {
            default_in(h, "name", json!(""));
            default_in(h, "clientConfig", json!({}));
            default_in(h, "sideEffects", json!(""));
            default_in(h, "admissionReviewVersions", json!([]));
            if let Some(Value::Object(svc)) =
                h.get_mut("clientConfig").and_then(|c| c.get_mut("service"))
            {
                default_in(svc, "name", json!(""));
                default_in(svc, "namespace", json!(""));
            }
            fill_list(h, "matchConditions", &["name", "expression"]);
        }
    }
}

fn fill_list(m: &mut Map<String, Value>, key: &str, fields: &[&str]) {
    if let Some(Value::Array(items)) = m.get_mut(key) {
        for it in items.iter_mut().filter_map(Value::as_object_mut) {
            for f in fields {
                default_in(it, f, json!(""));
            }
        }
    }
}

fn fill_policy_zeros(body: &mut Object) {
    if let Some(Value::Object(spec)) = body.get_mut("spec") {
        fill_list(spec, "validations", &["expression"]);
        fill_list(spec, "variables", &["name", "expression"]);
        fill_list(spec, "auditAnnotations", &["key", "valueExpression"]);
        fill_list(spec, "matchConditions", &["name", "expression"]);
    }
}

/// Upstream's `SetDefaults_Rule`: scope `*`.
fn default_rules(rules: Option<&mut Value>) {
    if let Some(Value::Array(rules)) = rules {
        for r in rules.iter_mut().filter_map(Value::as_object_mut) {
            default_in(r, "scope", json!("*"));
        }
    }
}

/// The defaults every webhook gets (`SetDefaults_ValidatingWebhook` and the mutating one).
fn default_webhook(h: &mut Map<String, Value>, mutating: bool) {
    default_in(h, "failurePolicy", json!("Fail"));
    default_in(h, "matchPolicy", json!("Equivalent"));
    default_in(h, "namespaceSelector", json!({}));
    default_in(h, "objectSelector", json!({}));
    default_in(h, "timeoutSeconds", json!(10));
    if mutating {
        default_in(h, "reinvocationPolicy", json!("Never"));
    }
    if let Some(Value::Object(svc)) = h.get_mut("clientConfig").and_then(|c| c.get_mut("service")) {
        default_in(svc, "port", json!(443));
    }
    default_rules(h.get_mut("rules"));
}

fn default_webhooks(obj: &mut Object, mutating: bool) {
    if let Some(Value::Array(hooks)) = obj.get_mut("webhooks") {
        for h in hooks.iter_mut().filter_map(Value::as_object_mut) {
            default_webhook(h, mutating);
        }
    }
}

/// A policy binding's defaults: those of its `spec.matchResources`.
fn default_binding(obj: &mut Object) {
    if let Some(Value::Object(m)) = obj
        .get_mut("spec")
        .and_then(|s| s.get_mut("matchResources"))
    {
        default_match_resources(m);
    }
}

/// `SetDefaults_MatchResources`.
fn default_match_resources(m: &mut Map<String, Value>) {
    default_in(m, "matchPolicy", json!("Equivalent"));
    default_in(m, "namespaceSelector", json!({}));
    default_in(m, "objectSelector", json!({}));
    default_rules(m.get_mut("resourceRules"));
    default_rules(m.get_mut("excludeResourceRules"));
}

/// The description of this group's resources: cluster-scoped, in the `api-extensions`
/// category.
fn api_extensions_info(version: &str, resource: &str, kind: &str) -> ResourceInfo {
    info(
        GROUP,
        version,
        resource,
        kind,
        false,
        &[],
        &["api-extensions"],
    )
}

macro_rules! webhook_strategy {
    ($name:ident, $ty:ty, $resource:literal, $kind:literal, $mutating:expr) => {
        pub struct $name;
        impl Strategy for $name {
            crate::typed!($ty, fill = fill_webhook_zeros);
            fn info(&self) -> ResourceInfo {
                api_extensions_info("v1", $resource, $kind)
            }
            fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
                crate::printers::admissionregistration::WEBHOOK_CONFIGURATIONS.table_convertor()
            }
            fn tracks_generation(&self) -> bool {
                true
            }
            fn defaults(&self, obj: &mut Object) {
                default_webhooks(obj, $mutating);
            }
            fn validate(&self, obj: &Object) -> Vec<FieldError> {
                validation::webhook_configuration(obj, $mutating, None)
            }
            fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
                validation::webhook_configuration(new, $mutating, Some(old))
            }
        }
    };
}

webhook_strategy!(
    MutatingWebhookConfigurationStrategy,
    api::MutatingWebhookConfiguration,
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    true
);
webhook_strategy!(
    ValidatingWebhookConfigurationStrategy,
    api::ValidatingWebhookConfiguration,
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    false
);

/// A ValidatingAdmissionPolicy strategy at one version. v1beta1 has v1's schema in 1.33;
/// objects are stored as v1 (upstream's storage version) and read back in the version asked.
macro_rules! policy_strategies {
    ($policy:ident, $binding:ident, $ty:ident, $version:literal) => {
        pub struct $policy;
        impl Strategy for $policy {
            typed!($ty::ValidatingAdmissionPolicy, fill = fill_policy_zeros);
            fn info(&self) -> ResourceInfo {
                api_extensions_info(
                    $version,
                    "validatingadmissionpolicies",
                    "ValidatingAdmissionPolicy",
                )
            }
            fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
                crate::printers::admissionregistration::VALIDATING_ADMISSION_POLICIES
                    .table_convertor()
            }
            fn tracks_generation(&self) -> bool {
                true
            }
            fn has_status(&self) -> bool {
                true
            }
            fn defaults(&self, obj: &mut Object) {
                if let Some(Value::Object(spec)) = obj.get_mut("spec") {
                    default_in(spec, "failurePolicy", json!("Fail"));
                    if let Some(Value::Object(m)) = spec.get_mut("matchConstraints") {
                        default_match_resources(m);
                    }
                }
            }
            fn prepare_for_create(&self, obj: &mut Object) {
                obj.remove("status");
            }
            fn prepare_for_update(&self, new: &mut Object, old: &Object) {
                kapi_registry::strategy::copy_status(new, old);
            }
            fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
                kapi_registry::strategy::keep_all_but_status_and_metadata(new, old);
                reset_object_meta_for_status(new, old);
            }
            fn validate(&self, obj: &Object) -> Vec<FieldError> {
                policy_validation::policy(obj)
            }
            fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
                policy_validation::policy_status(new)
            }
            fn to_storage(&self, obj: Object) -> Object {
                with_version(obj, STORAGE_VERSION, "ValidatingAdmissionPolicy")
            }
            fn converts_from_storage(&self) -> bool {
                $version != STORAGE_VERSION
            }
            fn convert_from_storage(&self, obj: Object) -> Object {
                with_version(obj, $version, "ValidatingAdmissionPolicy")
            }
        }

        pub struct $binding;
        impl Strategy for $binding {
            typed!($ty::ValidatingAdmissionPolicyBinding);
            fn info(&self) -> ResourceInfo {
                api_extensions_info(
                    $version,
                    "validatingadmissionpolicybindings",
                    "ValidatingAdmissionPolicyBinding",
                )
            }
            fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
                crate::printers::admissionregistration::POLICY_BINDINGS.table_convertor()
            }
            fn tracks_generation(&self) -> bool {
                true
            }
            fn defaults(&self, obj: &mut Object) {
                default_binding(obj);
            }
            fn validate(&self, obj: &Object) -> Vec<FieldError> {
                policy_validation::binding(obj)
            }
            fn to_storage(&self, obj: Object) -> Object {
                with_version(obj, STORAGE_VERSION, "ValidatingAdmissionPolicyBinding")
            }
            fn converts_from_storage(&self) -> bool {
                $version != STORAGE_VERSION
            }
            fn convert_from_storage(&self, obj: Object) -> Object {
                with_version(obj, $version, "ValidatingAdmissionPolicyBinding")
            }
        }
    };
}

policy_strategies!(
    ValidatingAdmissionPolicyStrategy,
    ValidatingAdmissionPolicyBindingStrategy,
    api,
    "v1"
);
policy_strategies!(
    ValidatingAdmissionPolicyV1beta1Strategy,
    ValidatingAdmissionPolicyBindingV1beta1Strategy,
    v1beta1,
    "v1beta1"
);

/// The version every version of this group's resources is stored in.
const STORAGE_VERSION: &str = "v1";

/// `obj` relabelled as `version` of `kind`: between versions whose schemas are the same.
fn with_version(mut obj: Object, version: &str, kind: &str) -> Object {
    obj.set_api_version_kind(&format!("{GROUP}/{version}"), kind);
    obj
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
