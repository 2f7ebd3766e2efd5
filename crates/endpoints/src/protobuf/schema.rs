//! The message table derived at build time from `k8s-pb` (field numbers and kinds) and
//! `k8s-openapi` (JSON names); looked up by `<proto package>.<lowercased message name>`.

use std::collections::HashMap;
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Optional,
    Repeated,
    /// `map<string, kind>`.
    Map,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Int32,
    Int64,
    Bool,
    Double,
    Bytes,
    Message(&'static str),
}

#[derive(Debug)]
pub struct FieldDef {
    pub json: &'static str,
    pub number: u32,
    pub label: Label,
    pub kind: Kind,
    /// A Go struct embedded with `json:",inline"`: its fields are the parent's in JSON.
    pub inline: bool,
}

#[derive(Debug)]
pub struct MessageDef {
    pub name: &'static str,
    pub fields: &'static [FieldDef],
}

include!(concat!(env!("OUT_DIR"), "/k8s_proto.rs"));

static BY_NAME: LazyLock<HashMap<&'static str, &'static MessageDef>> =
    LazyLock::new(|| MESSAGES.iter().map(|m| (m.name, m)).collect());

/// Proto package per API group, from the resources k8s-pb declares.
static PACKAGES: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
    let mut m = HashMap::new();
    for (api_version, _, message) in RESOURCES {
        if let Some((package, _)) = message.rsplit_once('.') {
            m.insert(*api_version, package);
        }
    }
    m
});

pub fn message(name: &str) -> Option<&'static MessageDef> {
    BY_NAME.get(name).copied()
}

/// The message of a top-level kind (objects, lists, reviews and `Status`).
pub fn message_for(api_version: &str, kind: &str) -> Option<&'static MessageDef> {
    let lower = kind.to_ascii_lowercase();
    if let Some(m) = PACKAGES
        .get(api_version)
        .and_then(|p| message(&format!("{p}.{lower}")))
    {
        return Some(m);
    }
    // Kinds every group version carries, defined once in meta/v1.
    match kind {
        "Status" | "WatchEvent" | "APIResourceList" | "APIGroupList" | "APIGroup"
        | "APIVersions" => message(&format!("k8s.io.apimachinery.pkg.apis.meta.v1.{lower}")),
        _ => None,
    }
}

pub const TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.time";
pub const MICRO_TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.microtime";
pub const DURATION: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.duration";
pub const FIELDS_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.fieldsv1";
pub const QUANTITY: &str = "k8s.io.apimachinery.pkg.api.resource.quantity";
pub const INT_OR_STRING: &str = "k8s.io.apimachinery.pkg.util.intstr.intorstring";
pub const RAW_EXTENSION: &str = "k8s.io.apimachinery.pkg.runtime.rawextension";

/// How a message appears in JSON when it is not a plain object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    None,
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    /// Raw JSON bytes in field 1 (`RawExtension`, `FieldsV1`, apiextensions `JSON`).
    RawJson,
    /// A named slice type (`Verbs`, `ExtraValue`): one repeated `items` field, a JSON array.
    Items,
    /// apiextensions `JSONSchemaPropsOrArray` / `OrBool` / `OrStringArray`.
    OrArray,
    OrBool,
    OrStringArray,
}

pub fn special(m: &MessageDef) -> Special {
    match m.name {
        TIME => return Special::Time,
        MICRO_TIME => return Special::MicroTime,
        DURATION => return Special::Duration,
        QUANTITY => return Special::Quantity,
        INT_OR_STRING => return Special::IntOrString,
        RAW_EXTENSION | FIELDS_V1 => return Special::RawJson,
        _ => {}
    }
    if m.name.starts_with("k8s.io.apiextensions_apiserver.") {
        if m.name.ends_with(".json") {
            return Special::RawJson;
        }
        if m.name.ends_with(".jsonschemapropsorarray") {
            return Special::OrArray;
        }
        if m.name.ends_with(".jsonschemapropsorbool") {
            return Special::OrBool;
        }
        if m.name.ends_with(".jsonschemapropsorstringarray") {
            return Special::OrStringArray;
        }
    }
    // Go's named string slices (`Verbs`, `ExtraValue`) are wrapped in a message of one
    // repeated string; a struct of one `items` list of objects (`DownwardAPIProjection`) is not.
    if let [f] = m.fields {
        if f.json == "items" && f.label == Label::Repeated && f.kind == Kind::String {
            return Special::Items;
        }
    }
    Special::None
}
