//! The structural type of each position of an object, as server-side apply needs it: whether
//! a value is a struct (named fields), a map (granular or atomic), a list (atomic, set, or
//! map keyed by some fields) or a scalar. Built-in kinds take it from their schemars schema
//! plus upstream's markers (`meta.json`); kinds without one are "deduced" from the value, as
//! upstream does for schemaless data: maps are granular, lists atomic.

use crate::patch::meta::{field_meta, ref_name, table, FieldMeta, PatchSchema, Zero};
use serde_json::{Map, Value};
use std::sync::{Arc, LazyLock};

/// How a list's items are told apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced as a whole and owned as one field.
    Atomic,
    /// Scalars, each item its own field (`v:<value>`).
    Set,
    /// Maps identified by the values of these fields (`k:{...}`).
    Map(Vec<String>),
}

/// What a position holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Named fields (a definition with `properties`).
    Struct {
        atomic: bool,
    },
    /// Arbitrary keys (`additionalProperties`).
    Map {
        atomic: bool,
    },
    List(ListKind),
    Scalar,
    /// No schema: decided by the value.
    Deduced,
}

/// A position in a kind's type.
#[derive(Clone)]
pub struct Ty {
    defs: Arc<Map<String, Value>>,
    /// The schema node (possibly a `$ref`); `None` when unknown.
    node: Option<Value>,
    /// The markers of the field holding this value.
    meta: FieldMeta,
}

impl Ty {
    /// The type of a storage's objects: its schema when it is a built-in kind, else deduced.
    pub fn root(schema: Option<&PatchSchema>) -> Self {
        match schema {
            Some(s) if !s.name().is_empty() => Self {
                defs: s.definitions().clone(),
                node: Some(serde_json::json!({ "$ref": format!("#/definitions/{}", s.name()) })),
                meta: FieldMeta::default(),
            },
            _ => Self::deduced(),
        }
    }

    /// A type that knows nothing.
    pub fn deduced() -> Self {
        Self {
            defs: Arc::default(),
            node: None,
            meta: FieldMeta::default(),
        }
    }

    fn at(&self, node: Option<Value>, meta: FieldMeta) -> Self {
        Self {
            defs: self.defs.clone(),
            node,
            meta,
        }
    }

    /// The definition this position refers to, and its schema.
    fn resolved(&self) -> (Option<String>, Option<&Value>) {
        let Some(node) = &self.node else {
            return (None, None);
        };
        match ref_name(node) {
            Some(name) => {
                let def = self.defs.get(&name);
                (Some(name), def)
            }
            None => (None, Some(node)),
        }
    }

    pub fn shape(&self) -> Shape {
        let (name, schema) = self.resolved();
        let Some(schema) = schema else {
            return Shape::Deduced;
        };
        let type_atomic = name
            .as_deref()
            .and_then(|n| field_meta(n, "."))
            .and_then(|m| m.map_type.as_deref())
            == Some("atomic");
        let field_atomic = self.meta.map_type.as_deref() == Some("atomic")
            || schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        let atomic = type_atomic || field_atomic;
        if schema.get("properties").is_some() {
            return Shape::Struct { atomic };
        }
        if schema
            .get("additionalProperties")
            .is_some_and(Value::is_object)
        {
            return Shape::Map { atomic };
        }
        if schema.get("items").is_some() {
            return Shape::List(self.list_kind(schema));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("object") | None => Shape::Deduced,
            Some(_) => Shape::Scalar,
        }
    }

    /// Upstream's list semantics: `listType` when given; else a `merge` patch strategy makes
    /// a map list keyed by the merge key (or a set without one); else atomic.
    fn list_kind(&self, schema: &Value) -> ListKind {
        let list_type = self
            .meta
            .list_type
            .clone()
            .or_else(|| str_of(schema, "x-kubernetes-list-type"));
        let keys = if self.meta.list_map_keys.is_empty() {
            schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        } else {
            self.meta.list_map_keys.clone()
        };
        match list_type.as_deref() {
            Some("set") => return ListKind::Set,
            Some("map") if !keys.is_empty() => return ListKind::Map(keys),
            Some(_) => return ListKind::Atomic,
            None => {}
        }
        let merge = self
            .meta
            .patch_strategy
            .as_deref()
            .or_else(|| {
                schema
                    .get("x-kubernetes-patch-strategy")
                    .and_then(Value::as_str)
            })
            .is_some_and(|s| s.split(',').any(|p| p == "merge"));
        if !merge {
            return ListKind::Atomic;
        }
        match self
            .meta
            .patch_merge_key
            .clone()
            .or_else(|| str_of(schema, "x-kubernetes-patch-merge-key"))
        {
            Some(k) => ListKind::Map(vec![k]),
            None => ListKind::Set,
        }
    }

