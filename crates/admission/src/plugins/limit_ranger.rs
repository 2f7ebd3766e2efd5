//! LimitRanger: applies `default` (limits) and `defaultRequest` (requests) of the namespace's
//! LimitRange `Container` items to containers that lack them, on pod create, and enforces
//! `min`/`max` per Container and per Pod, with upstream's wording.

use super::quantity;
use crate::objects::ObjectStore;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, Interface, MutationInterface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{Map, Value};
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "LimitRanger";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| {
            Ok(Arc::new(LimitRanger {
                objects: ctx.objects(PLUGIN_NAME)?,
            }))
        }),
    )
}

pub struct LimitRanger {
    objects: Arc<dyn ObjectStore>,
}

fn is_pod_create(a: &Attributes) -> bool {
    // Containers cannot be added or resized through an update, so only creates matter.
    a.operation == Operation::Create
        && a.resource.group.is_empty()
        && a.resource.resource == "pods"
        && a.subresource.is_empty()
}

impl LimitRanger {
    /// The `spec.limits` items of every LimitRange in the namespace.
    async fn items(&self, namespace: &str) -> Result<Vec<Map<String, Value>>, ApiError> {
        let ranges = self
            .objects
            .list(&GroupResource::new("", "limitranges"), namespace)
            .await?;
        Ok(ranges
            .iter()
            .filter_map(|r| r.get("spec")?.get("limits")?.as_array().cloned())
            .flatten()
            .filter_map(|v| match v {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .collect())
    }
}

impl Interface for LimitRanger {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn as_mutator(&self) -> Option<&dyn MutationInterface> {
        Some(self)
    }
    fn as_validator(&self) -> Option<&dyn ValidationInterface> {
        Some(self)
    }
}

fn resources_of<'a>(c: &'a Value, kind: &str) -> Option<&'a Map<String, Value>> {
    c.get("resources")?.get(kind)?.as_object()
}

/// Fills missing `resources.<kind>` entries of `c` from `defaults`; returns what it set.
fn fill(c: &mut Map<String, Value>, kind: &str, defaults: &Map<String, Value>) -> Vec<String> {
    let resources = c
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(resources) = resources else {
        return Vec::new();
    };
    let target = resources
        .entry(kind)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(target) = target else {
        return Vec::new();
    };
    let mut set = Vec::new();
    for (k, v) in defaults {
        if !target.contains_key(k) {
            target.insert(k.clone(), v.clone());
            set.push(k.clone());
        }
    }
    set
}

#[async_trait]
impl MutationInterface for LimitRanger {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_create(a) {
            return Ok(());
        }
        let items = self.items(&a.namespace).await?;
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        let mut notes = Vec::new();
        for item in items
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("Container"))
        {
            let empty = Map::new();
            let limits = item
                .get("default")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let requests = item
                .get("defaultRequest")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            for (_, list) in super::pod_containers_mut(pod) {
                for c in list.iter_mut() {
                    let Value::Object(c) = c else { continue };
                    let name = c
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let req = fill(c, "requests", requests);
                    let lim = fill(c, "limits", limits);
                    if !req.is_empty() {
                        notes.push(format!("{} request for container {name}", req.join(", ")));
                    }
                    if !lim.is_empty() {
                        notes.push(format!("{} limit for container {name}", lim.join(", ")));
                    }
                }
            }
        }
        if !notes.is_empty() {
            let note = format!("LimitRanger plugin set: {}", notes.join("; "));
            pod.set_annotation("kubernetes.io/limit-ranger", &note);
        }
        Ok(())
    }
}

/// min/max checks of one set of requests and limits against a LimitRange item.
fn check(
    item: &Map<String, Value>,
    kind: &str,
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
    errs: &mut Vec<String>,
) {
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string())
    };
    if let Some(min) = item.get("min").and_then(Value::as_object) {
        for (res, m) in min {
            match requests.get(res) {
                None => errs.push(format!(
                    "minimum {res} usage per {kind} is {}.  No request is specified",
                    text(m)
                )),
                Some(r) if quantity::of(r) < quantity::of(m) => errs.push(format!(
                    "minimum {res} usage per {kind} is {}, but request is {}",
                    text(m),
                    text(r)
                )),
                _ => {}
            }
        }
    }
    if let Some(max) = item.get("max").and_then(Value::as_object) {
        for (res, m) in max {
            match limits.get(res) {
                None => errs.push(format!(
                    "maximum {res} usage per {kind} is {}.  No limit is specified",
                    text(m)
                )),
                Some(l) if quantity::of(l) > quantity::of(m) => errs.push(format!(
                    "maximum {res} usage per {kind} is {}, but limit is {}",
                    text(m),
                    text(l)
                )),
                _ => {}
            }
        }
    }
}

fn sum(pod: &Object, kind: &str) -> Map<String, Value> {
    let mut totals: std::collections::BTreeMap<String, f64> = Default::default();
    for (field, list) in super::pod_containers(pod) {
        if field == "spec.ephemeralContainers" {
            continue;
        }
        for c in list {
            for (k, v) in resources_of(c, kind).into_iter().flatten() {
                *totals.entry(k.clone()).or_default() += quantity::of(v).unwrap_or(0.0);
            }
        }
    }
    totals
        .into_iter()
        .map(|(k, v)| (k, Value::from(v)))
        .collect()
}

#[async_trait]
impl ValidationInterface for LimitRanger {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_pod_create(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let items = self.items(&a.namespace).await?;
        let empty = Map::new();
        let mut errs = Vec::new();
        for item in &items {
            match item.get("type").and_then(Value::as_str) {
                Some("Container") => {
                    for (_, list) in super::pod_containers(pod) {
                        for c in list {
                            check(
                                item,
                                "Container",
                                resources_of(c, "requests").unwrap_or(&empty),
                                resources_of(c, "limits").unwrap_or(&empty),
                                &mut errs,
                            );
                        }
                    }
                }
                Some("Pod") => check(
                    item,
                    "Pod",
                    &sum(pod, "requests"),
                    &sum(pod, "limits"),
                    &mut errs,
                ),
                _ => {}
            }
        }
        match errs.len() {
            0 => Ok(()),
            1 => Err(a.forbidden(&errs[0])),
            _ => Err(a.forbidden(format!("[{}]", errs.join(", ")))),
        }
    }
}

#[cfg(test)]
#[path = "limit_ranger_tests.rs"]
mod tests;
