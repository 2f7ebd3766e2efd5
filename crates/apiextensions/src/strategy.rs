//! `CustomResourceStrategy`: the [`Strategy`] of one served version of a CRD, so custom objects
//! run through the same generic `Store` as built-in ones. Decoding prunes unknown fields
//! (reported per `fieldValidation`) and applies the schema's defaults; validation is the
//! schema's plus its CEL rules; objects are stored in the storage version.

use super::crd::{Crd, Version};
use super::schema::CompiledSchema;
use super::table::CustomResourceTable;
use kapi_machinery::{ApiError, FieldError, GroupResource, Object};
use kapi_registry::codec::{check_type_meta, unknown_fields};
use kapi_registry::rest::{Decoded, FieldValidation, ResourceInfo, TableConvertor};
use kapi_registry::strategy::{FieldLabelConversion, Strategy};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Field labels live as long as the process (`FieldLabelConversion` borrows them
/// statically); each distinct set is kept once, so redefining a CRD does not grow memory.
fn intern_labels(labels: Vec<String>) -> &'static [&'static str] {
    static SETS: OnceLock<Mutex<HashMap<Vec<String>, &'static [&'static str]>>> = OnceLock::new();
    let sets = SETS.get_or_init(Mutex::default);
    let mut guard = match sets.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if let Some(s) = guard.get(&labels) {
        return s;
    }
    let leaked: Vec<&'static str> = labels
        .iter()
        .map(|l| &*Box::leak(l.clone().into_boxed_str()))
        .collect();
    let slice: &'static [&'static str] = Box::leak(leaked.into_boxed_slice());
    guard.insert(labels, slice);
    slice
}

/// Upstream's OpenAPI definition name of a custom kind: the reversed group, the version and
/// the kind (`com.example.stable.v1.CronTab`).
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

/// Sorts the keys of every map in `v`, in place. Stored objects are sorted already (only
/// defaults applied on read add keys), so a map is re-sorted only when it is out of order.
fn sort_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if !m.keys().is_sorted() {
                m.sort_keys();
            }
            m.values_mut().for_each(sort_keys);
        }
        Value::Array(a) => a.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

fn sorted_object(obj: Object) -> Object {
    let mut value = obj.into_value();
    sort_keys(&mut value);
    match value {
        Value::Object(m) => Object::from(m),
        _ => Object::new(),
    }
}

/// Whole floats as integers (`10.0` → `10`), as Go's encoder prints a float64 without a
/// fraction: schemas stored through typed JSONSchemaProps carry bounds as floats.
fn integral_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral_numbers),
        Value::Object(m) => m.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// The strategy of one served version.
pub struct CustomResourceStrategy {
    info: ResourceInfo,
    key_prefix: String,
    api_version: String,
    storage_api_version: String,
    schema: Option<Arc<CompiledSchema>>,
    raw_schema: Option<Value>,
    status: bool,
    field_labels: &'static [&'static str],
    table: Arc<dyn TableConvertor>,
    terminating: Arc<AtomicBool>,
    warning: Option<String>,
}

impl CustomResourceStrategy {
    /// Registers the kind's definition (v2's or v3's) and refers to it.
    fn kind_definition(
        &self,
        generator: &mut schemars::SchemaGenerator,
        v2: bool,
    ) -> Option<schemars::Schema> {
        let name = definition_name(&self.info.group, &self.info.version, &self.info.kind);
        let meta = generator
            .subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>()
            .to_value();
        let mut schema = super::openapi::kind_schema(self.raw_schema.as_ref(), &meta, v2);
        integral_numbers(&mut schema);
        generator.definitions_mut().insert(name.clone(), schema);
        schemars::Schema::try_from(json!({"$ref": format!("#/definitions/{name}")})).ok()
    }

    /// The strategy of `version` of `crd`; `terminating` is shared by all versions of the CRD
    /// and set while it is being deleted.
    pub fn new(
        crd: &Crd,
        version: &Version,
        schema: Option<Arc<CompiledSchema>>,
        terminating: Arc<AtomicBool>,
    ) -> Result<Self, String> {
        let names = crd.served_names();
        let list_kind = if names.list_kind.is_empty() {
            format!("{}List", names.kind)
        } else {
            names.list_kind.clone()
        };
        let info = ResourceInfo {
            group: crd.group.clone(),
            version: version.name.clone(),
            resource: names.plural.clone(),
            subresource: String::new(),
            kind: names.kind.clone(),
            list_kind,
            singular: if names.singular.is_empty() {
                names.kind.to_lowercase()
            } else {
                names.singular.clone()
            },
            namespaced: crd.namespaced,
            short_names: names.short_names.clone(),
            categories: names.categories.clone(),
        };
        let storage_version = crd
            .storage_version()
            .ok_or_else(|| format!("{} has no storage version", crd.name))?;
        let mut labels = vec!["metadata.name".to_string()];
        if crd.namespaced {
            labels.push("metadata.namespace".into());
        }
        labels.extend(
            version
                .selectable_fields
                .iter()
                .map(|p| p.trim_start_matches('.').to_string()),
        );
        let table = CustomResourceTable::new(version.printer_columns.as_ref())?;
        let warning = version.deprecated.then(|| {
            version.deprecation_warning.clone().unwrap_or_else(|| {
                let mut msg = format!(
                    "{}/{} {} is deprecated",
                    crd.group, version.name, names.kind
                );
                // upstream points at the highest-priority served version that is not deprecated
                let mut others: Vec<&str> = crd
                    .versions
                    .iter()
                    .filter(|v| v.served && !v.deprecated)
                    .map(|v| v.name.as_str())
                    .collect();
                others.sort_by(|a, b| kapi_machinery::gvk::version_priority(a, b));
                if let Some(best) = others.first() {
                    msg.push_str(&format!("; use {}/{best} {}", crd.group, names.kind));
                }
                msg
            })
        });
        Ok(Self {
            key_prefix: format!("{}/{}", crd.group, crd.spec_names.plural),
            api_version: format!("{}/{}", crd.group, version.name),
            storage_api_version: format!("{}/{storage_version}", crd.group),
            info,
            schema,
            raw_schema: version.schema.clone(),
            status: version.status,
            field_labels: intern_labels(labels),
            table: Arc::new(table),
            terminating,
            warning,
        })
    }