    /// The type of field or key `name` of a struct or map.
    pub fn field(&self, name: &str) -> Ty {
        let (def_name, schema) = self.resolved();
        let Some(schema) = schema else {
            return Ty::deduced().with_defs(self);
        };
        if let Some(prop) = schema.get("properties").and_then(|p| p.get(name)) {
            let meta = def_name
                .as_deref()
                .and_then(|n| field_meta(n, name))
                .cloned()
                .unwrap_or_default();
            return self.at(Some(prop.clone()), meta);
        }
        match schema.get("additionalProperties") {
            Some(v @ Value::Object(_)) => self.at(Some(v.clone()), FieldMeta::default()),
            _ => Ty::deduced().with_defs(self),
        }
    }

    /// What field `name` of this struct holds in a zero value of upstream's Go type, when
    /// Go's encoding writes it there (see [`FieldMeta::zero`]).
    pub fn zero_field(&self, name: &str) -> Option<&'static Value> {
        let (def_name, _) = self.resolved();
        field_meta(&def_name?, name)?.zero.map(zero_value)
    }

    /// Every field of this struct that a zero value of upstream's Go type holds, with that
    /// value.
    pub fn zero_fields(&self) -> impl Iterator<Item = (&'static str, &'static Value)> {
        let (def_name, _) = self.resolved();
        def_name
            .and_then(|n| table().get(&n))
            .into_iter()
            .flatten()
            .filter_map(|(field, meta)| Some((field.as_str(), zero_value(meta.zero?))))
    }

    /// Whether `name` is a declared field of this struct.
    pub fn declares(&self, name: &str) -> bool {
        let (_, schema) = self.resolved();
        schema
            .and_then(|s| s.get("properties"))
            .is_some_and(|p| p.get(name).is_some())
    }

    /// The type of a list's items.
    pub fn item(&self) -> Ty {
        let (_, schema) = self.resolved();
        match schema.and_then(|s| s.get("items")) {
            Some(items) => self.at(Some(items.clone()), FieldMeta::default()),
            None => Ty::deduced().with_defs(self),
        }
    }

    fn with_defs(mut self, from: &Ty) -> Ty {
        self.defs = from.defs.clone();
        self
    }
}

fn zero_value(zero: Zero) -> &'static Value {
    static EMPTY_OBJECT: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));
    static NULL: Value = Value::Null;
    match zero {
        Zero::Object => &EMPTY_OBJECT,
        Zero::Null => &NULL,
    }
}

fn str_of(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The shape to walk a value with: the schema's when the value fits it, else deduced from the
/// value (a mismatch is left to validation).
pub fn effective(ty: &Ty, value: &Value) -> Shape {
    let shape = ty.shape();
    match (&shape, value) {
        (Shape::Struct { .. } | Shape::Map { .. }, Value::Object(_)) => shape,
        (Shape::List(_), Value::Array(_)) => shape,
        (Shape::Deduced, Value::Object(_)) => Shape::Map { atomic: false },
        (Shape::Deduced, Value::Array(_)) => Shape::List(ListKind::Atomic),
        (_, Value::Object(_)) => Shape::Map { atomic: false },
        (_, Value::Array(_)) => Shape::List(ListKind::Atomic),
        _ => Shape::Scalar,
    }
}

/// A list item's path element: its key fields for a map list, its value for a set; `None`
/// when the item cannot be identified (a map-list item without any key field).
pub fn item_element(kind: &ListKind, item: &Value) -> Option<super::set::PathElement> {
    use super::set::PathElement;
    match kind {
        ListKind::Set => Some(PathElement::value(item)),
        ListKind::Map(keys) => {
            let obj = item.as_object()?;
            let mut fields = Vec::new();
            for k in keys {
                match obj.get(k) {
                    Some(v) => fields.push((k.clone(), v.clone())),
                    // Upstream fills a missing key from the field's default; the only
                    // defaulted list-map key of the built-in types is a port's protocol.
                    None if k == "protocol" => fields.push((k.clone(), Value::from("TCP"))),
                    None => {}
                }
            }
            if fields.is_empty() {
                return None;
            }
            Some(PathElement::key(fields))
        }
        ListKind::Atomic => None,
    }
}
