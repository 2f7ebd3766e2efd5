//! `kapi-admission`: the admission chain every write passes between authorization and storage.
//!
//! It owns the plugin interfaces (`Interface` with `handles`, `MutationInterface::admit`,
//! `ValidationInterface::validate`), [`Attributes`], and the [`Chain`] that runs mutating
//! plugins in order and then validating plugins in order; the first rejection wins.

use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupVersionKind, GroupVersionResource, Object, UserInfo};
use std::sync::Arc;

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

/// The ordered plugins of a server; mutating first, then validating.
#[derive(Clone, Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Interface>>,
}

impl Chain {
    pub fn new(plugins: Vec<Arc<dyn Interface>>) -> Self {
        Self { plugins }
    }

    /// Runs every mutating plugin that handles the operation, in order.
    pub async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        for p in &self.plugins {
            if let Some(m) = p.as_mutator() {
                if p.handles(attrs.operation) {
                    m.admit(attrs).await?;
                }
            }
        }
        Ok(())
    }

    /// Runs every validating plugin that handles the operation, in order.
    pub async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        for p in &self.plugins {
            if let Some(v) = p.as_validator() {
                if p.handles(attrs.operation) {
                    v.validate(attrs).await?;
                }
            }
        }
        Ok(())
    }
}
