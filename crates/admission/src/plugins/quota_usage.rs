//! What one object costs against a ResourceQuota (upstream's quota evaluators): object counts
//! for every resource, and compute (pods), storage (claims) and port/balancer (services)
//! usage; which `spec.hard` names an evaluator covers; the pod `must specify` constraint; and
//! whether an object falls in a quota's scopes.

use super::quantity;
use kapi_machinery::{GroupResource, Object};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Resource name -> amount.
pub type Usage = BTreeMap<String, f64>;

/// Core resources upstream also counts under their bare name.
const LEGACY_COUNTED: &[&str] = &[
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

/// Resources whose presence in a quota forces every container to state them.
const POD_REQUIRED: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

const COMPUTE: &[&str] = &["cpu", "memory", "ephemeral-storage"];
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The count names a create of `gr` is charged under.
pub fn counted_names(gr: &GroupResource) -> Vec<String> {
    let mut names = vec![if gr.group.is_empty() {
        format!("count/{}", gr.resource)
    } else {
        format!("count/{}.{}", gr.resource, gr.group)
    }];
    if gr.group.is_empty() && LEGACY_COUNTED.contains(&gr.resource.as_str()) {
        names.push(gr.resource.clone());
    }
    names
}

fn is_core(gr: &GroupResource, resource: &str) -> bool {
    gr.group.is_empty() && gr.resource == resource
}

/// Whether the evaluator of `gr` accounts for the quota name `name`.
pub fn covers(gr: &GroupResource, name: &str) -> bool {
    if counted_names(gr).iter().any(|n| n == name) {
        return true;
    }
    if is_core(gr, "pods") {
        return COMPUTE.contains(&name)
            || name.starts_with("limits.")
            || (name.starts_with("requests.") && name != "requests.storage");
    }
    if is_core(gr, "persistentvolumeclaims") {
        return name == "requests.storage"
            || name.ends_with(&format!("{STORAGE_CLASS_SUFFIX}requests.storage"))
            || name.ends_with(&format!("{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"));
    }
    if is_core(gr, "services") {
        return name == "services.nodeports" || name == "services.loadbalancers";
    }
    false
}

fn spec(obj: &Object) -> Option<&serde_json::Map<String, Value>> {
    obj.get("spec")?.as_object()
}

fn resources<'a>(c: &'a Value, kind: &str) -> impl Iterator<Item = (&'a String, f64)> {
    c.get("resources")
        .and_then(|r| r.get(kind))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, quantity::of(v).unwrap_or(0.0)))
}

/// The quota names one container's (or a pod's summed) requests and limits account for.
fn compute_usage(requests: &Usage, limits: &Usage, out: &mut Usage) {
    for (k, v) in requests {
        if COMPUTE.contains(&k.as_str()) {
            *out.entry(k.clone()).or_default() += v;
        }
        *out.entry(format!("requests.{k}")).or_default() += v;
    }
    for (k, v) in limits {
        if COMPUTE.contains(&k.as_str()) {
            *out.entry(format!("limits.{k}")).or_default() += v;
        }
    }
}

/// A pod's effective requests or limits: containers summed, raised to any init container's
/// own, plus the pod overhead.
fn pod_totals(pod: &Object, kind: &str) -> Usage {
    let mut sum = Usage::new();
    let mut init = Usage::new();
    let spec = spec(pod);
    for c in spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in resources(c, kind) {
            *sum.entry(k.clone()).or_default() += v;
        }
    }
    for c in spec
        .and_then(|s| s.get("initContainers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in resources(c, kind) {
            let e = init.entry(k.clone()).or_default();
            *e = e.max(v);
        }
    }
    for (k, v) in init {
        let e = sum.entry(k).or_default();
        *e = e.max(v);
    }
    for (k, v) in spec
        .and_then(|s| s.get("overhead"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        *sum.entry(k.clone()).or_default() += quantity::of(v).unwrap_or(0.0);
    }
    sum
}

