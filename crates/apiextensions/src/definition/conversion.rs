//! The conversion checks of upstream's validation.go (`validateCustomResourceConversion` with
//! `webhook.ValidateWebhookURL` and `ValidateWebhookService`) and the approval annotation of
//! protected groups (`validateAPIApproval`, `apihelpers.GetAPIApprovalState`).

use super::internal::Spec;
use super::schema::Opts;
use super::validation::{spec_of, str_of, validate_enum};
use kapi_machinery::validation::is_dns1035_label;
use kapi_machinery::validation::is_dns1123_subdomain;
use kapi_machinery::{goformat, BadValue, FieldError, Object};
use serde_json::Value;

pub const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// `validateCustomResourceConversion` (CA bundles are not checked: upstream allows an invalid
/// one on create and until the definition is established).
pub(super) fn validate_conversion(spec: &Spec, opts: &Opts, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conv) = spec.conversion() else {
        return errs;
    };
    let strategy = str_of(Some(conv), "strategy");
    errs.extend(validate_enum(
        &format!("{path}.strategy"),
        strategy,
        &["None", "Webhook"],
    ));
    let cc = spec.webhook_client_config();
    let review = spec.conversion_review_versions();
    let cc_path = format!("{path}.webhookClientConfig");
    if strategy == "Webhook" {
        match cc {
            None => errs.push(FieldError::required(
                cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let url = cc.get("url").and_then(Value::as_str);
                let svc = cc.get("service").filter(|s| !s.is_null());
                match (url, svc) {
                    (Some(u), None) => {
                        errs.extend(webhook_url_errors(&format!("{cc_path}.url"), u, true))
                    }
                    (None, Some(s)) => {
                        // upstream passes name and namespace in each other's place
                        errs.extend(webhook_service_errors(
                            &format!("{cc_path}.service"),
                            str_of(Some(s), "name"),
                            str_of(Some(s), "namespace"),
                            s.get("path").and_then(Value::as_str),
                            s.get("port").and_then(Value::as_i64).unwrap_or(0),
                        ))
                    }
                    _ => errs.push(FieldError::required(
                        cc_path,
                        "exactly one of url or service is required",
                    )),
                }
            }
        }
        errs.extend(conversion_review_version_errors(
            &review,
            opts.require_recognized_conversion_review_version,
            &format!("{path}.conversionReviewVersions"),
        ));
    } else {
        if cc.is_some() {
            errs.push(FieldError::forbidden(
                cc_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review.is_empty() {
            errs.push(FieldError::forbidden(
                format!("{path}.conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn conversion_review_version_errors(
    versions: &[&str],
    require_recognized: bool,
    path: &str,
) -> Vec<FieldError> {
    if versions.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(v) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                *v,
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for e in is_dns1035_label(v) {
            errs.push(FieldError::invalid(format!("{path}[{i}]"), *v, e));
        }
    }
    if require_recognized
        && !versions
            .iter()
            .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
    {
        let list: Vec<Value> = versions.iter().map(|v| Value::from(*v)).collect();
        errs.push(FieldError::invalid(
            path,
            BadValue::strings(Some(&Value::Array(list))),
            format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// The parts of a URL Go's `url.Parse` yields that upstream's webhook checks read.
struct GoUrl<'a> {
    scheme: String,
    host: &'a str,
    user: Option<&'a str>,
    query: &'a str,
    fragment: &'a str,
}

fn parse_go_url(s: &str) -> Result<GoUrl<'_>, String> {
    if s.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f) {
        return Err(format!(
            "parse {}: net/url: invalid control character in URL",
            goformat::quote(s)
        ));
    }
    let (rest, fragment) = s.split_once('#').unwrap_or((s, ""));
    let mut scheme = "";
    let mut rest = rest;
    if let Some(i) = rest.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c))) {
        if rest.as_bytes().get(i) == Some(&b':') {
            if i == 0 {
                return Err(format!(
                    "parse {}: missing protocol scheme",
                    goformat::quote(s)
                ));
            }
            if rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
                scheme = &rest[..i];
                rest = rest[i..].get(1..).unwrap_or_default();
            }
        }
    }
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut host = "";
    let mut user = None;
    if let Some(auth) = rest.strip_prefix("//") {
        let auth = &auth[..auth.find('/').unwrap_or(auth.len())];
        match auth.rsplit_once('@') {
            Some((u, h)) => {
                user = Some(u);
                host = h;
            }
            None => host = auth,
        }
    }
    Ok(GoUrl {
        scheme: scheme.to_ascii_lowercase(),
        host,
        user,
        query,
        fragment,
    })
}

/// Upstream's `webhook.ValidateWebhookURL`.
fn webhook_url_errors(path: &str, url: &str, force_https: bool) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    match parse_go_url(url) {
        Err(e) => errs.push(FieldError::required(
            path,
            format!("url must be a valid URL: {e}{FORM}"),
        )),
        Ok(u) => {
            if force_https && u.scheme != "https" {
                errs.push(FieldError::invalid(
                    path,
                    u.scheme.as_str(),
                    format!("'https' is the only allowed URL scheme{FORM}"),
                ));
            }
            if u.host.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    u.host,
                    format!("host must be specified{FORM}"),
                ));
            }
            if let Some(user) = u.user {
                errs.push(FieldError::invalid(
                    path,
                    user,
                    "user information is not permitted in the URL",
                ));
            }
            if !u.fragment.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    u.fragment,
                    "fragments are not permitted in the URL",
                ));
            }
            if !u.query.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    u.query,
                    "query parameters are not permitted in the URL",
                ));
            }
        }
    }
    errs
}

