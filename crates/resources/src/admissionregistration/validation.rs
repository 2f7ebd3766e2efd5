//! Upstream's `pkg/apis/admissionregistration/validation` for the v1 kinds, with its wording.

use crate::policy::validate_label_selector;
pub(super) use kapi_admission::policy::cel::env::AdmissionEnv;
pub(super) use kapi_admission::policy::cel::types::Ty;
use kapi_machinery::validation::{is_dns1123_subdomain, is_qualified_name};
use kapi_machinery::{BadValue, FieldError, Object};
use serde_json::Value;
use std::collections::BTreeSet;

const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
pub(super) const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
pub(super) const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const ALL_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];

pub(super) fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|s| s.as_str().unwrap_or_default()).collect())
        .unwrap_or_default()
}

pub(super) fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(super) fn items(v: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// `utilvalidation.IsFullyQualifiedName`.
fn fully_qualified_name(errs: &mut Vec<FieldError>, name: &str, field: &str) {
    if name.is_empty() {
        errs.push(FieldError::required(field, ""));
    } else if let e @ [_, ..] = is_dns1123_subdomain(name).as_slice() {
        errs.push(FieldError::invalid(field, name, e.join(",")));
    } else if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(
            field,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

/// Both webhook configuration kinds; `old` relaxes the checks upstream relaxes on update
/// for configurations stored before they were introduced.
pub fn webhook_configuration(
    obj: &Object,
    mutating: bool,
    old: Option<&Object>,
) -> Vec<FieldError> {
    let old_hooks: Vec<&Value> = old
        .and_then(|o| o.get("webhooks"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let require_no_side_effects = old.is_none()
        || old_hooks
            .iter()
            .all(|h| s(h, "sideEffects").is_some_and(|v| NO_SIDE_EFFECTS.contains(&v)));
    let require_known_versions = old.is_none()
        || old_hooks.iter().all(|h| {
            let v = strs(h.get("admissionReviewVersions"));
            v.is_empty() || v.iter().any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
        });
    let require_unique = old.is_none() || {
        let mut seen = BTreeSet::new();
        old_hooks
            .iter()
            .all(|h| seen.insert(s(h, "name").unwrap_or_default()))
    };
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, h) in items(obj.get("webhooks")) {
        let p = format!("webhooks[{i}]");
        webhook(&mut errs, h, mutating, require_no_side_effects, &p);
        review_versions(
            &mut errs,
            h.get("admissionReviewVersions"),
            require_known_versions,
            &format!("{p}.admissionReviewVersions"),
        );
        let name = s(h, "name").unwrap_or_default();
        if require_unique && !name.is_empty() && !names.insert(name) {
            errs.push(FieldError::duplicate(format!("{p}.name"), name));
        }
    }
    errs
}

fn review_versions(
    errs: &mut Vec<FieldError>,
    v: Option<&Value>,
    require_known: bool,
    field: &str,
) {
    let versions = strs(v);
    if versions.is_empty() {
        errs.push(FieldError::required(
            field,
            format!(
                "must specify one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            errs.push(FieldError::invalid(
                format!("{field}[{i}]"),
                *v,
                "duplicate version",
            ));
            continue;
        }
        for e in kapi_machinery::validation::is_dns1035_label(v) {
            errs.push(FieldError::invalid(format!("{field}[{i}]"), *v, e));
        }
    }
    if require_known
        && !versions
            .iter()
            .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
    {
        errs.push(FieldError::invalid(
            field,
            BadValue::strings(v),
            format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

fn webhook(errs: &mut Vec<FieldError>, h: &Value, mutating: bool, no_side_effects: bool, p: &str) {
    fully_qualified_name(errs, s(h, "name").unwrap_or_default(), &format!("{p}.name"));
    for (i, r) in items(h.get("rules")) {
        rule_with_operations(errs, r, &format!("{p}.rules[{i}]"));
    }
    one_of(errs, h, "failurePolicy", FAILURE_POLICIES, p);
    one_of(errs, h, "matchPolicy", MATCH_POLICIES, p);
    let allowed = if no_side_effects {
        NO_SIDE_EFFECTS
    } else {
        ALL_SIDE_EFFECTS
    };
    match s(h, "sideEffects") {
        None | Some("") => errs.push(FieldError::required(
            format!("{p}.sideEffects"),
            format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(v) if !allowed.contains(&v) => errs.push(FieldError::not_supported(
            format!("{p}.sideEffects"),
            v,
            allowed,
        )),
        _ => {}
    }
    if let Some(t) = h.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=30).contains(&t) {
            errs.push(FieldError::invalid(
                format!("{p}.timeoutSeconds"),
                t,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    validate_label_selector(
        errs,
        h.get("namespaceSelector"),
        &format!("{p}.namespaceSelector"),
    );
    validate_label_selector(
        errs,
        h.get("objectSelector"),
        &format!("{p}.objectSelector"),
    );
    if mutating {
        one_of(errs, h, "reinvocationPolicy", REINVOCATION_POLICIES, p);
    }
    client_config(errs, h.get("clientConfig"), &format!("{p}.clientConfig"));
    match_conditions(
        errs,
        h.get("matchConditions"),
        &format!("{p}.matchConditions"),
        &AdmissionEnv::webhook(),
    );
}

pub(super) fn one_of(errs: &mut Vec<FieldError>, v: &Value, key: &str, allowed: &[&str], p: &str) {
    if let Some(x) = s(v, key) {
        if !allowed.contains(&x) {
            errs.push(FieldError::not_supported(format!("{p}.{key}"), x, allowed));
        }
    }
}

fn client_config(errs: &mut Vec<FieldError>, cc: Option<&Value>, p: &str) {
    let url = cc.and_then(|c| c.get("url")).and_then(Value::as_str);
    let svc = cc.and_then(|c| c.get("service")).filter(|v| !v.is_null());
    match (url, svc) {
        (Some(u), None) => webhook_url(errs, u, &format!("{p}.url")),
        (None, Some(svc)) => webhook_service(errs, svc, &format!("{p}.service")),
        _ => errs.push(FieldError::required(
            p,
            "exactly one of url or service is required",
        )),
    }
}

/// `webhook.ValidateWebhookURL` with https forced.
pub fn webhook_url(errs: &mut Vec<FieldError>, url: &str, field: &str) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if scheme.is_empty() {
        ""
    } else {
        rest.split('/').next().unwrap_or("")
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            field,
            scheme,
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            field,
            host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(u) = user {
        errs.push(FieldError::invalid(
            field,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            field,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            field,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `webhook.ValidateWebhookService`.
fn webhook_service(errs: &mut Vec<FieldError>, svc: &Value, p: &str) {
    if s(svc, "name").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(
            format!("{p}.name"),
            "service name is required",
        ));
    }
    if s(svc, "namespace").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(
            format!("{p}.namespace"),
            "service namespace is required",
        ));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            format!("{p}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = s(svc, "path") else { return };
    if path.is_empty() || path == "/" {
        return;
    }
    if path == "//" {
        errs.push(FieldError::invalid(
            format!("{p}.path"),
            path,
            "segment[0] may not be empty",
        ));
        return;
    }
    if !path.starts_with('/') {
        errs.push(FieldError::invalid(
            format!("{p}.path"),
            path,
            "must start with a '/'",
        ));
    }
    let trimmed = path.trim_start_matches('/').trim_end_matches('/');
    for (i, seg) in trimmed.split('/').enumerate() {
        if seg.is_empty() {
            errs.push(FieldError::invalid(
                format!("{p}.path"),
                path,
                format!("segment[{i}] may not be empty"),
            ));
        } else {
            for e in is_dns1123_subdomain(seg) {
                errs.push(FieldError::invalid(
                    format!("{p}.path"),
                    path,
                    format!("segment[{i}]: {e}"),
                ));
            }
        }
    }
}

pub(super) fn go_list(v: Option<&Value>, ty: &str) -> BadValue {
    let inner: Vec<String> = strs(v)
        .iter()
        .map(|s| kapi_machinery::goformat::quote(s))
        .collect();
    BadValue::Go(format!("[]{ty}{{{}}}", inner.join(", ")))
}

pub(super) fn rule_with_operations(errs: &mut Vec<FieldError>, r: &Value, p: &str) {
    let ops = strs(r.get("operations"));
    if ops.is_empty() {
        errs.push(FieldError::required(format!("{p}.operations"), ""));
    }
    if ops.len() > 1 && ops.contains(&"*") {
        errs.push(FieldError::invalid(
            format!("{p}.operations"),
            go_list(r.get("operations"), "admissionregistration.OperationType"),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(FieldError::not_supported(
                format!("{p}.operations[{i}]"),
                *op,
                OPERATIONS,
            ));
        }
    }
    rule(errs, r, p);
}

fn rule(errs: &mut Vec<FieldError>, r: &Value, p: &str) {
    let groups = strs(r.get("apiGroups"));
    if groups.is_empty() {
        errs.push(FieldError::required(format!("{p}.apiGroups"), ""));
    }
    if groups.len() > 1 && groups.contains(&"*") {
        errs.push(FieldError::invalid(
            format!("{p}.apiGroups"),
            BadValue::strings(r.get("apiGroups")),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strs(r.get("apiVersions"));
    if versions.is_empty() {
        errs.push(FieldError::required(format!("{p}.apiVersions"), ""));
    }
    if versions.len() > 1 && versions.contains(&"*") {
        errs.push(FieldError::invalid(
            format!("{p}.apiVersions"),
            BadValue::strings(r.get("apiVersions")),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(FieldError::required(format!("{p}.apiVersions[{i}]"), ""));
        }
    }
    resources(errs, r.get("resources"), &format!("{p}.resources"));
    one_of(errs, r, "scope", SCOPES, p);
}

/// `validateResources` (subresources allowed).
fn resources(errs: &mut Vec<FieldError>, v: Option<&Value>, p: &str) {
    let res = strs(v);
    if res.is_empty() {
        errs.push(FieldError::required(p, ""));
    }
    let mut res_with_wild_sub = BTreeSet::new();
    let mut sub_with_wild_res = BTreeSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, rs) in res.iter().enumerate() {
        if rs.is_empty() {
            errs.push(FieldError::required(format!("{p}[{i}]"), ""));
            continue;
        }
        double |= *rs == "*/*";
        single |= *rs == "*";
        let Some((r, sub)) = rs.split_once('/') else {
            plain = *rs != "*";
            continue;
        };
        if res_with_wild_sub.contains(r) {
            errs.push(FieldError::invalid(
                format!("{p}[{i}]"),
                *rs,
                format!("if '{r}/*' is present, must not specify {rs}"),
            ));
        }
        if sub_with_wild_res.contains(sub) {
            errs.push(FieldError::invalid(
                format!("{p}[{i}]"),
                *rs,
                format!("if '*/{sub}' is present, must not specify {rs}"),
            ));
        }
        if sub == "*" {
            res_with_wild_sub.insert(r);
        }
        if r == "*" {
            sub_with_wild_res.insert(sub);
        }
    }
    if res.len() > 1 && double {
        errs.push(FieldError::invalid(
            p,
            BadValue::strings(v),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        errs.push(FieldError::invalid(
            p,
            BadValue::strings(v),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// A CEL expression's compile error (parse and type errors with the variables `env`
/// declares) as upstream words it.
/// Compiles `expr` as upstream's `validateCELCondition`: it must check and its result must be
/// one of `returns` (none: any type).
pub(super) fn cel_check(
    errs: &mut Vec<FieldError>,
    env: &AdmissionEnv,
    expr: &str,
    field: &str,
    returns: &[Ty],
) {
    if let Err(e) = env.compile(expr, returns) {
        errs.push(FieldError::invalid(field, expr, e));
    }
}

pub(super) fn match_conditions(
    errs: &mut Vec<FieldError>,
    v: Option<&Value>,
    p: &str,
    env: &AdmissionEnv,
) {
    let list: Vec<(usize, &Value)> = items(v).collect();
    if list.len() > 64 {
        errs.push(FieldError::new(
            kapi_machinery::error::FieldErrorType::TooMany,
            p,
            Some(BadValue::Int(list.len() as i64)),
            "must have at most 64 items",
        ));
    }
    let mut names = BTreeSet::new();
    for (i, mc) in list {
        let expr = s(mc, "expression").unwrap_or_default().trim();
        if expr.is_empty() {
            errs.push(FieldError::required(format!("{p}[{i}].expression"), ""));
        } else {
            cel_check(
                errs,
                env,
                expr,
                &format!("{p}[{i}].expression"),
                &[Ty::Bool],
            );
        }
        let name = s(mc, "name").unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(format!("{p}[{i}].name"), ""));
        } else {
            for e in is_qualified_name(name) {
                errs.push(FieldError::invalid(format!("{p}[{i}].name"), name, e));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(format!("{p}[{i}].name"), name));
            }
        }
    }
}
