//! networking.k8s.io/v1: ingresses (with `/status`), ingressclasses, networkpolicies, validated
//! as upstream's `pkg/apis/networking/validation`.

mod network_policy;

pub use network_policy::NetworkPolicyStrategy;

use crate::group_util::{go_invalid, immutable};
use crate::strategy_group;
use crate::BuildContext;
use crate::{at, info, set_status, typed};
use k8s_openapi::api::networking::v1 as net;
use kapi_machinery::validation::{is_dns1035_label, is_dns1123_subdomain};
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::{ApiGroupInfo, ResourceInfo};
use kapi_registry::strategy::Strategy;
use serde_json::{json, Value};
use std::sync::Arc;

pub const GROUP: &str = "networking.k8s.io";

pub fn groups(ctx: &BuildContext) -> Vec<ApiGroupInfo> {
    let table = [
        Arc::new(IngressStrategy) as Arc<dyn Strategy>,
        Arc::new(IngressClassStrategy),
        Arc::new(NetworkPolicyStrategy),
    ];
    vec![strategy_group(ctx, GROUP, "v1", table)]
}

const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// Upstream's `IsWildcardDNS1123Subdomain`.
pub fn wildcard_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".into());
    }
    let ok = s
        .strip_prefix("*.")
        .is_some_and(|rest| is_dns1123_subdomain(rest).is_empty());
    if !ok {
        errs.push(format!("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.{DNS1123_SUBDOMAIN_FMT}')"));
    }
    errs
}

