//! PodNodeSelector: a pod's `spec.nodeSelector` is merged with its namespace's
//! (`scheduler.alpha.kubernetes.io/node-selector` annotation, else the configured
//! `clusterDefaultNodeSelector`), refused when they conflict or when it leaves the namespace's
//! configured whitelist. PodTolerationRestriction: pods get their namespace's default
//! tolerations (annotation `scheduler.alpha.kubernetes.io/defaultTolerations`, else the
//! configured `default`), non-BestEffort pods the memory-pressure toleration, and the result
//! must fit the namespace's (or configured) whitelist.

use super::util::{is_resource, spec, spec_mut};
use crate::objects::ObjectStore;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const POD_NODE_SELECTOR: &str = "PodNodeSelector";
pub const POD_TOLERATION_RESTRICTION: &str = "PodTolerationRestriction";
pub const NODE_SELECTOR_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/node-selector";
pub const DEFAULT_TOLERATIONS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
pub const TOLERATIONS_WHITELIST_ANNOTATION: &str =
    "scheduler.alpha.kubernetes.io/tolerationsWhitelist";
const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";

/// A plugin's configuration (YAML or JSON) as a JSON value.
pub fn parse_config(plugin: &str, bytes: &[u8]) -> Result<Value, AdmissionError> {
    let invalid = |reason: String| AdmissionError::InvalidConfig {
        plugin: plugin.to_string(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| invalid(e.to_string()))?;
    serde_saphyr::from_str(text).map_err(|e| invalid(e.to_string()))
}

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        POD_NODE_SELECTOR,
        Arc::new(|cfg, ctx| {
            let mut selectors = BTreeMap::new();
            if let Some(bytes) = cfg {
                let v = parse_config(POD_NODE_SELECTOR, bytes)?;
                for (k, s) in v
                    .get("podNodeSelectorPluginConfig")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let s = s.as_str().unwrap_or("");
                    let parsed =
                        parse_selector(s).map_err(|reason| AdmissionError::InvalidConfig {
                            plugin: POD_NODE_SELECTOR.into(),
                            reason,
                        })?;
                    selectors.insert(k.clone(), parsed);
                }
            }
            Ok(Arc::new(PodNodeSelector {
                objects: ctx.objects(POD_NODE_SELECTOR)?,
                selectors,
            }))
        }),
    )?;
    plugins.register(
        POD_TOLERATION_RESTRICTION,
        Arc::new(|cfg, ctx| {
            let v = match cfg {
                Some(bytes) => parse_config(POD_TOLERATION_RESTRICTION, bytes)?,
                None => Value::Null,
            };
            let list = |key: &str| v.get(key).and_then(Value::as_array).cloned();
            Ok(Arc::new(PodTolerationRestriction {
                objects: ctx.objects(POD_TOLERATION_RESTRICTION)?,
                default: list("default"),
                whitelist: list("whitelist"),
            }))
        }),
    )
}

type Labels = BTreeMap<String, String>;

/// `a=b,c=d` as a label map (upstream's `ConvertSelectorToLabelsMap`).
pub fn parse_selector(s: &str) -> Result<Labels, String> {
    let mut out = Labels::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(format!("invalid selector: {s:?}"));
        };
        out.insert(
            k.trim().to_string(),
            v.trim().trim_start_matches('=').to_string(),
        );
    }
    Ok(out)
}

fn conflicts(a: &Labels, b: &Labels) -> bool {
    a.iter().any(|(k, v)| b.get(k).is_some_and(|w| w != v))
}

