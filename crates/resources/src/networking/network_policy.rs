//! networking.k8s.io/v1 NetworkPolicy, validated as upstream's `ValidateNetworkPolicy`.

use super::{port_name_errors, port_num_errors, s, GROUP};
use crate::group_util::go_invalid;
use crate::policy::validate_label_selector;
use crate::{at, info, typed};
use k8s_openapi::api::networking::v1 as net;
use kapi_machinery::{FieldError, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::Strategy;
use serde_json::{json, Value};
use std::sync::Arc;

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];
const POLICY_TYPES: &[&str] = &["Ingress", "Egress"];

fn validate_np_port(errs: &mut Vec<FieldError>, port: &Value, p: &str) {
    if let Some(proto) = port.get("protocol").and_then(Value::as_str) {
        if !PROTOCOLS.contains(&proto) {
            errs.push(FieldError::not_supported(
                format!("{p}.protocol"),
                proto,
                PROTOCOLS,
            ));
        }
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    match port.get("port") {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            for msg in port_num_errors(n) {
                errs.push(FieldError::invalid(format!("{p}.port"), n, msg));
            }
            if let Some(e) = end {
                if e < n {
                    errs.push(FieldError::invalid(
                        format!("{p}.endPort"),
                        n,
                        "must be greater than or equal to `port`",
                    ));
                }
                for msg in port_num_errors(e) {
                    errs.push(FieldError::invalid(format!("{p}.endPort"), e, msg));
                }
            }
        }
        Some(Value::String(name)) => {
            if let Some(e) = end {
                errs.push(FieldError::invalid(
                    format!("{p}.endPort"),
                    e,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for msg in port_name_errors(name) {
                errs.push(FieldError::invalid(format!("{p}.port"), name.as_str(), msg));
            }
        }
        _ => {
            if let Some(e) = end {
                errs.push(FieldError::invalid(
                    format!("{p}.endPort"),
                    e,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

fn validate_peer(errs: &mut Vec<FieldError>, peer: &Value, p: &str) {
    let mut n = 0u32;
    for k in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = peer.get(k).filter(|v| !v.is_null()) {
            n = n.saturating_add(1);
            validate_label_selector(errs, Some(sel), &format!("{p}.{k}"));
        }
    }
    let ip_block = peer.get("ipBlock").filter(|v| !v.is_null());
    if let Some(b) = ip_block {
        n = n.saturating_add(1);
        let cidr = s(b, "cidr");
        if cidr.is_empty() {
            errs.push(FieldError::required(format!("{p}.ipBlock.cidr"), ""));
        } else if cidr.parse::<ipnet::IpNet>().is_err() {
            errs.push(FieldError::invalid(
                format!("{p}.ipBlock.cidr"),
                cidr,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            ));
        }
    }
    if n == 0 {
        errs.push(FieldError::required(p, "must specify a peer"));
    } else if n > 1 && ip_block.is_some() {
        errs.push(FieldError::forbidden(
            p,
            "may not specify both ipBlock and another peer",
        ));
    }
}

pub struct NetworkPolicyStrategy;
impl Strategy for NetworkPolicyStrategy {
    typed!(net::NetworkPolicy);
    fn info(&self) -> ResourceInfo {
        info(
            GROUP,
            "v1",
            "networkpolicies",
            "NetworkPolicy",
            true,
            &["netpol"],
            &[],
        )
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::networking::NETWORK_POLICIES.table_convertor()
    }
    fn tracks_generation(&self) -> bool {
        true
    }
    fn defaults(&self, obj: &mut Object) {
        let Some(Value::Object(spec)) = obj.get_mut("spec") else {
            return;
        };
        for dir in ["ingress", "egress"] {
            for rule in spec
                .get_mut(dir)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                for port in rule
                    .get_mut("ports")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_object_mut)
                {
                    crate::default_in(port, "protocol", json!("TCP"));
                }
            }
        }
        if spec
            .get("policyTypes")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            let mut types = vec![json!("Ingress")];
            if spec
                .get("egress")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty())
            {
                types.push(json!("Egress"));
            }
            spec.insert("policyTypes".into(), Value::Array(types));
        }
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_label_selector(
            &mut errs,
            at(obj, &["spec", "podSelector"]),
            "spec.podSelector",
        );
        for (dir, peers) in [("ingress", "from"), ("egress", "to")] {
            for (i, rule) in at(obj, &["spec", dir])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let p = format!("spec.{dir}[{i}]");
                for (j, port) in rule
                    .get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    validate_np_port(&mut errs, port, &format!("{p}.ports[{j}]"));
                }
                for (j, peer) in rule
                    .get(peers)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    validate_peer(&mut errs, peer, &format!("{p}.{peers}[{j}]"));
                }
            }
        }
        let types: Vec<&str> = at(obj, &["spec", "policyTypes"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if types.len() > 2 {
            errs.push(go_invalid(
                "spec.policyTypes",
                &format!("&{:?}", types),
                "may not specify more than two policyTypes",
            ));
        } else {
            for (i, t) in types.iter().enumerate() {
                if !POLICY_TYPES.contains(t) {
                    errs.push(FieldError::not_supported(
                        format!("spec.policyTypes[{i}]"),
                        *t,
                        POLICY_TYPES,
                    ));
                }
            }
        }
        errs
    }
}
