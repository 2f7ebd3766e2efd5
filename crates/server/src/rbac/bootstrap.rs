//! The bootstrap RBAC policy, created and reconciled at every start as kube-apiserver's
//! `rbac/bootstrap-roles` post-start hook does (`pkg/registry/rbac/rest/storage_rbac.go`).
//!
//! The policy is data: `policy/*.yaml`, upstream's `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`
//! as a kube-apiserver creates it (written by `hack/gen-bootstrap-policy.sh`, split as
//! upstream's testdata golden files): every ClusterRole (the user-facing and system roles and
//! the `system:controller:*` roles kube-controller-manager's controllers run under with
//! `--use-service-account-credentials`), every ClusterRoleBinding, and the Roles and
//! RoleBindings of `kube-system` and `kube-public`. Each object is reconciled with what is stored
//! ([`super::reconcile`]): created when missing, given back what it lacks unless it says
//! `rbac.authorization.kubernetes.io/autoupdate: "false"`, never stripped of what was added.

use super::reconcile::{reconcile_binding, reconcile_role, Operation, Reconciled};
use kapi_machinery::{ApiError, DeleteOptions, GetOptions, ListOptions, Object};
use kapi_registry::rest::{
    self, validate_nothing, Context, FieldValidation, UpdatedObjectFn, WriteOptions,
};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The kube-apiserver release the policy files were generated from.
pub const POLICY_SOURCE: &str = "v1.28.7";

const CLUSTER_ROLES: &str = include_str!("policy/cluster-roles.yaml");
const CONTROLLER_ROLES: &str = include_str!("policy/controller-roles.yaml");
const CLUSTER_ROLE_BINDINGS: &str = include_str!("policy/cluster-role-bindings.yaml");
const CONTROLLER_ROLE_BINDINGS: &str = include_str!("policy/controller-role-bindings.yaml");
const NAMESPACE_ROLES: &str = include_str!("policy/namespace-roles.yaml");
const NAMESPACE_ROLE_BINDINGS: &str = include_str!("policy/namespace-role-bindings.yaml");

/// Upstream retries the whole reconciliation every second for 30 seconds before giving up.
const ATTEMPTS: usize = 30;
const RETRY: Duration = Duration::from_secs(1);
/// Tries per object when another writer races us (upstream re-runs on conflicts).
const OBJECT_TRIES: usize = 5;

#[derive(Deserialize)]
struct List {
    items: Vec<serde_json::Value>,
}

fn parse(file: &str, text: &str) -> Result<Vec<Object>, ApiError> {
    let list: List = serde_saphyr::from_str(text)
        .map_err(|e| ApiError::internal(format!("bootstrap policy {file}: {e}")))?;
    list.items.into_iter().map(Object::from_value).collect()
}

/// The whole policy.
pub struct Policy {
    /// ClusterRoles (`ClusterRoles()` then `ControllerRoles()`).
    pub cluster_roles: Vec<Object>,
    pub cluster_role_bindings: Vec<Object>,
    /// Roles of `kube-system` and `kube-public` (`NamespaceRoles()`).
    pub roles: Vec<Object>,
    pub role_bindings: Vec<Object>,
}

impl Policy {
    pub fn load() -> Result<Policy, ApiError> {
        let mut cluster_roles = parse("cluster-roles.yaml", CLUSTER_ROLES)?;
        cluster_roles.extend(parse("controller-roles.yaml", CONTROLLER_ROLES)?);
        let mut cluster_role_bindings = parse("cluster-role-bindings.yaml", CLUSTER_ROLE_BINDINGS)?;
        cluster_role_bindings.extend(parse(
            "controller-role-bindings.yaml",
            CONTROLLER_ROLE_BINDINGS,
        )?);
        Ok(Policy {
            cluster_roles,
            cluster_role_bindings,
            roles: parse("namespace-roles.yaml", NAMESPACE_ROLES)?,
            role_bindings: parse("namespace-role-bindings.yaml", NAMESPACE_ROLE_BINDINGS)?,
        })
    }
}

