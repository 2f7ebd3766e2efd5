//! Schema definitions from the storages' schemars schemas (k8s-openapi's `JsonSchema` impls
//! name each schema by its upstream definition name, e.g. `io.k8s.api.core.v1.ConfigMap`, and
//! refer to others with `$ref` into the generator's definitions). Refs are rewritten to the
//! document's own location (`#/components/schemas/<name>` or `#/definitions/<name>`), and each
//! top-level kind gets its `x-kubernetes-group-version-kind`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use kapi_registry::rest::{ResourceInfo, Storage};
use schemars::{generate::SchemaSettings, JsonSchema, SchemaGenerator};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Where a document keeps its schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefStyle {
    /// OpenAPI 3: `#/components/schemas/<name>`; a `$ref` with siblings becomes `allOf`.
    V3,
    /// Swagger 2: `#/definitions/<name>`; siblings stay next to `$ref`, as upstream writes them.
    V2,
}

impl RefStyle {
    pub fn prefix(self) -> &'static str {
        match self {
            RefStyle::V3 => "#/components/schemas/",
            RefStyle::V2 => "#/definitions/",
        }
    }

    /// A reference to definition `name`.
    pub fn reference(self, name: &str) -> Value {
        json!({ "$ref": format!("{}{}", self.prefix(), name) })
    }
}

/// Collects the definitions one document needs.
pub struct Definitions {
    generator: SchemaGenerator,
    /// Extra definitions made here (list kinds, kinds given inline by a storage).
    extra: BTreeMap<String, Value>,
    /// `x-kubernetes-group-version-kind` entries by definition name.
    gvks: BTreeMap<String, Vec<Value>>,
    /// Kinds take their `/openapi/v2` schemas (`Storage::openapi_v2_schema`).
    v2: bool,
}

impl Default for Definitions {
    fn default() -> Self {
        Self::new()
    }
}

impl Definitions {
    pub fn new() -> Self {
        // No transforms and no meta-schema: the k8s-openapi schemas are already OpenAPI schemas.
        let generator = SchemaSettings::draft07()
            .with(|s| {
                s.meta_schema = None;
                s.definitions_path = "/definitions".into();
            })
            .into_generator();
        Self {
            generator,
            extra: BTreeMap::new(),
            gvks: BTreeMap::new(),
            v2: false,
        }
    }

    /// Definitions for the Swagger 2.0 document.
    pub fn v2() -> Self {
        Self {
            v2: true,
            ..Self::new()
        }
    }

    /// Registers `T` and returns its definition name.
    pub fn add<T: JsonSchema>(&mut self) -> String {
        let schema = self.generator.subschema_for::<T>();
        ref_name(schema.as_value()).unwrap_or_else(|| T::schema_name().into_owned())
    }

    /// Registers a storage's kind (from `Storage::openapi_schema`) with its GVK; returns the
    /// definition name, `None` when the storage has no schema.
    pub fn add_kind(&mut self, storage: &dyn Storage, gvk: (&str, &str, &str)) -> Option<String> {
        let schema = if self.v2 {
            storage.openapi_v2_schema(&mut self.generator)?
        } else {
            storage.openapi_schema(&mut self.generator)?
        };
        let name = match ref_name(schema.as_value()) {
            Some(name) => name,
            None => {
                // Given inline: keep it under the name upstream would give it.
                let name = inline_name(storage.info(), gvk.2);
                self.extra
                    .entry(name.clone())
                    .or_insert_with(|| schema.to_value());
                name
            }
        };
        self.add_gvk(&name, gvk);
        Some(name)
    }

    /// Adds a `x-kubernetes-group-version-kind` entry to definition `name`.
    pub fn add_gvk(&mut self, name: &str, (group, version, kind): (&str, &str, &str)) {
        let entry = json!({ "group": group, "kind": kind, "version": version });
        let list = self.gvks.entry(name.to_string()).or_default();
        if !list.contains(&entry) {
            list.push(entry);
        }
    }