fn phase(obj: &Object) -> &str {
    obj.get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether a stored object still counts (terminal pods do not).
pub fn counts(gr: &GroupResource, obj: &Object) -> bool {
    !(is_core(gr, "pods") && matches!(phase(obj), "Succeeded" | "Failed"))
}

/// What `obj` of `gr` costs.
pub fn usage(gr: &GroupResource, obj: &Object) -> Usage {
    let mut u: Usage = counted_names(gr).into_iter().map(|n| (n, 1.0)).collect();
    if is_core(gr, "pods") {
        compute_usage(
            &pod_totals(obj, "requests"),
            &pod_totals(obj, "limits"),
            &mut u,
        );
    } else if is_core(gr, "persistentvolumeclaims") {
        let storage = spec(obj)
            .and_then(|s| s.get("resources")?.get("requests")?.get("storage"))
            .and_then(quantity::of)
            .unwrap_or(0.0);
        u.insert("requests.storage".into(), storage);
        let class = super::storage::claim_class(obj);
        if !class.is_empty() {
            u.insert(
                format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                storage,
            );
            u.insert(
                format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                1.0,
            );
        }
    } else if is_core(gr, "services") {
        let ty = spec(obj)
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        let ports = spec(obj)
            .and_then(|s| s.get("ports"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len) as f64;
        let allocate = spec(obj)
            .and_then(|s| s.get("allocateLoadBalancerNodePorts"))
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let node_ports = match ty {
            "NodePort" => ports,
            "LoadBalancer" if allocate => ports,
            _ => 0.0,
        };
        u.insert("services.nodeports".into(), node_ports);
        u.insert(
            "services.loadbalancers".into(),
            if ty == "LoadBalancer" { 1.0 } else { 0.0 },
        );
    }
    u
}

/// Upstream's pod constraint: a quota on cpu or memory needs every container to state it.
/// Returns `must specify <r> for: <containers>; ...` when some do not.
pub fn pod_constraints(pod: &Object, matched: &BTreeSet<String>) -> Option<String> {
    let required: BTreeSet<&str> = POD_REQUIRED
        .iter()
        .copied()
        .filter(|r| matched.contains(*r))
        .collect();
    if required.is_empty() {
        return None;
    }
    let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for key in ["containers", "initContainers"] {
        for c in spec(pod)
            .and_then(|s| s.get(key))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let requests: Usage = resources(c, "requests")
                .map(|(k, v)| (k.clone(), v))
                .collect();
            let limits: Usage = resources(c, "limits")
                .map(|(k, v)| (k.clone(), v))
                .collect();
            let mut have = Usage::new();
            compute_usage(&requests, &limits, &mut have);
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            for r in &required {
                if !have.contains_key(*r) {
                    missing.entry(r).or_default().insert(name.to_string());
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

fn is_best_effort(pod: &Object) -> bool {
    ["containers", "initContainers"].iter().all(|key| {
        spec(pod)
            .and_then(|s| s.get(*key))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .all(|c| {
                resources(c, "requests")
                    .chain(resources(c, "limits"))
                    .all(|(k, _)| !matches!(k.as_str(), "cpu" | "memory"))
            })
    })
}

/// `v` printed like the quota's hard value for `name` (binary stays binary), as upstream's
/// quantity sums keep the form of the limit they are compared with.
pub fn fmt_amount(v: f64, hard: &serde_json::Map<String, Value>, name: &str) -> String {
    let like = hard.get(name).map(super::util::text).unwrap_or_default();
    quantity::format_like(v, &like)
}

/// A quota's `spec.hard` (empty when it has none).
pub fn hard_of(quota: &Object) -> serde_json::Map<String, Value> {
    quota
        .get("spec")
        .and_then(|s| s.get("hard"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The status upstream's quota controller writes for `quota`: `hard` is `spec.hard`; `used`
/// keeps, for every hard name, the previous figure, replaced by what the objects of `objects`
/// (all of one resource each, from the quota's namespace) in the quota's scopes use, `0` when
/// none, for every name one of those resources accounts for.
pub fn quota_status(quota: &Object, objects: &[(GroupResource, Vec<Object>)]) -> Value {
    let hard = hard_of(quota);
    let previous = quota
        .get("status")
        .and_then(|s| s.get("used"))
        .and_then(Value::as_object);
    let mut used = serde_json::Map::new();
    for name in hard.keys() {
        if let Some(v) = previous.and_then(|p| p.get(name)) {
            used.insert(name.clone(), v.clone());
        }
    }
    for (gr, items) in objects {
        let names: Vec<&String> = hard.keys().filter(|k| covers(gr, k)).collect();
        if names.is_empty() {
            continue;
        }
        let mut total = Usage::new();
        for obj in items
            .iter()
            .filter(|o| counts(gr, o) && in_scope(quota, gr, o))
        {
            for (k, v) in usage(gr, obj) {
                *total.entry(k).or_default() += v;
            }
        }
        for name in names {
            let v = total.get(name).copied().unwrap_or(0.0).max(0.0);
            used.insert(name.clone(), Value::from(fmt_amount(v, &hard, name)));
        }
    }
    serde_json::json!({"hard": hard, "used": used})
}

/// Whether `obj` of `gr` falls in every scope of `quota` (`spec.scopes` and
/// `spec.scopeSelector`); scoped quotas only ever apply to pods.
pub fn in_scope(quota: &Object, gr: &GroupResource, obj: &Object) -> bool {
    let spec_q = quota.get("spec");
    let mut scopes: Vec<(String, String, Vec<String>)> = spec_q
        .and_then(|s| s.get("scopes"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| (s.to_string(), "Exists".to_string(), Vec::new()))
        .collect();
    for e in spec_q
        .and_then(|s| s.get("scopeSelector")?.get("matchExpressions")?.as_array())
        .into_iter()
        .flatten()
    {
        let name = e.get("scopeName").and_then(Value::as_str).unwrap_or("");
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        scopes.push((name.to_string(), op.to_string(), values));
    }
    if scopes.is_empty() {
        return true;
    }
    if !is_core(gr, "pods") {
        return false;
    }
    let terminating = spec(obj)
        .and_then(|s| s.get("activeDeadlineSeconds"))
        .is_some_and(|v| !v.is_null());
    let class = spec(obj)
        .and_then(|s| s.get("priorityClassName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    scopes.iter().all(|(name, op, values)| match name.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => is_best_effort(obj),
        "NotBestEffort" => !is_best_effort(obj),
        "PriorityClass" => match op.as_str() {
            "In" => values.iter().any(|v| v == class),
            "NotIn" => !values.iter().any(|v| v == class),
            "Exists" => !class.is_empty(),
            "DoesNotExist" => class.is_empty(),
            _ => false,
        },
        _ => false,
    })
}
