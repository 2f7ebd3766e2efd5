//! `kapi-registry`: the resources kapi serves and the generic machinery that stores them.
//!
//! It owns the REST capability traits ([`rest`]: `Creater`, `Getter`, `Lister`, `Updater`,
//! `GracefulDeleter`, `CollectionDeleter`, `Watcher`, `TableConvertor`), the generic `Store`
//! driven by a per-resource `Strategy`, and the built-in resources under `resources/` (one
//! module per API group). It turns storage errors into API errors; it never speaks HTTP.

pub mod admission_objects;
pub mod allocator;
mod bootstrap;
pub mod codec;
pub mod create_only;
pub mod customresource;
pub mod meta;
pub mod namespace_lifecycle;
pub mod printers;
mod reads;
pub mod resources;
pub mod rest;
pub mod store;
pub mod strategy;
pub mod testing;

pub use bootstrap::bootstrap;
pub use store::{Store, Subresource};
pub use strategy::Strategy;

use kapi_machinery::ApiError;
use kapi_storage::DynStorage;
use namespace_lifecycle::{CachedNamespaceLifecycle, NamespaceLifecycle, WatchCaches};
use std::sync::Arc;

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

/// Shared state the groups' storages are built from.
#[derive(Clone)]
pub struct BuildContext {
    pub config: RegistryConfig,
    pub namespaces: Arc<dyn NamespaceLifecycle>,
    /// The watch caches the namespace check (and admission) read, filled by [`build_with`].
    pub caches: WatchCaches,
}

impl BuildContext {
    /// The namespace check reads the namespaces' watch cache once [`build_with`] filled it.
    pub fn new(config: RegistryConfig) -> Self {
        let caches = WatchCaches::default();
        let namespaces = Arc::new(CachedNamespaceLifecycle::new(
            config.storage.clone(),
            caches.clone(),
        ));
        Self {
            config,
            namespaces,
            caches,
        }
    }

    /// The storage a resource's Store uses (the backend; the watch cache where enabled and
    /// available). `fields` are the field labels the cache keeps the values of, so that
    /// selectors on them decode no object.
    pub fn storage_for(&self, prefix: &str, fields: &'static [&'static str]) -> DynStorage {
        if self.config.watch_cache {
            let config = kapi_storage::cacher::CacherConfig {
                fields,
                ..Default::default()
            };
            kapi_storage::cacher::Cacher::with_config(self.config.storage.clone(), prefix, config)
        } else {
            self.config.storage.clone()
        }
    }

    /// A Store for `strategy` with the namespace check wired in.
    pub fn store(&self, strategy: Arc<dyn Strategy>) -> Store {
        let prefix = format!("/{}/", strategy.key_prefix());
        // The kind's field labels; one that names another path (`spec.host`) reaches the
        // storage as that path, and a path the cache does not keep is read from the object.
        let fields = strategy
            .field_label_conversion()
            .map_or(&[][..], |c| c.labels);
        Store::new(strategy, self.storage_for(&prefix, fields))
            .with_namespace_lifecycle(self.namespaces.clone())
    }
}

/// Builds every built-in API group: `""` (v1), apps, batch, coordination.k8s.io,
/// events.k8s.io, discovery.k8s.io. Subresources are separate storages with
/// `info().subresource` set.
pub async fn build(config: RegistryConfig) -> Result<Vec<rest::ApiGroupInfo>, ApiError> {
    build_with(&BuildContext::new(config)).await
}

/// [`build`] from a context the caller keeps (for custom resources' Stores and admission's
/// cached reads); fills `ctx.caches`.
pub async fn build_with(ctx: &BuildContext) -> Result<Vec<rest::ApiGroupInfo>, ApiError> {
    let mut groups = vec![resources::core::group(ctx).await?];
    groups.extend(resources::apps::groups(ctx));
    groups.extend(resources::batch::groups(ctx));
    groups.extend(resources::misc::groups(ctx));
    groups.extend(resources::rbac::groups(ctx));
    groups.extend(resources::scheduling::groups(ctx));
    groups.extend(resources::policy::groups(ctx));
    groups.extend(resources::networking::groups(ctx));
    groups.extend(resources::storage::groups(ctx));
    groups.extend(resources::node::groups(ctx));
    groups.extend(resources::autoscaling::groups(ctx));
    groups.extend(resources::certificates::groups(ctx));
    groups.extend(resources::apiextensions::groups(ctx));
    groups.extend(resources::admissionregistration::groups(ctx));
    groups.extend(resources::apiregistration::groups(ctx));
    ctx.caches
        .fill_from(|resource| store::storage_of(&groups, "", resource));
    Ok(groups)
}
