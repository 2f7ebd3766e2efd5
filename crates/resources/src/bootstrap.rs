//! Start-up objects: the system namespaces, the `kubernetes` service and the system priority
//! classes.

use kapi_machinery::{ApiError, GetOptions, Object};
use kapi_registry::rest::{
    find_storage, validate_nothing, ApiGroupInfo, Context, FieldValidation, Storage, WriteOptions,
};
use serde_json::json;
use std::sync::Arc;

/// Namespaces every cluster has.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

async fn ensure(
    storage: &Arc<dyn Storage>,
    ctx: &Context,
    body: serde_json::Value,
) -> Result<(), ApiError> {
    let body = Object::from_value(body)?;
    let (getter, creater) = match (storage.as_getter(), storage.as_creater()) {
        (Some(g), Some(c)) => (g, c),
        _ => {
            return Err(ApiError::internal(format!(
                "{} cannot be bootstrapped",
                storage.info().resource
            )))
        }
    };
    match getter.get(ctx, body.name(), &GetOptions::default()).await {
        Ok(_) => return Ok(()),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    let (obj, _) = storage.decode(body, FieldValidation::Strict)?;
    match creater
        .create(ctx, obj, validate_nothing(), &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates `default`, `kube-system`, `kube-public`, `kube-node-lease`, the `kubernetes`
/// service (ClusterIP `.1`, port 443 to `target_port`, the servers' secure port) and the system
/// priority classes when missing.
pub async fn bootstrap(groups: &[ApiGroupInfo], target_port: u16) -> Result<(), ApiError> {
    let namespaces = find_storage(groups, "", "namespaces")
        .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
    for ns in SYSTEM_NAMESPACES {
        ensure(
            &namespaces,
            &Context::default(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
    }
    let services = find_storage(groups, "", "services")
        .ok_or_else(|| ApiError::internal("services are not served"))?;
    let ip = crate::core::service::kubernetes_service_ip(groups);
    let ctx = Context {
        namespace: "default".into(),
        ..Default::default()
    };
    ensure(
        &services,
        &ctx,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": ip, "sessionAffinity": "None",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": target_port}]}}),
    )
    .await?;
    bootstrap_priority_classes(groups).await
}

/// Upstream's scheduling post-start hook: `system-node-critical` and `system-cluster-critical`
/// when missing (an existing class of that name is left as it is).
async fn bootstrap_priority_classes(groups: &[ApiGroupInfo]) -> Result<(), ApiError> {
    use crate::scheduling::{system_priority_class, GROUP, SYSTEM_PRIORITY_CLASSES};
    let Some(classes) = find_storage(groups, GROUP, "priorityclasses") else {
        return Ok(());
    };
    for (name, value, description) in SYSTEM_PRIORITY_CLASSES {
        ensure(
            &classes,
            &Context::default(),
            system_priority_class(name, *value, description),
        )
        .await?;
    }
    Ok(())
}
