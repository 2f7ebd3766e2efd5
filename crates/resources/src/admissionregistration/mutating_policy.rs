//! `admissionregistration.k8s.io/v1alpha1` MutatingAdmissionPolicy and its binding (1.33):
//! upstream's defaults (`v1alpha1/defaults.go`: failurePolicy `Fail`, the match resources'
//! defaults; no reinvocationPolicy default, so it is required) and validation
//! (`ValidateMutatingAdmissionPolicy*` in `pkg/apis/admissionregistration/validation`).
//! Stored as v1alpha1, the only version 1.33 has; no `/status`.

use super::policy_validation::{match_resources, param_kind, policy_name_and_param, variables};
use super::validation::{items, match_conditions, s, AdmissionEnv, Ty, FAILURE_POLICIES};
use super::{api_extensions_info, default_match_resources, fill_list};
use crate::typed;
use k8s_openapi::api::admissionregistration::v1alpha1 as api;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::Strategy;
use serde_json::{json, Value};
use std::sync::Arc;

/// `supportedMutatingOperations`, sorted as its `List()`: a mutation never applies to DELETE.
const MUTATING_OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "UPDATE"];
const PATCH_TYPES: &[&str] = &["ApplyConfiguration", "JSONPatch"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];

fn fill_policy_zeros(body: &mut Object) {
    if let Some(Value::Object(spec)) = body.get_mut("spec") {
        fill_list(spec, "variables", &["name", "expression"]);
        fill_list(spec, "matchConditions", &["name", "expression"]);
        fill_list(spec, "mutations", &["patchType"]);
    }
}

