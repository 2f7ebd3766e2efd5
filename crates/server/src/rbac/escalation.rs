//! Escalation prevention around the RBAC storages (upstream's `policybased` storages): a
//! create or update of a role is refused unless the requester already holds every rule it
//! grants or may `escalate` roles; a binding, unless the requester holds every rule of the
//! referenced role or may `bind` it. Members of `system:masters` are exempt. The refusal is a
//! 403 whose message lists the missing rules as upstream prints them.

use kapi_auth::authz::rbac::{
    confirm_no_escalation, escalation_allowed, Binding, PolicyRule, RbacIndex, RbacKind, RoleRef,
};
use kapi_auth::authz::{Attributes, Authorizer, Decision};
use kapi_machinery::{ApiError, Object, UserInfo};
use kapi_registry::rest::{
    self, Context, Creater, FieldValidation, ResourceInfo, UpdateResult, UpdatedObjectFn, Updater,
    ValidateObjectFn, ValidateObjectUpdateFn, WriteOptions, WriteResult,
};
use std::sync::Arc;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Every rule there is: what setting an `aggregationRule` needs.
fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&["*"], &["*"], &["*"]),
        PolicyRule::urls(&["*"], &["*"]),
    ]
}

struct Checker {
    kind: RbacKind,
    info: ResourceInfo,
    index: Arc<RbacIndex>,
    authorizer: Arc<dyn Authorizer>,
}

