//! Printers of the smaller groups: coordination (leases), discovery (endpoint slices),
//! scheduling (priority classes), policy (disruption budgets), storage (storage classes),
//! certificates (CSRs), events.k8s.io (the core event printer) and apiextensions (CRDs use
//! the default table upstream).

use super::docs;
use super::json::{arr_at, at, bool_at, i64_at, opt_bool_at, str_at};
use super::{age, event, human_duration, value, Column, Printer, AGE, DEFAULT, NAME};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

pub(super) fn printer(group: &str, resource: &str) -> Option<Printer> {
    Some(match (group, resource) {
        ("coordination.k8s.io", "leases") => Printer::new(LEASE_COLUMNS, lease_cells),
        ("events.k8s.io", "events") => event::EVENTS,
        ("discovery.k8s.io", "endpointslices") => {
            Printer::new(ENDPOINT_SLICE_COLUMNS, endpoint_slice_cells)
        }
        ("scheduling.k8s.io", "priorityclasses") => {
            Printer::new(PRIORITY_CLASS_COLUMNS, priority_class_cells)
        }
        ("policy", "poddisruptionbudgets") => Printer::new(PDB_COLUMNS, pdb_cells),
        ("storage.k8s.io", "storageclasses") => {
            Printer::new(STORAGE_CLASS_COLUMNS, storage_class_cells)
        }
        ("certificates.k8s.io", "certificatesigningrequests") => {
            Printer::new(CSR_COLUMNS, csr_cells)
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => DEFAULT,
        _ => return None,
    })
}

const LEASE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Holder", "string", docs::LEASE_HOLDER_IDENTITY),
    AGE,
];

fn lease_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    vec![
        json!(obj.name()),
        json!(str_at(&v, &["spec", "holderIdentity"])),
        age(obj, now),
    ]
}

const ENDPOINT_SLICE_COLUMNS: &[Column] = &[
    NAME,
    Column::new("AddressType", "string", docs::ENDPOINT_SLICE_ADDRESS_TYPE),
    Column::new("Ports", "string", docs::ENDPOINT_SLICE_PORTS),
    Column::new("Endpoints", "string", docs::ENDPOINT_SLICE_ENDPOINTS),
    AGE,
];

fn endpoint_slice_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    const MAX: usize = 3;
    let v = value(obj);
    let ports: Vec<String> = arr_at(&v, &["ports"])
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
    let addresses: Vec<String> = arr_at(&v, &["endpoints"])
        .iter()
        .flat_map(|e| {
            arr_at(e, &["addresses"])
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
        })
        .collect();
    vec![
        json!(obj.name()),
        json!(str_at(&v, &["addressType"])),
        json!(list_with_more(&ports, MAX)),
        json!(list_with_more(&addresses, MAX)),
        age(obj, now),
    ]
}

/// `listWithMoreString`: up to `max` items, `+ N more...`, `<unset>` when empty.
fn list_with_more(items: &[String], max: usize) -> String {
    let shown = items.get(..max).unwrap_or(items).join(",");
    if items.len() > max {
        format!("{shown} + {} more...", items.len().saturating_sub(max))
    } else if shown.is_empty() {
        "<unset>".into()
    } else {
        shown
    }
}

const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Value", "integer", docs::PRIORITY_CLASS_VALUE),
    Column::new(
        "Global-Default",
        "boolean",
        docs::PRIORITY_CLASS_GLOBAL_DEFAULT,
    ),
    AGE,
    Column::new(
        "PreemptionPolicy",
        "string",
        docs::PRIORITY_CLASS_PREEMPTION_POLICY,
    )
    .wide(),
];

fn priority_class_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    vec![
        json!(obj.name()),
        json!(i64_at(&v, &["value"])),
        json!(bool_at(&v, &["globalDefault"])),
        age(obj, now),
        json!(str_at(&v, &["preemptionPolicy"])),
    ]
}

const PDB_COLUMNS: &[Column] = &[
    NAME,
    Column::new(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    Column::new(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    Column::new(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

/// An `IntOrString` as its `String()` prints it; `N/A` when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

fn pdb_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    vec![
        json!(obj.name()),
        json!(int_or_string(at(&v, &["spec", "minAvailable"]))),
        json!(int_or_string(at(&v, &["spec", "maxUnavailable"]))),
        json!(i64_at(&v, &["status", "disruptionsAllowed"])),
        age(obj, now),
    ]
}

const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Provisioner", "string", docs::STORAGE_CLASS_PROVISIONER),
    Column::new(
        "ReclaimPolicy",
        "string",
        docs::STORAGE_CLASS_RECLAIM_POLICY,
    ),
    Column::new(
        "VolumeBindingMode",
        "string",
        docs::STORAGE_CLASS_VOLUME_BINDING_MODE,
    ),
    Column::new(
        "AllowVolumeExpansion",
        "string",
        docs::STORAGE_CLASS_ALLOW_VOLUME_EXPANSION,
    ),
    AGE,
];

fn storage_class_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let annotations = obj.annotations();
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|k| annotations.get(*k).map(String::as_str) == Some("true"));
    let name = if is_default {
        format!("{} (default)", obj.name())
    } else {
        obj.name().to_string()
    };
    let reclaim = at(&v, &["reclaimPolicy"])
        .and_then(Value::as_str)
        .unwrap_or("Delete");
    let binding = at(&v, &["volumeBindingMode"])
        .and_then(Value::as_str)
        .unwrap_or("Immediate");
    vec![
        json!(name),
        json!(str_at(&v, &["provisioner"])),
        json!(reclaim),
        json!(binding),
        json!(opt_bool_at(&v, &["allowVolumeExpansion"]).unwrap_or(false)),
        age(obj, now),
    ]
}

const CSR_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    Column::new("SignerName", "string", docs::CSR_SIGNER_NAME),
    Column::new("Requestor", "string", docs::CSR_REQUEST),
    Column::new("RequestedDuration", "string", docs::CSR_EXPIRATION_SECONDS),
    Column::new("Condition", "string", docs::CSR_CONDITIONS),
];

fn csr_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let signer = match str_at(&v, &["spec", "signerName"]) {
        "" => "<none>",
        s => s,
    };
    let requested = match at(&v, &["spec", "expirationSeconds"]).and_then(Value::as_i64) {
        Some(s) => human_duration(chrono::Duration::seconds(s)),
        None => "<none>".into(),
    };
    vec![
        json!(obj.name()),
        age(obj, now),
        json!(signer),
        json!(str_at(&v, &["spec", "username"])),
        json!(requested),
        json!(csr_status(&v)),
    ]
}

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
