//! DenyServiceExternalIPs: no new `spec.externalIPs` on Services (an update may keep or drop
//! existing ones). LimitPodHardAntiAffinityTopology: required pod anti-affinity may only use the
//! `kubernetes.io/hostname` topology key.

use super::util::{is_resource, spec};
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, Object};
use serde_json::Value;
use std::sync::Arc;

pub const DENY_EXTERNAL_IPS: &str = "DenyServiceExternalIPs";
pub const HARD_ANTI_AFFINITY: &str = "LimitPodHardAntiAffinityTopology";
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        DENY_EXTERNAL_IPS,
        Arc::new(|_, _| Ok(Arc::new(DenyServiceExternalIps))),
    )?;
    plugins.register(
        HARD_ANTI_AFFINITY,
        Arc::new(|_, _| Ok(Arc::new(LimitPodHardAntiAffinityTopology))),
    )
}

pub struct DenyServiceExternalIps;

fn external_ips(svc: &Object) -> Vec<&str> {
    spec(svc)
        .and_then(|s| s.get("externalIPs"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

handler!(DenyServiceExternalIps, [Create, Update], validates);

#[async_trait]
impl ValidationInterface for DenyServiceExternalIps {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "services") {
            return Ok(());
        }
        let Some(svc) = a.object.as_ref() else {
            return Ok(());
        };
        let new = external_ips(svc);
        if new.is_empty() {
            return Ok(());
        }
        if a.operation == Operation::Update {
            let old = a.old_object.as_ref().map(external_ips).unwrap_or_default();
            if new.iter().all(|ip| old.contains(ip)) {
                return Ok(());
            }
        }
        Err(a.forbidden("Use of external IPs is denied by admission control"))
    }
}

pub struct LimitPodHardAntiAffinityTopology;

handler!(
    LimitPodHardAntiAffinityTopology,
    [Create, Update],
    validates
);

#[async_trait]
impl ValidationInterface for LimitPodHardAntiAffinityTopology {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let terms = spec(pod)
            .and_then(|s| {
                s.get("affinity")?
                    .get("podAntiAffinity")?
                    .get("requiredDuringSchedulingIgnoredDuringExecution")?
                    .as_array()
            })
            .into_iter()
            .flatten();
        for term in terms {
            let key = term
                .get("topologyKey")
                .and_then(Value::as_str)
                .unwrap_or("");
            if key != HOSTNAME_LABEL {
                return Err(a.forbidden(format!(
                    "affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey {key} but only key {HOSTNAME_LABEL} is allowed"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::util::request;
    use serde_json::json;

    fn attrs(op: Operation, resource: &str, spec: Value) -> Attributes {
        let obj = json!({"metadata": {"name": "x"}, "spec": spec});
        request(op, ("", "X", resource), ("d", "x"), obj)
    }

    #[tokio::test]
    async fn external_ips_are_denied_unless_kept() {
        let a = attrs(
            Operation::Create,
            "services",
            json!({"externalIPs": ["1.2.3.4"]}),
        );
        let e = DenyServiceExternalIps.validate(&a).await.unwrap_err();
        assert_eq!(
            e.message,
            r#"services "x" is forbidden: Use of external IPs is denied by admission control"#
        );
        DenyServiceExternalIps
            .validate(&attrs(Operation::Create, "services", json!({})))
            .await
            .unwrap();
        let mut a = attrs(
            Operation::Update,
            "services",
            json!({"externalIPs": ["1.2.3.4"]}),
        );
        a.old_object = Some(
            Object::from_value(
                json!({"metadata": {"name": "x"}, "spec": {"externalIPs": ["1.2.3.4", "5.6.7.8"]}}),
            )
            .unwrap(),
        );
        DenyServiceExternalIps.validate(&a).await.unwrap();
    }

    #[tokio::test]
    async fn only_hostname_topology_for_required_anti_affinity() {
        let term = |k: &str| {
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {}, "topologyKey": k}]}}})
        };
        LimitPodHardAntiAffinityTopology
            .validate(&attrs(Operation::Create, "pods", term(HOSTNAME_LABEL)))
            .await
            .unwrap();
        let e = LimitPodHardAntiAffinityTopology
            .validate(&attrs(
                Operation::Create,
                "pods",
                term("topology.kubernetes.io/zone"),
            ))
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            r#"pods "x" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed"#
        );
    }
}
