//! The APIServices served by another API server, as the aggregator's proxy needs them
//! (k8s.io/kube-aggregator `pkg/apiserver/handler_proxy.go` `updateAPIService`): where the
//! Service is, how to dial it (its `caBundle` or `insecureSkipTLSVerify`, the
//! `--proxy-client-cert-file` certificate) and whether it is `Available`. The autoregister
//! controller keeps the table from its APIService informer; requests read it.
//!
//! Where a request goes is upstream's `ResolveEndpoint` (with `--enable-aggregator-routing`:
//! an address of the Service's Endpoints serving the port's name) or `ResolveCluster` (the
//! Service's ClusterIP), from k8s.io/apiserver `pkg/util/proxy`.

use crate::controllers::ops;
use kapi_machinery::{ApiError, Object};
use kapi_registry::rest::{Context, Storage};
use rustls::sign::CertifiedKey;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::Notify;

/// One APIService with `spec.service`.
#[derive(Clone)]
pub struct Remote {
    pub name: String,
    pub group: String,
    pub version: String,
    pub version_priority: i64,
    pub namespace: String,
    pub service: String,
    pub port: i64,
    /// The transport, or upstream's `transportBuildingError`.
    pub tls: Result<Arc<rustls::ClientConfig>, String>,
    /// The availability check's transport: upstream's check does not verify the server's
    /// certificate ("if someone owns the network and messes with your status that's not so
    /// bad"), so a `caBundle` that is wrong or not PEM does not fail it.
    pub check_tls: Result<Arc<rustls::ClientConfig>, String>,
    /// `Available=True` (upstream answers 503 `service unavailable` otherwise).
    pub available: bool,
}

/// What discovery reads of every APIService, local or not.
struct Listed {
    group_priority: i64,
    version: String,
    version_priority: i64,
}

#[derive(Default)]
struct State {
    remote: BTreeMap<String, Remote>,
    /// Every APIService by group and name: `/apis` orders groups by their highest
    /// `groupPriorityMinimum` and a group's versions by `versionPriority` (upstream's
    /// `SortedByGroupAndVersion`).
    listed: BTreeMap<String, BTreeMap<String, Listed>>,
    /// The backend's aggregated discovery entry of each remote APIService's version, by
    /// APIService name, as the availability check last fetched it.
    discovery: BTreeMap<String, Value>,
}

/// How remote APIServices are reached.
pub struct Settings {
    /// `--enable-aggregator-routing`.
    pub routing: bool,
    /// `--proxy-client-cert-file`/`--proxy-client-key-file`.
    pub client: Option<Arc<CertifiedKey>>,
    pub dial_timeout: Duration,
    pub services: Option<Arc<dyn Storage>>,
    pub endpoints: Option<Arc<dyn Storage>>,
}

/// The live table, shared by the controller and the request path.
#[derive(Clone)]
pub struct Remotes {
    state: Arc<RwLock<State>>,
    pub settings: Arc<Settings>,
    /// Asks the availability controller to check again now (a proxied dial failed).
    pub recheck: Arc<Notify>,
    /// The backends' OpenAPI specs, merged into kapi's.
    pub openapi: Arc<super::openapi::RemoteOpenApi>,
}

fn str_at<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn int_at(v: Option<&Value>, key: &str) -> Option<i64> {
    v.and_then(|v| v.get(key)).and_then(Value::as_i64)
}

/// Whether an APIService's `Available` condition is `True`.
fn is_available(obj: &Object) -> bool {
    obj.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| str_at(Some(c), "type") == "Available" && str_at(Some(c), "status") == "True")
}

