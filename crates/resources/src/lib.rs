//! `kapi-resources`: the built-in kinds kapi serves (k8s.io/kubernetes' `pkg/registry` and
//! `pkg/printers`), one module per API group.
//!
//! Each kind is a [`Strategy`](kapi_registry::Strategy) (decoding into its `k8s-openapi`
//! type, defaults, validation, its printer) plus a line in its group's table; the generic
//! Store of `kapi-registry` stores it. Here too: the printers ([`printers`]), the ClusterIP
//! and NodePort allocators ([`allocator`]), and the objects a new cluster starts with
//! ([`bootstrap`]). [`build`] assembles every built-in group, and the CustomResourceDefinition
//! group from `kapi-apiextensions`.

pub mod admissionregistration;
pub mod allocator;
pub mod apiregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
mod bootstrap;
pub mod certificates;
pub mod core;
pub mod flowcontrol;
pub mod misc;
pub mod networking;
pub mod node;
pub mod policy;
pub mod printers;
pub mod rbac;
pub mod scheduling;
#[cfg(test)]
mod status_strategy_tests;
pub mod storage;
mod storage_layout;
pub mod workload;

pub use bootstrap::bootstrap;
pub use storage_layout::upgrade_earlier_layout;
// The helpers every kind's module builds with, under the names the kinds use.
pub(crate) use kapi_registry::kind::{
    at, default_at, default_in, group_util, info, non_negative, obj_mut, object_at_mut,
    objects_at_mut, require, set_status, str_at, strategy_group,
};
pub(crate) use kapi_registry::typed;

use kapi_machinery::ApiError;
use kapi_registry::rest::ApiGroupInfo;
use kapi_registry::Stores;
use kapi_storage::DynStorage;

/// What the registry needs to build every built-in resource.
#[derive(Clone)]
pub struct RegistryConfig {
    pub storage: DynStorage,
    /// `--service-cluster-ip-range`; `.1` goes to the `kubernetes` service.
    pub service_cluster_ip_range: ipnet::IpNet,
    /// `--service-node-port-range`.
    pub service_node_port_range: std::ops::RangeInclusive<u16>,
    /// Serve LIST and WATCH from a per-resource watch cache.
    pub watch_cache: bool,
    /// How kubelets are reached (`pods/log`, `pods/exec`, `nodes/proxy`, ...): the
    /// `--kubelet-*` flags.
    pub kubelet: kapi_proxy::KubeletClientConfig,
}

impl RegistryConfig {
    /// kube-apiserver's defaults: `10.0.0.0/24`, ports 30000-32767, watch cache on.
    pub fn new(storage: DynStorage) -> Self {
        Self {
            storage,
            service_cluster_ip_range: ipnet::IpNet::V4(
                ipnet::Ipv4Net::new(std::net::Ipv4Addr::new(10, 0, 0, 0), 24).unwrap_or_default(),
            ),
            service_node_port_range: 30000..=32767,
            watch_cache: true,
            kubelet: Default::default(),
        }
    }
}

/// What the built-in groups' storages are built from: the [`RegistryConfig`] and the generic
/// [`Stores`] (derefs to them, so a group builds its Stores with `ctx.store(..)`).
#[derive(Clone)]
pub struct BuildContext {
    pub config: RegistryConfig,
    pub stores: Stores,
}

impl BuildContext {
    /// The namespace check reads the namespaces' watch cache once [`build_with`] filled it.
    pub fn new(config: RegistryConfig) -> Self {
        let stores = Stores::new(config.storage.clone(), config.watch_cache);
        Self { config, stores }
    }
}

impl std::ops::Deref for BuildContext {
    type Target = Stores;
    fn deref(&self) -> &Stores {
        &self.stores
    }
}

/// Builds every built-in API group: `""` (v1), apps, batch, coordination.k8s.io,
/// events.k8s.io, discovery.k8s.io. Subresources are separate storages with
/// `info().subresource` set.
pub async fn build(config: RegistryConfig) -> Result<Vec<ApiGroupInfo>, ApiError> {
    build_with(&BuildContext::new(config)).await
}

/// [`build`] from a context the caller keeps (for custom resources' Stores and admission's
/// cached reads); fills `ctx.caches`.
pub async fn build_with(ctx: &BuildContext) -> Result<Vec<ApiGroupInfo>, ApiError> {
    let mut groups = vec![core::group(ctx).await?];
    groups.extend(apps::groups(ctx));
    groups.extend(batch::groups(ctx));
    groups.extend(misc::groups(ctx));
    groups.extend(rbac::groups(ctx));
    groups.extend(scheduling::groups(ctx));
    groups.extend(policy::groups(ctx));
    groups.extend(networking::groups(ctx));
    groups.extend(storage::groups(ctx));
    groups.extend(node::groups(ctx));
    groups.extend(autoscaling::groups(ctx));
    groups.extend(certificates::groups(ctx));
    groups.extend(kapi_apiextensions::definition::groups(ctx));
    groups.extend(admissionregistration::groups(ctx));
    groups.extend(flowcontrol::groups(ctx));
    groups.extend(apiregistration::groups(ctx));
    ctx.caches
        .fill_from(|group, resource| kapi_registry::store::storage_of(&groups, group, resource));
    Ok(groups)
}
