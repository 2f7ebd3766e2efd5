//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` (upstream's
//! `admission/plugin/webhook`): the configurations are read from a storage watch
//! ([`crate::source::Informer`]) and take effect as soon as a change arrives; each request is
//! matched against every webhook (rules, selectors, match conditions), sent as an
//! AdmissionReview, and the answer applied: mutating webhooks one after another (their JSON
//! patches applied, `IfNeeded` ones reinvoked), validating webhooks all at once.

mod ca_bundle;
pub mod client;
pub mod convert;
pub mod matching;
pub mod metrics;
pub mod review;

use crate::objects::ObjectStore;
use crate::policy::cel::authz::AdmissionAuthorizer;
use crate::policy::cel::{self, Expr};
use crate::registry::{AdmissionError, PluginContext, Plugins};
use crate::source::Informer;
use crate::{
    Attributes, Interface, MutationInterface, Operation, ReinvocationPolicy, ValidationInterface,
};
use async_trait::async_trait;
use base64::Engine;
use client::Clients;
use kapi_machinery::labels::LabelSelector;
use kapi_machinery::{ApiError, GroupResource, Object, StatusReason};
use matching::Rule;
use metrics::WebhookMetrics;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const MUTATING_PLUGIN: &str = "MutatingAdmissionWebhook";
pub const VALIDATING_PLUGIN: &str = "ValidatingAdmissionWebhook";

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ServiceRef {
    name: String,
    namespace: String,
    path: Option<String>,
    port: Option<i64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ClientConfig {
    url: Option<String>,
    service: Option<ServiceRef>,
    ca_bundle: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct MatchCondition {
    name: String,
    expression: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct HookSpec {
    name: String,
    client_config: ClientConfig,
    rules: Vec<Rule>,
    failure_policy: Option<String>,
    match_policy: Option<String>,
    namespace_selector: Option<Value>,
    object_selector: Option<Value>,
    side_effects: Option<String>,
    timeout_seconds: Option<u64>,
    admission_review_versions: Vec<String>,
    reinvocation_policy: Option<String>,
    match_conditions: Vec<MatchCondition>,
}

/// One webhook, ready to match and call.
struct Hook {
    spec: HookSpec,
    namespace_selector: Option<LabelSelector>,
    object_selector: Option<LabelSelector>,
    conditions: Vec<(String, Result<Expr, String>)>,
    ca: Vec<u8>,
    url: String,
}

impl Hook {
    fn new(spec: HookSpec) -> Self {
        let ca = spec
            .client_config
            .ca_bundle
            .as_deref()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        // kapi proxies no services: a service reference is called by its DNS name.
        let url = match (&spec.client_config.url, &spec.client_config.service) {
            (Some(u), _) => u.clone(),
            (None, Some(s)) => format!(
                "https://{}.{}.svc:{}{}",
                s.name,
                s.namespace,
                s.port.unwrap_or(443),
                s.path.as_deref().unwrap_or("")
            ),
            (None, None) => String::new(),
        };
        let url = clean_url_path(&url);
        Self {
            namespace_selector: matching::label_selector(spec.namespace_selector.as_ref()),
            object_selector: matching::label_selector(spec.object_selector.as_ref()),
            conditions: spec
                .match_conditions
                .iter()
                .map(|c| (c.name.clone(), Expr::compile(&c.expression)))
                .collect(),
            ca,
            url,
            spec,
        }
    }

    fn fails_open(&self) -> bool {
        self.spec.failure_policy.as_deref() == Some("Ignore")
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.spec.timeout_seconds.unwrap_or(10).clamp(1, 30))
    }

    fn if_needed(&self) -> bool {
        self.spec.reinvocation_policy.as_deref() == Some("IfNeeded")
    }
}

/// Every webhook of every configuration, configurations ordered by name as upstream sorts
/// them.
fn build_hooks(objects: &BTreeMap<String, Object>) -> Vec<Arc<Hook>> {
    let mut configs: Vec<&Object> = objects.values().collect();
    configs.sort_by(|a, b| a.name().cmp(b.name()));
    configs
        .into_iter()
        .flat_map(|c| {
            c.get("webhooks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|h| serde_json::from_value::<HookSpec>(h).ok())
        .map(|s| Arc::new(Hook::new(s)))
        .collect()
}

/// Why a webhook call failed (subject to the failure policy).
struct CallError(String);

/// The webhook plugin, mutating or validating.
pub struct Webhooks {
    mutating: bool,
    hooks: Arc<Informer<Vec<Arc<Hook>>>>,
    namespaces: Arc<dyn ObjectStore>,
    clients: Arc<Clients>,
    metrics: Option<WebhookMetrics>,
    authorizer: Option<Arc<dyn AdmissionAuthorizer>>,
}

impl Webhooks {
    fn plugin_type(&self) -> &'static str {
        if self.mutating {
            "admit"
        } else {
            "validating"
        }
    }

    fn annotation_prefix(&self) -> &'static str {
        if self.mutating {
            "mutating"
        } else {
            "validating"
        }
    }

    /// Whether `hook` applies to the request; an error when a match condition fails to
    /// evaluate and the hook fails closed.
    async fn should_call(
        &self,
        hook: &Hook,
        attrs: &Attributes,
        ns: &mut Option<Option<Object>>,
    ) -> Result<bool, ApiError> {
        if !matching::rules_match(&hook.spec.rules, hook.spec.match_policy.as_deref(), attrs) {
            return Ok(false);
        }
        if ns.is_none() {
            *ns = Some(matching::namespace_object(attrs, self.namespaces.as_ref()).await?);
        }
        let ns_obj = ns.as_ref().and_then(Option::as_ref);
        if !matching::namespace_selector_matches(&hook.namespace_selector, attrs, ns_obj)
            || !matching::object_selector_matches(&hook.object_selector, attrs)
        {
            return Ok(false);
        }
        if hook.conditions.is_empty() {
            return Ok(true);
        }
        let vars = crate::policy::request_vars(attrs, None, ns_obj, self.authorizer.as_ref());
        let mut errors = Vec::new();
        for (name, expr) in &hook.conditions {
            let res = expr
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|e| cel::eval_bool(e, &vars));
            match res {
                Ok(false) => return Ok(false),
                Ok(true) => {}
                Err(e) => errors.push(format!("matchCondition '{name}' error: {e}")),
            }
        }
        if errors.is_empty() || hook.fails_open() {
            return Ok(errors.is_empty());
        }
        Err(ApiError::internal(format!(
            "failed calling webhook \"{}\": failed to evaluate match conditions: {}",
            hook.spec.name,
            errors.join(", ")
        )))
    }

    /// Sends the review and checks the answer.
    async fn call(&self, hook: &Hook, attrs: &Attributes) -> Result<review::Response, CallError> {
        let version = hook
            .spec
            .admission_review_versions
            .iter()
            .find(|v| *v == "v1" || *v == "v1beta1")
            .cloned()
            .ok_or_else(|| {
                CallError("webhook does not accept v1 or v1beta1 AdmissionReview".into())
            })?;
        let uid = uuid::Uuid::new_v4().to_string();
        let request = match convert::equivalent_version(
            &hook.spec.rules,
            hook.spec.match_policy.as_deref(),
            attrs,
        ) {
            Some(gv) => match convert::as_matched(attrs, &gv, self.namespaces.as_ref()).await {
                Some(seen) => {
                    let mut r = review::request(&seen, &uid);
                    convert::keep_request_kind(&mut r, attrs);
                    r
                }
                None => review::request(attrs, &uid),
            },
            None => review::request(attrs, &uid),
        };
        let body = serde_json::to_vec(&review::review(&version, request))
            .map_err(|e| CallError(e.to_string()))?;
        let start = Instant::now();
        let res = self
            .clients
            .post(&hook.url, &hook.ca, body, hook.timeout())
            .await;
        let code = res.as_ref().map(|(c, _)| *c).unwrap_or(0);
        let out = match res {
            Err(e) => Err(CallError(format!("failed to call webhook: {e}"))),
            Ok((status, _)) if status != 200 => Err(CallError(format!(
                "failed to call webhook: the server responded with the status code {status} but did not return more information"
            ))),
            Ok((_, bytes)) => review::verify(&version, &uid, self.mutating, &bytes)
                .map_err(|e| CallError(format!("received invalid webhook response: {e}"))),
        };
        if let Some(m) = &self.metrics {
            let rejected = !matches!(&out, Ok(r) if r.allowed);
            m.observe(
                &hook.spec.name,
                self.plugin_type(),
                attrs.operation.as_str(),
                rejected,
                code,
                start.elapsed().as_secs_f64(),
            );
            if let Err(_) | Ok(review::Response { allowed: false, .. }) = &out {
                let (kind, c) = match &out {
                    Err(_) => (metrics::CALLING_WEBHOOK_ERROR, 0),
                    Ok(r) => (
                        metrics::NO_ERROR,
                        r.status
                            .as_ref()
                            .and_then(|s| s.get("code"))
                            .and_then(Value::as_u64)
                            .unwrap_or(403) as u16,
                    ),
                };
                m.rejection(
                    &hook.spec.name,
                    self.plugin_type(),
                    attrs.operation.as_str(),
                    kind,
                    c,
                );
            }
        }
        out
    }

    /// Calls one webhook and turns its answer into the admission outcome: `Ok(Some(resp))`
    /// when allowed, `Ok(None)` when it failed open, `Err` when the request is refused.
    async fn dispatch(
        &self,
        hook: &Hook,
        index: usize,
        attrs: &Attributes,
    ) -> Result<Option<review::Response>, ApiError> {
        if attrs.dry_run
            && !matches!(
                hook.spec.side_effects.as_deref(),
                Some("None" | "NoneOnDryRun")
            )
        {
            return Err(ApiError::bad_request(format!(
                "admission webhook \"{}\" does not support dry run",
                hook.spec.name
            )));
        }
        match self.call(hook, attrs).await {
            Err(CallError(why)) => {
                let msg = format!("failed calling webhook \"{}\": {why}", hook.spec.name);
                if hook.fails_open() {
                    tracing::warn!(
                        "Failed calling webhook, failing open {}: {msg}",
                        hook.spec.name
                    );
                    attrs.annotations.add(
                        format!(
                            "failed-open.{}.webhook.admission.k8s.io/round_0_index_{index}",
                            self.annotation_prefix()
                        ),
                        hook.spec.name.clone(),
                    );
                    return Ok(None);
                }
                Err(ApiError::internal(msg))
            }
            Ok(resp) => {
                for w in &resp.warnings {
                    attrs.warnings.add(w.clone());
                }
                for (k, v) in &resp.audit_annotations {
                    attrs
                        .annotations
                        .add(format!("{}/{k}", hook.spec.name), v.clone());
                }
                if resp.allowed {
                    Ok(Some(resp))
                } else {
                    Err(denied(&hook.spec.name, resp.status.as_ref()))
                }
            }
        }
    }

    async fn hooks_for(&self, attrs: &Attributes) -> Result<Vec<(usize, Arc<Hook>)>, ApiError> {
        let hooks = self.hooks.view().await?;
        let mut ns = None;
        let mut out = Vec::new();
        for (i, h) in hooks.iter().enumerate() {
            if self.should_call(h, attrs, &mut ns).await? {
                out.push((i, h.clone()));
            }
        }
        Ok(out)
    }
}

/// Upstream's `ToStatusErr`: a webhook's refusal with its code (at least 400) and message.
fn denied(name: &str, status: Option<&Value>) -> ApiError {
    let by = format!("admission webhook \"{name}\" denied the request");
    let get = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (message, reason) = (get("message"), get("reason"));
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let code = if code < 400 { 400 } else { code.min(599) } as u16;
    let text = if !message.is_empty() {
        format!("{by}: {message}")
    } else if !reason.is_empty() {
        format!("{by}: {reason}")
    } else {
        format!("{by} without explanation")
    };
    ApiError::new(code, StatusReason::parse(&reason), text)
}

impl Interface for Webhooks {
    fn handles(&self, _op: Operation) -> bool {
        true
    }
    fn as_mutator(&self) -> Option<&dyn MutationInterface> {
        self.mutating.then_some(self as &dyn MutationInterface)
    }
    fn as_validator(&self) -> Option<&dyn ValidationInterface> {
        (!self.mutating).then_some(self as &dyn ValidationInterface)
    }
    fn reinvocation_policy(&self) -> ReinvocationPolicy {
        // Runs on a reinvocation; only IfNeeded webhooks are called then.
        ReinvocationPolicy::IfNeeded
    }
}

#[async_trait]
impl MutationInterface for Webhooks {
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let reinvoking = attrs.reinvocation.is_reinvoke;
        let round = usize::from(reinvoking);
        let mut if_needed_ran = false;
        for (index, hook) in self.hooks_for(attrs).await? {
            if reinvoking && !hook.if_needed() {
                continue;
            }
            let Some(resp) = self.dispatch(&hook, index, attrs).await? else {
                continue;
            };
            if let Some(patch) = resp.patch {
                let changed = apply_patch(attrs, &patch).map_err(|e| {
                    ApiError::internal(format!(
                        "failed calling webhook \"{}\": {e}",
                        hook.spec.name
                    ))
                })?;
                if changed {
                    attrs.annotations.add(
                        format!("mutation.webhook.admission.k8s.io/round_{round}_index_{index}"),
                        serde_json::json!({"configuration": "", "webhook": hook.spec.name, "mutated": true}).to_string(),
                    );
                    if if_needed_ran && !reinvoking {
                        attrs.reinvocation.requested = true;
                    }
                }
            }
            if_needed_ran |= hook.if_needed();
        }
        Ok(())
    }
}

/// Applies a JSON patch to the request object; whether it changed.
fn apply_patch(attrs: &mut Attributes, patch: &[u8]) -> Result<bool, String> {
    let p: json_patch::Patch =
        serde_json::from_slice(patch).map_err(|e| format!("unable to decode patch: {e}"))?;
    let Some(obj) = attrs.object.as_ref() else {
        return Ok(false);
    };
    let mut doc = Value::Object(obj.as_map().clone());
    json_patch::patch(&mut doc, &p).map_err(|e| e.to_string())?;
    let new = Object::from_value(doc).map_err(|e| e.to_string())?;
    let changed = attrs.object.as_ref() != Some(&new);
    attrs.object = Some(new);
    Ok(changed)
}

#[async_trait]
impl ValidationInterface for Webhooks {
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let hooks = self.hooks_for(attrs).await?;
        let calls = hooks.iter().map(|(i, h)| self.dispatch(h, *i, attrs));
        for res in futures::future::join_all(calls).await {
            res?;
        }
        Ok(())
    }
}