impl Remotes {
    pub fn new(settings: Settings) -> Self {
        Self {
            state: Arc::default(),
            settings: Arc::new(settings),
            recheck: Arc::default(),
            openapi: Arc::default(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// An APIService was written.
    pub fn upsert(&self, obj: &Object) {
        let spec = obj.get("spec");
        let group = str_at(spec, "group").to_string();
        let version = str_at(spec, "version").to_string();
        let name = obj.name().to_string();
        let mut state = self.write();
        let listed = Listed {
            group_priority: int_at(spec, "groupPriorityMinimum").unwrap_or_default(),
            version: version.clone(),
            version_priority: int_at(spec, "versionPriority").unwrap_or_default(),
        };
        state
            .listed
            .entry(group.clone())
            .or_default()
            .insert(name.clone(), listed);
        let Some(service) = spec
            .and_then(|s| s.get("service"))
            .filter(|s| s.is_object())
        else {
            state.remote.remove(&name);
            state.discovery.remove(&name);
            self.openapi.forget(&name);
            return;
        };
        let namespace = str_at(Some(service), "namespace").to_string();
        let service_name = str_at(Some(service), "name").to_string();
        let port = int_at(Some(service), "port").unwrap_or(443);
        // `caBundle` is base64 in JSON (Go's []byte).
        let ca = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(str_at(spec, "caBundle"))
                .unwrap_or_default()
        };
        let insecure = spec
            .and_then(|s| s.get("insecureSkipTLSVerify"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let server_name = format!("{service_name}.{namespace}.svc");
        let tls = kapi_proxy::tls::service_config(
            &ca,
            insecure,
            &server_name,
            self.settings.client.clone(),
        );
        let check_tls =
            kapi_proxy::tls::service_config(&[], true, &server_name, self.settings.client.clone());
        state.remote.insert(
            name.clone(),
            Remote {
                name,
                group,
                version,
                version_priority: int_at(spec, "versionPriority").unwrap_or_default(),
                namespace,
                service: service_name,
                port,
                tls,
                check_tls,
                available: is_available(obj),
            },
        );
    }

    /// An APIService was deleted.
    pub fn remove(&self, obj: &Object) {
        let name = obj.name();
        let group = str_at(obj.get("spec"), "group");
        let mut state = self.write();
        state.remote.remove(name);
        state.discovery.remove(name);
        self.openapi.forget(name);
        if let Some(p) = state.listed.get_mut(group) {
            p.remove(name);
            if p.is_empty() {
                state.listed.remove(group);
            }
        }
    }

    /// The remote APIService serving `group`/`version`.
    pub fn lookup(&self, group: &str, version: &str) -> Option<Remote> {
        self.read()
            .remote
            .values()
            .find(|r| r.group == group && r.version == version)
            .cloned()
    }

    /// The remote APIServices of `group`, highest version priority first (then by Kubernetes
    /// version order), as upstream lists a group's versions.
    pub fn group(&self, group: &str) -> Vec<Remote> {
        let mut out: Vec<Remote> = self
            .read()
            .remote
            .values()
            .filter(|r| r.group == group)
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            b.version_priority.cmp(&a.version_priority).then_with(|| {
                kapi_endpoints::discovery::compare_kube_versions(&a.version, &b.version)
            })
        });
        out
    }

    /// The versions every APIService of `group` lists, local or not, in upstream's order:
    /// highest `versionPriority` first, then by Kubernetes version order.
    pub fn group_versions(&self, group: &str) -> Vec<String> {
        let state = self.read();
        let mut listed: Vec<&Listed> = state
            .listed
            .get(group)
            .into_iter()
            .flat_map(|m| m.values())
            .collect();
        listed.sort_by(|a, b| {
            b.version_priority.cmp(&a.version_priority).then_with(|| {
                kapi_endpoints::discovery::compare_kube_versions(&a.version, &b.version)
            })
        });
        let mut out: Vec<String> = Vec::new();
        for l in listed {
            if !out.contains(&l.version) {
                out.push(l.version.clone());
            }
        }
        out
    }

    /// Every group some remote APIService serves.
    pub fn groups(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .read()
            .remote
            .values()
            .map(|r| r.group.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    pub fn is_empty(&self) -> bool {
        self.read().remote.is_empty()
    }

    /// The remote APIService named `name`.
    pub fn get(&self, name: &str) -> Option<Remote> {
        self.read().remote.get(name).cloned()
    }

    /// Every remote APIService.
    pub fn all(&self) -> Vec<Remote> {
        self.read().remote.values().cloned().collect()
    }

    /// A group's priority in `/apis`: the aggregator's own group first, then the highest
    /// `groupPriorityMinimum` of its APIServices (1000, the CRD default, when none is known).
    pub fn group_priority(&self, group: &str) -> i64 {
        if group == kapi_resources::apiregistration::GROUP {
            return i64::MAX;
        }
        self.read()
            .listed
            .get(group)
            .and_then(|p| p.values().map(|l| l.group_priority).max())
            .unwrap_or(kapi_resources::apiregistration::CRD_GROUP_PRIORITY_MINIMUM)
    }

    /// Keeps (or drops) the backend's aggregated discovery entry of an APIService's version.
    pub fn set_discovery(&self, name: &str, entry: Option<Value>) {
        let mut state = self.write();
        match entry {
            Some(e) => state.discovery.insert(name.to_string(), e),
            None => state.discovery.remove(name),
        };
    }

    pub fn discovery(&self, name: &str) -> Option<Value> {
        self.read().discovery.get(name).cloned()
    }

    /// Where `remote` is served: `host:port` of an endpoint (aggregator routing) or of the
    /// ClusterIP; the error is upstream's.
    pub async fn resolve(&self, remote: &Remote) -> Result<(String, u16), String> {
        let (Some(services), Some(endpoints)) = (&self.settings.services, &self.settings.endpoints)
        else {
            return Err("services are not served".into());
        };
        let ctx = Context {
            namespace: remote.namespace.clone(),
            ..Default::default()
        };
        let svc = ops::get(services.as_ref(), &ctx, &remote.service)
            .await
            .map_err(|e| e.message)?;
        let eps = if self.settings.routing {
            Some(
                ops::get(endpoints.as_ref(), &ctx, &remote.service)
                    .await
                    .map_err(|e: ApiError| e.message)?,
            )
        } else {
            None
        };
        resolve(&svc, eps.as_ref(), &remote.service, remote.port)
    }
}

/// Upstream's `ResolveEndpoint` (with `endpoints`) or `ResolveCluster` (without); the
/// Services' types upstream refuses, and a missing port or address, are its messages.
pub fn resolve(
    svc: &Object,
    endpoints: Option<&Object>,
    name: &str,
    port: i64,
) -> Result<(String, u16), String> {
    let spec = svc.get("spec");
    let kind = match str_at(spec, "type") {
        "" => "ClusterIP",
        k => k,
    };
    let cluster_ip = str_at(spec, "clusterIP");
    let to_port = |p: i64| u16::try_from(p).map_err(|_| format!("invalid port {p}"));
    let Some(endpoints) = endpoints else {
        return match kind {
            "ClusterIP" if cluster_ip == "None" => {
                Err("cannot route to service with ClusterIP \"None\"".into())
            }
            "ClusterIP" | "LoadBalancer" | "NodePort" => {
                let svc_port = find_service_port(svc, port, name)?;
                let p = int_at(Some(svc_port), "port").unwrap_or_default();
                Ok((cluster_ip.to_string(), to_port(p)?))
            }
            "ExternalName" => Ok((str_at(spec, "externalName").to_string(), to_port(port)?)),
            other => Err(format!("unsupported service type {other:?}")),
        };
    };
    if !matches!(kind, "ClusterIP" | "LoadBalancer" | "NodePort") {
        return Err(format!("unsupported service type {kind:?}"));
    }
    let port_name = str_at(Some(find_service_port(svc, port, name)?), "name");
    let subsets = endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if subsets.is_empty() {
        return Err(format!("no endpoints available for service {name:?}"));
    }
    // Upstream starts at a random subset and address; the first serves as well here.
    for subset in &subsets {
        let Some(ip) = subset
            .get("addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .map(|a| str_at(Some(a), "ip"))
        else {
            continue;
        };
        let ports = subset.get("ports").and_then(Value::as_array);
        if let Some(p) = ports
            .into_iter()
            .flatten()
            .find(|p| str_at(Some(p), "name") == port_name)
        {
            return Ok((
                ip.to_string(),
                to_port(int_at(Some(p), "port").unwrap_or_default())?,
            ));
        }
    }
    Err(format!("no endpoints available for service {name:?}"))
}

fn find_service_port<'a>(svc: &'a Object, port: i64, name: &str) -> Result<&'a Value, String> {
    svc.get("spec")
        .and_then(|s| s.get("ports"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| int_at(Some(p), "port") == Some(port))
        .ok_or_else(|| format!("no service port {port} found for service {name:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        Object::from_value(v).unwrap()
    }

    #[test]
    fn endpoints_are_resolved_by_the_port_name() {
        let svc = obj(
            json!({"metadata": {"name": "api"}, "spec": {"clusterIP": "10.0.0.9",
            "ports": [{"port": 443, "name": "https"}]}}),
        );
        let eps = obj(json!({"metadata": {"name": "api"}, "subsets": [
            {"addresses": [{"ip": "127.0.0.2"}], "ports": [{"port": 1, "name": "other"}]},
            {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 8443, "name": "https"}]}]}));
        assert_eq!(
            resolve(&svc, Some(&eps), "api", 443),
            Ok(("127.0.0.1".to_string(), 8443))
        );
        assert_eq!(
            resolve(&svc, None, "api", 443),
            Ok(("10.0.0.9".to_string(), 443))
        );
        assert_eq!(
            resolve(&svc, Some(&eps), "api", 80),
            Err("no service port 80 found for service \"api\"".to_string())
        );
        let empty = obj(json!({"metadata": {"name": "api"}}));
        assert_eq!(
            resolve(&svc, Some(&empty), "api", 443),
            Err("no endpoints available for service \"api\"".to_string())
        );
    }
}