    /// Makes the list kind of `kind_name` (`<Kind>List`: apiVersion, items, kind, metadata) and
    /// returns its name. Lists are generic, so they are derived from the kind's definition.
    pub fn add_list(
        &mut self,
        kind_name: &str,
        kind: &str,
        list_kind: &str,
        gvk: (&str, &str),
    ) -> String {
        let list_meta = self.add::<meta::ListMeta>();
        let name = match kind_name.rsplit_once('.') {
            Some((prefix, _)) => format!("{prefix}.{list_kind}"),
            None => list_kind.to_string(),
        };
        if !self.extra.contains_key(&name) && !self.generator.definitions().contains_key(&name) {
            let kind_props = self
                .lookup(kind_name)
                .and_then(|s| s.get("properties").cloned())
                .unwrap_or(Value::Null);
            // A kind published without properties (a custom kind's bare v2 object) still
            // has TypeMeta's fields in its list, as upstream's list schema adds them.
            let type_field = |field: &str| {
                kind_props.get(field).cloned().unwrap_or_else(
                    || json!({ "description": type_meta_doc(field), "type": "string" }),
                )
            };
            let schema = json!({
                "description": format!("{list_kind} is a list of {kind} objects."),
                "properties": {
                    "apiVersion": type_field("apiVersion"),
                    "items": {
                        "description": format!("items is the list of {kind} objects."),
                        "items": { "$ref": format!("#/definitions/{kind_name}") },
                        "type": "array",
                    },
                    "kind": type_field("kind"),
                    "metadata": {
                        "$ref": format!("#/definitions/{list_meta}"),
                        "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                    },
                },
                "required": ["items"],
                "type": "object",
            });
            self.extra.insert(name.clone(), schema);
        }
        self.add_gvk(&name, (gvk.0, gvk.1, list_kind));
        name
    }

    fn lookup(&self, name: &str) -> Option<&Value> {
        self.generator
            .definitions()
            .get(name)
            .or_else(|| self.extra.get(name))
    }

    /// Every definition, sorted by name, with refs rewritten for `style` and GVKs attached.
    pub fn finish(mut self, style: RefStyle) -> BTreeMap<String, Value> {
        let mut out: BTreeMap<String, Value> =
            self.generator.take_definitions(false).into_iter().collect();
        // Only k8s-openapi's definitions: a custom kind's (in `extra`) is the CRD's own schema.
        for (name, schema) in out.iter_mut() {
            upstream_required(name, schema);
        }
        out.extend(std::mem::take(&mut self.extra));
        for (name, schema) in out.iter_mut() {
            drop_union_alternatives(name, schema);
            crate::patch::meta::annotate_definition(name, schema);
            rewrite_refs(schema, style);
            if let (Some(gvks), Some(obj)) = (self.gvks.remove(name), schema.as_object_mut()) {
                let mut gvks = gvks;
                gvks.sort_by_key(|g| {
                    (
                        g["group"].as_str().map(str::to_string),
                        g["version"].as_str().map(str::to_string),
                    )
                });
                obj.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks));
            }
        }
        out
    }
}

/// Definitions whose `metadata` upstream requires: core/v1 `Event` alone declares its
/// `ObjectMeta` without `omitempty` or `+optional`.
const METADATA_REQUIRED: [&str; 1] = ["io.k8s.api.core.v1.Event"];

/// Fields upstream requires that k8s-openapi makes optional (its `optional_properties` fixups:
/// the Rust field is an `Option` so that a null from a server still decodes).
const OPTIONAL_IN_K8S_OPENAPI: [(&str, &str); 1] = [("io.k8s.api.events.v1.Event", "eventTime")];