impl Checker {
    async fn allowed(
        &self,
        user: &UserInfo,
        verb: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> bool {
        let attrs = Attributes {
            user: user.clone(),
            verb: verb.into(),
            resource_request: true,
            api_group: RBAC_GROUP.into(),
            api_version: "*".into(),
            resource: resource.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        };
        self.authorizer.authorize(&attrs).await == Decision::Allow
    }

    fn forbidden(&self, name: &str, why: impl std::fmt::Display) -> ApiError {
        ApiError::forbidden(&self.info.group_resource(), name, why)
    }

    /// Whether `user` may write `obj` (`old` on update); `namespace` is the request's.
    async fn check(
        &self,
        user: &UserInfo,
        namespace: &str,
        obj: &Object,
        old: Option<&Object>,
    ) -> Result<(), ApiError> {
        if escalation_allowed(user) {
            return Ok(());
        }
        if let Some(old) = old {
            if only_gc_fields_differ(obj, old) {
                return Ok(());
            }
        }
        let name = obj.name();
        // Upstream checks `escalate` with the path's name: none on create.
        let path_name = if old.is_some() { name } else { "" };
        match self.kind {
            RbacKind::Role | RbacKind::ClusterRole => {
                let ns = if self.kind == RbacKind::Role {
                    namespace
                } else {
                    ""
                };
                if self
                    .allowed(user, "escalate", self.kind.resource(), ns, path_name)
                    .await
                {
                    return Ok(());
                }
                let rules: Vec<PolicyRule> = obj
                    .get("rules")
                    .filter(|v| !v.is_null())
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .unwrap_or_default();
                confirm_no_escalation(&self.index, user, ns, &rules)
                    .map_err(|e| self.forbidden(name, e))?;
                let aggregation = obj.get("aggregationRule");
                let changed = old.is_none_or(|o| o.get("aggregationRule") != aggregation);
                if aggregation.is_some_and(|a| !a.is_null()) && changed {
                    confirm_no_escalation(&self.index, user, ns, &full_authority()).map_err(
                        |_| {
                            self.forbidden(
                                name,
                                "must have cluster-admin privileges to use the aggregationRule",
                            )
                        },
                    )?;
                }
                Ok(())
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                let ns = if self.kind == RbacKind::RoleBinding {
                    namespace
                } else {
                    ""
                };
                let role_ref: RoleRef = Binding::from_object(obj).role_ref;
                let resource = match role_ref.kind.as_str() {
                    "Role" => Some("roles"),
                    "ClusterRole" => Some("clusterroles"),
                    _ => None,
                };
                if let Some(resource) = resource {
                    if self
                        .allowed(user, "bind", resource, ns, &role_ref.name)
                        .await
                    {
                        return Ok(());
                    }
                }
                let rules = self
                    .index
                    .role_ref_rules(&role_ref, ns)
                    .map_err(|e| self.forbidden(name, e))?;
                confirm_no_escalation(&self.index, user, ns, &rules)
                    .map_err(|e| self.forbidden(name, e))
            }
        }
    }
}

/// Upstream's `IsOnlyMutatingGCFields`: an update that only touches owner references and
/// finalizers (what garbage collection writes) needs no escalation check.
fn only_gc_fields_differ(new: &Object, old: &Object) -> bool {
    let strip = |o: &Object| {
        let mut o = o.clone();
        let meta = o.metadata_mut();
        for k in [
            "ownerReferences",
            "finalizers",
            "resourceVersion",
            "managedFields",
            "generation",
        ] {
            meta.remove(k);
        }
        o
    };
    strip(new) == strip(old)
}

/// An RBAC storage with escalation checks on create and update (and patch).
pub struct EscalationCheckedStorage {
    inner: Arc<dyn rest::Storage>,
    checker: Arc<Checker>,
}

impl EscalationCheckedStorage {
    pub fn wrap(
        kind: RbacKind,
        inner: Arc<dyn rest::Storage>,
        index: Arc<RbacIndex>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Arc<dyn rest::Storage> {
        let checker = Arc::new(Checker {
            kind,
            info: inner.info().clone(),
            index,
            authorizer,
        });
        Arc::new(Self { inner, checker })
    }
}

impl rest::Storage for EscalationCheckedStorage {
    fn info(&self) -> &ResourceInfo {
        self.inner.info()
    }
    fn decode(
        &self,
        body: Object,
        validation: FieldValidation,
    ) -> Result<(Object, Vec<String>), ApiError> {
        self.inner.decode(body, validation)
    }
    fn decode_bytes(
        &self,
        body: &[u8],
        validation: FieldValidation,
    ) -> Result<(Object, Vec<String>), ApiError> {
        self.inner.decode_bytes(body, validation)
    }
    fn as_creater(&self) -> Option<&dyn Creater> {
        self.inner.as_creater().map(|_| self as &dyn Creater)
    }
    fn as_getter(&self) -> Option<&dyn rest::Getter> {
        self.inner.as_getter()
    }
    fn as_lister(&self) -> Option<&dyn rest::Lister> {
        self.inner.as_lister()
    }
    fn as_updater(&self) -> Option<&dyn Updater> {
        self.inner.as_updater().map(|_| self as &dyn Updater)
    }
    fn as_patcher(&self) -> Option<&dyn Updater> {
        self.inner.as_patcher().map(|_| self as &dyn Updater)
    }
    fn as_graceful_deleter(&self) -> Option<&dyn rest::GracefulDeleter> {
        self.inner.as_graceful_deleter()
    }
    fn as_collection_deleter(&self) -> Option<&dyn rest::CollectionDeleter> {
        self.inner.as_collection_deleter()
    }
    fn as_watcher(&self) -> Option<&dyn rest::Watcher> {
        self.inner.as_watcher()
    }
    fn as_table_convertor(&self) -> Option<&dyn rest::TableConvertor> {
        self.inner.as_table_convertor()
    }
    fn field_labels(&self) -> &[&'static str] {
        self.inner.field_labels()
    }
    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.inner.openapi_schema(generator)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        self.inner.as_any()
    }
    fn return_deleted_object(&self) -> bool {
        self.inner.return_deleted_object()
    }
}

#[async_trait::async_trait]
impl Creater for EscalationCheckedStorage {
    async fn create(
        &self,
        ctx: &Context,
        obj: Object,
        validate: ValidateObjectFn,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let inner = self
            .inner
            .as_creater()
            .ok_or_else(|| ApiError::internal("the RBAC storage cannot create"))?;
        self.checker
            .check(&ctx.user, &ctx.namespace, &obj, None)
            .await?;
        inner.create(ctx, obj, validate, opts).await
    }
}

#[async_trait::async_trait]
impl Updater for EscalationCheckedStorage {
    async fn update(
        &self,
        ctx: &Context,
        name: &str,
        new_object: UpdatedObjectFn,
        create_validation: ValidateObjectFn,
        update_validation: ValidateObjectUpdateFn,
        force_allow_create: bool,
        opts: &WriteOptions,
    ) -> Result<UpdateResult, ApiError> {
        let inner = self
            .inner
            .as_updater()
            .ok_or_else(|| ApiError::internal("the RBAC storage cannot update"))?;
        let checker = self.checker.clone();
        let user = ctx.user.clone();
        let namespace = ctx.namespace.clone();
        // The check sees the object the update computes, inside the storage's retry loop.
        let checked: UpdatedObjectFn = Arc::new(move |current: Option<Object>| {
            let new_object = new_object.clone();
            let checker = checker.clone();
            let user = user.clone();
            let namespace = namespace.clone();
            Box::pin(async move {
                let old = current.clone();
                let obj = new_object(current).await?;
                checker.check(&user, &namespace, &obj, old.as_ref()).await?;
                Ok(obj)
            })
        });
        inner
            .update(
                ctx,
                name,
                checked,
                create_validation,
                update_validation,
                force_allow_create,
                opts,
            )
            .await
    }
}
