//! Tables (`meta.k8s.io/v1` Table): the column engine every printer is written in ([`column`]),
//! a [`Printer`] (one table of columns) as a kind's `TableConvertor`, and the default table of
//! kinds without a printer of their own (upstream's `rest.NewDefaultTableConvertor`). The
//! built-in kinds' printers and the custom resources' `additionalPrinterColumns` are both
//! written in it.

pub mod column;
mod duration;

pub use column::{Cell, Column, Row, Zero};
pub use duration::{
    human_duration, now, parse_time, short_human_duration, translate_timestamp_since,
};

use crate::jsonpath::jsonpath;
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

/// A printer: one table of columns, each with its cell.
#[derive(Clone, Copy)]
pub struct Printer {
    pub columns: &'static [Column],
    /// How upstream's list printer orders the rows, when it does.
    pub order: Option<fn(&Object, &Object) -> std::cmp::Ordering>,
}

impl Printer {
    /// The printer of `columns` (NAME first, in column order).
    pub const fn new(columns: &'static [Column]) -> Self {
        Printer {
            columns,
            order: None,
        }
    }

    /// The same printer, its list rows ordered by `order`.
    pub const fn ordered(self, order: fn(&Object, &Object) -> std::cmp::Ordering) -> Self {
        Printer {
            order: Some(order),
            ..self
        }
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
    fn sort_rows(&self, objects: &mut [&Object]) {
        if let Some(order) = self.order {
            // stable, as Go's sort.Sort is not: equal keys cannot happen (names differ)
            objects.sort_by(|a, b| order(a, b));
        }
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
