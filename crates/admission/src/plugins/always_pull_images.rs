//! AlwaysPullImages: every container, init container and ephemeral container of a Pod gets
//! `imagePullPolicy: Always` on create and update; validation rejects any other policy.

use super::{pod_containers, pod_containers_mut};
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::ApiError;
use serde_json::Value;
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "AlwaysPullImages";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(PLUGIN_NAME, Arc::new(|_, _| Ok(Arc::new(AlwaysPullImages))))
}

pub struct AlwaysPullImages;

fn applies(a: &Attributes) -> bool {
    a.resource.group.is_empty() && a.resource.resource == "pods" && a.subresource.is_empty()
}

handler!(AlwaysPullImages, [Create, Update], mutates, validates);

#[async_trait]
impl MutationInterface for AlwaysPullImages {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !applies(a) {
            return Ok(());
        }
        if let Some(pod) = a.object.as_mut() {
            for (_, list) in pod_containers_mut(pod) {
                for c in list.iter_mut() {
                    if let Value::Object(c) = c {
                        c.insert("imagePullPolicy".into(), Value::from("Always"));
                    }
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for AlwaysPullImages {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !applies(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        for (field, list) in pod_containers(pod) {
            for (i, c) in list.iter().enumerate() {
                let policy = c
                    .get("imagePullPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if policy != "Always" {
                    return Err(a.forbidden(format!(
                        "{field}[{i}].imagePullPolicy: Unsupported value: \"{policy}\": supported values: \"Always\""
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Operation;
    use kapi_machinery::{GroupVersionKind, GroupVersionResource, Object};
    use serde_json::json;

    fn pod_attrs(op: Operation) -> Attributes {
        let mut a = Attributes::new(
            op,
            GroupVersionKind::new("", "v1", "Pod"),
            GroupVersionResource::new("", "v1", "pods"),
            "default",
            "p",
        );
        a.object = Some(
            Object::from_value(json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {
                "initContainers": [{"name": "i", "image": "busybox", "imagePullPolicy": "IfNotPresent"}],
                "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "x", "imagePullPolicy": "Never"}],
                "ephemeralContainers": [{"name": "e", "image": "dbg"}]}}))
            .unwrap(),
        );
        a
    }

    #[tokio::test]
    async fn every_container_gets_always_on_create_and_update() {
        for op in [Operation::Create, Operation::Update] {
            let mut a = pod_attrs(op);
            assert_eq!(AlwaysPullImages.validate(&a).await.unwrap_err().code, 403);
            AlwaysPullImages.admit(&mut a).await.unwrap();
            let spec = &a.object.as_ref().unwrap().get("spec").unwrap();
            for key in ["initContainers", "containers", "ephemeralContainers"] {
                for c in spec[key].as_array().unwrap() {
                    assert_eq!(c["imagePullPolicy"], "Always", "{key}");
                }
            }
            AlwaysPullImages.validate(&a).await.unwrap();
        }
    }

    #[tokio::test]
    async fn validation_names_the_field_and_other_resources_are_ignored() {
        let a = pod_attrs(Operation::Create);
        let e = AlwaysPullImages.validate(&a).await.unwrap_err();
        assert_eq!(
            e.message,
            r#"pods "p" is forbidden: spec.initContainers[0].imagePullPolicy: Unsupported value: "IfNotPresent": supported values: "Always""#
        );
        let mut cm = pod_attrs(Operation::Create);
        cm.resource = GroupVersionResource::new("", "v1", "configmaps");
        AlwaysPullImages.admit(&mut cm).await.unwrap();
        assert_eq!(
            cm.object.as_ref().unwrap().get("spec").unwrap()["containers"][0]
                .get("imagePullPolicy"),
            None
        );
    }
}
