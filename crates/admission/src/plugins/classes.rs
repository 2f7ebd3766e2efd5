//! DefaultStorageClass: a new PersistentVolumeClaim naming no class (neither
//! `spec.storageClassName` nor the beta annotation) gets the default StorageClass (annotation
//! `storageclass.kubernetes.io/is-default-class: "true"`; the newest when several are).
//! DefaultIngressClass: likewise for Ingresses without `spec.ingressClassName` or the
//! `kubernetes.io/ingress.class` annotation, from `ingressclass.kubernetes.io/is-default-class`.

use super::storage::BETA_STORAGE_CLASS_ANNOTATION;
use super::util::{is_resource, newest_default, spec, spec_mut};
use crate::objects::ObjectStore;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource};
use serde_json::Value;
use std::sync::Arc;

pub const DEFAULT_STORAGE_CLASS: &str = "DefaultStorageClass";
pub const DEFAULT_INGRESS_CLASS: &str = "DefaultIngressClass";
pub const STORAGE_DEFAULT_ANNOTATIONS: &[&str] = &[
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];
pub const INGRESS_DEFAULT_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// Which resource gets which class.
struct Target {
    group: &'static str,
    resource: &'static str,
    classes: (&'static str, &'static str),
    default_annotations: &'static [&'static str],
    class_annotation: &'static str,
    field: &'static str,
}

const STORAGE: Target = Target {
    group: "",
    resource: "persistentvolumeclaims",
    classes: ("storage.k8s.io", "storageclasses"),
    default_annotations: STORAGE_DEFAULT_ANNOTATIONS,
    class_annotation: BETA_STORAGE_CLASS_ANNOTATION,
    field: "storageClassName",
};

const INGRESS: Target = Target {
    group: "networking.k8s.io",
    resource: "ingresses",
    classes: ("networking.k8s.io", "ingressclasses"),
    default_annotations: &[INGRESS_DEFAULT_ANNOTATION],
    class_annotation: INGRESS_CLASS_ANNOTATION,
    field: "ingressClassName",
};

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        DEFAULT_STORAGE_CLASS,
        Arc::new(|_, ctx| {
            Ok(Arc::new(DefaultClass {
                objects: ctx.objects(DEFAULT_STORAGE_CLASS)?,
                target: &STORAGE,
            }))
        }),
    )?;
    plugins.register(
        DEFAULT_INGRESS_CLASS,
        Arc::new(|_, ctx| {
            Ok(Arc::new(DefaultClass {
                objects: ctx.objects(DEFAULT_INGRESS_CLASS)?,
                target: &INGRESS,
            }))
        }),
    )
}

pub struct DefaultClass {
    objects: Arc<dyn ObjectStore>,
    target: &'static Target,
}

handler!(DefaultClass, [Create], mutates);

#[async_trait]
impl MutationInterface for DefaultClass {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let t = self.target;
        if !is_resource(a, t.group, t.resource) {
            return Ok(());
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let has_class = obj.annotations().contains_key(t.class_annotation)
            || spec(obj)
                .and_then(|s| s.get(t.field))
                .is_some_and(|v| !v.is_null());
        if has_class {
            return Ok(());
        }
        let classes = self
            .objects
            .list(&GroupResource::new(t.classes.0, t.classes.1), "")
            .await?;
        let Some(def) = newest_default(&classes, t.default_annotations) else {
            return Ok(());
        };
        let name = def.name().to_string();
        if let Some(spec) = a.object.as_mut().and_then(spec_mut) {
            spec.insert(t.field.into(), Value::from(name));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::memory::MemoryObjects;
    use crate::plugins::util::{request, spec_of};
    use crate::Operation;
    use serde_json::json;

    fn attrs(group: &str, resource: &str, obj: Value) -> Attributes {
        request(Operation::Create, (group, "X", resource), ("d", "x"), obj)
    }

    #[tokio::test]
    async fn the_newest_default_storage_class_lands_on_classless_claims() {
        let m = Arc::new(MemoryObjects::default());
        m.put(
            "storageclasses",
            json!({"metadata": {"name": "old", "creationTimestamp": "2024-01-01T00:00:00Z",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}),
        );
        m.put(
            "storageclasses",
            json!({"metadata": {"name": "new", "creationTimestamp": "2025-01-01T00:00:00Z",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}),
        );
        m.put(
            "storageclasses",
            json!({"metadata": {"name": "plain", "creationTimestamp": "2026-01-01T00:00:00Z"}}),
        );
        let p = DefaultClass {
            objects: m,
            target: &STORAGE,
        };
        let mut a = attrs(
            "",
            "persistentvolumeclaims",
            json!({"metadata": {"name": "x"}, "spec": {}}),
        );
        p.admit(&mut a).await.unwrap();
        assert_eq!(spec_of(&a)["storageClassName"], "new");
        // An explicit class, even "", is kept.
        let mut a = attrs(
            "",
            "persistentvolumeclaims",
            json!({"metadata": {"name": "x"}, "spec": {"storageClassName": ""}}),
        );
        p.admit(&mut a).await.unwrap();
        assert_eq!(spec_of(&a)["storageClassName"], "");
    }

    #[tokio::test]
    async fn the_default_ingress_class_lands_on_ingresses() {
        let m = Arc::new(MemoryObjects::default());
        m.put(
            "ingressclasses",
            json!({"metadata": {"name": "nginx",
            "annotations": {INGRESS_DEFAULT_ANNOTATION: "true"}}}),
        );
        let p = DefaultClass {
            objects: m,
            target: &INGRESS,
        };
        let mut a = attrs(
            "networking.k8s.io",
            "ingresses",
            json!({"metadata": {"name": "x"}, "spec": {}}),
        );
        p.admit(&mut a).await.unwrap();
        assert_eq!(spec_of(&a)["ingressClassName"], "nginx");
        let mut a = attrs(
            "networking.k8s.io",
            "ingresses",
            json!({"metadata": {"name": "x", "annotations": {INGRESS_CLASS_ANNOTATION: "other"}}, "spec": {}}),
        );
        p.admit(&mut a).await.unwrap();
        assert!(spec_of(&a).get("ingressClassName").is_none());
    }
}
