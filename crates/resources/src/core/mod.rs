//! The legacy core group (`/api/v1`).

pub mod componentstatus;
pub mod configmap;
pub mod connect;
pub mod connect_options;
pub mod controller;
pub mod ephemeral;
pub mod namespace;
pub mod pod;
mod pod_defaults;
pub mod pod_subresources;
pub mod secret;
pub mod service;
pub mod simple;

use crate::BuildContext;
use kapi_machinery::ApiError;
use kapi_registry::kind::push;
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo, Storage};
use kapi_registry::store::Subresource;
use kapi_registry::strategy::Strategy;
use std::sync::Arc;

pub async fn group(ctx: &BuildContext) -> Result<ApiGroupInfo, ApiError> {
    let mut s: Vec<Arc<dyn Storage>> = Vec::new();
    let ns = push(&mut s, ctx, Arc::new(namespace::NamespaceStrategy));
    s.push(Arc::new(ns.subresource(Subresource::Finalize)));
    push(&mut s, ctx, Arc::new(configmap::ConfigMapStrategy));
    push(&mut s, ctx, Arc::new(secret::SecretStrategy));
    let services = service::ServiceStrategy::new(
        ctx.config.service_cluster_ip_range,
        ctx.config.service_node_port_range.clone(),
        ctx.config.storage.clone(),
    );
    services.start_repair().await?;
    let services = push(&mut s, ctx, Arc::new(services));
    let pods = push(&mut s, ctx, Arc::new(pod::PodStrategy));
    // The kubelet-facing subresources read nodes and endpoints straight from storage, as
    // upstream's connection-info getter reads nodes through the store.
    let direct = |strategy: Arc<dyn Strategy>| -> Arc<dyn Storage> {
        Arc::new(kapi_registry::Store::new(
            strategy,
            ctx.config.storage.clone(),
        ))
    };
    let nodes = direct(Arc::new(simple::NodeStrategy));
    let stores = connect::Stores {
        pods: Arc::new(pods.clone()),
        nodes: nodes.clone(),
        services: Arc::new(services.clone()),
        endpoints: direct(Arc::new(simple::EndpointsStrategy)),
        kubelet: Arc::new(ctx.config.kubelet.clone()),
    };
    s.extend(connect::storages(
        Storage::info(&pods),
        nodes.info(),
        Storage::info(&services),
        stores,
    ));
    s.push(Arc::new(pod_subresources::binding_storage(pods.clone())));
    s.push(Arc::new(pod_subresources::legacy_binding_storage(
        pods.clone(),
    )));
    s.push(Arc::new(componentstatus::ComponentStatusStorage::new(
        ctx.config.storage.clone(),
    )));
    s.push(Arc::new(ephemeral::EphemeralContainersStorage::new(
        pods.clone(),
    )));
    // Evictions read budgets straight from storage, as upstream's eviction reads them through
    // a client rather than a cache.
    let budgets = kapi_registry::Store::new(
        Arc::new(crate::policy::PodDisruptionBudgetStrategy),
        ctx.config.storage.clone(),
    )
    .with_namespace_lifecycle(ctx.namespaces.clone());
    s.push(Arc::new(pod_subresources::EvictionStorage::new(
        pods, budgets,
    )));
    for st in simple::strategies() {
        push(&mut s, ctx, st);
    }
    let rc = push(
        &mut s,
        ctx,
        Arc::new(controller::ReplicationControllerStrategy),
    );
    s.push(Arc::new(kapi_registry::scale::ScaleStore::new(rc)));
    push(&mut s, ctx, Arc::new(controller::PodTemplateStrategy));
    Ok(ApiGroupInfo {
        group: String::new(),
        preferred_version: "v1".into(),
        versions: vec![ApiVersionInfo {
            version: "v1".into(),
            storages: s,
        }],
    })
}