/// The four RBAC storages, as the registry built them (no escalation checks: kapi's own
/// writes, as upstream's loopback client in `system:masters`).
pub struct Storages {
    pub cluster_roles: Arc<dyn rest::Storage>,
    pub cluster_role_bindings: Arc<dyn rest::Storage>,
    pub roles: Arc<dyn rest::Storage>,
    pub role_bindings: Arc<dyn rest::Storage>,
}

/// What a reconciliation did, by operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub created: usize,
    pub updated: usize,
    pub recreated: usize,
    pub protected: usize,
}

/// `EnsureRBACPolicy`: reconciles every object of `policy`, retrying the whole pass every
/// second (up to 30 s) while some object fails, as upstream's post-start hook.
pub async fn ensure(storages: &Storages, policy: &Policy) -> Result<Counts, ApiError> {
    let mut last = None;
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(RETRY).await;
        }
        match ensure_once(storages, policy).await {
            Ok(counts) => return Ok(counts),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::internal("bootstrap policy not reconciled")))
}

/// One pass over every object; failures are logged and the pass goes on ("try to create as
/// many as you can"), then the first failure is returned.
pub async fn ensure_once(storages: &Storages, policy: &Policy) -> Result<Counts, ApiError> {
    let mut counts = Counts::default();
    let mut failed = None;
    let sets: [(&Arc<dyn rest::Storage>, &Vec<Object>, bool); 4] = [
        (&storages.cluster_roles, &policy.cluster_roles, true),
        (
            &storages.cluster_role_bindings,
            &policy.cluster_role_bindings,
            false,
        ),
        (&storages.roles, &policy.roles, true),
        (&storages.role_bindings, &policy.role_bindings, false),
    ];
    for (storage, objects, is_role) in sets {
        // One list per resource; an object is read again only after a race.
        let mut stored = stored_objects(storage).await?;
        for expected in objects {
            let key = (
                expected.namespace().to_string(),
                expected.name().to_string(),
            );
            let existing = stored.remove(&key);
            match reconcile_one(storage, expected, is_role, existing).await {
                Ok(r) => {
                    log(storage, expected, &r);
                    match (r.protected, r.operation) {
                        (true, Operation::None) => {}
                        (true, _) => counts.protected = counts.protected.saturating_add(1),
                        (false, Operation::Create) => {
                            counts.created = counts.created.saturating_add(1)
                        }
                        (false, Operation::Update) => {
                            counts.updated = counts.updated.saturating_add(1)
                        }
                        (false, Operation::Recreate) => {
                            counts.recreated = counts.recreated.saturating_add(1)
                        }
                        (false, Operation::None) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(
                        "unable to reconcile {}/{}: {}",
                        kind_name(storage),
                        expected.name(),
                        e.message
                    );
                    failed.get_or_insert(e);
                }
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(counts),
    }
}

fn kind_name(storage: &Arc<dyn rest::Storage>) -> String {
    format!(
        "{}.rbac.authorization.k8s.io",
        storage.info().kind.to_lowercase()
    )
}

/// `permissions: [...]` of a role, `subjects: [...]` of a binding.
fn additions(r: &Reconciled) -> String {
    if r.missing_subjects.is_empty() {
        let rules: Vec<String> = r.missing_rules.iter().map(|x| x.compact_string()).collect();
        format!("permissions: [{}]", rules.join(" "))
    } else {
        let subjects: Vec<String> = r.missing_subjects.iter().map(|s| s.to_string()).collect();
        format!("subjects: [{}]", subjects.join(" "))
    }
}

fn log(storage: &Arc<dyn rest::Storage>, expected: &Object, r: &Reconciled) {
    let what = format!("{}/{}", kind_name(storage), expected.name());
    match (r.protected, r.operation) {
        (true, Operation::None) => {}
        (true, _) => tracing::warn!(
            "skipped reconcile-protected {what} with missing {}",
            additions(r)
        ),
        (false, Operation::Update) => {
            tracing::info!("updated {what} with additional {}", additions(r))
        }
        (false, Operation::Recreate) => tracing::info!("recreated {what}"),
        (false, Operation::Create) => tracing::debug!("created {what}"),
        (false, Operation::None) => {}
    }
}

/// Every stored object of `storage`, by namespace and name.
async fn stored_objects(
    storage: &Arc<dyn rest::Storage>,
) -> Result<HashMap<(String, String), Object>, ApiError> {
    let lister = storage
        .as_lister()
        .ok_or_else(|| ApiError::internal(format!("{}: cannot list", kind_name(storage))))?;
    let list = lister
        .list(&Context::default(), &ListOptions::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(|o| ((o.namespace().to_string(), o.name().to_string()), o))
        .collect())
}

/// Reconciles one object (`listed`: as the list showed it), reading it again after a race (a
/// conflict, a create that found it, an update that found it gone).
async fn reconcile_one(
    storage: &Arc<dyn rest::Storage>,
    expected: &Object,
    is_role: bool,
    listed: Option<Object>,
) -> Result<Reconciled, ApiError> {
    let ctx = Context {
        namespace: expected.namespace().to_string(),
        ..Default::default()
    };
    let unsupported =
        |verb: &str| ApiError::internal(format!("{}: cannot {verb}", kind_name(storage)));
    let getter = storage.as_getter().ok_or_else(|| unsupported("get"))?;
    let mut last = None;
    let mut listed = Some(listed);
    for _ in 0..OBJECT_TRIES {
        let existing = match listed.take() {
            Some(o) => o,
            None => match getter
                .get(&ctx, expected.name(), &GetOptions::default())
                .await
            {
                Ok(o) => Some(o),
                Err(e) if e.is_not_found() => None,
                Err(e) => return Err(e),
            },
        };
        let r = if is_role {
            reconcile_role(existing.as_ref(), expected)?
        } else {
            reconcile_binding(existing.as_ref(), expected)
        };
        if r.protected {
            return Ok(r);
        }
        let result = match r.operation {
            Operation::None => return Ok(r),
            Operation::Create => create(storage, &ctx, &r.object).await,
            Operation::Update => {
                let updater = storage.as_updater().ok_or_else(|| unsupported("update"))?;
                let obj = r.object.clone();
                let put: UpdatedObjectFn = Arc::new(move |_| {
                    let o = obj.clone();
                    Box::pin(async move { Ok(o) })
                });
                crate::controllers::ops::write(updater, &ctx, expected.name(), put)
                    .await
                    .map(|_| ())
            }
            Operation::Recreate => {
                let deleter = storage
                    .as_graceful_deleter()
                    .ok_or_else(|| unsupported("delete"))?;
                let mut opts = DeleteOptions::default();
                opts.preconditions.uid = existing.as_ref().map(|o| o.uid().to_string());
                match deleter
                    .delete(&ctx, expected.name(), validate_nothing(), &opts)
                    .await
                {
                    Ok(_) => create(storage, &ctx, &r.object).await,
                    Err(e) => Err(e),
                }
            }
        };
        match result {
            Ok(()) => return Ok(r),
            Err(e) if e.is_already_exists() || e.is_conflict() || e.is_not_found() => {
                last = Some(e)
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::internal("bootstrap policy object not reconciled")))
}

async fn create(
    storage: &Arc<dyn rest::Storage>,
    ctx: &Context,
    obj: &Object,
) -> Result<(), ApiError> {
    let creater = storage
        .as_creater()
        .ok_or_else(|| ApiError::internal("the RBAC storage cannot create"))?;
    let (obj, _) = storage.decode(obj.clone(), FieldValidation::Strict)?;
    creater
        .create(ctx, obj, validate_nothing(), &WriteOptions::default())
        .await
        .map(|_| ())
}

#[cfg(test)]
#[path = "bootstrap_tests.rs"]
mod tests;
