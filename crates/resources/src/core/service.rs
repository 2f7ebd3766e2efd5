//! core/v1 services: defaults, port validation, ClusterIP and NodePort allocation.

use crate::allocator::repair::{Repair, REPAIR_INTERVAL};
use crate::allocator::{IpAllocator, PortAllocator};
use crate::{at, default_in, info, str_at, typed};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Service;
use kapi_machinery::validation::is_dns1123_label;
use kapi_machinery::{ApiError, FieldError, GroupVersionKind, Object};
use kapi_registry::rest::ResourceInfo;
use kapi_registry::strategy::{FieldLabelConversion, NameRule, Strategy};
use kapi_storage::DynStorage;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::sync::Arc;

pub struct ServiceStrategy {
    ips: Arc<IpAllocator>,
    ports: Arc<PortAllocator>,
    repair: Arc<Repair>,
}

const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

fn svc_type(obj: &Object) -> &str {
    match str_at(obj, &["spec", "type"]) {
        "" => "ClusterIP",
        t => t,
    }
}

fn uses_node_ports(obj: &Object) -> bool {
    match svc_type(obj) {
        "NodePort" => true,
        "LoadBalancer" => at(obj, &["spec", "allocateLoadBalancerNodePorts"])
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

fn cluster_ip(obj: &Object) -> Option<IpAddr> {
    str_at(obj, &["spec", "clusterIP"]).parse().ok()
}

fn node_ports(obj: &Object) -> Vec<u16> {
    at(obj, &["spec", "ports"])
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
                .map(|p| p as u16)
                .collect()
        })
        .unwrap_or_default()
}

impl ServiceStrategy {
    /// Allocators over `storage`'s `RangeAllocation` objects, shared with every process on it.
    pub fn new(
        range: ipnet::IpNet,
        ports: std::ops::RangeInclusive<u16>,
        storage: DynStorage,
    ) -> Self {
        let ips = Arc::new(IpAllocator::new(range, storage.clone()));
        let ports = Arc::new(PortAllocator::new(ports, storage.clone()));
        let repair = Arc::new(Repair::new(storage, ips.clone(), ports.clone()));
        Self { ips, ports, repair }
    }

    /// The address of the `kubernetes` service (`.1` of the range).
    pub fn kubernetes_ip(&self) -> IpAddr {
        self.ips.nth(1)
    }

    /// Rebuilds the allocations from the stored services now, then every three minutes
    /// while this strategy lives (upstream's repair controllers).
    pub async fn start_repair(&self) -> Result<(), ApiError> {
        self.repair.run_once().await.map_err(|e| {
            ApiError::internal(format!(
                "unable to perform initial IP and Port allocation check: {e}"
            ))
        })?;
        self.repair.spawn(REPAIR_INTERVAL);
        Ok(())
    }

    fn invalid(obj: &Object, field: &str, value: Value, message: String) -> ApiError {
        ApiError::invalid(
            &GroupVersionKind::new("", "v1", "Service"),
            obj.name(),
            &[FieldError::invalid(field, value, message)],
        )
    }

