//! The built-in plugins and their registration. Each module has a `PLUGIN_NAME` and a
//! `register(&mut Plugins)`; [`register_all`] adds every one and records the names kapi keeps
//! in the order but cannot honour, with why.

pub mod always;
pub mod always_pull_images;
pub mod certificates;
pub mod classes;
pub mod event_rate_limit;
pub mod limit_ranger;
pub mod live_lookup;
pub mod namespace;
pub mod node_restriction;
pub mod node_selection;
pub mod priority;
pub mod quantity;
pub mod quota_usage;
pub mod resource_quota;
pub mod restrictions;
pub mod runtime_class;
pub mod service_account;
pub mod storage;
pub mod tolerations;
pub mod util;

use crate::order::{ALL_ORDERED_PLUGINS, UPSTREAM_DEFAULT_ON};
use crate::registry::{AdmissionError, Plugins};
use kapi_machinery::Object;
use serde_json::Value;

/// Every built-in plugin registered, every other upstream name marked unsupported.
pub fn register_all(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    always::register(plugins)?;
    always_pull_images::register(plugins)?;
    namespace::register(plugins)?;
    limit_ranger::register(plugins)?;
    resource_quota::register(plugins)?;
    service_account::register(plugins)?;
    tolerations::register(plugins)?;
    storage::register(plugins)?;
    classes::register(plugins)?;
    priority::register(plugins)?;
    runtime_class::register(plugins)?;
    restrictions::register(plugins)?;
    node_selection::register(plugins)?;
    node_restriction::register(plugins)?;
    certificates::register(plugins)?;
    event_rate_limit::register(plugins)?;
    crate::webhook::register(plugins)?;
    crate::policy::register(plugins)?;
    crate::policy::mutating::register(plugins)?;
    for name in ALL_ORDERED_PLUGINS {
        if !plugins.is_registered(name) {
            plugins.register_unsupported(name, unsupported_reason(name))?;
        }
    }
    Ok(())
}

fn unsupported_reason(name: &str) -> &'static str {
    match name {
        "ImagePolicyWebhook" => "image review webhooks are not implemented",
        "PodSecurity" => "pod security standards are not implemented yet",
        "ClusterTrustBundleAttest" => "clustertrustbundles are not served",
        "OwnerReferencesPermissionEnforcement" => "it needs an authorizer and a RESTMapper",
        "PodTopologyLabels" => "pods/binding does not copy node topology labels yet",
        _ => "it is not implemented yet",
    }
}

/// kapi's default-on set: kube-apiserver's, less what kapi cannot honour.
pub fn kapi_default_on(plugins: &Plugins) -> Vec<&'static str> {
    UPSTREAM_DEFAULT_ON
        .iter()
        .copied()
        .filter(|n| plugins.is_registered(n))
        .collect()
}

/// Every container list of a pod spec: containers, initContainers, ephemeralContainers.
pub(crate) fn pod_containers_mut(pod: &mut Object) -> Vec<(&'static str, &mut Vec<Value>)> {
    let mut out = Vec::new();
    if let Some(Value::Object(spec)) = pod.get_mut("spec") {
        for (key, v) in spec.iter_mut() {
            let field = match key.as_str() {
                "initContainers" => "spec.initContainers",
                "containers" => "spec.containers",
                "ephemeralContainers" => "spec.ephemeralContainers",
                _ => continue,
            };
            if let Value::Array(list) = v {
                out.push((field, list));
            }
        }
    }
    out
}

/// Read-only form of [`pod_containers_mut`].
pub(crate) fn pod_containers(pod: &Object) -> Vec<(&'static str, &Vec<Value>)> {
    let mut out = Vec::new();
    if let Some(spec) = pod.get("spec") {
        for (key, field) in [
            ("initContainers", "spec.initContainers"),
            ("containers", "spec.containers"),
            ("ephemeralContainers", "spec.ephemeralContainers"),
        ] {
            if let Some(Value::Array(list)) = spec.get(key) {
                out.push((field, list));
            }
        }
    }
    out
}
