//! The `Available` condition of an APIService served by a Service, as far as upstream's
//! availability controller (k8s.io/kube-aggregator `pkg/controllers/status`) decides it from the
//! Service and its Endpoints: `ServiceNotFound`, `ServiceAccessError`, `ServicePortError`,
//! `EndpointsNotFound`, `EndpointsAccessError`, `MissingEndpoints`, with upstream's messages.
//! Upstream's last step, a GET of the backend's `/apis/<group>/<version>` (`Passed` or
//! `FailedDiscoveryCheck`), is [`super::discovery::check`], made when every check here passes.

use kapi_machinery::{ApiError, Object};
use serde_json::{json, Value};

/// A Service or Endpoints as read: the object, absent, or the error reading it.
pub type Read = Result<Option<Object>, ApiError>;

/// The condition the checks come to, `None` when they all pass. `service_ref` is the
/// APIService's `spec.service`.
pub fn condition(service_ref: &Value, service: &Read, endpoints: &Read) -> Option<Value> {
    let name = service_ref
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = service_ref
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let port = service_ref
        .get("port")
        .and_then(Value::as_i64)
        .unwrap_or(443);
    let cond = |status: &str, reason: &str, message: String| {
        Some(json!({"type": "Available", "status": status,
            "lastTransitionTime": kapi_registry::meta::now_rfc3339(),
            "reason": reason, "message": message}))
    };
    let service = match service {
        Ok(Some(s)) => s,
        Ok(None) => {
            return cond(
                "False",
                "ServiceNotFound",
                format!("service/{name} in {namespace:?} is not present"),
            )
        }
        Err(e) => {
            return cond(
                "Unknown",
                "ServiceAccessError",
                format!(
                    "service/{name} in {namespace:?} cannot be checked due to: {}",
                    e.message
                ),
            )
        }
    };
    let spec = service.get("spec");
    let kind = spec
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind != "ClusterIP" {
        return None;
    }
    // a ClusterIP service must listen on the port, and some endpoint must serve that port
    let ports = spec.and_then(|s| s.get("ports")).and_then(Value::as_array);
    let Some(port_name) = ports
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        .map(|p| p.get("name").and_then(Value::as_str).unwrap_or_default())
    else {
        return cond(
            "False",
            "ServicePortError",
            format!("service/{name} in {namespace:?} is not listening on port {port}"),
        );
    };
    let endpoints = match endpoints {
        Ok(Some(e)) => e,
        Ok(None) => {
            return cond(
                "False",
                "EndpointsNotFound",
                format!("cannot find endpoints for service/{name} in {namespace:?}"),
            )
        }
        Err(e) => {
            return cond(
                "Unknown",
                "EndpointsAccessError",
                format!(
                    "service/{name} in {namespace:?} cannot be checked due to: {}",
                    e.message
                ),
            )
        }
    };
    let subsets = endpoints.get("subsets").and_then(Value::as_array);
    let active = subsets.into_iter().flatten().any(|subset| {
        let has_addresses = subset
            .get("addresses")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        let ports = subset.get("ports").and_then(Value::as_array);
        has_addresses
            && ports
                .into_iter()
                .flatten()
                .any(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name)
    });
    if !active {
        return cond(
            "False",
            "MissingEndpoints",
            format!(
                "endpoints for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"
            ),
        );
    }
    None
}
