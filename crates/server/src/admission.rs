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
use kapi_admission::policy::mutating::ApplyMerger;
use kapi_admission::policy::typecheck::{inline_refs, SchemaResolver};
use kapi_admission::webhook::metrics::WebhookMetrics;
use kapi_admission::{plugins, AdmissionError, Chain, PluginContext, Plugins};
use kapi_auth::authz::{Attributes, Authorizer, Decision};
use kapi_endpoints::openapi::OpenApi;
use kapi_endpoints::patch::apply::merge::merge;
use kapi_endpoints::patch::apply::schema::{effective, ListKind, Shape, Ty};
use kapi_endpoints::patch::meta::PatchSchema;
use kapi_endpoints::{ApiServerHandler, WeakApiServerHandler};
use kapi_machinery::GroupVersionResource;
use kapi_registry::rest::ApiGroupInfo;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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
            ..Default::default()
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

/// The served groups' snapshot and, by group, its OpenAPI documents.
type OpenApiByGroup = (Arc<Vec<ApiGroupInfo>>, HashMap<String, Arc<OpenApi>>);

/// Built-in kinds' schemas for policies' type checking, from the OpenAPI v3 documents the
/// server serves. The handler is made after the chain, so it is handed in once it exists (as
/// a weak reference: the handler holds the chain that holds this); the documents are rebuilt
/// only when the served groups changed.
#[derive(Default)]
pub struct OpenApiSchemas {
    handler: OnceLock<WeakApiServerHandler>,
    docs: Mutex<Option<OpenApiByGroup>>,
}

impl OpenApiSchemas {
    pub fn set_handler(&self, handler: &ApiServerHandler) {
        let _ = self.handler.set(handler.downgrade());
    }

    /// The OpenAPI documents of `group` alone (building every group's is much slower), kept
    /// until the served groups change.
    fn openapi(&self, group: &str) -> Option<Arc<OpenApi>> {
        let groups = self.handler.get()?.upgrade()?.groups();
        let mut docs = self.docs.lock().ok()?;
        match docs.as_ref() {
            Some((g, _)) if Arc::ptr_eq(g, &groups) => {}
            _ => *docs = Some((groups.clone(), HashMap::new())),
        }
        let (_, by_group) = docs.as_mut()?;
        let api = by_group.entry(group.to_string()).or_insert_with(|| {
            let one: Vec<ApiGroupInfo> = groups
                .iter()
                .filter(|g| g.group == group)
                .cloned()
                .collect();
            Arc::new(OpenApi::new(
                &one,
                kapi_endpoints::router::DEFAULT_SERVER_VERSION,
            ))
        });
        Some(api.clone())
    }
}

impl SchemaResolver for OpenApiSchemas {
    fn resolve(&self, group: &str, version: &str, resource: &str) -> Option<(String, Value)> {
        let path = match group {
            "" => format!("/openapi/v3/api/{version}"),
            g => format!("/openapi/v3/apis/{g}/{version}"),
        };
        let resp = self
            .openapi(group)?
            .serve(&path, None, &http::HeaderMap::new())?;
        let doc: Value = serde_json::from_slice(resp.body()).ok()?;
        // The kind is the one the resource's collection path creates.
        let kind = doc
            .get("paths")?
            .as_object()?
            .iter()
            .filter(|(p, _)| p.ends_with(&format!("/{resource}")))
            .find_map(|(_, ops)| {
                ops.pointer("/post/x-kubernetes-group-version-kind/kind")
                    .or_else(|| ops.pointer("/get/x-kubernetes-group-version-kind/kind"))
                    .and_then(Value::as_str)
            })?
            .to_string();
        let defs = doc.pointer("/components/schemas")?.as_object()?;
        let schema = defs.values().find(|d| {
            d.get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .is_some_and(|gvks| {
                    gvks.iter().any(|g| {
                        g.get("group").and_then(Value::as_str) == Some(group)
                            && g.get("version").and_then(Value::as_str) == Some(version)
                            && g.get("kind").and_then(Value::as_str) == Some(kind.as_str())
                    })
                })
        })?;
        Some((kind, inline_refs(schema, defs)))
    }
}

/// Mutating policies' `ApplyConfiguration` merge: server-side apply's merge over the schema of
/// the resource's kind (the storage the handler serves it from), refusing configurations
/// that set atomic lists, maps or structs, as upstream's `validatePatch`.
struct ApplyMerge(Arc<OpenApiSchemas>);

impl ApplyMerger for ApplyMerge {
    fn merge(
        &self,
        r: &GroupVersionResource,
        live: &Value,
        patch: &Value,
    ) -> Result<Value, String> {
        let storage = self
            .0
            .handler
            .get()
            .and_then(WeakApiServerHandler::upgrade)
            .and_then(|h| {
                h.groups()
                    .iter()
                    .filter(|g| g.group == r.group)
                    .flat_map(|g| g.versions.iter())
                    .filter(|v| v.version == r.version)
                    .flat_map(|v| v.storages.iter())
                    .find(|s| s.info().resource == r.resource)
                    .cloned()
            });
        let schema = storage.and_then(|s| PatchSchema::for_storage(s.as_ref()));
        let ty = Ty::root(schema.as_ref());
        let atomics = atomics(patch, &ty, "");
        if !atomics.is_empty() {
            return Err(format!(
                "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
                atomics.join(", ")
            ));
        }
        merge(live, patch, &ty).map_err(|e| format!("failed to merge patch: {e}"))
    }
}

/// The paths (upstream's `.a.b[0]` form) at which `v` sets an atomic list, map or struct.
fn atomics(v: &Value, ty: &Ty, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    match (effective(ty, v), v) {
        (Shape::Struct { atomic } | Shape::Map { atomic }, Value::Object(m)) => {
            if atomic {
                out.push(path.to_string());
            }
            for (k, fv) in m {
                out.extend(atomics(fv, &ty.field(k), &format!("{path}.{k}")));
            }
        }
        (Shape::List(kind), Value::Array(items)) => {
            if matches!(kind, ListKind::Atomic) {
                out.push(path.to_string());
            }
            for (i, item) in items.iter().enumerate() {
                out.extend(atomics(item, &ty.item(), &format!("{path}[{i}]")));
            }
        }
        _ => {}
    }
    out
}

/// The chain the server runs; start-up fails naming the plugin or file at fault.
pub fn build_chain(
    config: &ServerConfig,
    objects: Arc<kapi_registry::admission_objects::StorageObjects>,
    metrics: &Metrics,
    authorizer: Arc<dyn Authorizer>,
    schemas: Arc<OpenApiSchemas>,
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
    let ctx = PluginContext {
        objects: Some(objects.clone()),
        watcher: Some(objects),
        webhook_clients: Default::default(),
        webhook_metrics: Some(WebhookMetrics::new(metrics.registry()).map_err(|e| err(e.into()))?),
        authorizer: Some(Arc::new(CelAuthorizer(authorizer))),
        schemas: Some(schemas.clone()),
        apply_merger: Some(Arc::new(ApplyMerge(schemas))),
        feature_gates: config.feature_gates.clone(),
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
