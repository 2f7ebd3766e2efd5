//! The parsed form of a `JSONSchemaProps` (upstream's `Structural` plus its value validations):
//! one tree that pruning, defaulting, value validation and CEL rules all walk, so a schema is
//! read once per CRD version rather than once per request.

use regex::Regex;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `additionalProperties`: a boolean or a schema (upstream's `StructOrBool`).
#[derive(Debug, Clone)]
pub enum Additional {
    Bool(bool),
    Schema(Box<Node>),
}

/// One schema node. Absent keywords are `None` / empty; nothing here panics on odd input:
/// a keyword of the wrong JSON type reads as absent (upstream would have refused the CRD).
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub type_: String,
    pub format: String,
    pub title: String,
    pub description: String,
    pub nullable: bool,
    pub default: Option<Value>,
    pub properties: BTreeMap<String, Node>,
    pub additional_properties: Option<Additional>,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enum_: Option<Vec<Value>>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub unique_items: bool,
    /// The pattern as written and, when it compiles, the regex.
    pub pattern: Option<(String, Option<Regex>)>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    /// `x-kubernetes-preserve-unknown-fields` as written (`Some(false)` is refused by CRD
    /// validation but still parses).
    pub preserve_unknown_fields: Option<bool>,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
    /// `x-kubernetes-validations` entries as written.
    pub validations: Vec<Value>,
}

/// Deepest nesting read; deeper subtrees are treated as absent so that hostile schemas cannot
/// exhaust the stack (upstream bounds request bodies, which bounds schemas too).
pub const MAX_DEPTH: usize = 256;

impl Node {
    /// Parses a `JSONSchemaProps` JSON object.
    pub fn parse(v: &Value) -> Node {
        Self::parse_depth(v, 0)
    }

    fn parse_depth(v: &Value, depth: usize) -> Node {
        let Some(m) = v.as_object() else {
            return Node::default();
        };
        if depth > MAX_DEPTH {
            return Node::default();
        }
        let sub = |key: &str| -> Option<Box<Node>> {
            m.get(key)
                .filter(|v| v.is_object())
                .map(|v| Box::new(Self::parse_depth(v, depth.saturating_add(1))))
        };
        let list = |key: &str| -> Vec<Node> {
            m.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|v| Self::parse_depth(v, depth.saturating_add(1)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let properties = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.clone(), Self::parse_depth(v, depth.saturating_add(1))))
                    .collect()
            })
            .unwrap_or_default();
        let additional_properties = match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(Additional::Bool(*b)),
            Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(Self::parse_depth(
                v,
                depth.saturating_add(1),
            )))),
            _ => None,
        };
        // `items` may also be an array of schemas in JSON Schema; CRDs refuse that, the
        // first one stands in so the tree stays usable.
        let items = match m.get("items") {
            Some(v @ Value::Object(_)) => {
                Some(Box::new(Self::parse_depth(v, depth.saturating_add(1))))
            }
            Some(Value::Array(a)) => a
                .first()
                .map(|v| Box::new(Self::parse_depth(v, depth.saturating_add(1)))),
            _ => None,
        };
        let pattern = str_of(m, "pattern").map(|p| {
            let re = Regex::new(&p).ok();
            (p, re)
        });
        Node {
            type_: str_of(m, "type").unwrap_or_default(),
            format: str_of(m, "format").unwrap_or_default(),
            title: str_of(m, "title").unwrap_or_default(),
            description: str_of(m, "description").unwrap_or_default(),
            nullable: bool_of(m, "nullable"),
            default: m.get("default").cloned(),
            properties,
            additional_properties,
            items,
            required: strings_of(m, "required"),
            enum_: m.get("enum").and_then(Value::as_array).cloned(),
            maximum: m.get("maximum").and_then(Value::as_f64),
            exclusive_maximum: bool_of(m, "exclusiveMaximum"),
            minimum: m.get("minimum").and_then(Value::as_f64),
            exclusive_minimum: bool_of(m, "exclusiveMinimum"),
            multiple_of: m.get("multipleOf").and_then(Value::as_f64),
            max_length: int_of(m, "maxLength"),
            min_length: int_of(m, "minLength"),
            max_items: int_of(m, "maxItems"),
            min_items: int_of(m, "minItems"),
            max_properties: int_of(m, "maxProperties"),
            min_properties: int_of(m, "minProperties"),
            unique_items: bool_of(m, "uniqueItems"),
            pattern,
            all_of: list("allOf"),
            any_of: list("anyOf"),
            one_of: list("oneOf"),
            not: sub("not"),
            preserve_unknown_fields: m
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool),
            embedded_resource: bool_of(m, "x-kubernetes-embedded-resource"),
            int_or_string: bool_of(m, "x-kubernetes-int-or-string"),
            list_type: str_of(m, "x-kubernetes-list-type"),
            list_map_keys: strings_of(m, "x-kubernetes-list-map-keys"),
            map_type: str_of(m, "x-kubernetes-map-type"),
            validations: m
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub fn preserves_unknown(&self) -> bool {
        self.preserve_unknown_fields == Some(true)
    }

    /// The schema of a key that is not a declared property, if any
    /// (`additionalProperties` as a schema; `true` means an empty schema).
    pub fn additional_schema(&self) -> Option<&Node> {
        match &self.additional_properties {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The schema of one key of an object value: its property, else `additionalProperties`.
    pub fn child(&self, key: &str) -> Option<&Node> {
        self.properties
            .get(key)
            .or_else(|| self.additional_schema())
    }
}

fn str_of(m: &Map<String, Value>, key: &str) -> Option<String> {
    m.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A list of strings; empty when absent (non-strings are skipped).
fn strings_of(m: &Map<String, Value>, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn bool_of(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn int_of(m: &Map<String, Value>, key: &str) -> Option<i64> {
    let v = m.get(key)?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}
