//! Printers of `apps/v1`: deployments (READY `2/3`), replica sets, stateful sets, daemon
//! sets and controller revisions.

use super::docs;
use super::json::{at, i64_at, opt_i64_at, str_at};
use super::labels::{format_label_selector, layout_containers, selector_string};
use super::service::format_labels;
use super::{age, value, Column, Printer, AGE, CONTAINERS, IMAGES, NAME};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

pub(super) fn printer(resource: &str) -> Option<Printer> {
    Some(match resource {
        "deployments" => Printer::new(DEPLOYMENT_COLUMNS, deployment_cells),
        "replicasets" => Printer::new(REPLICA_SET_COLUMNS, replica_set_cells),
        "statefulsets" => Printer::new(STATEFUL_SET_COLUMNS, stateful_set_cells),
        "daemonsets" => Printer::new(DAEMON_SET_COLUMNS, daemon_set_cells),
        "controllerrevisions" => {
            Printer::new(CONTROLLER_REVISION_COLUMNS, controller_revision_cells)
        }
        _ => return None,
    })
}

/// `spec.replicas`, which defaulting sets to 1 when omitted.
fn desired_replicas(v: &Value) -> i64 {
    opt_i64_at(v, &["spec", "replicas"]).unwrap_or(1)
}

fn template_spec(v: &Value) -> &Value {
    at(v, &["spec", "template", "spec"]).unwrap_or(&Value::Null)
}

const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", "Number of the pod with ready state"),
    Column::new("Up-to-date", "string", docs::DEPLOYMENT_UPDATED),
    Column::new("Available", "string", docs::DEPLOYMENT_AVAILABLE),
    AGE,
    CONTAINERS.wide(),
    IMAGES.wide(),
    Column::new("Selector", "string", docs::DEPLOYMENT_SELECTOR).wide(),
];

fn deployment_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let (names, images) = layout_containers(template_spec(&v));
    vec![
        json!(obj.name()),
        json!(format!(
            "{}/{}",
            i64_at(&v, &["status", "readyReplicas"]),
            desired_replicas(&v)
        )),
        json!(i64_at(&v, &["status", "updatedReplicas"])),
        json!(i64_at(&v, &["status", "availableReplicas"])),
        age(obj, now),
        json!(names),
        json!(images),
        // Deployments print the bare selector string, without `<none>`.
        json!(selector_string(at(&v, &["spec", "selector"]))),
    ]
}

const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", docs::REPLICA_SET_SPEC_REPLICAS),
    Column::new("Current", "integer", docs::REPLICA_SET_STATUS_REPLICAS),
    Column::new("Ready", "integer", docs::REPLICA_SET_READY_REPLICAS),
    AGE,
    CONTAINERS.wide(),
    IMAGES.wide(),
    Column::new("Selector", "string", docs::REPLICA_SET_SELECTOR).wide(),
];

fn replica_set_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let (names, images) = layout_containers(template_spec(&v));
    vec![
        json!(obj.name()),
        json!(desired_replicas(&v)),
        json!(i64_at(&v, &["status", "replicas"])),
        json!(i64_at(&v, &["status", "readyReplicas"])),
        age(obj, now),
        json!(names),
        json!(images),
        json!(format_label_selector(at(&v, &["spec", "selector"]))),
    ]
}

const STATEFUL_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS.wide(),
    IMAGES.wide(),
];

fn stateful_set_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let (names, images) = layout_containers(template_spec(&v));
    vec![
        json!(obj.name()),
        json!(format!(
            "{}/{}",
            i64_at(&v, &["status", "readyReplicas"]),
            desired_replicas(&v)
        )),
        age(obj, now),
        json!(names),
        json!(images),
    ]
}

const DAEMON_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", docs::DAEMON_SET_DESIRED),
    Column::new("Current", "integer", docs::DAEMON_SET_CURRENT),
    Column::new("Ready", "integer", docs::DAEMON_SET_READY),
    Column::new("Up-to-date", "integer", docs::DAEMON_SET_UPDATED),
    Column::new("Available", "integer", docs::DAEMON_SET_AVAILABLE),
    Column::new("Node Selector", "string", docs::POD_NODE_SELECTOR),
    AGE,
    CONTAINERS.wide(),
    IMAGES.wide(),
    Column::new("Selector", "string", docs::DAEMON_SET_SELECTOR).wide(),
];

fn daemon_set_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let (names, images) = layout_containers(template_spec(&v));
    vec![
        json!(obj.name()),
        json!(i64_at(&v, &["status", "desiredNumberScheduled"])),
        json!(i64_at(&v, &["status", "currentNumberScheduled"])),
        json!(i64_at(&v, &["status", "numberReady"])),
        json!(i64_at(&v, &["status", "updatedNumberScheduled"])),
        json!(i64_at(&v, &["status", "numberAvailable"])),
        json!(format_labels(
            &v,
            &["spec", "template", "spec", "nodeSelector"]
        )),
        age(obj, now),
        json!(names),
        json!(images),
        json!(format_label_selector(at(&v, &["spec", "selector"]))),
    ]
}

const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Controller", "string", "Controller of the object"),
    Column::new("Revision", "string", docs::CONTROLLER_REVISION_REVISION),
    AGE,
];

fn controller_revision_cells(obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
    let v = value(obj);
    let owners = super::json::arr_at(&v, &["metadata", "ownerReferences"]);
    let controller = owners
        .iter()
        .find(|o| at(o, &["controller"]).and_then(Value::as_bool) == Some(true));
    let controller_name = match controller {
        Some(c) => controller_name(
            str_at(c, &["apiVersion"]),
            str_at(c, &["kind"]),
            str_at(c, &["name"]),
        ),
        None => "<none>".into(),
    };
    vec![
        json!(obj.name()),
        json!(controller_name),
        json!(i64_at(&v, &["revision"])),
        age(obj, now),
    ]
}

/// `formatResourceName(gvk.GroupKind(), name, true)`: `kind.group/name` in lower case.
fn controller_name(api_version: &str, kind: &str, name: &str) -> String {
    let group = match api_version.split_once('/') {
        Some((g, _)) => g,
        None => "",
    };
    if kind.is_empty() && group.is_empty() {
        return name.to_string();
    }
    let group_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    format!("{}/{name}", group_kind.to_lowercase())
}

#[cfg(test)]
#[path = "apps_tests.rs"]
mod tests;
