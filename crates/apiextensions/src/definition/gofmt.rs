//! Go's `%#v` of the internal CRD structs upstream puts in some field errors (the whole
//! `spec.versions` list). Pointers print as an address in Go; a fixed one stands in for it.

use super::internal::{Spec, Version};
use kapi_machinery::goformat::quote;
use kapi_machinery::{BadValue, FieldError};
use serde_json::Value;

const ADDR: &str = "0xc000010000";

fn ptr(ty: &str, set: bool) -> String {
    if set {
        format!("(*{ty})({ADDR})")
    } else {
        format!("(*{ty})(nil)")
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn column(c: &Value) -> String {
    format!(
        "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, Description:{}, Priority:{}, JSONPath:{}}}",
        quote(s(c, "name")),
        quote(s(c, "type")),
        quote(s(c, "format")),
        quote(s(c, "description")),
        c.get("priority").and_then(Value::as_i64).unwrap_or(0),
        quote(s(c, "jsonPath")),
    )
}

fn list(ty: &str, v: Option<&Value>, item: fn(&Value) -> String) -> String {
    match v.and_then(Value::as_array) {
        None => format!("[]apiextensions.{ty}(nil)"),
        Some(a) => {
            let items: Vec<String> = a.iter().map(item).collect();
            format!("[]apiextensions.{ty}{{{}}}", items.join(", "))
        }
    }
}

fn version(v: &Version) -> String {
    let b = |k: &str| v.raw.get(k).and_then(Value::as_bool).unwrap_or(false);
    format!(
        "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{}, SelectableFields:{}}}",
        quote(v.name()),
        b("served"),
        b("storage"),
        b("deprecated"),
        ptr("string", v.raw.get("deprecationWarning").is_some_and(|w| !w.is_null())),
        ptr("apiextensions.CustomResourceValidation", v.schema.is_some()),
        ptr("apiextensions.CustomResourceSubresources", v.subresources.is_some()),
        list("CustomResourceColumnDefinition", v.columns, column),
        list("SelectableField", v.selectable_fields, |f| {
            format!("apiextensions.SelectableField{{JSONPath:{}}}", quote(s(f, "jsonPath")))
        }),
    )
}

/// `field.Invalid(spec.versions, spec.Versions, detail)`.
pub fn versions_invalid(path: &str, spec: &Spec, detail: &str) -> FieldError {
    let rendered = if spec.raw.get("versions").and_then(Value::as_array).is_none() {
        "[]apiextensions.CustomResourceDefinitionVersion(nil)".to_string()
    } else {
        let items: Vec<String> = spec.versions.iter().map(version).collect();
        format!(
            "[]apiextensions.CustomResourceDefinitionVersion{{{}}}",
            items.join(", ")
        )
    };
    FieldError::invalid(format!("{path}.versions"), BadValue::Go(rendered), detail)
}
