//! Table columns as specs, and the one engine that evaluates them. A column is its
//! `TableColumnDefinition` (name, type, format, description, priority) and where its cell
//! comes from: a JSONPath read as a CRD's `additionalPrinterColumns` are read, or a function
//! where upstream's printer computes the cell (pod status, ages, selectors, joined lists).
//!
//! One difference is a property of the column: a CRD column prints nothing (`null`) when its
//! path reaches nothing and converts what it finds to the column's type; a built-in column
//! prints the Go zero value of the typed field upstream reads (`""`, `0`, `false`, or the
//! placeholder its printer uses) and keeps that field's type, which is not always the
//! column's (upstream's `Up-to-date` column says `string` and prints an integer).

use super::duration::{human_duration, parse_time};
use crate::jsonpath::{JsonPath, StaticPath};
use chrono::{DateTime, Utc};
use kapi_machinery::Object;
use serde_json::{json, Value};

/// One row being printed: the object, its JSON and the time ages are read against.
pub struct Row<'a> {
    pub obj: &'a Object,
    pub v: &'a Value,
    pub now: DateTime<Utc>,
}

/// What a built-in field prints when its path reaches nothing (or `null`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zero {
    /// A string (or `*string`, `IntOrString`) field: this text when absent; a value that is
    /// set prints as it is, even `""`.
    Text(&'static str),
    /// A string field whose printer shows a placeholder when it is empty (absent or `""`).
    Blank(&'static str),
    /// An integer field (its default when the field is a defaulted `*int32`).
    Int(i64),
    /// A boolean field.
    Bool(bool),
}

impl Zero {
    /// The type the field's value prints as.
    fn kind(self) -> &'static str {
        match self {
            Zero::Text(_) | Zero::Blank(_) => "string",
            Zero::Int(_) => "integer",
            Zero::Bool(_) => "boolean",
        }
    }

    /// The cell, from what the path gave once converted (`None`: nothing of that type).
    fn fill(self, found: Option<Value>) -> Value {
        match (self, found) {
            (Zero::Blank(text), Some(Value::String(s))) if s.is_empty() => json!(text),
            (_, Some(v)) => v,
            (Zero::Text(text) | Zero::Blank(text), None) => json!(text),
            (Zero::Int(n), None) => json!(n),
            (Zero::Bool(b), None) => json!(b),
        }
    }
}

/// How a path cell treats a missing value: the column's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// `null`, and the value converted to the column's type: `additionalPrinterColumns`.
    Null,
    /// The Go zero value of the field, whose type the value keeps: built-in printers.
    Zero(Zero),
}

/// The cell of a path column: the first value `path` reaches in `root`, printed as `kind`
/// (`string`, `integer`, `number`, `boolean`, `date`) says, or as `missing` says when there
/// is none. The engine of CRD and built-in columns alike.
pub fn path_cell(
    path: &JsonPath,
    kind: &str,
    missing: Missing,
    root: &Value,
    now: DateTime<Utc>,
) -> Value {
    let found = path.first(root);
    match missing {
        Missing::Null => convert(kind, found, now).unwrap_or(Value::Null),
        Missing::Zero(zero) => zero.fill(convert(zero.kind(), found, now)),
    }
}

/// A found value as a cell of type `kind` (upstream's CRD table convertor); `None` when there
/// is nothing, `null`, or a value that does not fit the type.
fn convert(kind: &str, found: Option<&Value>, now: DateTime<Utc>) -> Option<Value> {
    let v = found?;
    Some(match (kind, v) {
        (_, Value::Null) => return None,
        ("string", Value::String(s)) => json!(s),
        // jsonpath's printing of anything else
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => json!(i),
            None => json!(n.as_f64().map(|f| f as i64)),
        },
        ("number", Value::Number(n)) => json!(n.as_f64()),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => match parse_time(s) {
            Some(t) => json!(human_duration(now.signed_duration_since(t))),
            None => json!("<invalid>"),
        },
        _ => return None,
    })
}

