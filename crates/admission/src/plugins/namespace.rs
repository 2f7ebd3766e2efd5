//! The namespace plugins. NamespaceLifecycle: no new objects in a namespace that does not
//! exist (404 `namespaces "x" not found`) or is terminating (403), and `default`,
//! `kube-system`, `kube-public` cannot be deleted. NamespaceExists: the namespace must exist.
//! NamespaceAutoProvision: a create in a missing namespace creates it first.

use crate::objects::ObjectStore;
use crate::plugins::live_lookup::ForceLive;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::error::StatusCause;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{json, Value};
use std::sync::Arc;

pub const LIFECYCLE: &str = "NamespaceLifecycle";
pub const EXISTS: &str = "NamespaceExists";
pub const AUTO_PROVISION: &str = "NamespaceAutoProvision";

/// Namespaces that may never be deleted.
pub const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        LIFECYCLE,
        Arc::new(|_, ctx| Ok(Arc::new(NamespaceLifecycle::new(ctx.objects(LIFECYCLE)?)))),
    )?;
    plugins.register(
        EXISTS,
        Arc::new(|_, ctx| {
            Ok(Arc::new(NamespaceExists {
                objects: ctx.objects(EXISTS)?,
            }))
        }),
    )?;
    plugins.register(
        AUTO_PROVISION,
        Arc::new(|_, ctx| {
            Ok(Arc::new(NamespaceAutoProvision {
                objects: ctx.objects(AUTO_PROVISION)?,
            }))
        }),
    )
}

fn namespaces() -> GroupResource {
    GroupResource::new("", "namespaces")
}

fn is_namespace(a: &Attributes) -> bool {
    a.resource.group.is_empty() && a.resource.resource == "namespaces"
}

/// The namespace as upstream's plugin finds it: from the cache when it is there and active,
/// else (missing, terminating or deleting in the cache: possibly out of date) from storage.
async fn get_namespace(
    objects: &dyn ObjectStore,
    name: &str,
) -> Result<Option<Arc<Object>>, ApiError> {
    if let Some(ns) = objects.get_cached(&namespaces(), "", name).await? {
        if !is_terminating(&ns) {
            return Ok(Some(ns));
        }
    }
    Ok(objects.get(&namespaces(), "", name).await?.map(Arc::new))
}

/// Whether a namespace is being deleted (Terminating, or a deletionTimestamp set).
pub fn is_terminating(ns: &Object) -> bool {
    let phase = ns
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    phase == "Terminating" || ns.deletion_timestamp().is_some()
}

/// 403 with upstream's `NamespaceTerminating` cause.
fn terminating(a: &Attributes) -> ApiError {
    let ns = &a.namespace;
    let mut e = a.forbidden(format!(
        "unable to create new content in namespace {ns} because it is being terminated"
    ));
    e.details
        .get_or_insert_with(Default::default)
        .causes
        .push(StatusCause {
            reason: "NamespaceTerminating".into(),
            message: format!("namespace {ns} is being terminated"),
            field: "metadata.namespace".into(),
        });
    e
}

pub struct NamespaceLifecycle {
    objects: Arc<dyn ObjectStore>,
    /// Namespaces this server was asked to delete, until when: the cache may not show them
    /// terminating yet, so they are read from storage (upstream's `forceLiveLookupCache`).
    force_live: ForceLive,
}

impl NamespaceLifecycle {
    pub fn new(objects: Arc<dyn ObjectStore>) -> Self {
        Self {
            objects,
            force_live: ForceLive::default(),
        }
    }
}

handler!(NamespaceLifecycle, [Create, Update, Delete], validates);

#[async_trait]
impl ValidationInterface for NamespaceLifecycle {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if is_namespace(a) {
            if a.operation == Operation::Delete {
                if IMMORTAL.contains(&a.name.as_str()) {
                    return Err(a.forbidden("this namespace may not be deleted"));
                }
                self.force_live.mark(&a.name);
            }
            return Ok(());
        }
        // Deleting what is left in a namespace is always allowed; cluster-scoped objects have
        // no namespace to check.
        if a.operation == Operation::Delete || a.namespace.is_empty() {
            return Ok(());
        }
        let found = if self.force_live.active(&a.namespace) {
            self.objects
                .get(&namespaces(), "", &a.namespace)
                .await?
                .map(Arc::new)
        } else {
            get_namespace(self.objects.as_ref(), &a.namespace).await?
        };
        let Some(ns) = found else {
            return Err(ApiError::not_found(&namespaces(), &a.namespace));
        };
        if a.operation == Operation::Create && is_terminating(&ns) {
            return Err(terminating(a));
        }
        Ok(())
    }
}

pub struct NamespaceExists {
    objects: Arc<dyn ObjectStore>,
}

handler!(NamespaceExists, [Create, Update, Delete], validates);

#[async_trait]
impl ValidationInterface for NamespaceExists {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if a.namespace.is_empty() || is_namespace(a) {
            return Ok(());
        }
        match get_namespace(self.objects.as_ref(), &a.namespace).await? {
            Some(_) => Ok(()),
            None => Err(ApiError::not_found(&namespaces(), &a.namespace)),
        }
    }
}

pub struct NamespaceAutoProvision {
    objects: Arc<dyn ObjectStore>,
}

handler!(NamespaceAutoProvision, [Create], mutates);

#[async_trait]
impl MutationInterface for NamespaceAutoProvision {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        // A dry run must not leave a namespace behind.
        if a.namespace.is_empty() || is_namespace(a) || a.dry_run {
            return Ok(());
        }
        if get_namespace(self.objects.as_ref(), &a.namespace)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let ns = Object::from_value(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": a.namespace,
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                "labels": {"kubernetes.io/metadata.name": a.namespace},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }))?;
        match self.objects.create(&namespaces(), ns).await {
            // Another request created it first: that is what we wanted.
            Err(e) if e.code == 409 => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

#[cfg(test)]
#[path = "namespace_tests.rs"]
mod tests;
