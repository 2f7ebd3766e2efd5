//! RuntimeClass: a pod naming `spec.runtimeClassName` must name an existing RuntimeClass
//! (`node.k8s.io`); the class's `overhead.podFixed` becomes the pod's `spec.overhead` and its
//! `scheduling` node selector and tolerations are merged into the pod, with upstream's
//! refusals for a mismatching overhead and a conflicting node selector.

use super::util::{is_resource, spec, spec_mut, text};
use crate::objects::ObjectStore;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{Map, Value};
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "RuntimeClass";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| {
            Ok(Arc::new(RuntimeClass {
                objects: ctx.objects(PLUGIN_NAME)?,
            }))
        }),
    )
}

pub struct RuntimeClass {
    objects: Arc<dyn ObjectStore>,
}

impl RuntimeClass {
    /// The pod's RuntimeClass, `None` when it names none; 403 when it names a missing one.
    async fn class(&self, a: &Attributes, pod: &Object) -> Result<Option<Object>, ApiError> {
        let Some(name) = spec(pod)
            .and_then(|s| s.get("runtimeClassName"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            return Ok(None);
        };
        match self
            .objects
            .get(
                &GroupResource::new("node.k8s.io", "runtimeclasses"),
                "",
                name,
            )
            .await?
        {
            Some(rc) => Ok(Some(rc)),
            None => Err(a.forbidden(format!("pod rejected: RuntimeClass \"{name}\" not found"))),
        }
    }
}

fn overhead(rc: &Object) -> Option<&Map<String, Value>> {
    rc.get("overhead")?.get("podFixed")?.as_object()
}

fn pod_overhead(pod: &Object) -> Option<&Map<String, Value>> {
    spec(pod)?.get("overhead")?.as_object()
}

/// Whether two resource lists hold the same quantities.
fn same_resources(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k)
                .is_some_and(|w| super::quantity::of(v) == super::quantity::of(w))
        })
}

const MISMATCH: &str = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

handler!(RuntimeClass, [Create], mutates, validates);

#[async_trait]
impl MutationInterface for RuntimeClass {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let Some(rc) = self.class(a, pod).await? else {
            return Ok(());
        };
        if let Some(oh) = overhead(&rc) {
            if let Some(given) = pod_overhead(pod) {
                if !same_resources(given, oh) {
                    return Err(a.forbidden(MISMATCH));
                }
            }
        }
        let mut selector = spec(pod)
            .and_then(|s| s.get("nodeSelector"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let scheduling = rc.get("scheduling");
        for (k, v) in scheduling
            .and_then(|s| s.get("nodeSelector"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            match selector.get(k) {
                Some(pv) if pv != v => {
                    return Err(a.forbidden(format!(
                        "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                        text(v),
                        text(pv)
                    )))
                }
                _ => {
                    selector.insert(k.clone(), v.clone());
                }
            }
        }
        let mut tolerations = spec(pod)
            .and_then(|s| s.get("tolerations"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for t in scheduling
            .and_then(|s| s.get("tolerations"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !tolerations.contains(t) {
                tolerations.push(t.clone());
            }
        }
        let oh = overhead(&rc).cloned();
        let Some(spec) = a.object.as_mut().and_then(spec_mut) else {
            return Ok(());
        };
        if let Some(oh) = oh {
            spec.insert("overhead".into(), Value::Object(oh));
        }
        if !selector.is_empty() {
            spec.insert("nodeSelector".into(), Value::Object(selector));
        }
        if !tolerations.is_empty() {
            spec.insert("tolerations".into(), Value::Array(tolerations));
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for RuntimeClass {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let rc = self.class(a, pod).await?;
        match (rc.as_ref().and_then(overhead), pod_overhead(pod)) {
            (Some(oh), Some(given)) if same_resources(given, oh) => Ok(()),
            (Some(_), _) => Err(a.forbidden(MISMATCH)),
            (None, Some(_)) => Err(a.forbidden(
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            )),
            (None, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::memory::MemoryObjects;
    use crate::plugins::util::request;
    use crate::Operation;
    use serde_json::json;

    fn pod(spec: Value) -> Attributes {
        let obj = json!({"metadata": {"name": "p"}, "spec": spec});
        request(Operation::Create, ("", "Pod", "pods"), ("d", "p"), obj)
    }

    fn plugin() -> RuntimeClass {
        let m = Arc::new(MemoryObjects::default());
        m.put("runtimeclasses", json!({"metadata": {"name": "kata"}, "handler": "kata",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            "scheduling": {"nodeSelector": {"sandbox": "true"},
                "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}));
        RuntimeClass { objects: m }
    }

    #[tokio::test]
    async fn overhead_and_scheduling_are_merged() {
        let p = plugin();
        let mut a = pod(json!({"runtimeClassName": "kata", "nodeSelector": {"zone": "a"}}));
        p.admit(&mut a).await.unwrap();
        p.validate(&a).await.unwrap();
        let s = a.object.as_ref().unwrap().get("spec").unwrap();
        assert_eq!(s["overhead"], json!({"cpu": "250m", "memory": "120Mi"}));
        assert_eq!(s["nodeSelector"], json!({"zone": "a", "sandbox": "true"}));
        assert_eq!(s["tolerations"][0]["key"], "sandbox");
    }

    #[tokio::test]
    async fn refusals_carry_upstream_wording() {
        let p = plugin();
        let mut a = pod(json!({"runtimeClassName": "gvisor"}));
        let e = p.admit(&mut a).await.unwrap_err();
        assert_eq!(
            e.message,
            r#"pods "p" is forbidden: pod rejected: RuntimeClass "gvisor" not found"#
        );
        let mut a = pod(json!({"runtimeClassName": "kata", "nodeSelector": {"sandbox": "false"}}));
        let e = p.admit(&mut a).await.unwrap_err();
        assert!(e.message.ends_with("conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false"), "{}", e.message);
        let mut a = pod(json!({"runtimeClassName": "kata", "overhead": {"cpu": "1"}}));
        let e = p.admit(&mut a).await.unwrap_err();
        assert!(e.message.ends_with(MISMATCH));
        let a = pod(json!({"overhead": {"cpu": "1"}}));
        let e = p.validate(&a).await.unwrap_err();
        assert!(e.message.ends_with(
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
        ));
    }
}
