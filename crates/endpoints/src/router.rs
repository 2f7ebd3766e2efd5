//! The router: an immutable snapshot of `(group, version, resource, subresource)` → routes,
//! swapped atomically when a group is added or replaced at run time (custom resources).
//! Readers clone the snapshot's `Arc` and never hold a lock across an `.await`.

use crate::discovery::Discovery;
use crate::installer::{self, ResourceRoutes, RouteKey};
use crate::openapi::OpenApi;
use bytes::Bytes;
use http::{HeaderMap, Response};
use kapi_registry::rest::ApiGroupInfo;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// One immutable routing snapshot.
pub struct RouteTable {
    pub routes: HashMap<RouteKey, Arc<ResourceRoutes>>,
    /// The groups the snapshot was built from (discovery and OpenAPI read them).
    pub groups: Arc<Vec<ApiGroupInfo>>,
    /// What legacy discovery reports as the server's address.
    pub server_address: String,
    /// The `gitVersion` OpenAPI documents carry in `info.version`.
    pub server_version: String,
    /// Discovery documents of this snapshot, built on first use.
    pub discovery: OnceLock<Discovery>,
    /// OpenAPI documents of this snapshot, built on first use (they are large).
    pub openapi: OnceLock<OpenApi>,
}

impl RouteTable {
    pub fn lookup(&self, key: &RouteKey) -> Option<Arc<ResourceRoutes>> {
        self.routes.get(key).cloned()
    }

    /// The discovery documents of this snapshot.
    pub fn discovery(&self) -> &Discovery {
        self.discovery
            .get_or_init(|| Discovery::new(&self.groups, &self.server_address))
    }

    /// The OpenAPI documents of this snapshot.
    pub fn openapi(&self) -> &OpenApi {
        self.openapi
            .get_or_init(|| OpenApi::new(&self.groups, &self.server_version))
    }

    /// Builds every OpenAPI document of this snapshot now.
    pub fn prepare_openapi(&self) {
        self.openapi().prepare();
    }

    /// Answers `/openapi/v2`, `/openapi/v3` and `/openapi/v3/<gv>`; `None` for an unknown path.
    pub fn openapi_response(
        &self,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
    ) -> Option<Response<Bytes>> {
        self.openapi().serve(path, query, headers)
    }

    /// True when some resource is served under this group/version (for 404 wording).
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.groups
            .iter()
            .any(|g| g.group == group && g.versions.iter().any(|v| v.version == version))
    }
}

/// What OpenAPI reports until the server sets its own version.
pub const DEFAULT_SERVER_VERSION: &str = "v1.33.0";

/// The live router.
pub struct Router {
    current: RwLock<Arc<RouteTable>>,
    identity: RwLock<Identity>,
}

/// Who the server says it is in discovery and OpenAPI.
#[derive(Clone, Debug)]
struct Identity {
    address: String,
    version: String,
}

fn build(groups: Vec<ApiGroupInfo>, id: &Identity) -> RouteTable {
    RouteTable {
        routes: installer::install(&groups),
        groups: Arc::new(groups),
        server_address: id.address.clone(),
        server_version: id.version.clone(),
        discovery: Default::default(),
        openapi: Default::default(),
    }
}

impl Router {
    pub fn new(groups: Vec<ApiGroupInfo>) -> Self {
        let identity = Identity {
            address: String::new(),
            version: DEFAULT_SERVER_VERSION.to_string(),
        };
        Self {
            current: RwLock::new(Arc::new(build(groups, &identity))),
            identity: RwLock::new(identity),
        }
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<RouteTable> {
        // A poisoned lock still holds a complete snapshot: the writer only swaps an Arc.
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Adds `group`, or replaces the group of the same name with it, in a new snapshot.
    pub fn install_group(&self, group: ApiGroupInfo) {
        self.update(|groups| {
            groups.retain(|g| g.group != group.group);
            groups.push(group);
        });
    }

    /// Removes a group's routes. Returns whether it was installed.
    pub fn remove_group(&self, name: &str) -> bool {
        let mut removed = false;
        self.update(|groups| {
            let before = groups.len();
            groups.retain(|g| g.group != name);
            removed = groups.len() != before;
        });
        removed
    }

    fn update(&self, change: impl FnOnce(&mut Vec<ApiGroupInfo>)) {
        let mut guard = match self.current.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut groups: Vec<ApiGroupInfo> = guard.groups.as_ref().clone();
        change(&mut groups);
        *guard = Arc::new(build(groups, &self.identity()));
    }

    fn identity(&self) -> Identity {
        match self.identity.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn set_identity(&self, change: impl FnOnce(&mut Identity)) {
        {
            let mut id = match self.identity.write() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            change(&mut id);
        }
        self.update(|_| {});
    }

    /// Sets the address legacy discovery reports; the next snapshot carries it.
    pub fn set_server_address(&self, address: String) {
        self.set_identity(|id| id.address = address);
    }

    /// Sets the version OpenAPI documents report; the next snapshot carries it.
    pub fn set_server_version(&self, version: String) {
        self.set_identity(|id| id.version = version);
    }
}
