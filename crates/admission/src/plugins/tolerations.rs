//! DefaultTolerationSeconds: pods that do not tolerate the `node.kubernetes.io/not-ready` and
//! `node.kubernetes.io/unreachable` NoExecute taints get a toleration of 300 seconds for each.
//! TaintNodesByCondition: a new Node gets the `node.kubernetes.io/not-ready:NoSchedule` taint.
//! ExtendedResourceToleration: a pod requesting an extended resource (`example.com/gpu`)
//! tolerates the `<resource>:NoSchedule` taint with `Exists`.

use super::util::{is_resource, spec, spec_array_mut};
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface};
use async_trait::async_trait;
use kapi_machinery::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;

pub const DEFAULT_TOLERATION_SECONDS: &str = "DefaultTolerationSeconds";
pub const TAINT_NODES_BY_CONDITION: &str = "TaintNodesByCondition";
pub const EXTENDED_RESOURCE_TOLERATION: &str = "ExtendedResourceToleration";
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// kube-apiserver's `--default-not-ready-toleration-seconds` and
/// `--default-unreachable-toleration-seconds` defaults.
pub const DEFAULT_SECONDS: i64 = 300;

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        DEFAULT_TOLERATION_SECONDS,
        Arc::new(|_, _| Ok(Arc::new(DefaultTolerationSeconds))),
    )?;
    plugins.register(
        EXTENDED_RESOURCE_TOLERATION,
        Arc::new(|_, _| Ok(Arc::new(ExtendedResourceToleration))),
    )?;
    plugins.register(
        TAINT_NODES_BY_CONDITION,
        Arc::new(|_, _| Ok(Arc::new(TaintNodesByCondition))),
    )
}

/// An extended resource: namespaced by a domain other than `kubernetes.io`, not a quota name.
fn is_extended(name: &str) -> bool {
    match name.split_once('/') {
        Some((domain, _)) => {
            !(domain == "kubernetes.io"
                || domain.ends_with(".kubernetes.io")
                || name.starts_with("requests."))
        }
        None => false,
    }
}

pub struct ExtendedResourceToleration;

handler!(ExtendedResourceToleration, [Create, Update], mutates);

#[async_trait]
impl MutationInterface for ExtendedResourceToleration {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        let mut names = std::collections::BTreeSet::new();
        for (field, list) in super::pod_containers(pod) {
            if field == "spec.ephemeralContainers" {
                continue;
            }
            for c in list {
                for kind in ["requests", "limits"] {
                    if let Some(m) = c
                        .get("resources")
                        .and_then(|r| r.get(kind))
                        .and_then(Value::as_object)
                    {
                        names.extend(m.keys().filter(|k| is_extended(k)).cloned());
                    }
                }
            }
        }
        if names.is_empty() {
            return Ok(());
        }
        let Some(list) = spec_array_mut(pod, "tolerations") else {
            return Ok(());
        };
        for name in names {
            let t = json!({"key": name, "operator": "Exists", "effect": "NoSchedule"});
            if !list.contains(&t) {
                list.push(t);
            }
        }
        Ok(())
    }
}

pub struct DefaultTolerationSeconds;

handler!(DefaultTolerationSeconds, [Create, Update], mutates);

/// Whether some toleration covers `key` with NoExecute (an empty key or effect matches all).
fn tolerates(tolerations: &[Value], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let k = t.get("key").and_then(Value::as_str).unwrap_or("");
        let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
        (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
    })
}

#[async_trait]
impl MutationInterface for DefaultTolerationSeconds {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        let current: Vec<Value> = spec(pod)
            .and_then(|s| s.get("tolerations"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let missing: Vec<&str> = [NOT_READY, UNREACHABLE]
            .into_iter()
            .filter(|k| !tolerates(&current, k))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if let Some(list) = spec_array_mut(pod, "tolerations") {
            for key in missing {
                list.push(
                    json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_SECONDS}),
                );
            }
        }
        Ok(())
    }
}

pub struct TaintNodesByCondition;

handler!(TaintNodesByCondition, [Create], mutates);

#[async_trait]
impl MutationInterface for TaintNodesByCondition {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "nodes") {
            return Ok(());
        }
        let Some(node) = a.object.as_mut() else {
            return Ok(());
        };
        let Some(taints) = spec_array_mut(node, "taints") else {
            return Ok(());
        };
        let present = taints.iter().any(|t| {
            t.get("key").and_then(Value::as_str) == Some(NOT_READY)
                && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
        });
        if !present {
            taints.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::util::{request, spec_of};
    use crate::Operation;

    fn attrs(resource: &str, kind: &str, spec: Value) -> Attributes {
        let obj = json!({"metadata": {"name": "x"}, "spec": spec});
        request(Operation::Create, ("", kind, resource), ("", "x"), obj)
    }

    #[tokio::test]
    async fn pods_get_not_ready_and_unreachable_tolerations() {
        let mut a = attrs("pods", "Pod", json!({"containers": [{"name": "c"}]}));
        DefaultTolerationSeconds.admit(&mut a).await.unwrap();
        let t = &spec_of(&a)["tolerations"];
        assert_eq!(
            t,
            &json!([
                {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ])
        );
        // An existing toleration of one (or a wildcard) is kept and not duplicated.
        let mut a = attrs(
            "pods",
            "Pod",
            json!({"tolerations": [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]}),
        );
        DefaultTolerationSeconds.admit(&mut a).await.unwrap();
        let t = spec_of(&a)["tolerations"].clone();
        assert_eq!(t.as_array().unwrap().len(), 2);
        assert_eq!(t[0]["tolerationSeconds"], 5);
        assert_eq!(t[1]["key"], NOT_READY);
        let mut a = attrs(
            "pods",
            "Pod",
            json!({"tolerations": [{"operator": "Exists"}]}),
        );
        DefaultTolerationSeconds.admit(&mut a).await.unwrap();
        let t = spec_of(&a)["tolerations"].clone();
        assert_eq!(t.as_array().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn extended_resources_are_tolerated() {
        let mut a = attrs(
            "pods",
            "Pod",
            json!({"containers": [{"name": "c", "resources": {"limits": {"example.com/gpu": "1", "cpu": "1"}}}]}),
        );
        ExtendedResourceToleration.admit(&mut a).await.unwrap();
        ExtendedResourceToleration.admit(&mut a).await.unwrap();
        let t = &spec_of(&a)["tolerations"];
        assert_eq!(
            t,
            &json!([{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
        );
        assert!(!is_extended("hugepages.kubernetes.io/x"));
    }

    #[tokio::test]
    async fn new_nodes_are_tainted_not_ready() {
        let mut a = attrs("nodes", "Node", json!({}));
        TaintNodesByCondition.admit(&mut a).await.unwrap();
        TaintNodesByCondition.admit(&mut a).await.unwrap();
        let t = &spec_of(&a)["taints"];
        assert_eq!(t, &json!([{"key": NOT_READY, "effect": "NoSchedule"}]));
        let mut a = attrs("pods", "Pod", json!({}));
        TaintNodesByCondition.admit(&mut a).await.unwrap();
        assert!(spec_of(&a).get("taints").is_none());
    }
}