    async fn allocate_service(
        &self,
        obj: &mut Object,
        old: Option<&Object>,
    ) -> Result<(), ApiError> {
        let t = svc_type(obj).to_string();
        let old_ip = old.and_then(cluster_ip);
        let mut taken_ip: Option<IpAddr> = None;
        if t != "ExternalName" {
            let requested = str_at(obj, &["spec", "clusterIP"]).to_string();
            let ip = if requested == "None" {
                None
            } else if requested.is_empty() {
                let ip = self.ips.allocate_next().await.map_err(|e| {
                    ApiError::internal(format!("failed to allocate a serviceIP: {e}"))
                })?;
                taken_ip = Some(ip);
                Some(ip)
            } else {
                let ip: IpAddr = requested.parse().map_err(|_| {
                    Self::invalid(
                        obj,
                        "spec.clusterIPs[0]",
                        json!(requested),
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into(),
                    )
                })?;
                if old_ip != Some(ip) {
                    self.ips.allocate(ip).await.map_err(|e| {
                        Self::invalid(
                            obj,
                            "spec.clusterIPs",
                            json!([requested]),
                            format!("failed to allocate IP {requested}: {e}"),
                        )
                    })?;
                    taken_ip = Some(ip);
                }
                Some(ip)
            };
            if let Some(Value::Object(spec)) = obj.get_mut("spec") {
                let text = ip.map(|i| i.to_string()).unwrap_or_else(|| "None".into());
                spec.insert("clusterIP".into(), json!(text));
                spec.insert("clusterIPs".into(), json!([text]));
                if ip.is_some() || requested == "None" {
                    let family = if matches!(ip, Some(IpAddr::V6(_)))
                        || matches!(self.ips.range(), ipnet::IpNet::V6(_))
                    {
                        "IPv6"
                    } else {
                        "IPv4"
                    };
                    default_in(spec, "ipFamilies", json!([family]));
                    default_in(spec, "ipFamilyPolicy", json!("SingleStack"));
                }
            }
        }
        if uses_node_ports(obj) {
            let old_ports = old.map(node_ports).unwrap_or_default();
            let mut taken: Vec<u16> = Vec::new();
            let mut failed = None;
            let wanted: Vec<u16> = at(obj, &["spec", "ports"])
                .and_then(Value::as_array)
                .map(|ps| {
                    ps.iter()
                        .map(|p| p.get("nodePort").and_then(Value::as_u64).unwrap_or(0) as u16)
                        .collect()
                })
                .unwrap_or_default();
            let mut chosen = wanted.clone();
            for (i, want) in wanted.iter().copied().enumerate() {
                if want != 0 && old_ports.contains(&want) {
                    continue;
                }
                let r = if want == 0 {
                    self.ports.allocate_next().await.map_err(|e| {
                        ApiError::internal(format!("failed to allocate a nodePort: {e}"))
                    })
                } else {
                    self.ports.allocate(want).await.map(|_| want).map_err(|e| {
                        Self::invalid(
                            obj,
                            &format!("spec.ports[{i}].nodePort"),
                            json!(want),
                            e.to_string(),
                        )
                    })
                };
                match r {
                    Ok(n) => {
                        taken.push(n);
                        if let Some(slot) = chosen.get_mut(i) {
                            *slot = n;
                        }
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                // Give back what this call took: the write will not happen.
                for n in taken {
                    self.give_back_port(n).await;
                }
                if let Some(ip) = taken_ip {
                    self.give_back_ip(ip).await;
                }
                return Err(e);
            }
            if let Some(Value::Array(ports)) = obj.get_mut("spec").and_then(|s| s.get_mut("ports"))
            {
                for (p, n) in ports.iter_mut().zip(chosen) {
                    if let (Some(p), true) = (p.as_object_mut(), n != 0) {
                        p.insert("nodePort".into(), json!(n));
                    }
                }
            }
        }
        Ok(())
    }

    async fn give_back_ip(&self, ip: IpAddr) {
        if let Err(e) = self.ips.release(ip).await {
            // Repair frees it later.
            tracing::warn!("failed to release the service IP {ip}: {e}");
        }
    }

    async fn give_back_port(&self, port: u16) {
        if let Err(e) = self.ports.release(port).await {
            tracing::warn!("failed to release the node port {port}: {e}");
        }
    }

    async fn release_service(&self, obj: &Object, keep: Option<&Object>) {
        if let Some(ip) = cluster_ip(obj) {
            if keep.and_then(cluster_ip) != Some(ip) {
                self.give_back_ip(ip).await;
            }
        }
        let kept = keep.map(node_ports).unwrap_or_default();
        for p in node_ports(obj) {
            if !kept.contains(&p) {
                self.give_back_port(p).await;
            }
        }
    }
}

impl Strategy for ServiceStrategy {
    // upstream's storage sets `ReturnDeletedObject: true`
    fn return_deleted_object(&self) -> bool {
        true
    }
    typed!(Service);

    fn info(&self) -> ResourceInfo {
        info("", "v1", "services", "Service", true, &["svc"], &["all"])
    }
    fn table_convertor(&self) -> Option<Arc<dyn kapi_registry::rest::TableConvertor>> {
        crate::printers::service::SERVICES.table_convertor()
    }
    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }
    fn has_status(&self) -> bool {
        true
    }
    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(&[
            "metadata.name",
            "metadata.namespace",
            "spec.clusterIP",
            "spec.type",
        ]))
    }
    fn defaults(&self, obj: &mut Object) {
        let t = svc_type(obj).to_string();
        let Some(Value::Object(spec)) = obj.get_mut("spec") else {
            return;
        };
        default_in(spec, "type", json!("ClusterIP"));
        default_in(spec, "sessionAffinity", json!("None"));
        if t != "ExternalName" {
            default_in(spec, "internalTrafficPolicy", json!("Cluster"));
        }
        if t == "NodePort" || t == "LoadBalancer" {
            default_in(spec, "externalTrafficPolicy", json!("Cluster"));
        }
        if t == "LoadBalancer" {
            default_in(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                default_in(p, "protocol", json!("TCP"));
                if let Some(port) = p.get("port").cloned() {
                    default_in(p, "targetPort", port);
                }
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Object) {
        obj.insert("status", json!({"loadBalancer": {}}));
    }
    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let t = svc_type(obj);
        if !TYPES.contains(&t) {
            errs.push(FieldError::not_supported("spec.type", t, TYPES));
        }
        let headless = str_at(obj, &["spec", "clusterIP"]) == "None";
        let ports = at(obj, &["spec", "ports"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if t == "ExternalName" {
            if str_at(obj, &["spec", "externalName"]).is_empty() {
                errs.push(FieldError::required("spec.externalName", ""));
            }
        } else if ports.is_empty() && !headless {
            errs.push(FieldError::required("spec.ports", ""));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, p) in ports.iter().enumerate() {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            if ports.len() > 1 && name.is_empty() {
                errs.push(FieldError::required(format!("spec.ports[{i}].name"), ""));
            } else if !name.is_empty() {
                for msg in is_dns1123_label(name) {
                    errs.push(FieldError::invalid(
                        format!("spec.ports[{i}].name"),
                        name,
                        msg,
                    ));
                }
                if !names.insert(name.to_string()) {
                    errs.push(FieldError::duplicate(format!("spec.ports[{i}].name"), name));
                }
            }
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&port) {
                errs.push(FieldError::invalid(
                    format!("spec.ports[{i}].port"),
                    port,
                    "must be between 1 and 65535, inclusive",
                ));
            }
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            if !PROTOCOLS.contains(&proto) {
                errs.push(FieldError::not_supported(
                    format!("spec.ports[{i}].protocol"),
                    proto,
                    PROTOCOLS,
                ));
            }
            if let Some(np) = p.get("nodePort").and_then(Value::as_i64) {
                if np != 0 && !uses_node_ports(obj) {
                    errs.push(FieldError::forbidden(
                        format!("spec.ports[{i}].nodePort"),
                        "may not be used when `type` is 'ClusterIP'",
                    ));
                }
            }
        }
        errs.extend(kapi_registry::meta::validate_labels(
            at(obj, &["spec", "selector"]),
            "spec.selector",
        ));
        errs
    }
    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        let (n, o) = (
            str_at(new, &["spec", "clusterIP"]),
            str_at(old, &["spec", "clusterIP"]),
        );
        if !o.is_empty() && n != o && svc_type(new) != "ExternalName" {
            // upstream names the whole list, its first address the changed clusterIP
            let mut ips = vec![json!(n)];
            ips.extend(
                at(new, &["spec", "clusterIPs"])
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .skip(1)
                    .cloned(),
            );
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                kapi_machinery::BadValue::strings(Some(&Value::Array(ips))),
                "may not change once set",
            ));
        }
        errs
    }
    fn prepare_for_update(&self, new: &mut Object, old: &Object) {
        // An update that leaves the address out keeps it (as kubectl replace does).
        if str_at(new, &["spec", "clusterIP"]).is_empty() && svc_type(new) != "ExternalName" {
            if let (Some(ip), Some(Value::Object(spec))) = (
                old.get("spec").and_then(|s| s.get("clusterIP")).cloned(),
                new.get_mut("spec"),
            ) {
                spec.insert("clusterIP".into(), ip.clone());
                spec.insert("clusterIPs".into(), json!([ip]));
                for k in ["ipFamilies", "ipFamilyPolicy"] {
                    if let Some(v) = old.get("spec").and_then(|s| s.get(k)) {
                        spec.insert(k.into(), v.clone());
                    }
                }
            }
        }
    }

    fn reserved_ip(&self) -> Option<IpAddr> {
        Some(self.kubernetes_ip())
    }

    fn allocates(&self) -> bool {
        true
    }

    fn allocate<'a>(
        &'a self,
        obj: &'a mut Object,
        old: Option<&'a Object>,
    ) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(self.allocate_service(obj, old))
    }

    fn release<'a>(&'a self, obj: &'a Object, keep: Option<&'a Object>) -> BoxFuture<'a, ()> {
        Box::pin(self.release_service(obj, keep))
    }
}

/// The `kubernetes` service's address as the served services storage reserves it.
pub fn kubernetes_service_ip(groups: &[kapi_registry::rest::ApiGroupInfo]) -> Option<String> {
    groups
        .iter()
        .flat_map(|g| g.versions.iter())
        .flat_map(|v| v.storages.iter())
        .filter(|s| {
            s.info().group.is_empty()
                && s.info().resource == "services"
                && s.info().subresource.is_empty()
        })
        .find_map(|s| {
            s.as_any()
                .and_then(|a| a.downcast_ref::<kapi_registry::Store>())
                .and_then(|st| st.strategy().reserved_ip())
        })
        .map(|ip| ip.to_string())
}