fn build(
    mutating: bool,
    ctx: &PluginContext,
    plugin: &str,
) -> Result<Arc<dyn Interface>, AdmissionError> {
    let watcher = ctx.watcher(plugin)?;
    let resource = if mutating {
        "mutatingwebhookconfigurations"
    } else {
        "validatingwebhookconfigurations"
    };
    let hooks = Informer::new(
        GroupResource::new("admissionregistration.k8s.io", resource),
        watcher,
        Arc::new(build_hooks),
    );
    Ok(Arc::new(Webhooks {
        mutating,
        hooks,
        namespaces: ctx.objects(plugin)?,
        clients: ctx.webhook_clients.clone(),
        metrics: ctx.webhook_metrics.clone(),
        authorizer: ctx.authorizer.clone(),
    }))
}

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        MUTATING_PLUGIN,
        Arc::new(|_, ctx| build(true, ctx, MUTATING_PLUGIN)),
    )?;
    plugins.register(
        VALIDATING_PLUGIN,
        Arc::new(|_, ctx| build(false, ctx, VALIDATING_PLUGIN)),
    )
}

/// The URL a webhook is called at, its path cleaned as Go's `path.Join` cleans it when
/// kube-apiserver's REST client builds the request (`//validate/` is called as `/validate`):
/// controller-runtime's envtest registers `https://host:port//validate-...`, and its webhook
/// server redirects (301) any path that is not clean.
fn clean_url_path(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some(slash) = rest.find('/') else {
        return url.to_string();
    };
    let (host, path) = rest.split_at(slash);
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("{scheme}://{host}/{}", parts.join("/"))
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