pub struct MutatingAdmissionPolicyStrategy;
impl Strategy for MutatingAdmissionPolicyStrategy {
    typed!(api::MutatingAdmissionPolicy, fill = fill_policy_zeros);
    fn info(&self) -> ResourceInfo {
        api_extensions_info(
            "v1alpha1",
            "mutatingadmissionpolicies",
            "MutatingAdmissionPolicy",
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::admissionregistration::MUTATING_ADMISSION_POLICIES.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        if let Some(Value::Object(spec)) = obj.get_mut("spec") {
            crate::default_in(spec, "failurePolicy", json!("Fail"));
            if let Some(Value::Object(m)) = spec.get_mut("matchConstraints") {
                default_match_resources(m);
            }
        }
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        policy(obj)
    }
}

pub struct MutatingAdmissionPolicyBindingStrategy;
impl Strategy for MutatingAdmissionPolicyBindingStrategy {
    typed!(api::MutatingAdmissionPolicyBinding);
    fn info(&self) -> ResourceInfo {
        api_extensions_info(
            "v1alpha1",
            "mutatingadmissionpolicybindings",
            "MutatingAdmissionPolicyBinding",
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::admissionregistration::POLICY_BINDINGS.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        super::default_binding(obj);
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        binding(obj)
    }
}

/// The operations of `resourceRules` a mutation cannot apply to; upstream's field path has
/// no index.
fn mutating_operations(errs: &mut Vec<FieldError>, m: &Value, p: &str) {
    for (_, rule) in items(m.get("resourceRules")) {
        for (_, op) in items(rule.get("operations")) {
            let op = op.as_str().unwrap_or_default();
            if !MUTATING_OPERATIONS.contains(&op) {
                errs.push(FieldError::not_supported(
                    format!("{p}.resourceRules.operations"),
                    op,
                    MUTATING_OPERATIONS,
                ));
            }
        }
    }
}

/// `validateMutatingAdmissionPolicySpec`.
pub fn policy(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    match s(&spec, "failurePolicy") {
        None => errs.push(FieldError::required("spec.failurePolicy", "")),
        Some(x) if !FAILURE_POLICIES.contains(&x) => errs.push(FieldError::not_supported(
            "spec.failurePolicy",
            x,
            FAILURE_POLICIES,
        )),
        _ => {}
    }
    let pk = spec.get("paramKind").filter(|v| !v.is_null());
    if let Some(pk) = pk {
        param_kind(&mut errs, pk);
    }
    match spec.get("matchConstraints").filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required("spec.matchConstraints", "")),
        Some(m) => {
            match_resources(&mut errs, m, "spec.matchConstraints");
            if items(m.get("resourceRules")).next().is_none() {
                errs.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
            mutating_operations(&mut errs, m, "spec.matchConstraints");
        }
    }
    let mut env = AdmissionEnv::policy(pk.is_some());
    let variable_errs = variables(&spec, &mut env);
    match_conditions(
        &mut errs,
        spec.get("matchConditions"),
        "spec.matchConditions",
        &env,
    );
    errs.extend(variable_errs);
    let mutations: Vec<(usize, &Value)> = items(spec.get("mutations")).collect();
    if mutations.is_empty() {
        errs.push(FieldError::required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    let env = env.with_patch_types();
    for (i, m) in mutations {
        mutation(&mut errs, &env, m, &format!("spec.mutations[{i}]"));
    }
    match s(&spec, "reinvocationPolicy").filter(|r| !r.is_empty()) {
        None => errs.push(FieldError::required("spec.reinvocationPolicy", "")),
        Some(r) if !REINVOCATION_POLICIES.contains(&r) => errs.push(FieldError::not_supported(
            "spec.reinvocationPolicy",
            r,
            REINVOCATION_POLICIES,
        )),
        _ => {}
    }
    errs
}

/// `validateMutation`: the patch type names which of the two is set.
fn mutation(errs: &mut Vec<FieldError>, env: &AdmissionEnv, m: &Value, p: &str) {
    let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    let expression = |errs: &mut Vec<FieldError>, key: &str, returns: Ty| {
        let expr = m
            .get(key)
            .and_then(|c| c.get("expression"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim();
        let field = format!("{p}.{key}.expression");
        if expr.is_empty() {
            errs.push(FieldError::required(field, ""));
        } else if let Err(e) = env.compile(expr, &[returns]) {
            errs.push(FieldError::invalid(field, expr, e));
        }
    };
    match s(m, "patchType").unwrap_or_default() {
        "" => errs.push(FieldError::required(format!("{p}.patchType"), "")),
        "JSONPatch" => {
            if present("jsonPatch") {
                expression(errs, "jsonPatch", json_patch_list());
            } else {
                errs.push(FieldError::required(
                    format!("{p}.jsonPatch"),
                    "must be specified when patchType is JSONPatch",
                ));
            }
            if present("applyConfiguration") {
                errs.push(FieldError::invalid(
                    format!("{p}.applyConfiguration"),
                    "{applyConfiguration}",
                    "must not be specified when patchType is JSONPatch",
                ));
            }
        }
        "ApplyConfiguration" => {
            if present("applyConfiguration") {
                expression(
                    errs,
                    "applyConfiguration",
                    Ty::object("Object", Default::default()),
                );
            } else {
                errs.push(FieldError::required(
                    format!("{p}.applyConfiguration"),
                    "must be specified when patchType is ApplyConfiguration",
                ));
            }
            if present("jsonPatch") {
                errs.push(FieldError::invalid(
                    format!("{p}.jsonPatch"),
                    "{jsonPatch}",
                    "must not be specified when patchType is ApplyConfiguration",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{p}.patchType"),
            other,
            PATCH_TYPES,
        )),
    }
}

/// `list(JSONPatch)`, the result type of a JSON patch expression.
fn json_patch_list() -> Ty {
    Ty::list(Ty::object("JSONPatch", Default::default()))
}

/// `validateMutatingAdmissionPolicyBindingSpec`.
pub fn binding(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    policy_name_and_param(&mut errs, &spec);
    if let Some(m) = spec.get("matchResources").filter(|v| !v.is_null()) {
        match_resources(&mut errs, m, "spec.matchResources");
        mutating_operations(&mut errs, m, "spec.matchResources");
    }
    errs
}
