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
pub mod column;
pub mod controllers;
pub mod core;
mod docs;
mod duration;
pub mod event;
pub mod groups;
mod json;
pub(crate) mod labels;
pub mod networking;
pub mod pod;
pub mod quantity;
pub mod rbac;
pub mod service;
pub mod storage;

pub use duration::{
    human_duration, now, parse_time, short_human_duration, translate_timestamp_since,
};

pub use column::{Cell, Column, Row, Zero};

use crate::customresource::jsonpath::{jsonpath, StaticPath};
use crate::rest::TableConvertor;
use chrono::{DateTime, SecondsFormat, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};
use std::sync::Arc;

/// `metav1.ObjectMeta`'s documentation of `name`, the NAME column's description everywhere.
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
/// `metav1.ObjectMeta`'s documentation of `creationTimestamp` (AGE and CREATED AT).
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The NAME column every printer starts with.
pub const NAME: Column = Column::new("Name", "string", NAME_DESCRIPTION)
    .format("name")
    .string(jsonpath!(".metadata.name"));
/// The AGE column: the time since creation, as `kubectl get` prints it.
pub const AGE: Column = Column::new("Age", "string", CREATION_TIMESTAMP_DESCRIPTION)
    .computed(|r| json!(translate_timestamp_since(r.obj.creation_timestamp(), r.now)));

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

/// A printer: one table of columns, each with its cell.
#[derive(Clone, Copy)]
pub struct Printer {
    pub columns: &'static [Column],
}

impl Printer {
    /// The printer of `columns` (NAME first, in column order).
    pub const fn new(columns: &'static [Column]) -> Self {
        Printer { columns }
    }

    /// This printer as a kind's [`crate::Strategy::table_convertor`].
    pub fn table_convertor(self) -> Option<Arc<dyn TableConvertor>> {
        Some(Arc::new(self))
    }

    /// The cells of `obj` as they read at `now`.
    pub fn cells_at(&self, obj: &Object, now: DateTime<Utc>) -> Vec<Value> {
        let v = Value::Object(obj.as_map().clone());
        let row = Row { obj, v: &v, now };
        self.columns.iter().map(|c| c.cell(&row)).collect()
    }
}

impl TableConvertor for Printer {
    fn columns(&self) -> Vec<Value> {
        self.columns.iter().map(Column::to_json).collect()
    }
    fn cells(&self, obj: &Object) -> Vec<Value> {
        self.cells_at(obj, now())
    }
}

/// The table of every resource without a printer of its own (upstream's
/// `rest.NewDefaultTableConvertor`): NAME and CREATED AT.
pub const DEFAULT: Printer = Printer::new(&[
    NAME,
    Column::new("Created At", "date", CREATION_TIMESTAMP_DESCRIPTION)
        .computed(|r| json!(format_rfc3339(r.obj.creation_timestamp()))),
]);

/// A `metav1.Time` as Go's `time.RFC3339` prints it in UTC; the zero time when unset.
pub fn format_rfc3339(ts: &str) -> String {
    match parse_time(ts) {
        Some(t) => t.to_rfc3339_opts(SecondsFormat::Secs, true),
        None => "0001-01-01T00:00:00Z".into(),
    }
}

/// The default convertor (NAME, CREATED AT), for custom resources without
/// `additionalPrinterColumns` and built-ins without a printer.
pub fn default_convertor() -> Arc<dyn TableConvertor> {
    Arc::new(DEFAULT)
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
