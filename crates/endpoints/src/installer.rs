//! The installer: asks each storage which REST capabilities it implements and turns the
//! answers into a verb table, as upstream's `registerResourceHandlers` type-asserts Go
//! interfaces. Routes and discovery read the same probes ([`VerbTable`]), so they cannot
//! disagree. The router keeps snapshots of what this module installs.

use crate::patch::meta::PatchSchema;
use crate::verbs::VerbTable;
use kapi_registry::rest::{self, ApiGroupInfo};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Where a resource request goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteKey {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
}

impl RouteKey {
    pub fn new(group: &str, version: &str, resource: &str, subresource: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: subresource.into(),
        }
    }
}

/// One installed resource (or subresource): its storage and the verbs it serves.
pub struct ResourceRoutes {
    pub storage: Arc<dyn rest::Storage>,
    pub verbs: VerbTable,
    /// The storage's patch schema, built on first use: building it generates the kind's
    /// whole schema, too much to do on every write.
    patch_schema: OnceLock<Option<PatchSchema>>,
}

impl ResourceRoutes {
    pub fn new(storage: Arc<dyn rest::Storage>, verbs: VerbTable) -> Self {
        Self {
            storage,
            verbs,
            patch_schema: OnceLock::new(),
        }
    }

    /// [`PatchSchema::for_storage`] of the storage, computed once per route snapshot.
    pub fn patch_schema(&self) -> Option<&PatchSchema> {
        self.patch_schema
            .get_or_init(|| PatchSchema::for_storage(self.storage.as_ref()))
            .as_ref()
    }
}

/// The route key of one storage.
pub fn route_key(storage: &dyn rest::Storage) -> RouteKey {
    let info = storage.info();
    RouteKey::new(
        &info.group,
        &info.version,
        &info.resource,
        &info.subresource,
    )
}

/// The routes of every storage of `groups`.
pub fn install(groups: &[ApiGroupInfo]) -> HashMap<RouteKey, Arc<ResourceRoutes>> {
    let mut routes = HashMap::new();
    for group in groups {
        install_group_into(&mut routes, group);
    }
    routes
}

/// Adds the routes of one group to `routes` (replacing any with the same keys).
pub fn install_group_into(
    routes: &mut HashMap<RouteKey, Arc<ResourceRoutes>>,
    group: &ApiGroupInfo,
) {
    for version in &group.versions {
        for storage in &version.storages {
            let verbs = VerbTable::probe(storage.as_ref());
            let mut key = route_key(storage.as_ref());
            // The group/version a storage is installed under wins over what it reports, so
            // one storage may serve several versions.
            key.group = group.group.clone();
            key.version = version.version.clone();
            routes.insert(key, Arc::new(ResourceRoutes::new(storage.clone(), verbs)));
        }
    }
}