/// Where a built-in column's cell comes from.
#[derive(Clone, Copy, Debug)]
pub enum Cell {
    /// A field read by [`path_cell`], its Go zero value when absent.
    Field(&'static StaticPath, Zero),
    /// Every value the path reaches, through what upstream computes of them (a count, a
    /// joined list, a selector, a quantity).
    Values(&'static StaticPath, fn(&[&Value]) -> Value),
    /// Computed by upstream from several fields, the metadata or the clock.
    Computed(fn(&Row) -> Value),
    /// Not given yet ([`Column::new`]): `null`. No built-in column is left so (a test checks).
    Unset,
}

impl Cell {
    fn eval(&self, kind: &str, row: &Row) -> Value {
        match self {
            Cell::Field(path, zero) => {
                path_cell(path.get(), kind, Missing::Zero(*zero), row.v, row.now)
            }
            Cell::Values(path, f) => f(&path.get().find(row.v)),
            Cell::Computed(f) => f(row),
            Cell::Unset => Value::Null,
        }
    }
}

/// One column of a built-in printer: its `TableColumnDefinition` and its cell.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub name: &'static str,
    /// OpenAPI type: `string`, `integer`, `boolean`, `date`.
    pub kind: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    /// 0: always shown; 1: only with `-o wide`.
    pub priority: i32,
    pub cell: Cell,
}

impl Column {
    pub const fn new(name: &'static str, kind: &'static str, description: &'static str) -> Self {
        Column {
            name,
            kind,
            format: "",
            description,
            priority: 0,
            cell: Cell::Unset,
        }
    }
    /// The same column, shown only with `-o wide`.
    pub const fn wide(self) -> Self {
        Column {
            priority: 1,
            ..self
        }
    }
    pub const fn format(self, format: &'static str) -> Self {
        Column { format, ..self }
    }

    /// A field read with `path`, printed as `zero` when absent.
    pub const fn field(self, path: &'static StaticPath, zero: Zero) -> Self {
        Column {
            cell: Cell::Field(path, zero),
            ..self
        }
    }
    /// A `string` field (`""` when absent).
    pub const fn string(self, path: &'static StaticPath) -> Self {
        self.field(path, Zero::Text(""))
    }
    /// A `*string` field: `absent` when unset (nil), its value otherwise.
    pub const fn string_or(self, path: &'static StaticPath, absent: &'static str) -> Self {
        self.field(path, Zero::Text(absent))
    }
    /// A `string` field printed as `placeholder` when empty.
    pub const fn nonempty_or(self, path: &'static StaticPath, placeholder: &'static str) -> Self {
        self.field(path, Zero::Blank(placeholder))
    }
    /// An integer field (0 when absent).
    pub const fn integer(self, path: &'static StaticPath) -> Self {
        self.field(path, Zero::Int(0))
    }
    /// A defaulted `*int32` field: `default` when absent.
    pub const fn integer_or(self, path: &'static StaticPath, default: i64) -> Self {
        self.field(path, Zero::Int(default))
    }
    /// A boolean field (false when absent).
    pub const fn boolean(self, path: &'static StaticPath) -> Self {
        self.field(path, Zero::Bool(false))
    }
    /// What `f` computes of every value `path` reaches.
    pub const fn values(self, path: &'static StaticPath, f: fn(&[&Value]) -> Value) -> Self {
        Column {
            cell: Cell::Values(path, f),
            ..self
        }
    }
    /// A cell upstream computes from the whole row.
    pub const fn computed(self, f: fn(&Row) -> Value) -> Self {
        Column {
            cell: Cell::Computed(f),
            ..self
        }
    }

    /// The column as `TableColumnDefinition` JSON (every field is always present).
    pub fn to_json(&self) -> Value {
        definition(
            self.name,
            self.kind,
            self.format,
            self.description,
            self.priority.into(),
        )
    }

