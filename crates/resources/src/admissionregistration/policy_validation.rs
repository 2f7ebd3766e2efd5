//! Upstream's validation of ValidatingAdmissionPolicy and its bindings, with its wording.

use super::validation::{
    cel_check, go_list, items, match_conditions, one_of, rule_with_operations, s, strs,
    AdmissionEnv, Ty, FAILURE_POLICIES, MATCH_POLICIES,
};
use crate::policy::validate_label_selector;
use kapi_machinery::validation::{
    is_dns1123_subdomain, is_qualified_name, is_valid_path_segment_name,
};
use kapi_machinery::{BadValue, FieldError, Object};
use serde_json::Value;
use std::collections::BTreeSet;

const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];

/// `validateMatchResources`.
pub(super) fn match_resources(errs: &mut Vec<FieldError>, m: &Value, p: &str) {
    match s(m, "matchPolicy") {
        None => errs.push(FieldError::required(format!("{p}.matchPolicy"), "")),
        Some(x) if !MATCH_POLICIES.contains(&x) => errs.push(FieldError::not_supported(
            format!("{p}.matchPolicy"),
            x,
            MATCH_POLICIES,
        )),
        _ => {}
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match m.get(key).filter(|v| !v.is_null()) {
            None => errs.push(FieldError::required(format!("{p}.{key}"), "")),
            sel => validate_label_selector(errs, sel, &format!("{p}.{key}")),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in items(m.get(key)) {
            let rp = format!("{p}.{key}[{i}]");
            let mut seen = BTreeSet::new();
            for (j, n) in strs(r.get("resourceNames")).into_iter().enumerate() {
                for e in is_valid_path_segment_name(n) {
                    errs.push(FieldError::invalid(
                        format!("{rp}.resourceNames[{j}]"),
                        n,
                        e,
                    ));
                }
                if !seen.insert(n) {
                    errs.push(FieldError::duplicate(format!("{rp}.resourceNames[{j}]"), n));
                }
            }
            rule_with_operations(errs, r, &rp);
        }
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.first()
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !kapi_apiextensions::schema::CEL_RESERVED_SYMBOLS.contains(&name)
}

/// `ValidateValidatingAdmissionPolicy`.
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
    if let Some(pk) = spec.get("paramKind").filter(|v| !v.is_null()) {
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
        }
    }
    // Upstream compiles the variables first: every other expression may read them.
    let has_params = spec.get("paramKind").is_some_and(|v| !v.is_null());
    let mut env = AdmissionEnv::policy(has_params);
    let variable_errs = variables(&spec, &mut env);
    match_conditions(
        &mut errs,
        spec.get("matchConditions"),
        "spec.matchConditions",
        &env,
    );
    errs.extend(variable_errs);
    let validations: Vec<(usize, &Value)> = items(spec.get("validations")).collect();
    let annotations: Vec<(usize, &Value)> = items(spec.get("auditAnnotations")).collect();
    if validations.is_empty() && annotations.is_empty() {
        let d = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required("spec.validations", d));
        errs.push(FieldError::required("spec.auditAnnotations", d));
        return errs;
    }
    for (i, v) in validations {
        validation(&mut errs, &env, v, &format!("spec.validations[{i}]"));
    }
    if annotations.len() > 20 {
        errs.push(FieldError::invalid(
            "spec.auditAnnotations",
            BadValue::Go(format!("{:?}", annotations.len())),
            "must not have more than 20 auditAnnotations",
        ));
    }
    let mut keys = BTreeSet::new();
    for (i, a) in annotations {
        let p = format!("spec.auditAnnotations[{i}]");
        let key = s(a, "key").unwrap_or_default();
        if obj.name().is_empty() {
            errs.push(FieldError::invalid(
                format!("{p}.key"),
                key,
                "requires metadata.name be non-empty",
            ));
        } else {
            let full = format!("{}/{key}", obj.name());
            for e in is_qualified_name(&full) {
                errs.push(FieldError::invalid(format!("{p}.key"), full.as_str(), e));
            }
        }
        let ve = s(a, "valueExpression").unwrap_or_default().trim();
        if ve.is_empty() {
            errs.push(FieldError::required(
                format!("{p}.valueExpression"),
                "valueExpression is not specified",
            ));
        } else if ve.len() > 5 * 1024 {
            errs.push(FieldError::required(
                format!("{p}.valueExpression"),
                "must not exceed 5120 bytes in length",
            ));
        } else {
            cel_check(
                &mut errs,
                &env,
                ve,
                &format!("{p}.valueExpression"),
                &[Ty::string(), Ty::Null],
            );
        }
        if !keys.insert(key) {
            errs.push(FieldError::duplicate(format!("{p}.key"), key));
        }
    }
    errs
}

