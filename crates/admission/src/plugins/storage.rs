//! StorageObjectInUseProtection: new PersistentVolumeClaims get the
//! `kubernetes.io/pvc-protection` finalizer, new PersistentVolumes `kubernetes.io/pv-protection`.
//! PersistentVolumeClaimResize: a claim's storage request may only grow when the claim is Bound
//! and its StorageClass sets `allowVolumeExpansion: true`.

use super::quantity;
use super::util::{is_resource, spec};
use crate::objects::ObjectStore;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::Value;
use std::sync::Arc;

pub const IN_USE_PROTECTION: &str = "StorageObjectInUseProtection";
pub const PVC_RESIZE: &str = "PersistentVolumeClaimResize";
pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_FINALIZER: &str = "kubernetes.io/pv-protection";
/// The beta annotation that, when present, names a claim's class instead of the spec field.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        IN_USE_PROTECTION,
        Arc::new(|_, _| Ok(Arc::new(StorageObjectInUseProtection))),
    )?;
    plugins.register(
        PVC_RESIZE,
        Arc::new(|_, ctx| {
            Ok(Arc::new(PersistentVolumeClaimResize {
                objects: ctx.objects(PVC_RESIZE)?,
            }))
        }),
    )
}

pub struct StorageObjectInUseProtection;

handler!(StorageObjectInUseProtection, [Create], mutates);

#[async_trait]
impl MutationInterface for StorageObjectInUseProtection {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let finalizer = if is_resource(a, "", "persistentvolumeclaims") {
            PVC_FINALIZER
        } else if is_resource(a, "", "persistentvolumes") {
            PV_FINALIZER
        } else {
            return Ok(());
        };
        let Some(obj) = a.object.as_mut() else {
            return Ok(());
        };
        let mut finalizers = obj.finalizers();
        if !finalizers.iter().any(|f| f == finalizer) {
            finalizers.push(finalizer.to_string());
            obj.set_finalizers(&finalizers);
        }
        Ok(())
    }
}

/// A claim's class: the beta annotation when present, else `spec.storageClassName`.
pub fn claim_class(pvc: &Object) -> String {
    if let Some(c) = pvc.annotations().get(BETA_STORAGE_CLASS_ANNOTATION) {
        return c.clone();
    }
    spec(pvc)
        .and_then(|s| s.get("storageClassName"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn requested_storage(pvc: &Object) -> f64 {
    spec(pvc)
        .and_then(|s| s.get("resources")?.get("requests")?.get("storage"))
        .and_then(quantity::of)
        .unwrap_or(0.0)
}

pub struct PersistentVolumeClaimResize {
    objects: Arc<dyn ObjectStore>,
}

handler!(PersistentVolumeClaimResize, [Update], validates);

impl PersistentVolumeClaimResize {
    async fn allow_resize(&self, pvc: &Object, old: &Object) -> Result<bool, ApiError> {
        let class = claim_class(pvc);
        if class.is_empty() || claim_class(old) != class {
            return Ok(false);
        }
        let sc = self
            .objects
            .get(
                &GroupResource::new("storage.k8s.io", "storageclasses"),
                "",
                &class,
            )
            .await?;
        Ok(sc
            .and_then(|sc| sc.get("allowVolumeExpansion").and_then(Value::as_bool))
            .unwrap_or(false))
    }
}

#[async_trait]
impl ValidationInterface for PersistentVolumeClaimResize {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "persistentvolumeclaims") {
            return Ok(());
        }
        let (Some(pvc), Some(old)) = (a.object.as_ref(), a.old_object.as_ref()) else {
            return Ok(());
        };
        if requested_storage(pvc) <= requested_storage(old) {
            return Ok(());
        }
        let phase = old
            .get("status")
            .and_then(|s| s.get("phase"))
            .and_then(Value::as_str);
        if phase != Some("Bound") {
            return Err(a.forbidden("Only bound persistent volume claims can be expanded"));
        }
        if !self.allow_resize(pvc, old).await? {
            return Err(a.forbidden(
                "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::memory::MemoryObjects;
    use crate::plugins::util::request;
    use crate::Operation;
    use serde_json::json;

    fn attrs(op: Operation, resource: &str, obj: Value) -> Attributes {
        request(op, ("", "X", resource), ("d", "c"), obj)
    }

    #[tokio::test]
    async fn claims_and_volumes_get_protection_finalizers() {
        let mut a = attrs(
            Operation::Create,
            "persistentvolumeclaims",
            json!({"metadata": {"name": "c", "finalizers": ["x"]}}),
        );
        StorageObjectInUseProtection.admit(&mut a).await.unwrap();
        StorageObjectInUseProtection.admit(&mut a).await.unwrap();
        assert_eq!(
            a.object.as_ref().unwrap().finalizers(),
            vec!["x", PVC_FINALIZER]
        );
        let mut a = attrs(
            Operation::Create,
            "persistentvolumes",
            json!({"metadata": {"name": "v"}}),
        );
        StorageObjectInUseProtection.admit(&mut a).await.unwrap();
        assert_eq!(a.object.as_ref().unwrap().finalizers(), vec![PV_FINALIZER]);
    }

    fn claim(size: &str, phase: &str, class: &str) -> Value {
        json!({"metadata": {"name": "c", "namespace": "d"},
            "spec": {"storageClassName": class, "resources": {"requests": {"storage": size}}},
            "status": {"phase": phase}})
    }

    #[tokio::test]
    async fn resize_needs_a_bound_claim_and_an_expandable_class() {
        let m = Arc::new(MemoryObjects::default());
        m.put(
            "storageclasses",
            json!({"metadata": {"name": "fast"}, "allowVolumeExpansion": true}),
        );
        m.put("storageclasses", json!({"metadata": {"name": "slow"}}));
        let p = PersistentVolumeClaimResize { objects: m };
        let update = |new: Value, old: Value| {
            let mut a = attrs(Operation::Update, "persistentvolumeclaims", new);
            a.old_object = Some(Object::from_value(old).unwrap());
            a
        };
        p.validate(&update(
            claim("2Gi", "Bound", "fast"),
            claim("1Gi", "Bound", "fast"),
        ))
        .await
        .unwrap();
        p.validate(&update(
            claim("1Gi", "Pending", "slow"),
            claim("2Gi", "Pending", "slow"),
        ))
        .await
        .unwrap();
        let e = p
            .validate(&update(
                claim("2Gi", "Pending", "fast"),
                claim("1Gi", "Pending", "fast"),
            ))
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            r#"persistentvolumeclaims "c" is forbidden: Only bound persistent volume claims can be expanded"#
        );
        let e = p
            .validate(&update(
                claim("2Gi", "Bound", "slow"),
                claim("1Gi", "Bound", "slow"),
            ))
            .await
            .unwrap_err();
        assert!(e
            .message
            .ends_with("the storageclass that provisions the pvc must support resize"));
    }
}