    /// This column's cell of `row`.
    pub fn cell(&self, row: &Row) -> Value {
        self.cell.eval(self.kind, row)
    }
}

/// A `TableColumnDefinition` as JSON, for built-in and CRD columns alike.
pub fn definition(name: &str, kind: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({
        "name": name,
        "type": kind,
        "format": format,
        "description": description,
        "priority": priority,
    })
}

/// How many values the path reaches (`len(...)` of a list or map): `.secrets[*]`.
pub fn count(values: &[&Value]) -> Value {
    json!(values.len())
}

/// The strings the path reaches, joined by `,` (`strings.Join(list, ",")`).
pub fn joined(values: &[&Value]) -> String {
    values
        .iter()
        .filter_map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// A reference as `Kind/name` (`roleRef`, `scaleTargetRef`).
pub fn kind_slash_name(reference: &[&Value]) -> Value {
    let r = reference.first().copied().unwrap_or(&Value::Null);
    let text = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or("");
    json!(format!("{}/{}", text("kind"), text("name")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonpath::jsonpath;

    fn now() -> DateTime<Utc> {
        parse_time("2024-05-01T12:00:00Z").expect("valid timestamp")
    }

    /// The same path read in both modes: equal where the field is set with its own type; a
    /// missing field is `null` for a CRD and the zero value for a built-in, and a built-in
    /// cell keeps the field's type where a CRD cell takes the column's.
    #[test]
    fn zero_mode_and_crd_mode_differ_only_where_intended() {
        let obj = json!({"spec": {"replicas": 3, "name": "a", "empty": "", "on": true,
            "minAvailable": "50%", "maxUnavailable": 1, "nothing": null}});
        let both = |path: &str, kind: &str, zero: Zero| {
            let p = JsonPath::parse(path).expect("path");
            (
                path_cell(&p, kind, Missing::Null, &obj, now()),
                path_cell(&p, kind, Missing::Zero(zero), &obj, now()),
            )
        };
        // Set, and of the column's type: the same cell.
        for (path, kind, zero) in [
            (".spec.replicas", "integer", Zero::Int(0)),
            (".spec.name", "string", Zero::Text("")),
            (".spec.empty", "string", Zero::Text("<unset>")),
            (".spec.on", "boolean", Zero::Bool(false)),
            (".spec.minAvailable", "string", Zero::Text("N/A")),
            // IntOrString: both print an integer as text in a string column.
            (".spec.maxUnavailable", "string", Zero::Text("N/A")),
        ] {
            let (crd, built_in) = both(path, kind, zero);
            assert_eq!(crd, built_in, "{path}");
            assert!(!crd.is_null(), "{path}");
        }
        // Missing or null: nothing for a CRD, the zero value for a built-in.
        for (path, kind, zero, expected) in [
            (".spec.missing", "integer", Zero::Int(0), json!(0)),
            (".spec.nothing", "integer", Zero::Int(1), json!(1)),
            (".spec.missing", "string", Zero::Text(""), json!("")),
            (
                ".spec.missing",
                "string",
                Zero::Text("<none>"),
                json!("<none>"),
            ),
            (".spec.missing", "boolean", Zero::Bool(false), json!(false)),
            (
                ".spec.missing",
                "string",
                Zero::Blank("<none>"),
                json!("<none>"),
            ),
        ] {
            assert_eq!(both(path, kind, zero), (Value::Null, expected), "{path}");
        }
        // An empty string is a value for both, except where the printer shows a placeholder.
        assert_eq!(
            both(".spec.empty", "string", Zero::Blank("<none>")),
            (json!(""), json!("<none>"))
        );
        // A string column over an integer field: the CRD converts, the built-in keeps the
        // field's type (upstream's `Up-to-date` column of deployments).
        assert_eq!(
            both(".spec.replicas", "string", Zero::Int(0)),
            (json!("3"), json!(3))
        );
        // A value of another type than the field's: the built-in reads its zero value.
        assert_eq!(
            both(".spec.name", "integer", Zero::Int(0)),
            (Value::Null, json!(0))
        );
    }

    #[test]
    fn columns_evaluate_their_cells() {
        let obj = Object::from_value(
            json!({"metadata": {"name": "x"}, "spec": {"list": [{"n": "a"}, {"n": "b"}]}}),
        )
        .expect("object");
        let v = Value::Object(obj.as_map().clone());
        let row = Row {
            obj: &obj,
            v: &v,
            now: now(),
        };
        let c = Column::new("N", "string", "")
            .values(jsonpath!(".spec.list[*].n"), |v| json!(joined(v)));
        assert_eq!(c.cell(&row), json!("a,b"));
        let c = Column::new("Count", "integer", "").values(jsonpath!(".spec.list[*]"), count);
        assert_eq!(c.cell(&row), json!(2));
        let c = Column::new("Name", "string", "").computed(|r| json!(r.obj.name()));
        assert_eq!(c.cell(&row), json!("x"));
        let c = Column::new("R", "integer", "").integer_or(jsonpath!(".spec.replicas"), 1);
        assert_eq!(c.cell(&row), json!(1));
        assert_eq!(
            c.to_json(),
            json!({"name": "R", "type": "integer", "format": "", "description": "", "priority": 0})
        );
    }
}
