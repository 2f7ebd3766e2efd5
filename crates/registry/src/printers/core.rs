//! Printers of the core group's plain resources (namespaces, config, storage claims, nodes);
//! services, endpoints and events live in `service.rs` and `event.rs`, pods in `pod.rs`.

use super::docs;
use super::json::{arr_at, bool_at, obj_at, str_at};
use super::{age, event, service, value, Column, Printer, AGE, DEFAULT, NAME};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};
use std::collections::BTreeSet;

pub(super) fn printer(resource: &str) -> Option<Printer> {
    Some(match resource {
        "namespaces" => Printer::new(NAMESPACE_COLUMNS, namespace_cells),
        "configmaps" => Printer::new(CONFIG_MAP_COLUMNS, config_map_cells),
        "secrets" => Printer::new(SECRET_COLUMNS, secret_cells),
        "serviceaccounts" => Printer::new(SERVICE_ACCOUNT_COLUMNS, service_account_cells),
        "services" => service::SERVICES,
        "endpoints" => service::ENDPOINTS,
        "events" => event::EVENTS,
        // Upstream has no LimitRange printer: `kubectl get limitranges` shows NAME, CREATED AT.
        "limitranges" => DEFAULT,
        "resourcequotas" => Printer::new(RESOURCE_QUOTA_COLUMNS, resource_quota_cells),
        "persistentvolumeclaims" => Printer::new(PVC_COLUMNS, pvc_cells),
        "persistentvolumes" => Printer::new(PV_COLUMNS, pv_cells),
        "nodes" => Printer::new(NODE_COLUMNS, node_cells),
        _ => return None,
    })
}

const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the namespace"),
    AGE,
];

fn namespace_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    vec![
        json!(obj.name()),
        json!(str_at(&v, &["status", "phase"])),
        age(obj, now),
    ]
}

const CONFIG_MAP_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Data", "string", docs::CONFIG_MAP_DATA),
    AGE,
];

fn config_map_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let n = obj_at(&v, &["data"])
        .len()
        .saturating_add(obj_at(&v, &["binaryData"]).len());
    vec![json!(obj.name()), json!(n), age(obj, now)]
}

const SECRET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", docs::SECRET_TYPE),
    Column::new("Data", "string", docs::SECRET_DATA),
    AGE,
];

fn secret_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    // `stringData` is merged into `data` on write, so only `data` counts.
    vec![
        json!(obj.name()),
        json!(str_at(&v, &["type"])),
        json!(obj_at(&v, &["data"]).len()),
        age(obj, now),
    ]
}

const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Secrets", "string", docs::SERVICE_ACCOUNT_SECRETS),
    AGE,
];

fn service_account_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    vec![
        json!(obj.name()),
        json!(arr_at(&v, &["secrets"]).len()),
        age(obj, now),
    ]
}

const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    Column::new(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
    AGE,
];

fn resource_quota_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let hard = obj_at(&v, &["status", "hard"]);
    let used = obj_at(&v, &["status", "used"]);
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for name in names {
        let used_q = used
            .get(name.as_str())
            .and_then(Value::as_str)
            .map(quantity)
            .unwrap_or_else(|| "0".into());
        let hard_q = hard
            .get(name.as_str())
            .and_then(Value::as_str)
            .map(quantity)
            .unwrap_or_else(|| "0".into());
        let entry = format!("{name}: {used_q}/{hard_q}");
        // `limits.cpu`, `limits.memory`, ... go to LIMIT; everything else to REQUEST.
        let mut pieces = name.split('.');
        if pieces.next() == Some("limits") && pieces.next().is_some() {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    vec![
        json!(obj.name()),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
        age(obj, now),
    ]
}

/// A `resource.Quantity` as upstream prints it (see [`super::quantity`]).
fn quantity(s: &str) -> String {
    super::quantity::canonical(s)
}

const PV_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Capacity", "string", docs::PV_CAPACITY),
    Column::new("Access Modes", "string", docs::PV_ACCESS_MODES),
    Column::new("Reclaim Policy", "string", docs::PV_RECLAIM_POLICY),
    Column::new("Status", "string", docs::PV_PHASE),
    Column::new("Claim", "string", docs::PV_CLAIM_REF),
    Column::new("StorageClass", "string", "StorageClass of the pv"),
    Column::new(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
    ),
    Column::new("Reason", "string", docs::PV_REASON),
    AGE,
    Column::new("VolumeMode", "string", docs::PV_VOLUME_MODE).wide(),
];

const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

