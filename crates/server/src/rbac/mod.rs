//! Authorization at start-up: the authorizer for `--authorization-mode` (always behind the
//! `system:masters` privileged-groups authorizer, as upstream), and, when RBAC is on, what
//! keeps it working: the bootstrap policy ([`bootstrap`]), the index fed from storage watches
//! ([`feed`]), ClusterRole aggregation ([`aggregation`]) and escalation checks around the RBAC
//! storages ([`escalation`]). The `authorization.k8s.io` review resources ([`review`]) are
//! served whatever the modes.

pub mod aggregation;
pub mod bootstrap;
pub mod escalation;
mod feed;
pub mod reconcile;
pub mod review;

use crate::config::AuthorizationMode;
use crate::error::ServerError;
use kapi_auth::authz::rbac::{RbacAuthorizer, RbacIndex, RbacKind};
use kapi_auth::authz::{
    AlwaysAllow, AlwaysDeny, Authorizer, PrivilegedGroups, Union, SYSTEM_MASTERS,
};
use kapi_registry::rest::ApiGroupInfo;
use std::sync::Arc;
use tokio::sync::{watch, Notify};

pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

pub(crate) use kapi_registry::rest::find_storage;

struct RbacRuntime {
    index: Arc<RbacIndex>,
    feeds: Vec<feed::Feed>,
    /// The storages as the registry built them (no escalation checks), for kapi's own writes.
    storages: bootstrap::Storages,
}

/// The server's authorization, built by [`setup`] and started by [`Authorization::start`].
pub struct Authorization {
    pub authorizer: Arc<dyn Authorizer>,
    rbac: Option<RbacRuntime>,
    node: Option<crate::node_authz::NodeAuthorization>,
}

/// Builds the authorizer for `modes` and prepares `groups`: adds `authorization.k8s.io` and,
/// with RBAC, wraps the RBAC storages with escalation checks. Call before the API handler is
/// built; then [`Authorization::start`].
pub fn setup(
    modes: &[AuthorizationMode],
    groups: &mut Vec<ApiGroupInfo>,
) -> Result<Authorization, ServerError> {
    setup_with_gates(modes, &Default::default(), groups)
}

/// [`setup`] with `--feature-gates` (the node authorizer reads `AuthorizeNodeWithSelectors`).
pub fn setup_with_gates(
    modes: &[AuthorizationMode],
    gates: &std::collections::BTreeMap<String, bool>,
    groups: &mut Vec<ApiGroupInfo>,
) -> Result<Authorization, ServerError> {
    let mut list: Vec<Arc<dyn Authorizer>> =
        vec![Arc::new(PrivilegedGroups(vec![SYSTEM_MASTERS.into()]))];
    let mut rbac = None;
    let mut rbac_authorizer = None;
    let mut node = None;
    for m in modes {
        match m {
            AuthorizationMode::Node => {
                if node.is_none() {
                    let n = crate::node_authz::setup(groups, gates);
                    list.push(n.authorizer.clone());
                    node = Some(n);
                }
            }
            AuthorizationMode::AlwaysAllow => list.push(Arc::new(AlwaysAllow)),
            AuthorizationMode::AlwaysDeny => list.push(Arc::new(AlwaysDeny)),
            AuthorizationMode::Rbac => {
                if rbac.is_some() {
                    continue;
                }
                let feeds = feed::feeds(groups).ok_or_else(|| {
                    ServerError::Config(format!(
                        "--authorization-mode=RBAC needs the {RBAC_GROUP} API group"
                    ))
                })?;
                let index = RbacIndex::new();
                let a = RbacAuthorizer::new(index.clone());
                list.push(Arc::new(a.clone()));
                rbac_authorizer = Some(a);
                let missing = || ServerError::Config(format!("{RBAC_GROUP} is incomplete"));
                let find =
                    |resource| find_storage(groups, RBAC_GROUP, resource).ok_or_else(missing);
                rbac = Some(RbacRuntime {
                    storages: bootstrap::Storages {
                        cluster_roles: find("clusterroles")?,
                        cluster_role_bindings: find("clusterrolebindings")?,
                        roles: find("roles")?,
                        role_bindings: find("rolebindings")?,
                    },
                    index,
                    feeds,
                });
            }
        }
    }
    if modes.is_empty() {
        list.push(Arc::new(AlwaysAllow));
    }
    let authorizer: Arc<dyn Authorizer> = Arc::new(Union(list));
    if let Some(rt) = &rbac {
        wrap_rbac_storages(groups, &rt.index, &authorizer);
    }
    groups.retain(|g| g.group != review::GROUP);
    groups.push(review::group(authorizer.clone(), rbac_authorizer));
    Ok(Authorization {
        authorizer,
        rbac,
        node,
    })
}

fn wrap_rbac_storages(
    groups: &mut [ApiGroupInfo],
    index: &Arc<RbacIndex>,
    authorizer: &Arc<dyn Authorizer>,
) {
    for g in groups.iter_mut().filter(|g| g.group == RBAC_GROUP) {
        for v in g.versions.iter_mut() {
            for s in v.storages.iter_mut() {
                if !s.info().subresource.is_empty() {
                    continue;
                }
                let kind = RbacKind::ALL
                    .into_iter()
                    .find(|k| k.resource() == s.info().resource);
                if let Some(kind) = kind {
                    *s = escalation::EscalationCheckedStorage::wrap(
                        kind,
                        s.clone(),
                        index.clone(),
                        authorizer.clone(),
                    );
                }
            }
        }
    }
}

impl Authorization {
    /// With RBAC: creates and reconciles the bootstrap policy, fills the index, aggregates cluster
    /// roles, and starts the watches and the aggregation controller (they stop when
    /// `shutdown` turns true). Returns once the index holds every RBAC object.
    pub async fn start(&self, shutdown: watch::Receiver<bool>) -> Result<(), ServerError> {
        if let Some(node) = &self.node {
            node.start(shutdown.clone()).await;
        }
        let Some(rt) = &self.rbac else {
            return Ok(());
        };
        let policy = bootstrap::Policy::load()?;
        let counts = bootstrap::ensure(&rt.storages, &policy).await?;
        if counts != bootstrap::Counts::default() {
            tracing::info!(
                created = counts.created,
                updated = counts.updated,
                recreated = counts.recreated,
                protected = counts.protected,
                source = bootstrap::POLICY_SOURCE,
                "reconciled the bootstrap RBAC policy"
            );
        }
        let mut versions = Vec::new();
        for f in &rt.feeds {
            versions.push(f.sync(&rt.index).await?);
        }
        // Aggregation settles in rounds (view feeds edit feeds admin); the first rounds run
        // here so the aggregated roles are whole when serving starts.
        for _ in 0..4 {
            if aggregation::reconcile(&rt.index, &rt.storages.cluster_roles).await? == 0 {
                break;
            }
            if let (Some(cluster_role_feed), Some(version)) =
                (rt.feeds.first(), versions.first_mut())
            {
                *version = cluster_role_feed.sync(&rt.index).await?;
            }
        }
        let changed = Arc::new(Notify::new());
        for (f, rv) in rt.feeds.iter().cloned().zip(versions) {
            tokio::spawn(f.run(rt.index.clone(), rv, changed.clone(), shutdown.clone()));
        }
        tokio::spawn(aggregation::run(
            rt.index.clone(),
            rt.storages.cluster_roles.clone(),
            changed,
            shutdown,
        ));
        Ok(())
    }
}
