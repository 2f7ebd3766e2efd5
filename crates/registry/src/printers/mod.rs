//! Server-side printing: the `meta.k8s.io/v1` Table columns and cells of every built-in
//! resource, matching kube-apiserver's `pkg/printers/internalversion` (what `kubectl get`
//! shows). A printer is one table of column specs ([`column`]): a column reads a field with a
//! JSONPath, the engine of CRDs' `additionalPrinterColumns`, or computes its cell where
//! upstream's printer does. Objects are read as stored JSON; a field that is absent reads as
//! its zero value, as it would after upstream decoded the object into its Go type.

mod admissionregistration;
mod apps;
mod autoscaling;
mod batch;
pub mod column;
mod controllers;
mod core;
mod docs;
mod duration;
mod event;
mod groups;
mod json;
pub(crate) mod labels;
mod networking;
mod pod;
pub mod quantity;
mod rbac;
mod service;
mod storage;

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

/// The printer kube-apiserver uses for `group`/`resource` (plural; group `""` is core).
/// Resources upstream prints with the default table (roles, clusterroles, limitranges,
/// customresourcedefinitions, ...) get the default convertor; unknown resources get `None`.
pub fn for_resource(group: &str, resource: &str) -> Option<Arc<dyn TableConvertor>> {
    printer_for(group, resource).map(|p| Arc::new(p) as Arc<dyn TableConvertor>)
}

/// [`for_resource`] as the concrete [`Printer`] (for callers that pass their own `now`).
pub fn printer_for(group: &str, resource: &str) -> Option<Printer> {
    let p = match (group, resource) {
        ("", "pods") => pod::PODS,
        ("", "replicationcontrollers" | "podtemplates") => controllers::printer(resource)?,
        ("", _) => core::printer(resource)?,
        ("autoscaling", _) => autoscaling::printer(resource)?,
        ("storage.k8s.io", "csidrivers" | "csinodes" | "volumeattachments")
        | ("node.k8s.io", _) => storage::printer(group, resource)?,
        ("apps", _) => apps::printer(resource)?,
        ("batch", _) => batch::printer(resource)?,
        ("networking.k8s.io", _) => networking::printer(resource)?,
        ("rbac.authorization.k8s.io", _) => rbac::printer(resource)?,
        ("admissionregistration.k8s.io", _) => admissionregistration::printer(resource)?,
        _ => groups::printer(group, resource)?,
    };
    Some(p)
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

    const BUILT_INS: &[(&str, &str)] = &[
        ("", "namespaces"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "serviceaccounts"),
        ("", "services"),
        ("", "endpoints"),
        ("", "pods"),
        ("", "events"),
        ("", "limitranges"),
        ("", "resourcequotas"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("", "nodes"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("apps", "controllerrevisions"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("coordination.k8s.io", "leases"),
        ("events.k8s.io", "events"),
        ("discovery.k8s.io", "endpointslices"),
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ingressclasses"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("node.k8s.io", "runtimeclasses"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("", "replicationcontrollers"),
        ("", "podtemplates"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("certificates.k8s.io", "certificatesigningrequests"),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
        ),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        (
            "admissionregistration.k8s.io",
            "mutatingadmissionpolicybindings",
        ),
    ];

    #[test]
    fn every_built_in_has_a_printer_whose_rows_fit_its_columns() {
        for (group, resource) in BUILT_INS {
            let p = printer_for(group, resource)
                .unwrap_or_else(|| panic!("no printer for {group}/{resource}"));
            // An empty object must still give one cell per column.
            let cells = cells_of(&p, serde_json::json!({"metadata": {"name": "x"}}));
            assert_eq!(cells.len(), p.columns.len(), "{group}/{resource}");
            assert_eq!(
                p.columns[0].name,
                if *resource == "events" {
                    "Last Seen"
                } else {
                    "Name"
                }
            );
            assert!(for_resource(group, resource).is_some());
        }
        assert!(for_resource("", "widgets").is_none());
        assert!(for_resource("example.com", "widgets").is_none());
    }

    #[test]
    fn every_built_in_column_says_where_its_cell_comes_from() {
        for (group, resource) in BUILT_INS {
            let p = printer_for(group, resource).expect("printer");
            for c in p.columns {
                assert!(
                    !matches!(c.cell, Cell::Unset),
                    "{group}/{resource} {}",
                    c.name
                );
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
        let pods = for_resource("", "pods").expect("pods").columns();
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
