//! Builds the admission chain from `--enable-admission-plugins`,
//! `--disable-admission-plugins` and `--admission-control-config-file`, with the admission
//! histograms registered at `/metrics`, and logs the loaded plugins in order.

use crate::config::ServerConfig;
use crate::metrics::Metrics;
use crate::ServerError;
use kapi_admission::config::PluginConfigs;
use kapi_admission::metrics::AdmissionMetrics;
use kapi_admission::order::enabled_plugin_names;
use kapi_admission::policy::cel::authz::{AdmissionAuthorizer, AuthzDecision, AuthzRequest};
use kapi_admission::webhook::metrics::WebhookMetrics;
use kapi_admission::{plugins, AdmissionError, Chain, PluginContext, Plugins};
use kapi_auth::authz::{Attributes, Authorizer, Decision};
use kapi_storage::DynStorage;
use std::sync::Arc;

fn err(e: AdmissionError) -> ServerError {
    ServerError::Config(e.to_string())
}

/// The server's authorizer as CEL's `authorizer` variable asks it. Every authorizer kapi has
/// answers from memory, so the future is ready when polled and blocking on it costs nothing.
struct CelAuthorizer(Arc<dyn Authorizer>);

impl AdmissionAuthorizer for CelAuthorizer {
    fn authorize(&self, r: &AuthzRequest) -> AuthzDecision {
        let attrs = Attributes {
            user: r.user.clone(),
            verb: r.verb.clone(),
            resource_request: r.resource_request,
            path: r.path.clone(),
            namespace: r.namespace.clone(),
            api_group: r.group.clone(),
            api_version: r.version.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            name: r.name.clone(),
        };
        let (allowed, reason) = match futures::executor::block_on(self.0.authorize(&attrs)) {
            Decision::Allow => (true, String::new()),
            Decision::Deny(reason) | Decision::NoOpinion(reason) => (false, reason),
        };
        AuthzDecision {
            allowed,
            reason,
            error: None,
        }
    }
}

/// The chain the server runs; start-up fails naming the plugin or file at fault.
pub fn build_chain(
    config: &ServerConfig,
    storage: DynStorage,
    metrics: &Metrics,
    authorizer: Arc<dyn Authorizer>,
) -> Result<Chain, ServerError> {
    let mut registry = Plugins::new();
    plugins::register_all(&mut registry).map_err(err)?;
    let default_on = plugins::kapi_default_on(&registry);
    let names = enabled_plugin_names(
        &config.enable_admission_plugins,
        &config.disable_admission_plugins,
        &default_on,
    )
    .map_err(|e| err(e.into()))?;
    let configs = match &config.admission_control_config_file {
        Some(path) => PluginConfigs::load(path).map_err(err)?,
        None => PluginConfigs::default(),
    };
    let objects = kapi_registry::admission_objects::StorageObjects::new(storage);
    let ctx = PluginContext {
        objects: Some(objects.clone()),
        watcher: Some(objects),
        webhook_clients: Default::default(),
        webhook_metrics: Some(WebhookMetrics::new(metrics.registry()).map_err(|e| err(e.into()))?),
        authorizer: Some(Arc::new(CelAuthorizer(authorizer))),
    };
    let chain = Chain::build(&registry, &names, &configs, &ctx)
        .map_err(err)?
        .with_metrics(AdmissionMetrics::new(metrics.registry()).map_err(|e| err(e.into()))?);
    tracing::info!(
        "Loaded {} mutating admission controller(s) successfully in the following order: {}.",
        chain.mutating_names().len(),
        chain.mutating_names().join(",")
    );
    tracing::info!(
        "Loaded {} validating admission controller(s) successfully in the following order: {}.",
        chain.validating_names().len(),
        chain.validating_names().join(",")
    );
    Ok(chain)
}
