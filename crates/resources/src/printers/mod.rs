//! Server-side printing: the `meta.k8s.io/v1` Table columns and cells of every built-in
//! resource, matching kube-apiserver's `pkg/printers/internalversion` (what `kubectl get`
//! shows). A printer is one table of column specs ([`column`]): a column reads a field with a
//! JSONPath, the engine of CRDs' `additionalPrinterColumns`, or computes its cell where
//! upstream's printer does. Objects are read as stored JSON; a field that is absent reads as
//! its zero value, as it would after upstream decoded the object into its Go type.

pub mod admissionregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod controllers;
pub mod core;
mod docs;
pub mod event;
pub mod flowcontrol;
pub mod groups;
pub mod networking;
pub mod pod;
pub mod quantity;
pub mod rbac;
pub mod service;
pub mod storage;

// The column engine and the shared columns come from the generic registry; the printers below
// are written against them under the names they always had.
pub use kapi_registry::labels;
pub use kapi_registry::table::{
    column, default_convertor, format_rfc3339, human_duration, now, parse_time,
    short_human_duration, translate_timestamp_since, Cell, Column, Printer, Row, Zero, AGE,
    CREATION_TIMESTAMP_DESCRIPTION, DEFAULT, NAME, NAME_DESCRIPTION,
};

use kapi_registry::jsonpath::StaticPath;
use serde_json::json;

/// The CONTAINERS column of a pod template's owner, whose pod spec is at `pod_spec`.
pub const fn containers(pod_spec: &'static StaticPath) -> Column {
    Column::new(
        "Containers",
        "string",
        "Names of each container in the template.",
    )
    .values(pod_spec, |spec| {
        json!(labels::layout_containers(spec.first().copied()).0)
    })
}
/// The IMAGES column of a pod template's owner, whose pod spec is at `pod_spec`.
pub const fn images(pod_spec: &'static StaticPath) -> Column {
    Column::new(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    )
    .values(pod_spec, |spec| {
        json!(labels::layout_containers(spec.first().copied()).1)
    })
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the printers' tests: a fixed clock and JSON objects.
    use super::{parse_time, Printer};
    use chrono::{DateTime, Utc};
    use kapi_machinery::Object;
    use serde_json::Value;

    /// The `now` every printer test reads ages against.
    pub fn fixed_now() -> DateTime<Utc> {
        parse_time("2024-05-01T12:00:00Z").expect("valid timestamp")
    }

    pub fn obj(v: Value) -> Object {
        Object::from_value(v).expect("a JSON object")
    }

    pub fn cells_of(p: &Printer, v: Value) -> Vec<Value> {
        p.cells_at(&obj(v), fixed_now())
    }
}

#[cfg(test)]
mod tests {
    use super::testing::cells_of;
    use super::*;
    use kapi_registry::rest::TableConvertor;

    /// Every printer a built-in kind names, with its name for messages.
    const ALL: &[(&str, Printer)] = &[
        ("pods", pod::PODS),
        ("namespaces", core::NAMESPACES),
        ("configmaps", core::CONFIG_MAPS),
        ("secrets", core::SECRETS),
        ("serviceaccounts", core::SERVICE_ACCOUNTS),
        ("services", service::SERVICES),
        ("endpoints", service::ENDPOINTS),
        ("events", event::EVENTS),
        ("resourcequotas", core::RESOURCE_QUOTAS),
        ("persistentvolumeclaims", core::PERSISTENT_VOLUME_CLAIMS),
        ("persistentvolumes", core::PERSISTENT_VOLUMES),
        ("nodes", core::NODES),
        ("componentstatuses", core::COMPONENT_STATUSES),
        (
            "replicationcontrollers",
            controllers::REPLICATION_CONTROLLERS,
        ),
        ("podtemplates", controllers::POD_TEMPLATES),
        ("deployments", apps::DEPLOYMENTS),
        ("replicasets", apps::REPLICA_SETS),
        ("statefulsets", apps::STATEFUL_SETS),
        ("daemonsets", apps::DAEMON_SETS),
        ("controllerrevisions", apps::CONTROLLER_REVISIONS),
        ("jobs", batch::JOBS),
        ("cronjobs", batch::CRON_JOBS),
        (
            "horizontalpodautoscalers",
            autoscaling::HORIZONTAL_POD_AUTOSCALERS,
        ),
        ("ingresses", networking::INGRESSES),
        ("ingressclasses", networking::INGRESS_CLASSES),
        ("networkpolicies", networking::NETWORK_POLICIES),
        ("rolebindings", rbac::ROLE_BINDINGS),
        ("clusterrolebindings", rbac::CLUSTER_ROLE_BINDINGS),
        ("csidrivers", storage::CSI_DRIVERS),
        ("csinodes", storage::CSI_NODES),
        ("volumeattachments", storage::VOLUME_ATTACHMENTS),
        ("runtimeclasses", storage::RUNTIME_CLASSES),
        (
            "webhookconfigurations",
            admissionregistration::WEBHOOK_CONFIGURATIONS,
        ),
        (
            "validatingadmissionpolicies",
            admissionregistration::VALIDATING_ADMISSION_POLICIES,
        ),
        (
            "mutatingadmissionpolicies",
            admissionregistration::MUTATING_ADMISSION_POLICIES,
        ),
        ("policybindings", admissionregistration::POLICY_BINDINGS),
        ("leases", groups::LEASES),
        ("endpointslices", groups::ENDPOINT_SLICES),
        ("priorityclasses", groups::PRIORITY_CLASSES),
        ("poddisruptionbudgets", groups::POD_DISRUPTION_BUDGETS),
        ("storageclasses", groups::STORAGE_CLASSES),
        (
            "certificatesigningrequests",
            groups::CERTIFICATE_SIGNING_REQUESTS,
        ),
        ("apiservices", groups::APISERVICES),
        ("default", DEFAULT),
    ];

    #[test]
    fn every_printer_gives_rows_that_fit_its_columns() {
        for (name, p) in ALL {
            // An empty object must still give one cell per column.
            let cells = cells_of(p, serde_json::json!({"metadata": {"name": "x"}}));
            assert_eq!(cells.len(), p.columns.len(), "{name}");
            let first = if *name == "events" {
                "Last Seen"
            } else {
                "Name"
            };
            assert_eq!(p.columns[0].name, first, "{name}");
        }
    }

    #[test]
    fn every_column_says_where_its_cell_comes_from() {
        for (name, p) in ALL {
            for c in p.columns {
                assert!(!matches!(c.cell, Cell::Unset), "{name} {}", c.name);
            }
        }
    }

    #[test]
    fn column_json_has_every_field() {
        let cols = default_convertor().columns();
        assert_eq!(
            cols[0],
            serde_json::json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0})
        );
        assert_eq!(
            cols[1],
            serde_json::json!({"name": "Created At", "type": "date", "format": "", "description": CREATION_TIMESTAMP_DESCRIPTION, "priority": 0})
        );
        let pods = pod::PODS.columns();
        assert_eq!(pods[5]["priority"], 1);
    }

    #[test]
    fn default_table_cells() {
        let cells = cells_of(
            &DEFAULT,
            serde_json::json!({"metadata": {"name": "w", "creationTimestamp": "2024-05-01T10:00:00+02:00"}}),
        );
        assert_eq!(
            cells,
            vec![
                serde_json::json!("w"),
                serde_json::json!("2024-05-01T08:00:00Z")
            ]
        );
        let unset = cells_of(&DEFAULT, serde_json::json!({"metadata": {"name": "w"}}));
        assert_eq!(unset[1], serde_json::json!("0001-01-01T00:00:00Z"));
    }
}