fn pod_selector(pod: &Object) -> Labels {
    spec(pod)
        .and_then(|s| s.get("nodeSelector"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect()
}

async fn namespace(objects: &dyn ObjectStore, name: &str) -> Result<Object, ApiError> {
    objects
        .get(&GroupResource::new("", "namespaces"), "", name)
        .await?
        .ok_or_else(|| ApiError::not_found(&GroupResource::new("", "namespaces"), name))
}

pub struct PodNodeSelector {
    objects: Arc<dyn ObjectStore>,
    /// `clusterDefaultNodeSelector` and per-namespace whitelists, from the configuration.
    selectors: BTreeMap<String, Labels>,
}

impl PodNodeSelector {
    async fn namespace_selector(&self, ns: &str) -> Result<Labels, ApiError> {
        let ns = namespace(self.objects.as_ref(), ns).await?;
        match ns.annotations().get(NODE_SELECTOR_ANNOTATION) {
            Some(s) => parse_selector(s).map_err(ApiError::internal),
            None => Ok(self
                .selectors
                .get("clusterDefaultNodeSelector")
                .cloned()
                .unwrap_or_default()),
        }
    }
}

const SELECTOR_CONFLICT: &str =
    "pod node label selector conflicts with its namespace node label selector";

handler!(PodNodeSelector, [Create], mutates, validates);

#[async_trait]
impl MutationInterface for PodNodeSelector {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let ns = self.namespace_selector(&a.namespace).await?;
        let mut merged = pod_selector(pod);
        if conflicts(&ns, &merged) {
            return Err(a.forbidden(SELECTOR_CONFLICT));
        }
        for (k, v) in ns {
            merged.entry(k).or_insert(v);
        }
        if merged.is_empty() {
            return Ok(());
        }
        if let Some(spec) = a.object.as_mut().and_then(spec_mut) {
            let m: Map<String, Value> = merged
                .into_iter()
                .map(|(k, v)| (k, Value::from(v)))
                .collect();
            spec.insert("nodeSelector".into(), Value::Object(m));
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for PodNodeSelector {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let selector = pod_selector(pod);
        if conflicts(&self.namespace_selector(&a.namespace).await?, &selector) {
            return Err(a.forbidden(SELECTOR_CONFLICT));
        }
        if let Some(white) = self.selectors.get(&a.namespace).filter(|w| !w.is_empty()) {
            if selector.iter().any(|(k, v)| white.get(k) != Some(v)) {
                return Err(a.forbidden(
                    "pod node label selector labels conflict with its namespace whitelist",
                ));
            }
        }
        Ok(())
    }
}

pub struct PodTolerationRestriction {
    objects: Arc<dyn ObjectStore>,
    default: Option<Vec<Value>>,
    whitelist: Option<Vec<Value>>,
}

fn field<'a>(t: &'a Value, k: &str) -> &'a str {
    t.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Whether toleration `ss` covers `t` (upstream's `isSuperset`).
fn covers(ss: &Value, t: &Value) -> bool {
    if ss == t {
        return true;
    }
    if field(t, "key") != field(ss, "key")
        && (!field(ss, "key").is_empty() || field(ss, "operator") != "Exists")
    {
        return false;
    }
    if field(t, "effect") != field(ss, "effect") && !field(ss, "effect").is_empty() {
        return false;
    }
    if field(ss, "effect") == "NoExecute" {
        if let Some(max) = ss.get("tolerationSeconds").and_then(Value::as_i64) {
            match t.get("tolerationSeconds").and_then(Value::as_i64) {
                Some(s) if s <= max => {}
                _ => return false,
            }
        }
    }
    match field(ss, "operator") {
        "Equal" | "" => {
            matches!(field(t, "operator"), "Equal" | "") && field(t, "value") == field(ss, "value")
        }
        "Exists" => true,
        _ => false,
    }
}

fn is_best_effort(pod: &Object) -> bool {
    super::pod_containers(pod)
        .into_iter()
        .filter(|(f, _)| *f != "spec.ephemeralContainers")
        .flat_map(|(_, l)| l.iter())
        .all(|c| {
            ["requests", "limits"].iter().all(|k| {
                c.get("resources")
                    .and_then(|r| r.get(*k))
                    .and_then(Value::as_object)
                    .is_none_or(|m| !m.contains_key("cpu") && !m.contains_key("memory"))
            })
        })
}

impl PodTolerationRestriction {
    /// A JSON list from a namespace annotation; `None` when the annotation is absent.
    async fn annotation_list(&self, ns: &str, key: &str) -> Result<Option<Vec<Value>>, ApiError> {
        let ns = namespace(self.objects.as_ref(), ns).await?;
        match ns.annotations().get(key) {
            None => Ok(None),
            Some(s) => serde_json::from_str(s)
                .map(Some)
                .map_err(ApiError::internal),
        }
    }
}

handler!(
    PodTolerationRestriction,
    [Create, Update],
    mutates,
    validates
);

fn tolerations(pod: &Object) -> Vec<Value> {
    spec(pod)
        .and_then(|s| s.get("tolerations"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[async_trait]
impl MutationInterface for PodTolerationRestriction {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let mut extra = Vec::new();
        if a.operation == Operation::Create {
            let ns_default = self
                .annotation_list(&a.namespace, DEFAULT_TOLERATIONS_ANNOTATION)
                .await?;
            extra = ns_default
                .or_else(|| self.default.clone())
                .unwrap_or_default();
        }
        if !is_best_effort(pod) {
            extra.push(
                json!({"key": MEMORY_PRESSURE, "operator": "Exists", "effect": "NoSchedule"}),
            );
        }
        if extra.is_empty() {
            return Ok(());
        }
        let mut merged = tolerations(pod);
        for t in extra {
            if !merged.iter().any(|m| covers(m, &t)) {
                merged.push(t);
            }
        }
        if let Some(spec) = a.object.as_mut().and_then(spec_mut) {
            spec.insert("tolerations".into(), Value::Array(merged));
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for PodTolerationRestriction {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_resource(a, "", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let list = tolerations(pod);
        if list.is_empty() {
            return Ok(());
        }
        let (whitelist, scope) = match self
            .annotation_list(&a.namespace, TOLERATIONS_WHITELIST_ANNOTATION)
            .await?
        {
            Some(w) => (w, "namespace"),
            None => (self.whitelist.clone().unwrap_or_default(), "cluster"),
        };
        if whitelist.is_empty() {
            return Ok(());
        }
        if !list.iter().all(|t| whitelist.iter().any(|w| covers(w, t))) {
            return Err(a.forbidden(format!(
                "pod tolerations (possibly merged with namespace default tolerations) conflict with its {scope} whitelist"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "node_selection_tests.rs"]
mod tests;
