//! JSON Schema objects of gnostic's `openapi.v2` messages: `Schema` and its parts.

use super::*;

#[derive(Clone, PartialEq, Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    pub oneof: Option<additional_properties_item::Oneof>,
}

pub mod additional_properties_item {
    use super::*;
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(Box<Schema>),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct FileSchema {
    #[prost(string, tag = "1")]
    pub format: String,
    #[prost(string, tag = "2")]
    pub title: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, optional, tag = "4")]
    pub default: Option<Any>,
    #[prost(string, repeated, tag = "5")]
    pub required: Vec<String>,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(bool, tag = "7")]
    pub read_only: bool,
    #[prost(message, optional, tag = "8")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, optional, tag = "9")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, tag = "21")]
    pub additional_properties: Option<AdditionalPropertiesItem>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(string, tag = "26")]
    pub discriminator: String,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "28")]
    pub xml: Option<Xml>,
    #[prost(message, optional, tag = "29")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SchemaItem {
    #[prost(oneof = "schema_item::Oneof", tags = "1, 2")]
    pub oneof: Option<schema_item::Oneof>,
}

pub mod schema_item {
    use super::*;
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(Box<Schema>),
        #[prost(message, tag = "2")]
        FileSchema(FileSchema),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Xml {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub namespace: String,
    #[prost(string, tag = "3")]
    pub prefix: String,
    #[prost(bool, tag = "4")]
    pub attribute: bool,
    #[prost(bool, tag = "5")]
    pub wrapped: bool,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}
