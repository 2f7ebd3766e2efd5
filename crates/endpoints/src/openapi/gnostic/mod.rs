//! The `openapi.v2` protobuf messages of gnostic (`openapiv2/OpenAPIv2.proto` of
//! google/gnostic-models): the form kube-openapi serves `/openapi/v2` in for
//! `application/com.github.proto-openapi.spec.v2.v1.0+protobuf`, and the form client-go and
//! kubectl read for validation and (before 1.29) `explain`.
//!
//! Written out with `prost` derives, field for field and tag for tag, so the build needs no
//! protoc. Maps of the JSON form are `repeated Named*` pairs in document order; values of any
//! shape (vendor extensions, `default`, `enum`, `example`) are `Any` holding YAML text.
//! Rust keywords are spelled raw (`r#type`, `r#in`, `r#enum`); `_ref` is `xref`.

// Field names and tags mirror the .proto; documenting each again would only repeat it. The
// one-ofs keep the .proto's shapes (one document is built per API set, so size is no concern).
#![allow(missing_docs, clippy::large_enum_variant)]

use prost::{Message, Oneof};

mod parameters;
mod schema;
mod security;
pub use parameters::*;
pub use schema::*;
pub use security::*;

/// `google.protobuf.Any` (never set by gnostic's parser, which fills `yaml` instead).
#[derive(Clone, PartialEq, Message)]
pub struct ProtobufAny {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(message, optional, tag = "1")]
    pub value: Option<ProtobufAny>,
    #[prost(string, tag = "2")]
    pub yaml: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Contact {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(string, tag = "3")]
    pub email: String,
    #[prost(message, repeated, tag = "4")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(string, tag = "3")]
    pub host: String,
    #[prost(string, tag = "4")]
    pub base_path: String,
    #[prost(string, repeated, tag = "5")]
    pub schemes: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    #[prost(message, optional, tag = "10")]
    pub parameters: Option<ParameterDefinitions>,
    #[prost(message, optional, tag = "11")]
    pub responses: Option<ResponseDefinitions>,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "14")]
    pub tags: Vec<Tag>,
    #[prost(message, optional, tag = "15")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, repeated, tag = "16")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Examples {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ExternalDocs {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub terms_of_service: String,
    #[prost(message, optional, tag = "5")]
    pub contact: Option<Contact>,
    #[prost(message, optional, tag = "6")]
    pub license: Option<License>,
    #[prost(message, repeated, tag = "7")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct JsonReference {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(string, tag = "2")]
    pub description: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct License {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

/// One `(name, value)` pair of a map, in document order.
macro_rules! named {
    ($name:ident, $value:ty, message) => {
        #[derive(Clone, PartialEq, Message)]
        pub struct $name {
            #[prost(string, tag = "1")]
            pub name: String,
            #[prost(message, optional, tag = "2")]
            pub value: Option<$value>,
        }
    };
}

named!(NamedAny, Any, message);

named!(NamedHeader, Header, message);

named!(NamedParameter, Parameter, message);

named!(NamedPathItem, PathItem, message);

named!(NamedResponse, Response, message);

named!(NamedResponseValue, ResponseValue, message);

named!(NamedSchema, Schema, message);

named!(
    NamedSecurityDefinitionsItem,
    SecurityDefinitionsItem,
    message
);

named!(NamedStringArray, StringArray, message);

#[derive(Clone, PartialEq, Message)]
pub struct NamedString {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "2")]
    pub summary: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, optional, tag = "4")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PathItem {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    pub options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    #[prost(message, optional, tag = "3")]
    pub headers: Option<Headers>,
    #[prost(message, optional, tag = "4")]
    pub examples: Option<Examples>,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ResponseDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedResponse>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ResponseValue {
    #[prost(oneof = "response_value::Oneof", tags = "1, 2")]
    pub oneof: Option<response_value::Oneof>,
}

pub mod response_value {
    use super::*;
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Response(Response),
        #[prost(message, tag = "2")]
        JsonReference(JsonReference),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Tag {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, optional, tag = "3")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, repeated, tag = "4")]
    pub vendor_extension: Vec<NamedAny>,
}
