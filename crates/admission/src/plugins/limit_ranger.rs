//! LimitRanger: applies `default` (limits) and `defaultRequest` (requests) of the namespace's
//! LimitRange `Container` items to containers that lack them, on pod create, and enforces
//! `min`, `max` and `maxLimitRequestRatio` per Container and per Pod (pod creates), and `min`/`max`
//! of the storage request per PersistentVolumeClaim (claim creates and updates), with
//! upstream's wording.

use super::quantity;
use crate::objects::ObjectStore;
use crate::plugins::live_lookup::CachedList;
use crate::plugins::util::handler;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, Operation, ValidationInterface};
use async_trait::async_trait;
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "LimitRanger";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| Ok(Arc::new(LimitRanger::new(ctx.objects(PLUGIN_NAME)?)))),
    )
}

pub struct LimitRanger {
    objects: Arc<dyn ObjectStore>,
    /// The namespace's LimitRanges: the watch cache's, or one live list kept for 30 s when
    /// it holds none (upstream's lister and `liveLookupCache`).
    ranges: CachedList,
}

fn is_pod_create(a: &Attributes) -> bool {
    // Containers cannot be added or resized through an update, so only creates matter.
    a.operation == Operation::Create
        && a.resource.group.is_empty()
        && a.resource.resource == "pods"
        && a.subresource.is_empty()
}

impl LimitRanger {
    pub fn new(objects: Arc<dyn ObjectStore>) -> Self {
        Self {
            objects,
            ranges: CachedList::new(GroupResource::new("", "limitranges")),
        }
    }

