//! The per-field patch metadata of built-in types and the schema walk that finds, for a field
//! of an object, the metadata and the type of its value. The markers come from `meta.json`
//! (generated from upstream's Go doc comments as kept by the k8s-pb crate); which type a
//! field holds comes from the kind's schemars schema (the same one the OpenAPI documents use).

use kapi_registry::rest::Storage;
use schemars::generate::SchemaSettings;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Upstream's markers on one field.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FieldMeta {
    /// `merge`, `replace`, `retainKeys` or `merge,retainKeys`.
    #[serde(default)]
    pub patch_strategy: Option<String>,
    #[serde(default)]
    pub patch_merge_key: Option<String>,
    /// `atomic`, `set` or `map`.
    #[serde(default)]
    pub list_type: Option<String>,
    #[serde(default)]
    pub list_map_keys: Vec<String>,
    /// `atomic` or `granular`.
    #[serde(default)]
    pub map_type: Option<String>,
    /// What the field holds in a zero value of upstream's Go type, where Go's encoding writes
    /// it at all: a struct held by value (`{}`) or a field without `omitempty` (null).
    /// Upstream's field manager compares typed objects, so such a field is never added or
    /// removed while the struct around it is there.
    #[serde(default)]
    pub zero: Option<Zero>,
}

/// A field's value in a zero-valued struct of upstream's Go type (see [`FieldMeta::zero`]).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Zero {
    /// A struct held by value: `{}`.
    Object,
    /// A pointer, slice, map or scalar without `omitempty`: written as null (a scalar's own
    /// zero compares the same way: as a change when the other side has a value).
    Null,
}

impl FieldMeta {
    /// The strategy without `retainKeys` (which only affects how the patch was computed).
    pub fn strategy(&self) -> Option<&str> {
        self.patch_strategy
            .as_deref()
            .and_then(|s| s.split(',').find(|p| *p != "retainKeys"))
    }
}

type Table = HashMap<String, HashMap<String, FieldMeta>>;

/// A kind's root definition name → the definitions its schema needs.
type DefsCache = HashMap<String, Arc<Map<String, Value>>>;

/// Definition name → JSON field name → markers.
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(include_str!("meta.json")).unwrap_or_default())
}

/// The markers of `field` of definition `definition`, if upstream has any.
pub fn field_meta(definition: &str, field: &str) -> Option<&'static FieldMeta> {
    table().get(definition)?.get(field)
}

/// A position in a kind's schema: the definition whose fields are being merged, if known.
#[derive(Clone, Debug)]
pub struct PatchSchema {
    defs: Arc<Map<String, Value>>,
    name: Option<String>,
}

/// What a field of the current type holds.
pub struct Lookup {
    /// The schema of the field's value (for a list: of its items).
    pub schema: PatchSchema,
    pub meta: FieldMeta,
}

impl PatchSchema {
    /// A schema that knows nothing: every list is replaced, every map merged (merge patch
    /// semantics), which is what upstream does for fields it has no metadata for.
    pub fn empty() -> Self {
        Self {
            defs: Arc::default(),
            name: None,
        }
    }

    /// The schema of a storage's kind, when it is a built-in (upstream) type; `None` for
    /// kinds without a schema or with one of their own (custom resources), which upstream
    /// does not strategically merge.
    pub fn for_storage(storage: &dyn Storage) -> Option<Self> {
        static CACHE: OnceLock<Mutex<DefsCache>> = OnceLock::new();
        let mut generator = SchemaSettings::draft07()
            .with(|s| {
                s.meta_schema = None;
                s.definitions_path = "/definitions".into();
            })
            .into_generator();
        let root = storage.openapi_schema(&mut generator)?;
        let name = ref_name(root.as_value())?;
        if !name.starts_with("io.k8s.") {
            return None;
        }
        let cache = CACHE.get_or_init(Mutex::default);
        let defs = match cache.lock() {
            Ok(mut c) => c
                .entry(name.clone())
                .or_insert_with(|| Arc::new(generator.take_definitions(true)))
                .clone(),
            Err(_) => Arc::new(generator.take_definitions(true)),
        };
        Some(Self {
            defs,
            name: Some(name),
        })
    }

    /// A schema rooted at the named definition, over the given definitions (for tests and
    /// for callers that built the definitions themselves).
    pub fn with_definitions(defs: Map<String, Value>, name: &str) -> Self {
        Self {
            defs: Arc::new(defs),
            name: Some(name.to_string()),
        }
    }

    /// Every definition the kind's schema refers to, by name.
    pub fn definitions(&self) -> &Arc<Map<String, Value>> {
        &self.defs
    }

    /// The definition name at this position.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    fn at(&self, name: Option<String>) -> Self {
        Self {
            defs: self.defs.clone(),
            name,
        }
    }

    /// Looks up field `field`: for a map or struct value, its type; for a list, its items'.
    pub fn lookup(&self, field: &str) -> Lookup {
        let meta = self
            .name
            .as_deref()
            .and_then(|n| field_meta(n, field))
            .cloned()
            .unwrap_or_default();
        let property = self
            .name
            .as_deref()
            .and_then(|n| self.defs.get(n))
            .and_then(|d| d.get("properties"))
            .and_then(|p| p.get(field));
        let target = property.and_then(|p| {
            ref_name(p)
                .or_else(|| p.get("items").and_then(ref_name))
                .or_else(|| p.get("additionalProperties").and_then(ref_name))
        });
        Lookup {
            schema: self.at(target),
            meta,
        }
    }
}

/// The definition a schema refers to (`$ref`, or a lone `allOf` entry).
pub fn ref_name(schema: &Value) -> Option<String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().map(str::to_string);
    }
    match schema.get("allOf").and_then(Value::as_array) {
        Some(all) => match all.as_slice() {
            [only] => ref_name(only),
            _ => None,
        },
        _ => None,
    }
}

/// Adds upstream's merge and list markers to definition `name` as kube-apiserver publishes
/// them: `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`,
/// `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and `x-kubernetes-map-type` on each
/// property, and the type's own `x-kubernetes-map-type` (upstream's `+structType`).
pub fn annotate_definition(name: &str, schema: &mut Value) {
    let Some(fields) = table().get(name) else {
        return;
    };
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(map_type) = fields.get(".").and_then(|m| m.map_type.as_ref()) {
        obj.insert(
            "x-kubernetes-map-type".into(),
            Value::String(map_type.clone()),
        );
    }
    let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, meta) in fields {
        let Some(prop) = props.get_mut(field).and_then(Value::as_object_mut) else {
            continue;
        };
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                prop.insert(key.into(), v);
            }
        };
        put(
            "x-kubernetes-list-map-keys",
            (!meta.list_map_keys.is_empty()).then(|| {
                Value::Array(
                    meta.list_map_keys
                        .iter()
                        .cloned()
                        .map(Value::String)
                        .collect(),
                )
            }),
        );
        for (name, value) in [
            ("x-kubernetes-list-type", &meta.list_type),
            ("x-kubernetes-map-type", &meta.map_type),
            ("x-kubernetes-patch-merge-key", &meta.patch_merge_key),
            ("x-kubernetes-patch-strategy", &meta.patch_strategy),
        ] {
            put(name, value.clone().map(Value::String));
        }
    }
}
