//! The installer: asks each storage which REST capabilities it implements and turns the
//! answers into a verb table, as upstream's `registerResourceHandlers` type-asserts Go
//! interfaces. Routes and discovery read the same probes, so they cannot disagree.

use crate::router::{ResourceRoutes, RouteKey, RouteTable};
use kapi_registry::rest::{self, ApiGroupInfo};
use std::collections::HashMap;
use std::sync::Arc;

/// A Kubernetes verb a route can serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Create,
    Get,
    List,
    Watch,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    /// Discovery's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// Parses `RequestInfo.verb`.
    pub fn parse(s: &str) -> Option<Verb> {
        Some(match s {
            "create" => Verb::Create,
            "get" => Verb::Get,
            "list" => Verb::List,
            "watch" => Verb::Watch,
            "update" => Verb::Update,
            "patch" => Verb::Patch,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::DeleteCollection,
            _ => return None,
        })
    }
}

/// The verbs a storage supports, probed from its capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerbTable {
    pub create: bool,
    pub get: bool,
    pub list: bool,
    pub watch: bool,
    pub update: bool,
    pub patch: bool,
    pub delete: bool,
    pub delete_collection: bool,
}

impl VerbTable {
    /// Probes `storage`'s `as_*` capabilities through discovery's `verbs_of`, so routes
    /// and discovery read one list.
    pub fn probe(storage: &dyn rest::Storage) -> Self {
        let mut t = Self::default();
        for v in crate::discovery::verbs_of(storage) {
            match Verb::parse(v) {
                Some(Verb::Create) => t.create = true,
                Some(Verb::Get) => t.get = true,
                Some(Verb::List) => t.list = true,
                Some(Verb::Watch) => t.watch = true,
                Some(Verb::Update) => t.update = true,
                Some(Verb::Patch) => t.patch = true,
                Some(Verb::Delete) => t.delete = true,
                Some(Verb::DeleteCollection) => t.delete_collection = true,
                None => {}
            }
        }
        t
    }

    pub fn allows(&self, verb: Verb) -> bool {
        match verb {
            Verb::Create => self.create,
            Verb::Get => self.get,
            Verb::List => self.list,
            Verb::Watch => self.watch,
            Verb::Update => self.update,
            Verb::Patch => self.patch,
            Verb::Delete => self.delete,
            Verb::DeleteCollection => self.delete_collection,
        }
    }

    /// The verbs in discovery's order.
    pub fn verbs(&self) -> Vec<&'static str> {
        let all = [
            Verb::Create,
            Verb::Delete,
            Verb::DeleteCollection,
            Verb::Get,
            Verb::List,
            Verb::Patch,
            Verb::Update,
            Verb::Watch,
        ];
        all.into_iter()
            .filter(|v| self.allows(*v))
            .map(Verb::as_str)
            .collect()
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

/// Builds the routes of every storage of `groups`.
pub fn install(groups: Vec<ApiGroupInfo>) -> RouteTable {
    let mut routes = HashMap::new();
    for group in &groups {
        install_group_into(&mut routes, group);
    }
    RouteTable {
        routes,
        groups: Arc::new(groups),
        server_address: String::new(),
        server_version: String::new(),
        discovery: Default::default(),
        openapi: Default::default(),
    }
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
