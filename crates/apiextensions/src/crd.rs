//! What serving needs from a CustomResourceDefinition, read from its JSON: names (the
//! accepted ones, as upstream serves them), scope, versions and their schemas, subresources,
//! printer columns and selectable fields, and the conditions the controllers write.

use kapi_machinery::Object;
use serde_json::Value;

/// The finalizer the CRD store adds and the cleanup controller removes.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// A CRD's names (`spec.names` or `status.acceptedNames`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn text(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

impl Names {
    pub fn from_value(v: &Value) -> Self {
        Self {
            plural: text(v, "plural"),
            singular: text(v, "singular"),
            kind: text(v, "kind"),
            list_kind: text(v, "listKind"),
            short_names: strings(v.get("shortNames")),
            categories: strings(v.get("categories")),
        }
    }

    /// The names as `acceptedNames` JSON (empty fields left out, as upstream's omitempty).
    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("plural".into(), Value::String(self.plural.clone()));
        if !self.singular.is_empty() {
            m.insert("singular".into(), Value::String(self.singular.clone()));
        }
        if !self.short_names.is_empty() {
            m.insert("shortNames".into(), self.short_names.clone().into());
        }
        m.insert("kind".into(), Value::String(self.kind.clone()));
        if !self.list_kind.is_empty() {
            m.insert("listKind".into(), Value::String(self.list_kind.clone()));
        }
        if !self.categories.is_empty() {
            m.insert("categories".into(), self.categories.clone().into());
        }
        Value::Object(m)
    }
}

/// One entry of `spec.versions`.
#[derive(Clone, Debug)]
pub struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    /// `schema.openAPIV3Schema`.
    pub schema: Option<Value>,
    pub status: bool,
    /// `subresources.scale`.
    pub scale: Option<Value>,
    pub printer_columns: Option<Value>,
    /// The `jsonPath`s of `selectableFields`.
    pub selectable_fields: Vec<String>,
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
}

/// A CRD as serving reads it.
#[derive(Clone, Debug)]
pub struct Crd {
    pub name: String,
    pub uid: String,
    pub group: String,
    pub spec_names: Names,
    pub accepted_names: Names,
    pub namespaced: bool,
    pub versions: Vec<Version>,
    pub object: Object,
}

impl Crd {
    pub fn from_object(obj: &Object) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let status = obj.get("status").cloned().unwrap_or(Value::Null);
        let mut spec_names = Names::from_value(spec.get("names").unwrap_or(&Value::Null));
        // upstream's CRD defaulting, for definitions stored without it
        if spec_names.list_kind.is_empty() && !spec_names.kind.is_empty() {
            spec_names.list_kind = format!("{}List", spec_names.kind);
        }
        let accepted_names = Names::from_value(status.get("acceptedNames").unwrap_or(&Value::Null));
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| {
                let sub = v.get("subresources");
                Version {
                    name: text(v, "name"),
                    served: v.get("served").and_then(Value::as_bool).unwrap_or(false),
                    storage: v.get("storage").and_then(Value::as_bool).unwrap_or(false),
                    schema: v
                        .get("schema")
                        .and_then(|s| s.get("openAPIV3Schema"))
                        .cloned(),
                    status: sub
                        .and_then(|s| s.get("status"))
                        .is_some_and(|s| !s.is_null()),
                    scale: sub
                        .and_then(|s| s.get("scale"))
                        .filter(|s| !s.is_null())
                        .cloned(),
                    printer_columns: v.get("additionalPrinterColumns").cloned(),
                    selectable_fields: v
                        .get("selectableFields")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|f| text(f, "jsonPath"))
                        .collect(),
                    deprecated: v
                        .get("deprecated")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    deprecation_warning: v
                        .get("deprecationWarning")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                }
            })
            .collect();
        Self {
            name: obj.name().to_string(),
            uid: obj.uid().to_string(),
            group: text(&spec, "group"),
            spec_names,
            accepted_names,
            namespaced: spec.get("scope").and_then(Value::as_str) != Some("Cluster"),
            versions,
            object: obj.clone(),
        }
    }

    /// The names objects are served under: the accepted ones once the naming controller set
    /// them.
    pub fn served_names(&self) -> &Names {
        if self.accepted_names.plural.is_empty() || self.accepted_names.kind.is_empty() {
            &self.spec_names
        } else {
            &self.accepted_names
        }
    }

    /// The storage version's name.
    pub fn storage_version(&self) -> Option<&str> {
        self.versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.as_str())
    }

    /// The condition of `kind` (`Established`, `NamesAccepted`, `Terminating`).
    pub fn condition(&self, kind: &str) -> Option<&Value> {
        condition(&self.object, kind)
    }

    pub fn condition_true(&self, kind: &str) -> bool {
        self.condition(kind)
            .and_then(|c| c.get("status"))
            .and_then(Value::as_str)
            == Some("True")
    }

    /// Being deleted (the store has set `deletionTimestamp`).
    pub fn deleting(&self) -> bool {
        self.object.deletion_timestamp().is_some()
    }

    /// Whether the cleanup finalizer is still on.
    pub fn has_cleanup_finalizer(&self) -> bool {
        self.object
            .finalizers()
            .iter()
            .any(|f| f == CLEANUP_FINALIZER)
    }
}

/// The `status.conditions` entry of `kind` of a CRD object.
pub fn condition<'a>(obj: &'a Object, kind: &str) -> Option<&'a Value> {
    obj.get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}
