//! Printers of the core group's plain resources (namespaces, config, storage claims, nodes);
//! services, endpoints and events live in `service.rs` and `event.rs`, pods in `pod.rs`.

use super::column::count;
use super::docs;
use super::{Column, Printer, Row, AGE, NAME};
use kapi_registry::fields::{arr_at, bool_at, obj_at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};
use std::collections::BTreeSet;

pub const NAMESPACES: Printer = Printer::new(NAMESPACE_COLUMNS);
pub const CONFIG_MAPS: Printer = Printer::new(CONFIG_MAP_COLUMNS);
pub const SECRETS: Printer = Printer::new(SECRET_COLUMNS);
pub const SERVICE_ACCOUNTS: Printer = Printer::new(SERVICE_ACCOUNT_COLUMNS);
pub const RESOURCE_QUOTAS: Printer = Printer::new(RESOURCE_QUOTA_COLUMNS);
pub const PERSISTENT_VOLUME_CLAIMS: Printer = Printer::new(PVC_COLUMNS);
pub const PERSISTENT_VOLUMES: Printer = Printer::new(PV_COLUMNS);
pub const NODES: Printer = Printer::new(NODE_COLUMNS);
pub const COMPONENT_STATUSES: Printer = Printer::new(COMPONENT_STATUS_COLUMNS);

const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the namespace")
        .string(jsonpath!(".status.phase")),
    AGE,
];

const CONFIG_MAP_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Data", "string", docs::CONFIG_MAP_DATA).computed(|r| {
        json!(obj_at(r.v, &["data"])
            .len()
            .saturating_add(obj_at(r.v, &["binaryData"]).len()))
    }),
    AGE,
];

const SECRET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Type", "string", docs::SECRET_TYPE).string(jsonpath!(".type")),
    // `stringData` is merged into `data` on write, so only `data` counts.
    Column::new("Data", "string", docs::SECRET_DATA).values(jsonpath!(".data[*]"), count),
    AGE,
];

const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Secrets", "string", docs::SERVICE_ACCOUNT_SECRETS)
        .values(jsonpath!(".secrets[*]"), count),
    AGE,
];

/// Upstream's `printComponentStatus`: the `Healthy` condition's status, message and error
/// (no AGE: the objects have no creation time).
const COMPONENT_STATUS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "Status of the component conditions").computed(|r| {
        json!(match healthy_condition(r.v) {
            Some(c) if str_at(c, &["status"]) == "True" => "Healthy",
            Some(_) => "Unhealthy",
            None => "Unknown",
        })
    }),
    Column::new("Message", "string", "Message of the component conditions")
        .computed(|r| json!(healthy_condition(r.v).map_or("", |c| str_at(c, &["message"])))),
    Column::new("Error", "string", "Error of the component conditions")
        .computed(|r| json!(healthy_condition(r.v).map_or("", |c| str_at(c, &["error"])))),
];

fn healthy_condition(v: &Value) -> Option<&Value> {
    arr_at(v, &["conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Healthy")
}

const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume.")
        .computed(|r| json!(quota_entries(r, false))),
    Column::new(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    )
    .computed(|r| json!(quota_entries(r, true))),
    AGE,
];