/// Puts back upstream's `required` list where k8s-openapi changed it. Upstream's generator
/// requires a field when its JSON tag has no `omitempty` and it has no `+optional` marker;
/// k8s-openapi writes `required` from its Rust types instead, where it made `metadata` of every
/// object kind (a definition with `apiVersion`, `kind` and `metadata`) non-optional
/// (`resource_metadata_not_optional`) and a few required fields optional. kubectl validates
/// against this list before sending, so `metadata` required here makes it refuse
/// `{"kind":"TokenReview","spec":{...}}`, which kube-apiserver takes.
fn upstream_required(name: &str, schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let is_kind = obj
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            ["apiVersion", "kind", "metadata"]
                .iter()
                .all(|f| p.contains_key(*f))
        });
    let restore: Vec<&str> = OPTIONAL_IN_K8S_OPENAPI
        .iter()
        .filter(|(def, _)| *def == name)
        .map(|(_, field)| *field)
        .collect();
    let drop_metadata = is_kind && !METADATA_REQUIRED.contains(&name);
    if !drop_metadata && restore.is_empty() {
        return;
    }
    let required = obj.entry("required").or_insert_with(|| json!([]));
    if let Value::Array(list) = required {
        if drop_metadata {
            list.retain(|f| f != "metadata");
        }
        for field in restore {
            if !list.iter().any(|f| f == field) {
                list.push(json!(field));
            }
        }
        // Upstream lists them in the struct's field order; k8s-openapi's is alphabetical, so
        // keep alphabetical (the order carries no meaning).
        list.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        if list.is_empty() {
            obj.remove("required");
        }
    }
}

/// TypeMeta's field descriptions, as upstream's generated definitions carry them.
fn type_meta_doc(field: &str) -> &'static str {
    use kapi_machinery::gvk::{API_VERSION_DOC, KIND_DOC};
    match field {
        "apiVersion" => API_VERSION_DOC,
        _ => KIND_DOC,
    }
}

/// The three apiextensions union types (`JSONSchemaPropsOrArray`, `...OrBool`,
/// `...OrStringArray`) are published by upstream with their description only: their Go types
/// marshal by hand, so its generator knows no shape. k8s-openapi writes a `oneOf` for them,
/// which OpenAPI v2 cannot carry.
fn drop_union_alternatives(name: &str, schema: &mut Value) {
    const UNIONS: [&str; 3] = [
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
    ];
    if UNIONS.contains(&name) {
        if let Some(obj) = schema.as_object_mut() {
            obj.retain(|k, _| k == "description");
        }
    }
}

/// The definition a `{"$ref": "#/<path>/<name>"}` schema points to.
fn ref_name(schema: &Value) -> Option<String> {
    ref_target(schema.as_object()?)
}

fn ref_target(map: &Map<String, Value>) -> Option<String> {
    let reference = map.get("$ref")?.as_str()?;
    let raw = reference.strip_prefix('#')?.rsplit('/').next()?;
    Some(raw.replace("~1", "/").replace("~0", "~"))
}

/// Upstream's definition name for a kind: `io.k8s.api.<group's first label or core>.<version>.<Kind>`
/// for built-in groups, the reversed group for others (as for custom resources).
fn inline_name(info: &ResourceInfo, kind: &str) -> String {
    let group = info.group.as_str();
    if group.is_empty() {
        return format!("io.k8s.api.core.{}.{kind}", info.version);
    }
    if !group.contains('.') || group.ends_with(".k8s.io") {
        let first = group.split('.').next().unwrap_or(group);
        return format!("io.k8s.api.{first}.{}.{kind}", info.version);
    }
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{}.{kind}", reversed.join("."), info.version)
}

/// Points every `$ref` at `style`'s location; in v3 a `$ref` with siblings (a description on
/// a field) becomes `allOf: [{$ref}]` plus the siblings, as kube-apiserver writes it.
pub fn rewrite_refs(value: &mut Value, style: RefStyle) {
    match value {
        Value::Object(map) => {
            if let Some(name) = ref_target(map) {
                let target = Value::String(format!("{}{}", style.prefix(), name));
                if style == RefStyle::V3 && map.len() > 1 {
                    map.remove("$ref");
                    let mut wrapped = Map::new();
                    wrapped.insert("allOf".into(), json!([{ "$ref": target }]));
                    wrapped.extend(std::mem::take(map));
                    *map = wrapped;
                } else {
                    map.insert("$ref".into(), target);
                }
            }
            // Every value is walked: keys like `default` are also property names (LimitRangeItem).
            map.values_mut().for_each(|v| rewrite_refs(v, style));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, style)),
        _ => {}
    }
}