/// Upstream's `IsValidPortName`.
pub fn port_name_errors(p: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if p.len() > 15 {
        errs.push("must be no more than 15 characters".into());
    }
    if p.is_empty()
        || !p
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    } else if !p.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if p.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if p.starts_with('-') || p.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// Upstream's `IsValidPortNum`.
pub fn port_num_errors(n: i64) -> Vec<String> {
    if (1..=65535).contains(&n) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".into()]
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn validate_backend(errs: &mut Vec<FieldError>, b: &Value, p: &str) {
    let resource = b.get("resource").filter(|v| !v.is_null());
    let service = b.get("service").filter(|v| !v.is_null());
    match (resource, service) {
        (Some(_), Some(_)) => errs.push(FieldError::invalid(
            p,
            "",
            "cannot set both resource and service backends",
        )),
        (Some(r), None) => {
            let p = format!("{p}.resource");
            if s(r, "kind").is_empty() {
                errs.push(FieldError::required(
                    format!("{p}.kind"),
                    "kind is required",
                ));
            }
            if s(r, "name").is_empty() {
                errs.push(FieldError::required(
                    format!("{p}.name"),
                    "name is required",
                ));
            }
        }
        (None, Some(svc)) => {
            let name = s(svc, "name");
            if name.is_empty() {
                errs.push(FieldError::required(format!("{p}.service.name"), ""));
            } else {
                for msg in is_dns1035_label(name) {
                    errs.push(FieldError::invalid(format!("{p}.service.name"), name, msg));
                }
            }
            let port = svc.get("port").cloned().unwrap_or(Value::Null);
            let port_name = s(&port, "name");
            let number = port.get("number").and_then(Value::as_i64).unwrap_or(0);
            if !port_name.is_empty() && number != 0 {
                errs.push(FieldError::invalid(
                    p,
                    "",
                    "cannot set both port name & port number",
                ));
            } else if !port_name.is_empty() {
                for msg in port_name_errors(port_name) {
                    errs.push(FieldError::invalid(
                        format!("{p}.service.port.name"),
                        port_name,
                        msg,
                    ));
                }
            } else if number != 0 {
                for msg in port_num_errors(number) {
                    errs.push(FieldError::invalid(
                        format!("{p}.service.port.number"),
                        number,
                        msg,
                    ));
                }
            } else {
                errs.push(FieldError::required(p, "port name or number is required"));
            }
        }
        (None, None) => errs.push(FieldError::invalid(
            p,
            "",
            "resource or service backend is required",
        )),
    }
}

const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];
const INVALID_PATH_SEQUENCES: &[&str] = &["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: &[&str] = &["/..", "/."];

fn validate_path(errs: &mut Vec<FieldError>, path: &Value, p: &str) {
    let Some(path_type) = path.get("pathType").and_then(Value::as_str) else {
        errs.push(FieldError::required(
            format!("{p}.pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let text = s(path, "path");
    match path_type {
        "Exact" | "Prefix" => {
            if !text.starts_with('/') {
                errs.push(FieldError::invalid(
                    format!("{p}.path"),
                    text,
                    "must be an absolute path",
                ));
            }
            if !text.is_empty() {
                for seq in INVALID_PATH_SEQUENCES {
                    if text.contains(seq) {
                        errs.push(FieldError::invalid(
                            format!("{p}.path"),
                            text,
                            format!("must not contain '{seq}'"),
                        ));
                    }
                }
                for suffix in INVALID_PATH_SUFFIXES {
                    if text.ends_with(suffix) {
                        errs.push(FieldError::invalid(
                            format!("{p}.path"),
                            text,
                            format!("cannot end with '{suffix}'"),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !text.is_empty() && !text.starts_with('/') {
                errs.push(FieldError::invalid(
                    format!("{p}.path"),
                    text,
                    "must be an absolute path",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{p}.pathType"),
            other,
            PATH_TYPES,
        )),
    }
    if let Some(b) = path.get("backend") {
        validate_backend(errs, b, &format!("{p}.backend"));
    } else {
        validate_backend(errs, &json!({}), &format!("{p}.backend"));
    }
}

fn validate_ingress(obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = at(obj, &["spec"]).cloned().unwrap_or(json!({}));
    let rules: &[Value] = spec
        .get("rules")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let default_backend = spec.get("defaultBackend").filter(|v| !v.is_null());
    if rules.is_empty() && default_backend.is_none() {
        errs.push(go_invalid(
            "spec",
            "[]networking.IngressRule(nil)",
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = default_backend {
        validate_backend(&mut errs, b, "spec.defaultBackend");
    }
    for (i, rule) in rules.iter().enumerate() {
        let p = format!("spec.rules[{i}]");
        let host = s(rule, "host");
        if !host.is_empty() {
            if host.parse::<std::net::IpAddr>().is_ok() {
                errs.push(FieldError::invalid(
                    format!("{p}.host"),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
            let msgs = if host.contains('*') {
                wildcard_subdomain_errors(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for msg in msgs {
                errs.push(FieldError::invalid(format!("{p}.host"), host, msg));
            }
        }
        if let Some(http) = rule.get("http").filter(|v| !v.is_null()) {
            let paths: &[Value] = http
                .get("paths")
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice);
            if paths.is_empty() {
                errs.push(FieldError::required(format!("{p}.http.paths"), ""));
            }
            for (j, path) in paths.iter().enumerate() {
                validate_path(&mut errs, path, &format!("{p}.http.paths[{j}]"));
            }
        }
    }
    for (i, tls) in spec
        .get("tls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, host) in tls
            .get("hosts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .enumerate()
        {
            let msgs = if host.contains('*') {
                wildcard_subdomain_errors(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for msg in msgs {
                errs.push(FieldError::invalid(
                    format!("spec.tls[{i}].hosts[{j}]"),
                    host,
                    msg,
                ));
            }
        }
        let secret = s(tls, "secretName");
        if !secret.is_empty() {
            for msg in is_dns1123_subdomain(secret) {
                errs.push(FieldError::invalid(
                    format!("spec.tls[{i}].secretName"),
                    secret,
                    msg,
                ));
            }
        }
    }
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(class) {
            errs.push(FieldError::invalid("spec.ingressClassName", class, msg));
        }
    }
    errs
}

/// The annotation that predates `spec.ingressClassName`.
const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

pub struct IngressStrategy;
impl Strategy for IngressStrategy {
    typed!(net::Ingress);
    fn info(&self) -> ResourceInfo {
        info(GROUP, "v1", "ingresses", "Ingress", true, &["ing"], &[])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::networking::INGRESSES.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn has_status(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        set_status(obj, Some(json!({"loadBalancer": {}})));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = validate_ingress(obj);
        let annotation = obj
            .metadata()
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(INGRESS_CLASS_ANNOTATION))
            .and_then(Value::as_str);
        if let Some(a) = annotation {
            if at(obj, &["spec", "ingressClassName"]).is_some_and(|v| !v.is_null()) {
                errs.push(FieldError::invalid(
                    format!("annotations.{INGRESS_CLASS_ANNOTATION}"),
                    a,
                    "can not be set when the class field is also set",
                ));
            }
        }
        errs
    }
    fn validate_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        validate_ingress(new)
    }
    /// `ValidateIngressStatusUpdate`: load balancer addresses are IPs and DNS names.
    fn validate_status_update(&self, new: &Object, _old: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for (i, ing) in at(new, &["status", "loadBalancer", "ingress"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let p = format!("status.loadBalancer.ingress[{i}]");
            let ip = s(ing, "ip");
            if !ip.is_empty() && ip.parse::<std::net::IpAddr>().is_err() {
                errs.push(FieldError::invalid(
                    format!("{p}.ip"),
                    ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ));
            }
            let host = s(ing, "hostname");
            if !host.is_empty() {
                for msg in is_dns1123_subdomain(host) {
                    errs.push(FieldError::invalid(format!("{p}.hostname"), host, msg));
                }
                if host.parse::<std::net::IpAddr>().is_ok() {
                    errs.push(FieldError::invalid(
                        format!("{p}.hostname"),
                        host,
                        "must be a DNS name, not an IP address",
                    ));
                }
            }
        }
        errs
    }
}

/// Upstream's `IsDomainPrefixedPath`, for an ingress class's controller.
fn domain_prefixed_path_errors(errs: &mut Vec<FieldError>, v: &str, field: &str) {
    if v.is_empty() {
        errs.push(FieldError::required(field, ""));
        return;
    }
    let Some((host, path)) = v
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        errs.push(FieldError::invalid(
            field,
            v,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for msg in is_dns1123_subdomain(host) {
        errs.push(FieldError::invalid(field, host, msg));
    }
    let ok = path
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c));
    if !ok {
        errs.push(FieldError::invalid(
            field,
            path,
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
}

pub struct IngressClassStrategy;
impl Strategy for IngressClassStrategy {
    typed!(net::IngressClass);
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "ingressclasses",
            "IngressClass",
            false,
            &[],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::networking::INGRESS_CLASSES.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let controller = crate::str_at(obj, &["spec", "controller"]);
        if controller.len() > 250 {
            errs.push(FieldError::too_long(
                "spec.controller",
                "may not be more than 250 bytes",
            ));
        }
        domain_prefixed_path_errors(&mut errs, controller, "spec.controller");
        if let Some(params) = at(obj, &["spec", "parameters"]).filter(|v| !v.is_null()) {
            if s(params, "kind").is_empty() {
                errs.push(FieldError::required(
                    "spec.parameters.kind",
                    "kind is required",
                ));
            }
            if s(params, "name").is_empty() {
                errs.push(FieldError::required(
                    "spec.parameters.name",
                    "name is required",
                ));
            }
            match params.get("scope").and_then(Value::as_str) {
                None => errs.push(FieldError::required("spec.parameters.scope", "")),
                Some("Namespace") if s(params, "namespace").is_empty() => {
                    errs.push(FieldError::required(
                        "spec.parameters.namespace",
                        "`parameters.scope` is set to 'Namespace'",
                    ))
                }
                Some("Cluster") if params.get("namespace").is_some_and(|v| !v.is_null()) => errs
                    .push(FieldError::forbidden(
                        "spec.parameters.namespace",
                        "`parameters.scope` is set to 'Cluster'",
                    )),
                Some("Namespace") | Some("Cluster") => {}
                Some(other) => errs.push(FieldError::not_supported(
                    "spec.parameters.scope",
                    other,
                    &["Cluster", "Namespace"],
                )),
            }
        }
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        immutable(
            &mut errs,
            new,
            old,
            &["spec", "controller"],
            "spec.controller",
        );
        errs.extend(self.validate(new));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(v: Value) -> Object {
        Object::from_value(v).unwrap()
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ingress_rules() {
        let ok = o(
            json!({"spec": {"rules": [{"host": "a.com", "http": {"paths": [
            {"path": "/", "pathType": "Exact", "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}}),
        );
        assert!(IngressStrategy.validate(&ok).is_empty());
        let bad = o(
            json!({"spec": {"rules": [{"host": "1.2.3.4", "http": {"paths": [
            {"path": "a", "pathType": "Prefix", "backend": {"service": {"name": "svc", "port": {}}}},
            {"path": "/"}]}}]}}),
        );
        assert_eq!(
            messages(IngressStrategy.validate(&bad)),
            [
                r#"spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address"#,
                r#"spec.rules[0].http.paths[0].path: Invalid value: "a": must be an absolute path"#,
                "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
                "spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified",
            ]
        );
        assert_eq!(
            messages(IngressStrategy.validate(&o(json!({"spec": {}})))),
            ["spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"]
        );
        assert_eq!(
            wildcard_subdomain_errors("*.example.com"),
            Vec::<String>::new()
        );
        assert_eq!(wildcard_subdomain_errors("a.*.com").len(), 1);
    }

    #[test]
    fn ingress_status_addresses() {
        let old = o(json!({}));
        let st = o(
            json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}, {"ip": "x"}, {"hostname": "1.2.3.4"}]}}}),
        );
        assert_eq!(
            messages(IngressStrategy.validate_status_update(&st, &old)),
            [
                r#"status.loadBalancer.ingress[1].ip: Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#,
                r#"status.loadBalancer.ingress[2].hostname: Invalid value: "1.2.3.4": must be a DNS name, not an IP address"#,
            ]
        );
    }

    #[test]
    fn network_policy_defaults_and_rules() {
        let mut np = o(json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}));
        NetworkPolicyStrategy.defaults(&mut np);
        assert_eq!(
            at(&np, &["spec", "policyTypes"]),
            Some(&json!(["Ingress", "Egress"]))
        );
        assert_eq!(
            at(&np, &["spec", "egress"]).unwrap()[0]["ports"][0]["protocol"],
            json!("TCP")
        );
        assert!(NetworkPolicyStrategy.validate(&np).is_empty());
        let bad = o(
            json!({"spec": {"podSelector": {}, "ingress": [{"from": [{}], "ports": [{"port": "http", "endPort": 90}]}]}}),
        );
        assert_eq!(
            messages(NetworkPolicyStrategy.validate(&bad)),
            [
                "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
                "spec.ingress[0].from[0]: Required value: must specify a peer",
            ]
        );
    }

    #[test]
    fn ingress_class_controller() {
        let ok = o(json!({"spec": {"controller": "example.com/ingress"}}));
        assert!(IngressClassStrategy.validate(&ok).is_empty());
        let bad = o(json!({"spec": {"controller": "nginx"}}));
        assert_eq!(
            messages(IngressClassStrategy.validate(&bad)),
            [
                r#"spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#
            ]
        );
        let mut changed = ok.clone();
        changed.insert("spec", json!({"controller": "example.com/other"}));
        assert_eq!(
            messages(IngressClassStrategy.validate_update(&changed, &ok)),
            [r#"spec.controller: Invalid value: "example.com/other": field is immutable"#]
        );
    }
}