    fn schema_errors(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let Some(schema) = &self.schema else {
            return Vec::new();
        };
        let value = Value::Object(obj.as_map().clone());
        let old = old.map(|o| Value::Object(o.as_map().clone()));
        schema.validate_object(&value, old.as_ref())
    }

    fn with_defaults(&self, obj: Object) -> Object {
        let Some(schema) = &self.schema else {
            return obj;
        };
        let mut value = obj.into_value();
        schema.apply_defaults(&mut value);
        match value {
            Value::Object(m) => Object::from(m),
            _ => Object::new(),
        }
    }
}

impl Strategy for CustomResourceStrategy {
    fn info(&self) -> ResourceInfo {
        self.info.clone()
    }

    /// One prefix for every version, as upstream keys custom objects: `<group>/<plural>`.
    fn key_prefix(&self) -> String {
        self.key_prefix.clone()
    }

    fn decode(&self, body: Object, validation: FieldValidation) -> Decoded {
        let mut body = body;
        check_type_meta(&mut body, &self.api_version, &self.info.kind)?;
        let Some(schema) = &self.schema else {
            return Ok((body, Vec::new()));
        };
        let mut value = body.into_value();
        let pruned = schema.prune(&mut value);
        let warnings = unknown_fields(&self.info.kind, &self.info.version, &pruned, validation)?;
        schema.apply_defaults(&mut value);
        let obj = Object::from_value(value)?;
        Ok((obj, warnings))
    }

    fn openapi_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.kind_definition(generator, false)
    }

    fn openapi_v2_schema(
        &self,
        generator: &mut schemars::SchemaGenerator,
    ) -> Option<schemars::Schema> {
        self.kind_definition(generator, true)
    }

    /// Keys in order at every level, as Go encodes the maps of an unstructured object.
    fn canonicalize(&self, obj: Object) -> Object {
        sorted_object(obj)
    }

    fn to_storage(&self, obj: Object) -> Object {
        let mut obj = obj;
        let kind = obj.kind().to_string();
        obj.set_api_version_kind(&self.storage_api_version, &kind);
        obj
    }

    /// Stored objects are read in this version with the schema's defaults, as upstream
    /// defaults on read from storage.
    fn converts_from_storage(&self) -> bool {
        true
    }

    fn convert_from_storage(&self, obj: Object) -> Object {
        let mut obj = obj;
        let kind = obj.kind().to_string();
        obj.set_api_version_kind(&self.api_version, &kind);
        sorted_object(self.with_defaults(obj))
    }

    /// A deprecated version's warning, on every request as upstream's CRD handler adds it.
    fn request_warnings(&self) -> Vec<String> {
        self.warning.iter().cloned().collect()
    }

    fn table_convertor(&self) -> Option<Arc<dyn TableConvertor>> {
        Some(self.table.clone())
    }

    fn check_create(&self, resource: &GroupResource) -> Result<(), ApiError> {
        if self.terminating.load(Ordering::Relaxed) {
            let mut e = ApiError::method_not_supported(resource, "create");
            e.message = "create not allowed while custom resource definition is terminating".into();
            return Err(e);
        }
        Ok(())
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn has_status(&self) -> bool {
        self.status
    }

    fn prepare_for_create(&self, obj: &mut Object) {
        if self.status {
            obj.remove("status");
        }
    }

    fn validate(&self, obj: &Object) -> Vec<FieldError> {
        self.schema_errors(obj, None)
    }

    /// Without a `/status`, a status change is a change like any other (generation + 1).
    fn prepare_for_update(&self, new: &mut Object, old: &Object) {
        if !self.status && new.get("status") != old.get("status") {
            new.set_generation(old.generation().max(1).saturating_add(1));
        }
    }

    fn validate_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        self.schema_errors(new, Some(old))
    }

    /// Upstream's custom resource status strategy: the stored object with the request's
    /// status and managedFields (and its resourceVersion, already checked against the old).
    fn prepare_for_status_update(&self, new: &mut Object, old: &Object) {
        let mut out = old.clone();
        kapi_registry::strategy::copy_status(&mut out, new);
        kapi_registry::strategy::keep_old_metadata(
            &mut out,
            new,
            &["managedFields", "resourceVersion"],
        );
        *new = out;
    }

    fn validate_status_update(&self, new: &Object, old: &Object) -> Vec<FieldError> {
        self.schema_errors(new, Some(old))
    }

    fn field_label_conversion(&self) -> Option<FieldLabelConversion> {
        Some(FieldLabelConversion::new(self.field_labels))
    }
}