/// `validateVariable` for each of `spec.variables`, declaring each in `env` for the
/// expressions after it; the errors are returned to be reported where upstream reports them.
pub(super) fn variables(spec: &Value, env: &mut AdmissionEnv) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let checked: Vec<Result<(), String>> = items(spec.get("variables"))
        .map(|(_, v)| {
            let name = s(v, "name").unwrap_or_default();
            let expr = s(v, "expression").unwrap_or_default();
            env.declare(name, expr).map(|_| ())
        })
        .collect();
    for (i, v) in items(spec.get("variables")) {
        let p = format!("spec.variables[{i}]");
        let name = s(v, "name").unwrap_or_default();
        if name.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{p}.name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(name) {
            errs.push(FieldError::invalid(
                format!("{p}.name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        let expr = s(v, "expression").unwrap_or_default();
        if expr.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{p}.expression"),
                "expression is not specified",
            ));
        } else if let Some(Err(e)) = checked.get(i) {
            errs.push(FieldError::invalid(
                format!("{p}.expression"),
                expr,
                format!("compilation failed: {e}"),
            ));
        }
    }
    errs
}

fn validation(errs: &mut Vec<FieldError>, env: &AdmissionEnv, v: &Value, p: &str) {
    let expr = s(v, "expression").unwrap_or_default();
    if expr.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{p}.expression"),
            "expression is not specified",
        ));
    } else {
        cel_check(errs, env, expr, &format!("{p}.expression"), &[Ty::Bool]);
    }
    if let Some(me) = s(v, "messageExpression") {
        if !me.is_empty() && me.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{p}.messageExpression"),
                me,
                "must be non-empty if specified",
            ));
        } else if !me.trim().is_empty() {
            cel_check(
                errs,
                env,
                me,
                &format!("{p}.messageExpression"),
                &[Ty::string()],
            );
        }
    }
    if let Some(msg) = s(v, "message") {
        if !msg.is_empty() && msg.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{p}.message"),
                msg,
                "message must be non-empty if specified",
            ));
        } else if msg.trim().contains(['\n', '\r']) {
            errs.push(FieldError::invalid(
                format!("{p}.message"),
                msg,
                "message must not contain line breaks",
            ));
        }
    }
    one_of(errs, v, "reason", REASONS, p);
}

pub(super) fn param_kind(errs: &mut Vec<FieldError>, pk: &Value) {
    let av = s(pk, "apiVersion").unwrap_or_default();
    if av.is_empty() {
        errs.push(FieldError::required("spec.paramKind.apiVersion", ""));
    } else {
        let (group, version) = match av.matches('/').count() {
            0 => ("", av),
            1 => av.split_once('/').unwrap_or(("", av)),
            _ => {
                errs.push(FieldError::invalid(
                    "spec.paramKind.apiVersion",
                    av,
                    format!("unexpected GroupVersion string: {av}"),
                ));
                ("", "x")
            }
        };
        if !group.is_empty() {
            if let e @ [_, ..] = is_dns1123_subdomain(group).as_slice() {
                errs.push(FieldError::invalid(
                    "spec.paramKind.apiVersion",
                    group,
                    e.join(","),
                ));
            }
        }
        if version.is_empty() {
            errs.push(FieldError::invalid(
                "spec.paramKind.apiVersion",
                av,
                "version must be specified",
            ));
        } else if let e @ [_, ..] = kapi_machinery::validation::is_dns1035_label(version).as_slice()
        {
            errs.push(FieldError::invalid(
                "spec.paramKind.apiVersion",
                version,
                e.join(","),
            ));
        }
    }
    let kind = s(pk, "kind").unwrap_or_default();
    if kind.is_empty() {
        errs.push(FieldError::required("spec.paramKind.kind", ""));
    } else if let e @ [_, ..] =
        kapi_machinery::validation::is_dns1035_label(&kind.to_lowercase()).as_slice()
    {
        errs.push(FieldError::invalid(
            "spec.paramKind.kind",
            kind,
            format!(
                "may have mixed case, but should otherwise match: {}",
                e.join(",")
            ),
        ));
    }
}

