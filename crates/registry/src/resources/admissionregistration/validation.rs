//! Upstream's `pkg/apis/admissionregistration/validation` for the v1 kinds, with its wording.

use crate::resources::policy::validate_label_selector;
use kapi_machinery::validation::{
    is_dns1123_subdomain, is_qualified_name, is_valid_path_segment_name,
};
use kapi_machinery::{BadValue, FieldError, Object};
use serde_json::Value;
use std::collections::BTreeSet;

const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const ALL_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
const CEL_RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|s| s.as_str().unwrap_or_default()).collect())
        .unwrap_or_default()
}

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn items(v: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
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
    );
}

fn one_of(errs: &mut Vec<FieldError>, v: &Value, key: &str, allowed: &[&str], p: &str) {
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

fn go_list(v: Option<&Value>, ty: &str) -> BadValue {
    let inner: Vec<String> = strs(v)
        .iter()
        .map(|s| kapi_machinery::goformat::quote(s))
        .collect();
    BadValue::Go(format!("[]{ty}{{{}}}", inner.join(", ")))
}

fn rule_with_operations(errs: &mut Vec<FieldError>, r: &Value, p: &str) {
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

/// A CEL expression's compile error as upstream words it.
fn cel_check(errs: &mut Vec<FieldError>, expr: &str, field: &str) {
    if let Err(e) = kapi_admission::policy::cel::check(expr) {
        errs.push(FieldError::invalid(
            field,
            expr,
            format!("compilation failed: {e}"),
        ));
    }
}

fn match_conditions(errs: &mut Vec<FieldError>, v: Option<&Value>, p: &str) {
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
            cel_check(errs, expr, &format!("{p}[{i}].expression"));
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

/// `validateMatchResources`.
fn match_resources(errs: &mut Vec<FieldError>, m: &Value, p: &str) {
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
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !CEL_RESERVED.contains(&name)
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
    match_conditions(
        &mut errs,
        spec.get("matchConditions"),
        "spec.matchConditions",
    );
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
        } else {
            cel_check(&mut errs, expr, &format!("{p}.expression"));
        }
    }
    let validations: Vec<(usize, &Value)> = items(spec.get("validations")).collect();
    let annotations: Vec<(usize, &Value)> = items(spec.get("auditAnnotations")).collect();
    if validations.is_empty() && annotations.is_empty() {
        let d = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required("spec.validations", d));
        errs.push(FieldError::required("spec.auditAnnotations", d));
        return errs;
    }
    for (i, v) in validations {
        validation(&mut errs, v, &format!("spec.validations[{i}]"));
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
            cel_check(&mut errs, ve, &format!("{p}.valueExpression"));
        }
        if !keys.insert(key) {
            errs.push(FieldError::duplicate(format!("{p}.key"), key));
        }
    }
    errs
}

fn validation(errs: &mut Vec<FieldError>, v: &Value, p: &str) {
    let expr = s(v, "expression").unwrap_or_default();
    if expr.trim().is_empty() {
        errs.push(FieldError::required(
            format!("{p}.expression"),
            "expression is not specified",
        ));
    } else {
        cel_check(errs, expr, &format!("{p}.expression"));
    }
    if let Some(me) = s(v, "messageExpression") {
        if !me.is_empty() && me.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{p}.messageExpression"),
                me,
                "must be non-empty if specified",
            ));
        } else if !me.trim().is_empty() {
            cel_check(errs, me, &format!("{p}.messageExpression"));
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

fn param_kind(errs: &mut Vec<FieldError>, pk: &Value) {
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

/// `ValidateValidatingAdmissionPolicyBinding`.
pub fn binding(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let policy = s(&spec, "policyName").unwrap_or_default();
    if policy.is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    } else {
        for e in is_dns1123_subdomain(policy) {
            errs.push(FieldError::invalid("spec.policyName", policy, e));
        }
    }
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
            validate_label_selector(&mut errs, selector, "spec.paramRef.selector");
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
