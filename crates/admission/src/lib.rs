//! `kapi-admission`: the admission chain every write passes between authorization and storage.
//!
//! It owns the plugin interfaces (`Interface` with `handles`, `MutationInterface::admit`,
//! `ValidationInterface::validate`), [`Attributes`], the plugin registry ([`Plugins`]), the
//! recommended order and the enabled-set computation ([`order`]), the
//! `AdmissionConfiguration` file ([`config`]), the [`Chain`] (mutating plugins in order, with
//! reinvocation, then validating plugins in order; the first rejection wins), the admission
//! metrics ([`metrics`]) and the built-in plugins ([`plugins`]). Other objects are read through
//! [`objects::ObjectStore`], which the registry implements, so no dependency points up.

pub mod audit;
pub mod chain;
pub mod config;
pub mod metrics;
pub mod objects;
pub mod order;
pub mod plugins;
pub mod policy;
pub mod registry;
pub mod source;
pub mod webhook;

pub use chain::Chain;
pub use registry::{AdmissionError, PluginContext, Plugins};

use async_trait::async_trait;
use kapi_machinery::{
    ApiError, GroupResource, GroupVersionKind, GroupVersionResource, Object, UserInfo,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Audit annotations plugins add while admitting; shared so validating plugins (which see
/// `&Attributes`) can add them too.
#[derive(Clone, Debug, Default)]
pub struct AuditAnnotations(Arc<Mutex<BTreeMap<String, String>>>);

impl AuditAnnotations {
    /// Adds `key=value`; an existing key keeps its first value, as upstream refuses overwrites.
    pub fn add(&self, key: impl Into<String>, value: impl Into<String>) {
        if let Ok(mut m) = self.0.lock() {
            m.entry(key.into()).or_insert_with(|| value.into());
        }
    }

    pub fn snapshot(&self) -> BTreeMap<String, String> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

/// Warnings plugins add while admitting (webhook and policy `Warn` results); the handler
/// sends them as `Warning` headers. Shared, so validating plugins can add them too.
#[derive(Clone, Debug, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    pub fn add(&self, warning: impl Into<String>) {
        if let Ok(mut w) = self.0.lock() {
            w.push(warning.into());
        }
    }

    pub fn snapshot(&self) -> Vec<String> {
        self.0.lock().map(|w| w.clone()).unwrap_or_default()
    }
}

/// State the chain keeps across a reinvocation of the mutating plugins.
#[derive(Clone, Debug, Default)]
pub struct ReinvocationContext {
    /// True while the mutating plugins run for the second time.
    pub is_reinvoke: bool,
    /// Set by a plugin that needs the chain run again for reasons the chain cannot see (a
    /// mutating webhook changed the object after an `IfNeeded` one in the same plugin).
    pub requested: bool,
}

/// Everything a plugin may look at (and, when mutating, change: `object`).
#[derive(Clone, Debug)]
pub struct Attributes {
    pub operation: Operation,
    pub object: Option<Object>,
    pub old_object: Option<Object>,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub user: UserInfo,
    pub dry_run: bool,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`) as JSON.
    pub options: Option<serde_json::Value>,
    pub reinvocation: ReinvocationContext,
    pub annotations: AuditAnnotations,
    pub warnings: Warnings,
}

impl Attributes {
    /// The attributes of `operation` on `resource` (subresource, options, annotations empty).
    pub fn new(
        operation: Operation,
        kind: GroupVersionKind,
        resource: GroupVersionResource,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            operation,
            object: None,
            old_object: None,
            kind,
            resource,
            subresource: String::new(),
            namespace: namespace.into(),
            name: name.into(),
            user: UserInfo::default(),
            dry_run: false,
            options: None,
            reinvocation: ReinvocationContext::default(),
            annotations: AuditAnnotations::default(),
            warnings: Warnings::default(),
        }
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.resource.group.clone(), self.resource.resource.clone())
    }

    /// A plugin's rejection as upstream words it: 403 `<resource> "<name>" is forbidden: <why>`.
    pub fn forbidden(&self, why: impl std::fmt::Display) -> ApiError {
        ApiError::forbidden(&self.group_resource(), &self.name, why)
    }
}

/// Whether a mutating plugin runs again when a later plugin changed the object after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReinvocationPolicy {
    /// Built-in plugins: never ask for a reinvocation, but run again when one happens.
    InTree,
    /// Never run a second time.
    Never,
    /// Ask to be run again if a later plugin changes the object.
    IfNeeded,
}

/// A plugin: says which operations it handles.
pub trait Interface: Send + Sync {
    fn handles(&self, op: Operation) -> bool;
    fn as_mutator(&self) -> Option<&dyn MutationInterface> {
        None
    }
    fn as_validator(&self) -> Option<&dyn ValidationInterface> {
        None
    }
    fn reinvocation_policy(&self) -> ReinvocationPolicy {
        ReinvocationPolicy::InTree
    }
}

/// A plugin that may change the object.
#[async_trait]
pub trait MutationInterface: Interface {
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError>;
}

/// A plugin that may only accept or reject.
#[async_trait]
pub trait ValidationInterface: Interface {
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError>;
}