/// Upstream's `webhook.ValidateWebhookService(fldPath, namespace, name, path, port)`.
fn webhook_service_errors(
    path: &str,
    namespace: &str,
    name: &str,
    url_path: Option<&str>,
    port: i64,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "service name is required",
        ));
    }
    if namespace.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.namespace"),
            "service namespace is required",
        ));
    }
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            format!("{path}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(p) = url_path else {
        return errs;
    };
    if p.is_empty() || p == "/" {
        return errs;
    }
    let pp = format!("{path}.path");
    if p == "//" {
        errs.push(FieldError::invalid(pp, p, "segment[0] may not be empty"));
        return errs;
    }
    if !p.starts_with('/') {
        errs.push(FieldError::invalid(pp.as_str(), p, "must start with a '/'"));
    }
    let check = p.get(1..).unwrap_or_default();
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                pp.as_str(),
                p,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for f in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                pp.as_str(),
                p,
                format!("segment[{i}]: {f}"),
            ));
        }
    }
    errs
}

/// `validateAPIApproval`: groups under `k8s.io` and `kubernetes.io` need the approval
/// annotation (unless unchanged from the stored definition).
pub(super) fn validate_api_approval(new: &Object, old: Option<&Object>) -> Vec<FieldError> {
    let group = spec_of(new).str("group").to_string();
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if !protected {
        return Vec::new();
    }
    let new_ann = new
        .annotations()
        .get(APPROVAL_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    let (state, reason) = approval_state(&new_ann);
    if let Some(old) = old {
        let old_ann = old
            .annotations()
            .get(APPROVAL_ANNOTATION)
            .cloned()
            .unwrap_or_default();
        if approval_state(&old_ann).0 == state {
            return Vec::new();
        }
    }
    let path = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    match state {
        Approval::Missing => vec![FieldError::required(path, reason)],
        Approval::Invalid => vec![FieldError::invalid(path, new_ann, reason)],
        Approval::Approved | Approval::Bypassed => Vec::new(),
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

/// `apihelpers.GetAPIApprovalState`.
fn approval_state(annotation: &str) -> (Approval, String) {
    let q = goformat::quote(APPROVAL_ANNOTATION);
    if annotation.is_empty() {
        return (
            Approval::Missing,
            format!("protected groups must have approval annotation {q}, see https://github.com/kubernetes/enhancements/pull/1111"),
        );
    }
    if annotation.starts_with("unapproved") {
        return (
            Approval::Bypassed,
            format!("not approved: {}", goformat::quote(annotation)),
        );
    }
    // url.ParseRequestURI: an absolute URL with a scheme and a host
    let approved =
        parse_go_url(annotation).is_ok_and(|u| !u.scheme.is_empty() && !u.host.is_empty());
    if approved {
        return (Approval::Approved, format!("approved in {annotation}"));
    }
    (
        Approval::Invalid,
        format!("protected groups must have approval annotation {q} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
    )
}
