//! `kapi-registry`: the generic machinery every resource is stored through (k8s.io/apiserver's
//! `pkg/registry`).
//!
//! It owns the REST capability traits ([`rest`]: `Creater`, `Getter`, `Lister`, `Updater`,
//! `GracefulDeleter`, `CollectionDeleter`, `Watcher`, `TableConvertor`), the generic [`Store`]
//! driven by a per-resource [`Strategy`], the codecs, the table engine printers are written in
//! ([`table`]), the `/scale` subresource ([`scale`]), and what a kind's module is built from
//! ([`kind`]). It names no kind: the built-in kinds live in `kapi-resources`, the custom
//! resources in `kapi-apiextensions`. It turns storage errors into API errors; it never speaks
//! HTTP.

pub mod admission_objects;
pub mod codec;
pub mod create_only;
pub mod fields;
pub mod group_priority;
pub mod jsonpath;
pub mod kind;
pub mod labels;
pub mod meta;
pub mod namespace_lifecycle;
pub mod reads;
pub mod rest;
pub mod scale;
pub mod store;
pub mod strategy;
pub mod table;
pub mod testing;
pub mod watch_caches;

// for `typed!`, whose expansions name the types' `Resource` trait
pub use k8s_openapi;
pub use store::{Store, Subresource};
pub use strategy::Strategy;

use kapi_storage::DynStorage;
use namespace_lifecycle::{CachedNamespaceLifecycle, NamespaceLifecycle};
use std::sync::Arc;
use watch_caches::WatchCaches;

/// What every resource's [`Store`] is built from: the storage backend, whether LIST and
/// WATCH are served from a per-resource watch cache, and the namespace check.
#[derive(Clone)]
pub struct Stores {
    pub storage: DynStorage,
    /// Serve LIST and WATCH from a per-resource watch cache.
    pub watch_cache: bool,
    pub namespaces: Arc<dyn NamespaceLifecycle>,
    /// The watch caches the namespace check (and admission) read, filled once the groups are
    /// built.
    pub caches: WatchCaches,
}

impl Stores {
    /// The namespace check reads the namespaces' watch cache once the groups filled it.
    pub fn new(storage: DynStorage, watch_cache: bool) -> Self {
        let caches = WatchCaches::default();
        let namespaces = Arc::new(CachedNamespaceLifecycle::new(
            storage.clone(),
            caches.clone(),
        ));
        Self {
            storage,
            watch_cache,
            namespaces,
            caches,
        }
    }

    /// The storage a resource's Store uses (the backend; the watch cache where enabled and
    /// available). `fields` are the field labels the cache keeps the values of, so that
    /// selectors on them decode no object; watches of one value of `trigger` are indexed.
    pub fn storage_for(
        &self,
        prefix: &str,
        fields: &'static [&'static str],
        trigger: Option<&'static str>,
    ) -> DynStorage {
        if self.watch_cache {
            let config = kapi_storage::cacher::CacherConfig {
                fields,
                trigger,
                ..Default::default()
            };
            kapi_storage::cacher::Cacher::with_config(self.storage.clone(), prefix, config)
        } else {
            self.storage.clone()
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
        let trigger = strategy.watch_trigger_field();
        Store::new(strategy, self.storage_for(&prefix, fields, trigger))
            .with_namespace_lifecycle(self.namespaces.clone())
    }
}
