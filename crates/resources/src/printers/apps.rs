//! Printers of `apps/v1`: deployments (READY `2/3`), replica sets, stateful sets, daemon
//! sets and controller revisions.

use super::docs;
use super::labels::{bare_selector, label_selector, labels};
use super::{containers, images, Column, Printer, Row, AGE, NAME};
use kapi_registry::fields::{i64_at, opt_i64_at, str_at};
use kapi_registry::jsonpath::jsonpath;
use serde_json::{json, Value};

pub const DEPLOYMENTS: Printer = Printer::new(DEPLOYMENT_COLUMNS);
pub const REPLICA_SETS: Printer = Printer::new(REPLICA_SET_COLUMNS);
pub const STATEFUL_SETS: Printer = Printer::new(STATEFUL_SET_COLUMNS);
pub const DAEMON_SETS: Printer = Printer::new(DAEMON_SET_COLUMNS);
pub const CONTROLLER_REVISIONS: Printer = Printer::new(CONTROLLER_REVISION_COLUMNS);

/// READY of deployments and stateful sets: `ready/desired`, where `spec.replicas` defaults
/// to 1 when omitted.
fn ready_of_desired(r: &Row) -> Value {
    json!(format!(
        "{}/{}",
        i64_at(r.v, &["status", "readyReplicas"]),
        opt_i64_at(r.v, &["spec", "replicas"]).unwrap_or(1)
    ))
}

const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", "Number of the pod with ready state").computed(ready_of_desired),
    Column::new("Up-to-date", "string", docs::DEPLOYMENT_UPDATED)
        .integer(jsonpath!(".status.updatedReplicas")),
    Column::new("Available", "string", docs::DEPLOYMENT_AVAILABLE)
        .integer(jsonpath!(".status.availableReplicas")),
    AGE,
    containers(jsonpath!(".spec.template.spec")).wide(),
    images(jsonpath!(".spec.template.spec")).wide(),
    // Deployments print the bare selector string, without `<none>`.
    Column::new("Selector", "string", docs::DEPLOYMENT_SELECTOR)
        .wide()
        .values(jsonpath!(".spec.selector"), bare_selector),
];

const REPLICA_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", docs::REPLICA_SET_SPEC_REPLICAS)
        .integer_or(jsonpath!(".spec.replicas"), 1),
    Column::new("Current", "integer", docs::REPLICA_SET_STATUS_REPLICAS)
        .integer(jsonpath!(".status.replicas")),
    Column::new("Ready", "integer", docs::REPLICA_SET_READY_REPLICAS)
        .integer(jsonpath!(".status.readyReplicas")),
    AGE,
    containers(jsonpath!(".spec.template.spec")).wide(),
    images(jsonpath!(".spec.template.spec")).wide(),
    Column::new("Selector", "string", docs::REPLICA_SET_SELECTOR)
        .wide()
        .values(jsonpath!(".spec.selector"), label_selector),
];

const STATEFUL_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Ready", "string", "Number of the pod with ready state").computed(ready_of_desired),
    AGE,
    containers(jsonpath!(".spec.template.spec")).wide(),
    images(jsonpath!(".spec.template.spec")).wide(),
];

const DAEMON_SET_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Desired", "integer", docs::DAEMON_SET_DESIRED)
        .integer(jsonpath!(".status.desiredNumberScheduled")),
    Column::new("Current", "integer", docs::DAEMON_SET_CURRENT)
        .integer(jsonpath!(".status.currentNumberScheduled")),
    Column::new("Ready", "integer", docs::DAEMON_SET_READY)
        .integer(jsonpath!(".status.numberReady")),
    Column::new("Up-to-date", "integer", docs::DAEMON_SET_UPDATED)
        .integer(jsonpath!(".status.updatedNumberScheduled")),
    Column::new("Available", "integer", docs::DAEMON_SET_AVAILABLE)
        .integer(jsonpath!(".status.numberAvailable")),
    Column::new("Node Selector", "string", docs::POD_NODE_SELECTOR)
        .values(jsonpath!(".spec.template.spec.nodeSelector"), labels),
    AGE,
    containers(jsonpath!(".spec.template.spec")).wide(),
    images(jsonpath!(".spec.template.spec")).wide(),
    Column::new("Selector", "string", docs::DAEMON_SET_SELECTOR)
        .wide()
        .values(jsonpath!(".spec.selector"), label_selector),
];

const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    Column::new("Controller", "string", "Controller of the object").values(
        jsonpath!(".metadata.ownerReferences[?(@.controller==true)]"),
        |owners| {
            json!(match owners.first() {
                Some(c) => controller_name(
                    str_at(c, &["apiVersion"]),
                    str_at(c, &["kind"]),
                    str_at(c, &["name"]),
                ),
                None => "<none>".into(),
            })
        },
    ),
    Column::new("Revision", "string", docs::CONTROLLER_REVISION_REVISION)
        .integer(jsonpath!(".revision")),
    AGE,
];

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
