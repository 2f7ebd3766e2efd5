//! The schema checks of upstream's validation.go: `validateCustomResourceDefinitionValidation`
//! (root rules with `/status`, structural checks from [`crate::schema`]),
//! `ValidateCustomResourceDefinitionOpenAPISchema` with `specStandardValidatorV3`,
//! `validateMapListKeysMapSet`, the rule fields of `x-kubernetes-validations`, and
//! `ValidateCustomResourceSelectableFields`. CEL compilation and cost are the schema
//! module's.

use super::extensions::{extension_rules, map_list_keys_map_set, validation_rules};
use crate::schema::validate_structural;
use kapi_machinery::{BadValue, FieldError};
use serde_json::{Map, Value};

pub const MAX_SELECTABLE_FIELDS: usize = 8;
const OPENAPI_V3_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: &[&str] = &["metadata", "kind", "apiVersion"];

/// Upstream's `validationOptions` (the parts checked here).
#[derive(Clone, Debug)]
pub struct Opts {
    pub require_recognized_conversion_review_version: bool,
    pub require_immutable_names: bool,
    pub require_open_api_schema: bool,
    pub require_valid_property_type: bool,
    pub require_structural: bool,
    pub require_atomic_set_type: bool,
    pub require_map_list_keys_map_set_validation: bool,
    /// Versions (`""` for the top level) whose too many, unchanged selectable fields stay.
    pub allow_too_many_selectable_fields: Vec<String>,
}

/// `specStandardValidatorV3`'s state while descending.
#[derive(Clone, Default)]
struct Ssv {
    /// `Some(reason)` when defaults are forbidden here.
    forbidden_defaults: Option<String>,
    inside_resource_meta: bool,
    require_valid_property_type: bool,
}

pub(super) fn s<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn present(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).is_some_and(|v| !v.is_null())
}

pub(super) fn non_empty_map<'a>(
    m: &'a Map<String, Value>,
    k: &str,
) -> Option<&'a Map<String, Value>> {
    m.get(k)
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
}

pub(super) fn flag(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool) == Some(true)
}

pub(super) fn opt_str<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

/// The `JSONSchemaProps` fields in Go's declaration order, with their JSON names: the root
/// check with `/status` stops at the first one that is set and not allowed.
const GO_FIELDS: &[(&str, &str)] = &[
    ("ID", "id"),
    ("Schema", "$schema"),
    ("Ref", "$ref"),
    ("Description", "description"),
    ("Type", "type"),
    ("Nullable", "nullable"),
    ("Format", "format"),
    ("Title", "title"),
    ("Default", "default"),
    ("Maximum", "maximum"),
    ("ExclusiveMaximum", "exclusiveMaximum"),
    ("Minimum", "minimum"),
    ("ExclusiveMinimum", "exclusiveMinimum"),
    ("MaxLength", "maxLength"),
    ("MinLength", "minLength"),
    ("Pattern", "pattern"),
    ("MaxItems", "maxItems"),
    ("MinItems", "minItems"),
    ("UniqueItems", "uniqueItems"),
    ("MultipleOf", "multipleOf"),
    ("Enum", "enum"),
    ("MaxProperties", "maxProperties"),
    ("MinProperties", "minProperties"),
    ("Required", "required"),
    ("Items", "items"),
    ("AllOf", "allOf"),
    ("OneOf", "oneOf"),
    ("AnyOf", "anyOf"),
    ("Not", "not"),
    ("Properties", "properties"),
    ("AdditionalProperties", "additionalProperties"),
    ("PatternProperties", "patternProperties"),
    ("Dependencies", "dependencies"),
    ("AdditionalItems", "additionalItems"),
    ("Definitions", "definitions"),
    ("ExternalDocs", "externalDocs"),
    ("Example", "example"),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
    ),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource"),
    ("XIntOrString", "x-kubernetes-int-or-string"),
    ("XListMapKeys", "x-kubernetes-list-map-keys"),
    ("XListType", "x-kubernetes-list-type"),
    ("XMapType", "x-kubernetes-map-type"),
    ("XValidations", "x-kubernetes-validations"),
];

const ALLOWED_AT_ROOT: &[&str] = &[
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// Whether a Go field holds its zero value (bools false, strings empty, nil pointers,
/// slices and maps).
fn is_go_zero(go: &str, v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => {
            !*b && matches!(
                go,
                "Nullable"
                    | "ExclusiveMaximum"
                    | "ExclusiveMinimum"
                    | "UniqueItems"
                    | "XEmbeddedResource"
                    | "XIntOrString"
            )
        }
        Some(Value::String(s)) => {
            s.is_empty()
                && matches!(
                    go,
                    "ID" | "Schema" | "Description" | "Type" | "Format" | "Title" | "Pattern"
                )
        }
        _ => false,
    }
}

