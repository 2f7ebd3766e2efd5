//! The plugin registry: name -> factory. A factory gets the plugin's configuration (from the
//! `AdmissionConfiguration` file, if any) and a [`PluginContext`] through which it asks for
//! what it needs — the Rust form of kube-apiserver's plugin initializers.

use crate::objects::ObjectStore;
use crate::source::ObjectWatcher;
use crate::Interface;
use kapi_machinery::GroupVersionResource;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use thiserror::Error;

/// Builds one plugin from its configuration bytes (JSON or YAML), if any.
pub type Factory = Arc<
    dyn Fn(Option<&[u8]>, &PluginContext) -> Result<Arc<dyn Interface>, AdmissionError>
        + Send
        + Sync,
>;

/// A start-up failure of admission; every variant names the plugin or file.
#[derive(Debug, Error)]
pub enum AdmissionError {
    #[error("admission plugin {0:?} registered twice")]
    DuplicateRegistration(String),
    #[error(transparent)]
    Order(#[from] crate::order::OrderError),
    #[error("admission plugin {0:?} is not supported by kapi: {1}")]
    Unsupported(String, String),
    #[error("admission plugin {plugin:?} is missing {what}")]
    MissingDependency { plugin: String, what: String },
    #[error("admission plugin {plugin:?}: invalid configuration: {reason}")]
    InvalidConfig { plugin: String, reason: String },
    #[error("admission control config file {path:?}: {reason}")]
    ConfigFile { path: String, reason: String },
    #[error("admission metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

/// What plugins may ask for while they are built.
#[derive(Clone, Default)]
pub struct PluginContext {
    pub objects: Option<Arc<dyn ObjectStore>>,
    /// Lists and watches configuration objects for the dynamic plugins.
    pub watcher: Option<Arc<dyn ObjectWatcher>>,
    /// The one webhook client pool of the server.
    pub webhook_clients: Arc<crate::webhook::client::Clients>,
    pub webhook_metrics: Option<crate::webhook::metrics::WebhookMetrics>,
    /// The server's authorizer, for CEL's `authorizer` variable.
    pub authorizer: Option<Arc<dyn crate::policy::cel::authz::AdmissionAuthorizer>>,
    /// Built-in kinds' schemas, for policies' type checking.
    pub schemas: Option<Arc<dyn crate::policy::typecheck::SchemaResolver>>,
    /// Server-side apply's merge over the kinds' schemas, for mutating policies'
    /// `ApplyConfiguration` mutations.
    pub apply_merger: Option<Arc<dyn ApplyMerger>>,
    /// `--feature-gates`: the gates set on the command line, by name.
    pub feature_gates: std::collections::BTreeMap<String, bool>,
}

impl PluginContext {
    /// The object store, or the start-up error naming `plugin`.
    pub fn objects(&self, plugin: &str) -> Result<Arc<dyn ObjectStore>, AdmissionError> {
        self.objects
            .clone()
            .ok_or_else(|| AdmissionError::MissingDependency {
                plugin: plugin.to_string(),
                what: "an object lister (namespaces, limit ranges, quotas, service accounts)"
                    .into(),
            })
    }
}

impl PluginContext {
    /// Whether the gate `name` is on: as set, else `AllAlpha` for an alpha gate, else off
    /// (every gate plugins read is off by default).
    pub fn feature_enabled(&self, name: &str, alpha: bool) -> bool {
        match self.feature_gates.get(name) {
            Some(on) => *on,
            None => alpha && self.feature_gates.get("AllAlpha").copied().unwrap_or(false),
        }
    }

    /// The configuration watcher, or the start-up error naming `plugin`.
    pub fn watcher(&self, plugin: &str) -> Result<Arc<dyn ObjectWatcher>, AdmissionError> {
        self.watcher
            .clone()
            .ok_or_else(|| AdmissionError::MissingDependency {
                plugin: plugin.to_string(),
                what: "a watcher of its configuration objects".into(),
            })
    }
}

/// Registered plugin factories by name.
#[derive(Clone, Default)]
pub struct Plugins {
    factories: BTreeMap<String, Factory>,
    /// Names kapi knows but cannot honour, with why.
    unsupported: BTreeMap<String, String>,
}

impl Plugins {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `name`; registering a name twice is an error.
    pub fn register(&mut self, name: &str, factory: Factory) -> Result<(), AdmissionError> {
        if self.factories.contains_key(name) || self.unsupported.contains_key(name) {
            return Err(AdmissionError::DuplicateRegistration(name.to_string()));
        }
        self.factories.insert(name.to_string(), factory);
        Ok(())
    }

    /// Records a name that stays in the order but cannot be enabled, and why.
    pub fn register_unsupported(&mut self, name: &str, why: &str) -> Result<(), AdmissionError> {
        if self.factories.contains_key(name) || self.unsupported.contains_key(name) {
            return Err(AdmissionError::DuplicateRegistration(name.to_string()));
        }
        self.unsupported.insert(name.to_string(), why.to_string());
        Ok(())
    }

    pub fn is_registered(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// Why `name` cannot be honoured, if kapi knows it cannot.
    pub fn unsupported_reason(&self, name: &str) -> Option<&str> {
        self.unsupported.get(name).map(String::as_str)
    }

    pub fn registered(&self) -> impl Iterator<Item = &str> {
        self.factories.keys().map(String::as_str)
    }

    /// Builds `name` with its configuration.
    pub fn build(
        &self,
        name: &str,
        config: Option<&[u8]>,
        ctx: &PluginContext,
    ) -> Result<Arc<dyn Interface>, AdmissionError> {
        match self.factories.get(name) {
            Some(f) => f(config, ctx),
            None => Err(AdmissionError::Unsupported(
                name.to_string(),
                self.unsupported
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| "it is not implemented".into()),
            )),
        }
    }
}

/// Server-side apply's merge of an applied configuration into a live object of the
/// resource's kind (upstream's `TypedValue.Merge` over the kind's schema). The merge lives
/// with the patch handlers; the server hands it to the plugins through [`PluginContext`].
pub trait ApplyMerger: Send + Sync {
    /// `patch` merged into `live`; `Err` is upstream's wording after `error applying patch: `.
    fn merge(
        &self,
        resource: &GroupVersionResource,
        live: &Value,
        patch: &Value,
    ) -> Result<Value, String>;
}
