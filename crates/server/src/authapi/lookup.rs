//! [`RegistryLookup`]: the ServiceAccounts, Secrets, Pods and Nodes tokens are checked against,
//! read from their watch caches, and through the core group's storages (quorum reads) when a
//! cache does not hold the object (upstream's getter: its informers' listers, then a live
//! lookup). A deletion is seen once the cache has it, as upstream's informers see it.

use crate::error::ServerError;
use async_trait::async_trait;
use kapi_auth::authn::serviceaccount::{LookupError, ServiceAccountLookup};
use kapi_machinery::{ApiError, GetOptions, GroupResource, Object};
use kapi_registry::rest::{ApiGroupInfo, Context, Storage};
use kapi_registry::watch_caches::WatchCaches;
use std::sync::Arc;

pub struct RegistryLookup {
    caches: WatchCaches,
    service_accounts: Arc<dyn Storage>,
    secrets: Arc<dyn Storage>,
    pods: Arc<dyn Storage>,
    nodes: Arc<dyn Storage>,
}

fn core_storage(groups: &[ApiGroupInfo], resource: &str) -> Result<Arc<dyn Storage>, ServerError> {
    groups
        .iter()
        .filter(|g| g.group.is_empty())
        .flat_map(|g| g.versions.iter().filter(|v| v.version == "v1"))
        .flat_map(|v| v.storages.iter())
        .find(|s| {
            s.info().resource == resource
                && s.info().subresource.is_empty()
                && s.as_getter().is_some()
        })
        .cloned()
        .ok_or_else(|| ServerError::Config(format!("core/v1 {resource} are not installed")))
}

impl RegistryLookup {
    pub fn new(groups: &[ApiGroupInfo], caches: WatchCaches) -> Result<Self, ServerError> {
        Ok(Self {
            caches,
            service_accounts: core_storage(groups, "serviceaccounts")?,
            secrets: core_storage(groups, "secrets")?,
            pods: core_storage(groups, "pods")?,
            nodes: core_storage(groups, "nodes")?,
        })
    }

    /// The object, `None` when it does not exist.
    pub async fn get(
        storage: &dyn Storage,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ApiError> {
        let Some(getter) = storage.as_getter() else {
            return Ok(None);
        };
        let ctx = Context {
            namespace: namespace.into(),
            ..Default::default()
        };
        match getter.get(&ctx, name, &GetOptions::default()).await {
            Ok(o) => Ok(Some(o)),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn service_accounts(&self) -> &dyn Storage {
        self.service_accounts.as_ref()
    }
    pub fn secrets(&self) -> &dyn Storage {
        self.secrets.as_ref()
    }
    pub fn pods(&self) -> &dyn Storage {
        self.pods.as_ref()
    }
    pub fn nodes(&self) -> &dyn Storage {
        self.nodes.as_ref()
    }

    /// The object from its watch cache, else read from `storage`.
    async fn cached_or_live(
        &self,
        storage: &dyn Storage,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, LookupError> {
        let gr = GroupResource::new("", storage.info().resource.as_str());
        if let Some(Some(cached)) = self
            .caches
            .get(&gr, namespace, name)
            .await
            .map_err(lookup_error)?
        {
            return Ok(Some(Arc::unwrap_or_clone(cached)));
        }
        Self::get(storage, namespace, name)
            .await
            .map_err(lookup_error)
    }
}

fn lookup_error(e: ApiError) -> LookupError {
    LookupError(e.message)
}

#[async_trait]
impl ServiceAccountLookup for RegistryLookup {
    async fn service_account(&self, ns: &str, name: &str) -> Result<Option<Object>, LookupError> {
        self.cached_or_live(self.service_accounts(), ns, name).await
    }
    async fn secret(&self, ns: &str, name: &str) -> Result<Option<Object>, LookupError> {
        self.cached_or_live(self.secrets(), ns, name).await
    }
    async fn pod(&self, ns: &str, name: &str) -> Result<Option<Object>, LookupError> {
        self.cached_or_live(self.pods(), ns, name).await
    }
    async fn node(&self, name: &str) -> Result<Option<Object>, LookupError> {
        self.cached_or_live(self.nodes(), "", name).await
    }
}