fn pv_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let claim = match v.pointer("/spec/claimRef").filter(|c| c.is_object()) {
        Some(c) => format!("{}/{}", str_at(c, &["namespace"]), str_at(c, &["name"])),
        None => String::new(),
    };
    let capacity = quantity_or_zero(&v, &["spec", "capacity", "storage"]);
    let phase = if obj.deletion_timestamp().is_some() {
        "Terminating"
    } else {
        str_at(&v, &["status", "phase"])
    };
    let class = match obj.annotations().get(BETA_STORAGE_CLASS_ANNOTATION) {
        Some(c) => c.clone(),
        None => str_at(&v, &["spec", "storageClassName"]).to_string(),
    };
    vec![
        json!(obj.name()),
        json!(capacity),
        json!(access_modes(arr_at(&v, &["spec", "accessModes"]))),
        json!(str_at(&v, &["spec", "persistentVolumeReclaimPolicy"])),
        json!(phase),
        json!(claim),
        json!(class),
        json!(str_opt_or(
            &v,
            &["spec", "volumeAttributesClassName"],
            "<unset>"
        )),
        json!(str_at(&v, &["status", "reason"])),
        age(obj, now),
        json!(str_opt_or(&v, &["spec", "volumeMode"], "<unset>")),
    ]
}

fn quantity_or_zero(v: &Value, path: &[&str]) -> String {
    match super::json::at(v, path).and_then(Value::as_str) {
        Some(q) => quantity(q),
        None => "0".into(),
    }
}

/// A `*string` field: its value when set (even empty), `default` when absent.
fn str_opt_or<'a>(v: &'a Value, path: &[&str], default: &'a str) -> &'a str {
    super::json::at(v, path)
        .and_then(Value::as_str)
        .unwrap_or(default)
}

/// `helper.GetAccessModesAsString`: fixed order, duplicates dropped.
pub(super) fn access_modes(modes: &[Value]) -> String {
    let set: BTreeSet<&str> = modes.iter().filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| set.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

const PVC_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", docs::PVC_PHASE),
    Column::new("Volume", "string", docs::PVC_VOLUME_NAME),
    Column::new("Capacity", "string", docs::PVC_CAPACITY),
    Column::new("Access Modes", "string", docs::PVC_ACCESS_MODES),
    Column::new("StorageClass", "string", "StorageClass of the pvc"),
    Column::new(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    Column::new("VolumeMode", "string", docs::PVC_VOLUME_MODE).wide(),
];

fn pvc_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let phase = if obj.deletion_timestamp().is_some() {
        "Terminating"
    } else {
        str_at(&v, &["status", "phase"])
    };
    let volume = str_at(&v, &["spec", "volumeName"]);
    // Capacity and access modes are the bound volume's, so only shown once bound.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_or_zero(&v, &["status", "capacity", "storage"]),
            access_modes(arr_at(&v, &["status", "accessModes"])),
        )
    };
    let class = match obj.annotations().get(BETA_STORAGE_CLASS_ANNOTATION) {
        Some(c) => c.clone(),
        None => str_at(&v, &["spec", "storageClassName"]).to_string(),
    };
    vec![
        json!(obj.name()),
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(str_opt_or(
            &v,
            &["spec", "volumeAttributesClassName"],
            "<unset>"
        )),
        age(obj, now),
        json!(str_opt_or(&v, &["spec", "volumeMode"], "<unset>")),
    ]
}

const NODE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the node"),
    Column::new("Roles", "string", "The roles of the node"),
    AGE,
    Column::new("Version", "string", docs::NODE_KUBELET_VERSION),
    Column::new("Internal-IP", "string", docs::NODE_ADDRESSES).wide(),
    Column::new("External-IP", "string", docs::NODE_ADDRESSES).wide(),
    Column::new("OS-Image", "string", docs::NODE_OS_IMAGE).wide(),
    Column::new("Kernel-Version", "string", docs::NODE_KERNEL_VERSION).wide(),
    Column::new(
        "Container-Runtime",
        "string",
        docs::NODE_CONTAINER_RUNTIME_VERSION,
    )
    .wide(),
];

const LABEL_NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const NODE_LABEL_ROLE: &str = "kubernetes.io/role";

fn node_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    // Only the Ready condition is summarised; the last one of that type wins, as in upstream's map.
    let ready = arr_at(&v, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| str_at(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if str_at(c, &["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if bool_at(&v, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    for (k, val) in obj.labels() {
        if let Some(role) = k.strip_prefix(LABEL_NODE_ROLE_PREFIX) {
            if !role.is_empty() {
                roles.insert(role.to_string());
            }
        } else if k == NODE_LABEL_ROLE && !val.is_empty() {
            roles.insert(val);
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |kind: &str| {
        arr_at(&v, &["status", "addresses"])
            .iter()
            .find(|a| str_at(a, &["type"]) == kind)
            .map(|a| str_at(a, &["address"]).to_string())
            .unwrap_or_else(|| "<none>".into())
    };
    let info = |field: &str| {
        let s = str_at(&v, &["status", "nodeInfo", field]);
        if s.is_empty() {
            "<unknown>".to_string()
        } else {
            s.to_string()
        }
    };
    vec![
        json!(obj.name()),
        json!(status.join(",")),
        json!(roles),
        age(obj, now),
        json!(str_at(&v, &["status", "nodeInfo", "kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
