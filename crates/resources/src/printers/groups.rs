//! Printers of the smaller groups: coordination (leases), discovery (endpoint slices),
//! scheduling (priority classes), policy (disruption budgets), storage (storage classes),
//! certificates (CSRs), apiregistration (APIServices). events.k8s.io events print with the core
//! event printer; CRDs and CSI storage capacities with the default table, as upstream.

use super::docs;
use super::{human_duration, Column, Printer, Row, AGE, NAME};
use kapi_registry::fields::{arr_at, at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

pub const LEASES: Printer = Printer::new(LEASE_COLUMNS);
pub const ENDPOINT_SLICES: Printer = Printer::new(ENDPOINT_SLICE_COLUMNS);
pub const PRIORITY_CLASSES: Printer = Printer::new(PRIORITY_CLASS_COLUMNS);
pub const POD_DISRUPTION_BUDGETS: Printer = Printer::new(PDB_COLUMNS);
pub const STORAGE_CLASSES: Printer = Printer::new(STORAGE_CLASS_COLUMNS);
pub const CERTIFICATE_SIGNING_REQUESTS: Printer = Printer::new(CSR_COLUMNS);
pub const APISERVICES: Printer = Printer::new(APISERVICE_COLUMNS);

/// kube-aggregator's `REST.ConvertToTable` of apiservices.
const APISERVICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Service",
        "string",
        "The reference to the service that hosts this API endpoint.",
    )
    .computed(
        |r| match at(r.v, &["spec", "service"]).filter(|s| !s.is_null()) {
            Some(s) => json!(format!(
                "{}/{}",
                str_at(s, &["namespace"]),
                str_at(s, &["name"])
            )),
            None => json!("Local"),
        },
    ),
    Column::new("Available", "string", "Whether this service is available.").computed(|r| {
        let available = arr_at(r.v, &["status", "conditions"])
            .iter()
            .find(|c| str_at(c, &["type"]) == "Available");
        json!(match available {
            None => "Unknown".to_string(),
            Some(c) => match (str_at(c, &["status"]), str_at(c, &["reason"])) {
                ("True", _) => "True".to_string(),
                (status, "") => status.to_string(),
                (status, reason) => format!("{status} ({reason})"),
            },
        })
    }),
    AGE,
];

const LEASE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Holder", "string", docs::LEASE_HOLDER_IDENTITY)
        .string(jsonpath!(".spec.holderIdentity")),
    AGE,
];

const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("AddressType", "string", docs::ENDPOINT_SLICE_ADDRESS_TYPE)
        .string(jsonpath!(".addressType")),
    Column::new("Ports", "string", docs::ENDPOINT_SLICE_PORTS)
        .values(jsonpath!(".ports[*]"), endpoint_slice_ports),
    Column::new("Endpoints", "string", docs::ENDPOINT_SLICE_ENDPOINTS).values(
        jsonpath!(".endpoints[*].addresses[*]"),
        |addresses| {
            let addresses: Vec<&str> = addresses.iter().filter_map(|a| a.as_str()).collect();
            json!(list_with_more(&addresses))
        },
    ),
    AGE,
];

/// Each port's number, else its name, else `*`.
fn endpoint_slice_ports(ports: &[&Value]) -> Value {
    let ports: Vec<String> = ports
        .iter()
        .map(|p| {
            match (
                at(p, &["port"]).and_then(Value::as_i64),
                at(p, &["name"]).and_then(Value::as_str),
            ) {
                (Some(n), _) => n.to_string(),
                (None, Some(name)) => name.to_string(),
                (None, None) => "*".into(),
            }
        })
        .collect();
    json!(list_with_more(&ports))
}

/// `listWithMoreString`: up to three items, `+ N more...`, `<unset>` when empty.
fn list_with_more<S: AsRef<str>>(items: &[S]) -> String {
    const MAX: usize = 3;
    let shown = items
        .iter()
        .take(MAX)
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(",");
    if items.len() > MAX {
        format!("{shown} + {} more...", items.len().saturating_sub(MAX))
    } else if shown.is_empty() {
        "<unset>".into()
    } else {
        shown
    }
}

const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Value", "integer", docs::PRIORITY_CLASS_VALUE).integer(jsonpath!(".value")),
    Column::new(
        "Global-Default",
        "boolean",
        docs::PRIORITY_CLASS_GLOBAL_DEFAULT,
    )
    .boolean(jsonpath!(".globalDefault")),
    AGE,
    Column::new(
        "PreemptionPolicy",
        "string",
        docs::PRIORITY_CLASS_PREEMPTION_POLICY,
    )
    .wide()
    .string(jsonpath!(".preemptionPolicy")),
];

// `IntOrString.String()`: the number or the text; `N/A` when unset.
const PDB_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    )
    .string_or(jsonpath!(".spec.minAvailable"), "N/A"),
    Column::new(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    )
    .string_or(jsonpath!(".spec.maxUnavailable"), "N/A"),
    Column::new(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    )
    .integer(jsonpath!(".status.disruptionsAllowed")),
    AGE,
];

const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME.computed(storage_class_name),
    Column::new("Provisioner", "string", docs::STORAGE_CLASS_PROVISIONER)
        .string(jsonpath!(".provisioner")),
    Column::new(
        "ReclaimPolicy",
        "string",
        docs::STORAGE_CLASS_RECLAIM_POLICY,
    )
    .string_or(jsonpath!(".reclaimPolicy"), "Delete"),
    Column::new(
        "VolumeBindingMode",
        "string",
        docs::STORAGE_CLASS_VOLUME_BINDING_MODE,
    )
    .string_or(jsonpath!(".volumeBindingMode"), "Immediate"),
    Column::new(
        "AllowVolumeExpansion",
        "string",
        docs::STORAGE_CLASS_ALLOW_VOLUME_EXPANSION,
    )
    .boolean(jsonpath!(".allowVolumeExpansion")),
    AGE,
];

/// The name, with ` (default)` for the default class.
fn storage_class_name(r: &Row) -> Value {
    let annotations = r.obj.annotations();
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|k| annotations.get(*k).map(String::as_str) == Some("true"));
    if is_default {
        json!(format!("{} (default)", r.obj.name()))
    } else {
        json!(r.obj.name())
    }
}

const CSR_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    Column::new("SignerName", "string", docs::CSR_SIGNER_NAME)
        .nonempty_or(jsonpath!(".spec.signerName"), "<none>"),
    Column::new("Requestor", "string", docs::CSR_REQUEST).string(jsonpath!(".spec.username")),
    Column::new("RequestedDuration", "string", docs::CSR_EXPIRATION_SECONDS).values(
        jsonpath!(".spec.expirationSeconds"),
        |seconds| match seconds.first().and_then(|s| s.as_i64()) {
            Some(s) => json!(human_duration(chrono::Duration::seconds(s))),
            None => json!("<none>"),
        },
    ),
    Column::new("Condition", "string", docs::CSR_CONDITIONS).computed(|r| json!(csr_status(r.v))),
];

/// `extractCSRStatus`: Denied over Approved over Pending, then `,Failed` and `,Issued`.
fn csr_status(v: &Value) -> String {
    let conditions = arr_at(v, &["status", "conditions"]);
    let has = |t: &str| conditions.iter().any(|c| str_at(c, &["type"]) == t);
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(v, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

#[cfg(test)]
#[path = "groups_tests.rs"]
mod tests;