/// `%#v` of a `JSONSchemaProps` as upstream puts it in an error; the untyped JSON form stands
/// in for the struct.
fn schema_value(v: &Value) -> BadValue {
    match BadValue::from(v) {
        BadValue::Go(g) => BadValue::Go(g.replacen(
            "map[string]interface {}",
            "apiextensions.JSONSchemaProps",
            1,
        )),
        other => other,
    }
}

/// `validateCustomResourceDefinitionValidation` for one `CustomResourceValidation` (the value
/// of a version's `schema`, or the top-level one) at `path`.
pub fn validate_validation(
    validation: Option<&Value>,
    status_enabled: bool,
    opts: &Opts,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(schema) = validation
        .and_then(|v| v.get("openAPIV3Schema"))
        .filter(|s| !s.is_null())
    else {
        return errs;
    };
    let root = schema.as_object().cloned().unwrap_or_default();
    if status_enabled {
        for (go, json) in GO_FIELDS {
            if is_go_zero(go, root.get(*json)) {
                continue;
            }
            if *go == "Type" {
                if s(&root, "type") != "object" {
                    errs.push(FieldError::invalid(
                        format!("{path}.openAPIV3Schema.type"),
                        s(&root, "type"),
                        r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                    ));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT.contains(go) {
                errs.push(FieldError::invalid(
                    format!("{path}.openAPIV3Schema"),
                    schema_value(schema),
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ALLOWED_AT_ROOT.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if flag(&root, "nullable") {
        errs.push(FieldError::forbidden(
            format!("{path}.openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let sp = format!("{path}.openAPIV3Schema");
    if opts.require_structural {
        errs.extend(validate_structural(schema, &sp));
    }
    let ssv = Ssv {
        require_valid_property_type: opts.require_valid_property_type,
        ..Default::default()
    };
    open_api_schema(&mut errs, &root, &sp, &ssv, true, opts);
    errs
}

pub(super) fn each_schema<'a>(
    m: &'a Map<String, Value>,
    k: &str,
) -> impl Iterator<Item = (usize, &'a Map<String, Value>)> {
    m.get(k)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| v.as_object().map(|o| (i, o)))
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` (schema errors; properties in key order,
/// where Go's map order is random).
fn open_api_schema(
    errs: &mut Vec<FieldError>,
    schema: &Map<String, Value>,
    path: &str,
    ssv: &Ssv,
    is_root: bool,
    opts: &Opts,
) {
    standard_v3(errs, schema, path, ssv);
    if flag(schema, "uniqueItems") {
        errs.push(FieldError::forbidden(
            format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(ap) = schema.get("additionalProperties").filter(|v| !v.is_null()) {
        if props.is_some_and(|p| !p.is_empty()) && (ap == &Value::Bool(false) || ap.is_object()) {
            errs.push(FieldError::forbidden(
                format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let mut sub = ssv.clone();
        if ssv.inside_resource_meta {
            sub.forbidden_defaults =
                Some("inside additionalProperties applying to object metadata".into());
        }
        if let Some(ap) = ap.as_object() {
            open_api_schema(
                errs,
                ap,
                &format!("{path}.additionalProperties"),
                &sub,
                false,
                opts,
            );
        }
    }
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    for (name, prop) in props.into_iter().flatten() {
        let Some(prop) = prop.as_object() else {
            continue;
        };
        let mut sub = ssv.clone();
        if (is_root || embedded) && META_FIELDS.contains(&name.as_str()) {
            sub.inside_resource_meta = true;
            if is_root {
                sub.forbidden_defaults = Some(format!("in top-level {name}"));
            }
        }
        open_api_schema(
            errs,
            prop,
            &format!("{path}.properties[{name}]"),
            &sub,
            false,
            opts,
        );
    }
    if let Some(not) = schema.get("not").and_then(Value::as_object) {
        open_api_schema(errs, not, &format!("{path}.not"), ssv, false, opts);
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in each_schema(schema, key) {
            open_api_schema(errs, sub, &format!("{path}.{key}[{i}]"), ssv, false, opts);
        }
    }
    for (name, sub) in schema
        .get("definitions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(sub) = sub.as_object() {
            open_api_schema(
                errs,
                sub,
                &format!("{path}.definitions[{name}]"),
                ssv,
                false,
                opts,
            );
        }
    }
    match schema.get("items") {
        Some(Value::Object(items)) => {
            open_api_schema(errs, items, &format!("{path}.items"), ssv, false, opts)
        }
        Some(Value::Array(_)) => {
            for (i, sub) in each_schema(schema, "items") {
                open_api_schema(errs, sub, &format!("{path}.items[{i}]"), ssv, false, opts);
            }
        }
        _ => {}
    }
    for (name, dep) in schema
        .get("dependencies")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(sub) = dep.as_object() {
            open_api_schema(
                errs,
                sub,
                &format!("{path}.dependencies[{name}]"),
                ssv,
                false,
                opts,
            );
        }
    }
    extension_rules(errs, schema, path, opts);
    if opts.require_map_list_keys_map_set_validation {
        errs.extend(map_list_keys_map_set(schema, path));
    }
    validation_rules(errs, schema, path);
}

/// `specStandardValidatorV3.validate`.
fn standard_v3(errs: &mut Vec<FieldError>, schema: &Map<String, Value>, path: &str, ssv: &Ssv) {
    let t = s(schema, "type");
    if ssv.require_valid_property_type && !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t) {
        errs.push(FieldError::not_supported(
            format!("{path}.type"),
            t,
            OPENAPI_V3_TYPES,
        ));
    }
    if present(schema, "default") {
        if let Some(reason) = &ssv.forbidden_defaults {
            let mut detail = "must not be set".to_string();
            if !reason.is_empty() {
                detail.push(' ');
                detail.push_str(reason);
            }
            errs.push(FieldError::forbidden(format!("{path}.default"), detail));
        }
    }
    if !s(schema, "id").is_empty() {
        errs.push(FieldError::forbidden(
            format!("{path}.id"),
            "id is not supported",
        ));
    }
    let checks: [(bool, &str, &str); 4] = [
        (
            present(schema, "additionalItems"),
            "additionalItems",
            "additionalItems is not supported",
        ),
        (
            non_empty_map(schema, "patternProperties").is_some(),
            "patternProperties",
            "patternProperties is not supported",
        ),
        (
            non_empty_map(schema, "definitions").is_some(),
            "definitions",
            "definitions is not supported",
        ),
        (
            present(schema, "dependencies"),
            "dependencies",
            "dependencies is not supported",
        ),
    ];
    for (bad, field, msg) in checks {
        if bad {
            errs.push(FieldError::forbidden(format!("{path}.{field}"), msg));
        }
    }
    if present(schema, "$ref") {
        errs.push(FieldError::forbidden(
            format!("{path}.$ref"),
            "$ref is not supported",
        ));
    }
    if t == "null" {
        errs.push(FieldError::forbidden(
            format!("{path}.type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if schema
        .get("items")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        errs.push(FieldError::forbidden(
            format!("{path}.items"),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_resource_meta && flag(schema, "x-kubernetes-embedded-resource") {
        errs.push(FieldError::forbidden(
            format!("{path}.x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
}

/// Upstream's `SchemaHas`: whether `pred` holds for the schema or any schema inside it.
pub fn schema_has(s: &Value, pred: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    let Some(m) = s.as_object() else {
        return false;
    };
    if pred(m) {
        return true;
    }
    for (k, v) in m {
        let found = match (k.as_str(), v) {
            ("items" | "not" | "additionalProperties" | "additionalItems", Value::Object(_)) => {
                schema_has(v, pred)
            }
            ("items" | "allOf" | "anyOf" | "oneOf", Value::Array(a)) => {
                a.iter().any(|x| schema_has(x, pred))
            }
            (
                "properties" | "patternProperties" | "definitions" | "dependencies",
                Value::Object(o),
            ) => o.values().any(|x| schema_has(x, pred)),
            _ => false,
        };
        if found {
            return true;
        }
    }
    false
}

pub fn has_defaults(s: &Value) -> bool {
    schema_has(s, &|m| present(m, "default"))
}

/// `schemaHasKubernetesExtensions`.
pub fn has_kubernetes_extensions(s: &Value) -> bool {
    schema_has(s, &|m| {
        flag(m, "x-kubernetes-embedded-resource")
            || present(m, "x-kubernetes-preserve-unknown-fields")
            || flag(m, "x-kubernetes-int-or-string")
            || m.get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
            || present(m, "x-kubernetes-list-type")
            || m.get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
    })
}

/// `SchemaHasInvalidTypes`.
pub fn has_invalid_types(s: &Value) -> bool {
    schema_has(s, &|m| {
        let t = self::s(m, "type");
        !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t)
    })
}

/// `schemaIsNonStructural`.
pub fn is_non_structural(s: &Value) -> bool {
    !validate_structural(s, "").is_empty()
}

/// `hasNonAtomicSetType`.
pub fn has_non_atomic_set(s: &Value) -> bool {
    schema_has(s, &|m| {
        let Some(is) = m.get("items").and_then(Value::as_object) else {
            return false;
        };
        if opt_str(m, "x-kubernetes-list-type") != Some("set") {
            return false;
        }
        match self::s(is, "type") {
            "array" => opt_str(is, "x-kubernetes-list-type").is_some_and(|l| l != "atomic"),
            "object" => opt_str(is, "x-kubernetes-map-type") != Some("atomic"),
            _ => false,
        }
    })
}

/// `hasInvalidMapListKeysMapSet`.
pub fn has_invalid_map_list_keys(s: &Value) -> bool {
    schema_has(s, &|m| !map_list_keys_map_set(m, "").is_empty())
}