    /// The `spec.limits` items of every LimitRange in the namespace.
    async fn items(&self, namespace: &str) -> Result<Vec<Map<String, Value>>, ApiError> {
        let ranges = self
            .ranges
            .list(self.objects.as_ref(), namespace, false)
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

handler!(LimitRanger, [Create, Update], mutates, validates);

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

/// min, max and ratio checks of one set of requests and limits against a LimitRange item, as
/// upstream's `minConstraint`, `maxConstraint` and `limitRequestRatioConstraint` word them.
fn check(
    item: &Map<String, Value>,
    kind: &str,
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
    errs: &mut Vec<String>,
) {
    let entries = |key: &str| {
        item.get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    for (res, m) in entries("min") {
        let (req, lim) = (requests.get(&res), limits.get(&res));
        let e = text(&m);
        match req {
            None => errs.push(format!(
                "minimum {res} usage per {kind} is {e}.  No request is specified"
            )),
            Some(r) if quantity::of(r) < quantity::of(&m) => errs.push(format!(
                "minimum {res} usage per {kind} is {e}, but request is {}",
                text(r)
            )),
            _ => match lim {
                Some(l) if quantity::of(l) < quantity::of(&m) => errs.push(format!(
                    "minimum {res} usage per {kind} is {e}, but limit is {}",
                    text(l)
                )),
                _ => {}
            },
        }
    }
    for (res, m) in entries("max") {
        let (req, lim) = (requests.get(&res), limits.get(&res));
        let e = text(&m);
        match lim {
            None => errs.push(format!(
                "maximum {res} usage per {kind} is {e}.  No limit is specified"
            )),
            Some(l) if quantity::of(l) > quantity::of(&m) => errs.push(format!(
                "maximum {res} usage per {kind} is {e}, but limit is {}",
                text(l)
            )),
            _ => match req {
                Some(r) if quantity::of(r) > quantity::of(&m) => errs.push(format!(
                    "maximum {res} usage per {kind} is {e}, but request is {}",
                    text(r)
                )),
                _ => {}
            },
        }
    }
    for (res, m) in entries("maxLimitRequestRatio") {
        let e = text(&m);
        let req = requests.get(&res).and_then(quantity::of).unwrap_or(0.0);
        let lim = limits.get(&res).and_then(quantity::of).unwrap_or(0.0);
        if req == 0.0 {
            errs.push(format!("{res} max limit to request ratio per {kind} is {e}, but no request is specified or request is 0"));
        } else if lim == 0.0 {
            errs.push(format!("{res} max limit to request ratio per {kind} is {e}, but no limit is specified or limit is 0"));
        } else {
            let ratio = lim / req;
            if ratio > quantity::of(&m).unwrap_or(f64::MAX) {
                errs.push(format!("{res} max limit to request ratio per {kind} is {e}, but provided ratio is {ratio:.6}"));
            }
        }
    }
}

/// A PersistentVolumeClaim's storage request against `min` and `max` (requests only).
fn check_claim(item: &Map<String, Value>, requests: &Map<String, Value>, errs: &mut Vec<String>) {
    let kind = "PersistentVolumeClaim";
    for (bound, word, beyond) in [
        ("min", "minimum", Ordering::Less),
        ("max", "maximum", Ordering::Greater),
    ] {
        for (res, m) in item
            .get(bound)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let e = text(m);
            match requests.get(res) {
                None => errs.push(format!(
                    "{word} {res} usage per {kind} is {e}.  No request is specified"
                )),
                Some(r) if quantity::of(r).partial_cmp(&quantity::of(m)) == Some(beyond) => errs
                    .push(format!(
                        "{word} {res} usage per {kind} is {e}, but request is {}",
                        text(r)
                    )),
                _ => {}
            }
        }
    }
}

/// The pod's effective requests or limits: the larger of the containers' sum and each init
/// container's own, per resource, as upstream's `PodRequests`/`PodLimits`.
fn pod_totals(pod: &Object, kind: &str) -> Map<String, Value> {
    let mut sum: std::collections::BTreeMap<String, f64> = Default::default();
    let mut init_max: std::collections::BTreeMap<String, f64> = Default::default();
    // Sums print in the form of the first quantity seen (binary stays binary).
    let mut sample: std::collections::BTreeMap<String, String> = Default::default();
    for (field, list) in super::pod_containers(pod) {
        for c in list {
            for (k, v) in resources_of(c, kind).into_iter().flatten() {
                let q = quantity::of(v).unwrap_or(0.0);
                sample.entry(k.clone()).or_insert_with(|| text(v));
                match field {
                    "spec.containers" => *sum.entry(k.clone()).or_default() += q,
                    "spec.initContainers" => {
                        let e = init_max.entry(k.clone()).or_default();
                        *e = e.max(q);
                    }
                    _ => {}
                }
            }
        }
    }
    for (k, v) in init_max {
        let e = sum.entry(k).or_default();
        *e = e.max(v);
    }
    sum.into_iter()
        .map(|(k, v)| {
            let like = sample.get(&k).map(String::as_str).unwrap_or("");
            let text = quantity::format_like(v, like);
            (k, Value::from(text))
        })
        .collect()
}

fn text(v: &Value) -> String {
    super::util::text(v)
}

#[async_trait]
impl ValidationInterface for LimitRanger {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let claim = a.resource.group.is_empty()
            && a.resource.resource == "persistentvolumeclaims"
            && a.subresource.is_empty()
            && matches!(a.operation, Operation::Create | Operation::Update);
        if !is_pod_create(a) && !claim {
            return Ok(());
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let items = self.items(&a.namespace).await?;
        let empty = Map::new();
        let mut errs = Vec::new();
        for item in &items {
            match (claim, item.get("type").and_then(Value::as_str)) {
                (false, Some("Container")) => {
                    for (field, list) in super::pod_containers(obj) {
                        if field == "spec.ephemeralContainers" {
                            continue;
                        }
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
                (false, Some("Pod")) => check(
                    item,
                    "Pod",
                    &pod_totals(obj, "requests"),
                    &pod_totals(obj, "limits"),
                    &mut errs,
                ),
                (true, Some("PersistentVolumeClaim")) => {
                    let requests = obj
                        .get("spec")
                        .and_then(|s| s.get("resources")?.get("requests")?.as_object())
                        .unwrap_or(&empty);
                    check_claim(item, requests, &mut errs);
                }
                _ => {}
            }
        }
        match errs.as_slice() {
            [] => Ok(()),
            [only] => Err(a.forbidden(only)),
            _ => Err(a.forbidden(format!("[{}]", errs.join(", ")))),
        }
    }
}

#[cfg(test)]
#[path = "limit_ranger_tests.rs"]
mod tests;