/// `name: used/hard` of each hard limit, sorted by name: those of `limits.*` resources
/// (`limits`) or of every other one.
fn quota_entries(r: &Row, limits: bool) -> String {
    let hard = obj_at(r.v, &["status", "hard"]);
    let used = obj_at(r.v, &["status", "used"]);
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let quantity_of = |m: &serde_json::Map<String, Value>, name: &str| {
        m.get(name)
            .and_then(Value::as_str)
            .map(quantity)
            .unwrap_or_else(|| "0".into())
    };
    names
        .into_iter()
        .filter(|name| {
            // `limits.cpu`, `limits.memory`, ... go to LIMIT; everything else to REQUEST.
            let mut pieces = name.split('.');
            (pieces.next() == Some("limits") && pieces.next().is_some()) == limits
        })
        .map(|name| {
            format!(
                "{name}: {}/{}",
                quantity_of(used, name),
                quantity_of(hard, name)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `resource.Quantity` as upstream prints it (see [`super::quantity`]).
fn quantity(s: &str) -> String {
    super::quantity::canonical(s)
}

/// A `resource.Quantity` field's cell: `0` when absent.
fn quantity_or_zero(q: &[&Value]) -> Value {
    json!(match q.first().and_then(|q| q.as_str()) {
        Some(q) => quantity(q),
        None => "0".into(),
    })
}

/// `helper.GetAccessModesAsString` of an access-mode list: fixed order, duplicates dropped.
fn access_modes(modes: &[&Value]) -> Value {
    let set: BTreeSet<&str> = modes.iter().filter_map(|m| m.as_str()).collect();
    json!([
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| set.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(","))
}

const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The STORAGECLASS of volumes and claims: the beta annotation wins over the field.
fn storage_class(r: &Row) -> Value {
    json!(
        match r.obj.annotations().get(BETA_STORAGE_CLASS_ANNOTATION) {
            Some(c) => c.clone(),
            None => str_at(r.v, &["spec", "storageClassName"]).to_string(),
        }
    )
}

/// STATUS of volumes and claims: `Terminating` while deleted, else the phase.
fn phase(r: &Row) -> Value {
    json!(if r.obj.deletion_timestamp().is_some() {
        "Terminating"
    } else {
        str_at(r.v, &["status", "phase"])
    })
}

const PV_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Capacity", "string", docs::PV_CAPACITY)
        .values(jsonpath!(".spec.capacity.storage"), quantity_or_zero),
    Column::new("Access Modes", "string", docs::PV_ACCESS_MODES)
        .values(jsonpath!(".spec.accessModes[*]"), access_modes),
    Column::new("Reclaim Policy", "string", docs::PV_RECLAIM_POLICY)
        .string(jsonpath!(".spec.persistentVolumeReclaimPolicy")),
    Column::new("Status", "string", docs::PV_PHASE).computed(phase),
    Column::new("Claim", "string", docs::PV_CLAIM_REF).values(jsonpath!(".spec.claimRef"), |c| {
        json!(match c.first().filter(|c| c.is_object()) {
            Some(c) => format!("{}/{}", str_at(c, &["namespace"]), str_at(c, &["name"])),
            None => String::new(),
        })
    }),
    Column::new("StorageClass", "string", "StorageClass of the pv").computed(storage_class),
    Column::new(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
    )
    .string_or(jsonpath!(".spec.volumeAttributesClassName"), "<unset>"),
    Column::new("Reason", "string", docs::PV_REASON).string(jsonpath!(".status.reason")),
    AGE,
    Column::new("VolumeMode", "string", docs::PV_VOLUME_MODE)
        .wide()
        .string_or(jsonpath!(".spec.volumeMode"), "<unset>"),
];

const PVC_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", docs::PVC_PHASE).computed(phase),
    Column::new("Volume", "string", docs::PVC_VOLUME_NAME).string(jsonpath!(".spec.volumeName")),
    // Capacity and access modes are the bound volume's, so only shown once bound.
    Column::new("Capacity", "string", docs::PVC_CAPACITY)
        .computed(|r| bound(r, jsonpath!(".status.capacity.storage"), quantity_or_zero)),
    Column::new("Access Modes", "string", docs::PVC_ACCESS_MODES)
        .computed(|r| bound(r, jsonpath!(".status.accessModes[*]"), access_modes)),
    Column::new("StorageClass", "string", "StorageClass of the pvc").computed(storage_class),
    Column::new(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    )
    .string_or(jsonpath!(".spec.volumeAttributesClassName"), "<unset>"),
    AGE,
    Column::new("VolumeMode", "string", docs::PVC_VOLUME_MODE)
        .wide()
        .string_or(jsonpath!(".spec.volumeMode"), "<unset>"),
];

/// A claim's cell of what `path` reaches, empty until the claim is bound to a volume.
fn bound(r: &Row, path: &kapi_registry::jsonpath::StaticPath, f: fn(&[&Value]) -> Value) -> Value {
    if str_at(r.v, &["spec", "volumeName"]).is_empty() {
        json!("")
    } else {
        f(&path.get().find(r.v))
    }
}

const NODE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Status", "string", "The status of the node").computed(node_status),
    Column::new("Roles", "string", "The roles of the node").computed(node_roles),
    AGE,
    Column::new("Version", "string", docs::NODE_KUBELET_VERSION)
        .string(jsonpath!(".status.nodeInfo.kubeletVersion")),
    Column::new("Internal-IP", "string", docs::NODE_ADDRESSES)
        .wide()
        .string_or(
            jsonpath!(".status.addresses[?(@.type==\"InternalIP\")].address"),
            "<none>",
        ),
    Column::new("External-IP", "string", docs::NODE_ADDRESSES)
        .wide()
        .string_or(
            jsonpath!(".status.addresses[?(@.type==\"ExternalIP\")].address"),
            "<none>",
        ),
    Column::new("OS-Image", "string", docs::NODE_OS_IMAGE)
        .wide()
        .nonempty_or(jsonpath!(".status.nodeInfo.osImage"), "<unknown>"),
    Column::new("Kernel-Version", "string", docs::NODE_KERNEL_VERSION)
        .wide()
        .nonempty_or(jsonpath!(".status.nodeInfo.kernelVersion"), "<unknown>"),
    Column::new(
        "Container-Runtime",
        "string",
        docs::NODE_CONTAINER_RUNTIME_VERSION,
    )
    .wide()
    .nonempty_or(
        jsonpath!(".status.nodeInfo.containerRuntimeVersion"),
        "<unknown>",
    ),
];

/// `Ready`/`NotReady`/`Unknown` from the Ready condition (the last one of that type wins, as
/// in upstream's map), then `SchedulingDisabled` when cordoned.
fn node_status(r: &Row) -> Value {
    let ready = arr_at(r.v, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| str_at(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if str_at(c, &["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if bool_at(r.v, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    json!(status.join(","))
}

const LABEL_NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const NODE_LABEL_ROLE: &str = "kubernetes.io/role";

fn node_roles(r: &Row) -> Value {
    let mut roles = BTreeSet::new();
    for (k, val) in r.obj.labels() {
        if let Some(role) = k.strip_prefix(LABEL_NODE_ROLE_PREFIX) {
            if !role.is_empty() {
                roles.insert(role.to_string());
            }
        } else if k == NODE_LABEL_ROLE && !val.is_empty() {
            roles.insert(val);
        }
    }
    json!(if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    })
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