/// `validateValidatingAdmissionPolicyStatus`: expression warnings need a warning and a field.
pub fn policy_status(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let warnings = obj
        .get("status")
        .and_then(|s| s.get("typeChecking"))
        .and_then(|t| t.get("expressionWarnings"));
    for (i, w) in items(warnings) {
        let p = format!("status.typeChecking.expressionWarnings[{i}]");
        if s(w, "warning").unwrap_or_default().is_empty() {
            errs.push(FieldError::required(format!("{p}.warning"), ""));
        }
        if s(w, "fieldRef").unwrap_or_default().trim().is_empty() {
            errs.push(FieldError::required(format!("{p}.fieldRef"), ""));
        }
    }
    errs
}

/// What every policy binding's spec checks first: `policyName` and `paramRef`.
pub fn policy_name_and_param(errs: &mut Vec<FieldError>, spec: &Value) {
    let policy = s(spec, "policyName").unwrap_or_default();
    if policy.is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    } else {
        for e in is_dns1123_subdomain(policy) {
            errs.push(FieldError::invalid("spec.policyName", policy, e));
        }
    }
    param_ref(errs, spec);
}

/// `ValidateValidatingAdmissionPolicyBinding`.
pub fn binding(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    policy_name_and_param(&mut errs, &spec);
    if let Some(m) = spec.get("matchResources").filter(|v| !v.is_null()) {
        // upstream's field path has this spelling
        match_resources(&mut errs, m, "spec.matchResouces");
    }
    let actions = strs(spec.get("validationActions"));
    let mut seen = BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !ACTIONS.contains(a) {
            errs.push(FieldError::not_supported(
                format!("spec.validationActions[{i}]"),
                *a,
                ACTIONS,
            ));
        }
        if !seen.insert(*a) {
            errs.push(FieldError::duplicate(
                format!("spec.validationActions[{i}]"),
                *a,
            ));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errs.push(FieldError::invalid(
            "spec.validationActions",
            go_list(spec.get("validationActions"), "admissionregistration.ValidationAction"),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(FieldError::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    errs
}

/// `validateParamRef` of a binding's `spec.paramRef`.
pub(super) fn param_ref(errs: &mut Vec<FieldError>, spec: &Value) {
    if let Some(pr) = spec.get("paramRef").filter(|v| !v.is_null()) {
        let name = s(pr, "name").unwrap_or_default();
        let selector = pr.get("selector").filter(|v| !v.is_null());
        if !name.is_empty() {
            for e in is_valid_path_segment_name(name) {
                errs.push(FieldError::invalid("spec.paramRef.name", name, e));
            }
            if selector.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.paramRef.name",
                    "name and selector are mutually exclusive",
                ));
            }
        }
        if selector.is_some() {
            validate_label_selector(errs, selector, "spec.paramRef.selector");
            if !name.is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.paramRef.selector",
                    "name and selector are mutually exclusive",
                ));
            }
        }
        if name.is_empty() && selector.is_none() {
            errs.push(FieldError::required(
                "spec.paramRef",
                "one of name or selector must be specified",
            ));
        }
        match s(pr, "parameterNotFoundAction") {
            None | Some("") => errs.push(FieldError::required(
                "spec.paramRef.parameterNotFoundAction",
                "",
            )),
            Some(a) if a != "Deny" && a != "Allow" => errs.push(FieldError::not_supported(
                "spec.paramRef.parameterNotFoundAction",
                a,
                &["Deny", "Allow"],
            )),
            _ => {}
        }
    }
}
