//! The Table of a custom resource (upstream's `pkg/registry/customresource/tableconvertor`):
//! NAME, then the version's `additionalPrinterColumns`, or AGE when it has none. Cells are
//! read by the built-in printers' column engine ([`kapi_registry::table::column`]) in its CRD mode:
//! a path that reaches nothing prints `null`.

use kapi_machinery::Object;
use kapi_registry::jsonpath::JsonPath;
use kapi_registry::rest::TableConvertor;
use kapi_registry::table::column::{definition, path_cell, Missing};
#[cfg(test)]
use kapi_registry::table::parse_time;
use kapi_registry::table::{now, CREATION_TIMESTAMP_DESCRIPTION, NAME};
use serde_json::{json, Value};

/// One `additionalPrinterColumns` entry, parsed.
#[derive(Clone, Debug)]
struct Column {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i64,
    path: JsonPath,
}

/// The columns of one served version.
#[derive(Clone, Debug)]
pub struct CustomResourceTable {
    columns: Vec<Column>,
}

impl CustomResourceTable {
    /// From the version's `additionalPrinterColumns` (JSON); upstream's default AGE column
    /// when there are none. A column whose path does not parse is an error, as upstream's.
    pub fn new(columns: Option<&Value>) -> Result<Self, String> {
        let given = columns
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let given = if given.is_empty() {
            vec![
                json!({"name": "Age", "type": "date", "description": CREATION_TIMESTAMP_DESCRIPTION, "jsonPath": ".metadata.creationTimestamp"}),
            ]
        } else {
            given
        };
        let mut out = Vec::new();
        for c in given {
            let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let path_text = text("jsonPath");
            let path = JsonPath::parse(&path_text)
                .map_err(|_| format!("unrecognized column definition {path_text:?}"))?;
            let description = match text("description") {
                d if d.is_empty() => {
                    format!("Custom resource definition column (in JSONPath format): {path_text}")
                }
                d => d,
            };
            out.push(Column {
                name: text("name"),
                kind: text("type"),
                format: text("format"),
                description,
                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                path,
            });
        }
        Ok(Self { columns: out })
    }

    /// The cells of `obj` as they read at `now`.
    pub fn cells_at(&self, obj: &Object, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
        let value = Value::Object(obj.as_map().clone());
        let mut cells = vec![json!(obj.name())];
        cells.extend(
            self.columns
                .iter()
                .map(|c| path_cell(&c.path, &c.kind, Missing::Null, &value, now)),
        );
        cells
    }
}

impl TableConvertor for CustomResourceTable {
    fn columns(&self) -> Vec<Value> {
        let mut cols = vec![NAME.to_json()];
        cols.extend(
            self.columns
                .iter()
                .map(|c| definition(&c.name, &c.kind, &c.format, &c.description, c.priority)),
        );
        cols
    }

    fn cells(&self, obj: &Object) -> Vec<Value> {
        self.cells_at(obj, now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_cells_as_upstream() {
        let t = CustomResourceTable::new(Some(&json!([
            {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Image", "type": "string", "priority": 1, "jsonPath": ".spec.image"},
            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
            {"name": "Started", "type": "date", "jsonPath": ".status.started"},
        ])))
        .unwrap();
        let cols = t.columns();
        assert_eq!(cols.len(), 6);
        assert_eq!(cols[3]["priority"], 1);
        assert_eq!(
            cols[1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.cronSpec"
        );
        let obj = Object::from_value(json!({"metadata": {"name": "a"}, "spec": {"cronSpec": "* *", "replicas": 2.0},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "started": "2024-05-01T11:00:00Z"}}))
        .unwrap();
        let now = parse_time("2024-05-01T12:00:00Z").unwrap();
        assert_eq!(
            t.cells_at(&obj, now),
            vec![
                json!("a"),
                json!("* *"),
                json!(2),
                Value::Null,
                json!("True"),
                json!("60m")
            ]
        );
        let age = CustomResourceTable::new(None).unwrap();
        assert_eq!(age.columns()[1]["name"], "Age");
        assert_eq!(age.columns()[1]["type"], "date");
    }
}
