//! The Swagger 2.0 JSON document as gnostic's `openapi.v2.Document`, the conversion
//! kube-openapi makes with `openapi_v2.ParseDocument` before `proto.Marshal`: every map becomes
//! `repeated Named*` pairs in document order, keys starting with `x-` become vendor
//! extensions, and values of any shape (extensions, `default`, `enum`, `example`) become
//! `Any` holding the value as YAML. A one-of is chosen the way gnostic's parser settles it:
//! a `$ref` object is a JSON reference, a parameter by its `in`, a security scheme by its
//! `type` (and OAuth2 `flow`).
//!
//! Keys the Swagger 2.0 schema does not allow where they appear have no field to go to;
//! gnostic refuses such a document, so they are collected and reported to the caller.

use super::gnostic as g;
use serde_json::{Map, Value};

/// The document as a gnostic message, and the JSON paths of keys that have no place in it
/// (empty for a valid Swagger 2.0 document).
pub fn document(doc: &Value) -> (g::Document, Vec<String>) {
    let mut cx = Cx::default();
    let out = cx.document(doc);
    (out, cx.unplaced)
}

/// Converts a document piece by piece, for a caller that never holds it whole: each
/// definition, each path, then the other members. The pieces are what [`document`] puts in
/// `definitions`, `paths` and the rest of the message.
#[derive(Default)]
pub(crate) struct Converter {
    cx: Cx,
}

impl Converter {
    /// Definition `name`: one entry of `Document.definitions`.
    pub(crate) fn definition(&mut self, name: &str, schema: &Value) -> g::NamedSchema {
        self.cx.named_schema(name, schema, "$.definitions")
    }

    /// Member `key` of `paths`, as a `Paths` message holding just that entry (a path, or a
    /// vendor extension for a key that is not one).
    pub(crate) fn path(&mut self, key: &str, item: &Value) -> g::Paths {
        let mut paths = g::Paths::default();
        self.cx.path_entry(&mut paths, key, item);
        paths
    }

    /// A document (here: one without `definitions` and `paths`).
    pub(crate) fn document(&mut self, doc: &Value) -> g::Document {
        self.cx.document(doc)
    }

    /// The keys that had no place, so far.
    pub(crate) fn unplaced(self) -> Vec<String> {
        self.cx.unplaced
    }
}

/// Conversion state: where unplaceable keys were seen.
#[derive(Default)]
struct Cx {
    unplaced: Vec<String>,
}

fn object(v: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    v.as_object().unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

fn string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().map(string).collect(),
        Value::Null => Vec::new(),
        other => vec![string(other)],
    }
}

fn boolean(v: &Value) -> bool {
    v.as_bool().unwrap_or(false)
}

fn float(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn int(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_f64().map(|f| f as i64))
        .unwrap_or(0)
}

/// gnostic's `Any`: the value written as YAML (its parser re-marshals the node it read).
pub fn any(v: &Value) -> g::Any {
    g::Any {
        value: None,
        yaml: serde_saphyr::to_string(v).unwrap_or_else(|_| v.to_string()),
    }
}

fn named_any(name: &str, v: &Value) -> g::NamedAny {
    g::NamedAny {
        name: name.to_string(),
        value: Some(any(v)),
    }
}

/// Fills the fields every primitive-typed parameter, header and item shares, returning
/// whether `key` was one of them. The message types differ only in their tags.
macro_rules! primitive_field {
    ($cx:expr, $target:expr, $key:expr, $value:expr, $path:expr) => {
        match $key {
            "type" => {
                $target.r#type = string($value);
                true
            }
            "format" => {
                $target.format = string($value);
                true
            }
            "items" => {
                $target.items = Some(From::from(
                    $cx.primitives_items($value, &format!("{}.items", $path)),
                ));
                true
            }
            "collectionFormat" => {
                $target.collection_format = string($value);
                true
            }
            "default" => {
                $target.default = Some(any($value));
                true
            }
            "maximum" => {
                $target.maximum = float($value);
                true
            }
            "exclusiveMaximum" => {
                $target.exclusive_maximum = boolean($value);
                true
            }
            "minimum" => {
                $target.minimum = float($value);
                true
            }
            "exclusiveMinimum" => {
                $target.exclusive_minimum = boolean($value);
                true
            }
            "maxLength" => {
                $target.max_length = int($value);
                true
            }
            "minLength" => {
                $target.min_length = int($value);
                true
            }
            "pattern" => {
                $target.pattern = string($value);
                true
            }
            "maxItems" => {
                $target.max_items = int($value);
                true
            }
            "minItems" => {
                $target.min_items = int($value);
                true
            }
            "uniqueItems" => {
                $target.unique_items = boolean($value);
                true
            }
            "enum" => {
                $target.r#enum = $value.as_array().into_iter().flatten().map(any).collect();
                true
            }
            "multipleOf" => {
                $target.multiple_of = float($value);
                true
            }
            k if k.starts_with("x-") => {
                $target.vendor_extension.push(named_any(k, $value));
                true
            }
            _ => false,
        }
    };
}

/// A non-body parameter's sub-schema from `$v`: `required`, `in`, `description`, `name`, the
/// boolean fields `$extra` (query and form data: `allowEmptyValue`), then the primitive
/// fields; any other key is unplaced.
macro_rules! sub_schema {
    ($cx:expr, $ty:ty, $v:expr, $path:expr $(, { $($key:literal => $field:ident),* })?) => {{
        let mut p = <$ty>::default();
        for (k, v) in object($v) {
            let handled = match k.as_str() {
                "required" => {
                    p.required = boolean(v);
                    true
                }
                "in" => {
                    p.r#in = string(v);
                    true
                }
                "description" => {
                    p.description = string(v);
                    true
                }
                "name" => {
                    p.name = string(v);
                    true
                }
                $($($key => {
                    p.$field = boolean(v);
                    true
                })*)?
                key => primitive_field!($cx, p, key, v, $path),
            };
            if !handled {
                $cx.unplaced($path, k);
            }
        }
        p
    }};
}

impl Cx {
    fn unplaced(&mut self, path: &str, key: &str) {
        self.unplaced.push(format!("{path}.{key}"));
    }

    /// Vendor extensions of an object whose only other fields are handled by the caller.
    fn extension(&mut self, out: &mut Vec<g::NamedAny>, path: &str, key: &str, v: &Value) {
        if key.starts_with("x-") {
            out.push(named_any(key, v));
        } else {
            self.unplaced(path, key);
        }
    }

    fn document(&mut self, doc: &Value) -> g::Document {
        let mut d = g::Document::default();
        let path = "$";
        for (k, v) in object(doc) {
            match k.as_str() {
                "swagger" => d.swagger = string(v),
                "info" => d.info = Some(self.info(v, "$.info")),
                "host" => d.host = string(v),
                "basePath" => d.base_path = string(v),
                "schemes" => d.schemes = strings(v),
                "consumes" => d.consumes = strings(v),
                "produces" => d.produces = strings(v),
                "paths" => d.paths = Some(self.paths(v)),
                "definitions" => {
                    d.definitions = Some(g::Definitions {
                        additional_properties: self.named_schemas(v, "$.definitions"),
                    })
                }
                "parameters" => {
                    let mut defs = g::ParameterDefinitions::default();
                    for (name, p) in object(v) {
                        defs.additional_properties.push(g::NamedParameter {
                            name: name.clone(),
                            value: Some(self.parameter(p, &format!("$.parameters.{name}"))),
                        });
                    }
                    d.parameters = Some(defs);
                }
                "responses" => {
                    let mut defs = g::ResponseDefinitions::default();
                    for (name, r) in object(v) {
                        defs.additional_properties.push(g::NamedResponse {
                            name: name.clone(),
                            value: Some(self.response(r, &format!("$.responses.{name}"))),
                        });
                    }
                    d.responses = Some(defs);
                }
                "security" => d.security = security(v),
                "securityDefinitions" => {
                    let mut defs = g::SecurityDefinitions::default();
                    for (name, s) in object(v) {
                        let p = format!("$.securityDefinitions.{name}");
                        defs.additional_properties
                            .push(g::NamedSecurityDefinitionsItem {
                                name: name.clone(),
                                value: Some(self.security_scheme(s, &p)),
                            });
                    }
                    d.security_definitions = Some(defs);
                }
                "tags" => {
                    d.tags = v
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|t| self.tag(t))
                        .collect()
                }
                "externalDocs" => d.external_docs = Some(self.external_docs(v, "$.externalDocs")),
                _ => self.extension(&mut d.vendor_extension, path, k, v),
            }
        }
        d
    }

    fn info(&mut self, v: &Value, path: &str) -> g::Info {
        let mut info = g::Info::default();
        for (k, v) in object(v) {
            match k.as_str() {
                "title" => info.title = string(v),
                "version" => info.version = string(v),
                "description" => info.description = string(v),
                "termsOfService" => info.terms_of_service = string(v),
                "contact" => {
                    let mut c = g::Contact::default();
                    for (ck, cv) in object(v) {
                        match ck.as_str() {
                            "name" => c.name = string(cv),
                            "url" => c.url = string(cv),
                            "email" => c.email = string(cv),
                            _ => self.extension(&mut c.vendor_extension, path, ck, cv),
                        }
                    }
                    info.contact = Some(c);
                }
                "license" => {
                    let mut l = g::License::default();
                    for (lk, lv) in object(v) {
                        match lk.as_str() {
                            "name" => l.name = string(lv),
                            "url" => l.url = string(lv),
                            _ => self.extension(&mut l.vendor_extension, path, lk, lv),
                        }
                    }
                    info.license = Some(l);
                }
                _ => self.extension(&mut info.vendor_extension, path, k, v),
            }
        }
        info
    }

    fn external_docs(&mut self, v: &Value, path: &str) -> g::ExternalDocs {
        let mut e = g::ExternalDocs::default();
        for (k, v) in object(v) {
            match k.as_str() {
                "description" => e.description = string(v),
                "url" => e.url = string(v),
                _ => self.extension(&mut e.vendor_extension, path, k, v),
            }
        }
        e
    }

    fn tag(&mut self, v: &Value) -> g::Tag {
        let mut t = g::Tag::default();
        for (k, v) in object(v) {
            match k.as_str() {
                "name" => t.name = string(v),
                "description" => t.description = string(v),
                "externalDocs" => t.external_docs = Some(self.external_docs(v, "$.tags")),
                _ => self.extension(&mut t.vendor_extension, "$.tags", k, v),
            }
        }
        t
    }

    fn paths(&mut self, v: &Value) -> g::Paths {
        let mut paths = g::Paths::default();
        for (k, item) in object(v) {
            self.path_entry(&mut paths, k, item);
        }
        paths
    }

    fn path_entry(&mut self, paths: &mut g::Paths, k: &str, item: &Value) {
        if k.starts_with('/') {
            paths.path.push(g::NamedPathItem {
                name: k.to_string(),
                value: Some(self.path_item(item, &format!("$.paths.{k}"))),
            });
        } else {
            self.extension(&mut paths.vendor_extension, "$.paths", k, item);
        }
    }

    fn path_item(&mut self, v: &Value, path: &str) -> g::PathItem {
        let mut item = g::PathItem::default();
        for (k, v) in object(v) {
            let op_path = format!("{path}.{k}");
            match k.as_str() {
                "$ref" => item.xref = string(v),
                "get" => item.get = Some(self.operation(v, &op_path)),
                "put" => item.put = Some(self.operation(v, &op_path)),
                "post" => item.post = Some(self.operation(v, &op_path)),
                "delete" => item.delete = Some(self.operation(v, &op_path)),
                "options" => item.options = Some(self.operation(v, &op_path)),
                "head" => item.head = Some(self.operation(v, &op_path)),
                "patch" => item.patch = Some(self.operation(v, &op_path)),
                "parameters" => item.parameters = self.parameters(v, &op_path),
                _ => self.extension(&mut item.vendor_extension, path, k, v),
            }
        }
        item
    }

    fn operation(&mut self, v: &Value, path: &str) -> g::Operation {
        let mut op = g::Operation::default();
        for (k, v) in object(v) {
            match k.as_str() {
                "tags" => op.tags = strings(v),
                "summary" => op.summary = string(v),
                "description" => op.description = string(v),
                "externalDocs" => op.external_docs = Some(self.external_docs(v, path)),
                "operationId" => op.operation_id = string(v),
                "produces" => op.produces = strings(v),
                "consumes" => op.consumes = strings(v),
                "parameters" => op.parameters = self.parameters(v, &format!("{path}.parameters")),
                "responses" => op.responses = Some(self.responses(v, &format!("{path}.responses"))),
                "schemes" => op.schemes = strings(v),
                "deprecated" => op.deprecated = boolean(v),
                "security" => op.security = security(v),
                _ => self.extension(&mut op.vendor_extension, path, k, v),
            }
        }
        op
    }

    fn parameters(&mut self, v: &Value, path: &str) -> Vec<g::ParametersItem> {
        v.as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, p)| {
                let path = format!("{path}[{i}]");
                let oneof = match json_reference(p) {
                    Some(r) => g::parameters_item::Oneof::JsonReference(r),
                    None => g::parameters_item::Oneof::Parameter(self.parameter(p, &path)),
                };
                g::ParametersItem { oneof: Some(oneof) }
            })
            .collect()
    }

    fn parameter(&mut self, v: &Value, path: &str) -> g::Parameter {
        let location = object(v).get("in").and_then(Value::as_str).unwrap_or("");
        let oneof = match location {
            "body" => g::parameter::Oneof::BodyParameter(self.body_parameter(v, path)),
            _ => g::parameter::Oneof::NonBodyParameter(self.non_body_parameter(v, location, path)),
        };
        g::Parameter { oneof: Some(oneof) }
    }

    fn body_parameter(&mut self, v: &Value, path: &str) -> g::BodyParameter {
        let mut p = g::BodyParameter::default();
        for (k, v) in object(v) {
            match k.as_str() {
                "description" => p.description = string(v),
                "name" => p.name = string(v),
                "in" => p.r#in = string(v),
                "required" => p.required = boolean(v),
                "schema" => p.schema = Some(self.schema(v, &format!("{path}.schema"))),
                _ => self.extension(&mut p.vendor_extension, path, k, v),
            }
        }
        p
    }

    fn non_body_parameter(&mut self, v: &Value, location: &str, path: &str) -> g::NonBodyParameter {
        use g::non_body_parameter::Oneof;
        use g::{FormDataParameterSubSchema as Form, HeaderParameterSubSchema as Header};
        // Header and path parameters have the same fields; so have query and form data.
        let oneof = match location {
            "header" => Oneof::HeaderParameterSubSchema(sub_schema!(self, Header, v, path)),
            "path" => Oneof::PathParameterSubSchema(sub_schema!(self, Header, v, path)),
            "formData" => Oneof::FormDataParameterSubSchema(sub_schema!(self, Form, v, path, {
                "allowEmptyValue" => allow_empty_value
            })),
            _ => Oneof::QueryParameterSubSchema(sub_schema!(self, Form, v, path, {
                "allowEmptyValue" => allow_empty_value
            })),
        };
        g::NonBodyParameter { oneof: Some(oneof) }
    }

    fn primitives_items(&mut self, v: &Value, path: &str) -> g::PrimitivesItems {
        let mut items = g::PrimitivesItems::default();
        for (k, v) in object(v) {
            if !primitive_field!(self, items, k.as_str(), v, path) {
                self.unplaced(path, k);
            }
        }
        items
    }

    fn header(&mut self, v: &Value, path: &str) -> g::Header {
        let mut h = g::Header::default();
        for (k, v) in object(v) {
            let handled = match k.as_str() {
                "description" => {
                    h.description = string(v);
                    true
                }
                key => primitive_field!(self, h, key, v, path),
            };
            if !handled {
                self.unplaced(path, k);
            }
        }
        h
    }

    fn responses(&mut self, v: &Value, path: &str) -> g::Responses {
        let mut out = g::Responses::default();
        for (k, v) in object(v) {
            let is_code = k == "default" || (k.len() == 3 && k.bytes().all(|b| b.is_ascii_digit()));
            if is_code {
                let oneof = match json_reference(v) {
                    Some(r) => g::response_value::Oneof::JsonReference(r),
                    None => {
                        g::response_value::Oneof::Response(self.response(v, &format!("{path}.{k}")))
                    }
                };
                out.response_code.push(g::NamedResponseValue {
                    name: k.clone(),
                    value: Some(g::ResponseValue { oneof: Some(oneof) }),
                });
            } else {
                self.extension(&mut out.vendor_extension, path, k, v);
            }
        }
        out
    }

    fn response(&mut self, v: &Value, path: &str) -> g::Response {
        let mut r = g::Response::default();
        for (k, v) in object(v) {
            match k.as_str() {
                "description" => r.description = string(v),
                "schema" => {
                    let schema = self.schema(v, &format!("{path}.schema"));
                    r.schema = Some(g::SchemaItem {
                        oneof: Some(g::schema_item::Oneof::Schema(Box::new(schema))),
                    });
                }
                "headers" => {
                    let mut headers = g::Headers::default();
                    for (name, h) in object(v) {
                        headers.additional_properties.push(g::NamedHeader {
                            name: name.clone(),
                            value: Some(self.header(h, &format!("{path}.headers.{name}"))),
                        });
                    }
                    r.headers = Some(headers);
                }
                "examples" => {
                    r.examples = Some(g::Examples {
                        additional_properties: object(v)
                            .iter()
                            .map(|(name, e)| named_any(name, e))
                            .collect(),
                    })
                }
                _ => self.extension(&mut r.vendor_extension, path, k, v),
            }
        }
        r
    }

    fn security_scheme(&mut self, v: &Value, path: &str) -> g::SecurityDefinitionsItem {
        use g::security_definitions_item::Oneof;
        let m = object(v);
        let field = |name: &str| m.get(name).map(string).unwrap_or_default();
        let mut extensions = Vec::new();
        let mut scopes = None;
        for (k, v) in m {
            match k.as_str() {
                "type" | "description" | "name" | "in" | "flow" | "authorizationUrl"
                | "tokenUrl" => {}
                "scopes" => {
                    scopes = Some(g::Oauth2Scopes {
                        additional_properties: object(v)
                            .iter()
                            .map(|(name, s)| g::NamedString {
                                name: name.clone(),
                                value: string(s),
                            })
                            .collect(),
                    })
                }
                _ => self.extension(&mut extensions, path, k, v),
            }
        }
        let oneof = match (field("type").as_str(), field("flow").as_str()) {
            ("basic", _) => Oneof::BasicAuthenticationSecurity(g::BasicAuthenticationSecurity {
                r#type: field("type"),
                description: field("description"),
                vendor_extension: extensions,
            }),
            ("oauth2", "implicit") => Oneof::Oauth2ImplicitSecurity(g::Oauth2ImplicitSecurity {
                r#type: field("type"),
                flow: field("flow"),
                scopes,
                authorization_url: field("authorizationUrl"),
                description: field("description"),
                vendor_extension: extensions,
            }),
            ("oauth2", "accessCode") => {
                Oneof::Oauth2AccessCodeSecurity(g::Oauth2AccessCodeSecurity {
                    r#type: field("type"),
                    flow: field("flow"),
                    scopes,
                    authorization_url: field("authorizationUrl"),
                    token_url: field("tokenUrl"),
                    description: field("description"),
                    vendor_extension: extensions,
                })
            }
            ("oauth2", flow) => {
                let s = g::Oauth2TokenUrlSecurity {
                    r#type: field("type"),
                    flow: field("flow"),
                    scopes,
                    token_url: field("tokenUrl"),
                    description: field("description"),
                    vendor_extension: extensions,
                };
                if flow == "password" {
                    Oneof::Oauth2PasswordSecurity(s)
                } else {
                    Oneof::Oauth2ApplicationSecurity(s)
                }
            }
            _ => Oneof::ApiKeySecurity(g::ApiKeySecurity {
                r#type: field("type"),
                name: field("name"),
                r#in: field("in"),
                description: field("description"),
                vendor_extension: extensions,
            }),
        };
        g::SecurityDefinitionsItem { oneof: Some(oneof) }
    }

    fn named_schemas(&mut self, v: &Value, path: &str) -> Vec<g::NamedSchema> {
        object(v)
            .iter()
            .map(|(name, s)| self.named_schema(name, s, path))
            .collect()
    }

    fn named_schema(&mut self, name: &str, s: &Value, path: &str) -> g::NamedSchema {
        g::NamedSchema {
            name: name.to_string(),
            value: Some(self.schema(s, &format!("{path}.{name}"))),
        }
    }

    pub(crate) fn schema(&mut self, v: &Value, path: &str) -> g::Schema {
        let mut s = g::Schema::default();
        for (k, v) in object(v) {
            match k.as_str() {
                "$ref" => s.xref = string(v),
                "format" => s.format = string(v),
                "title" => s.title = string(v),
                "description" => s.description = string(v),
                "default" => s.default = Some(any(v)),
                "multipleOf" => s.multiple_of = float(v),
                "maximum" => s.maximum = float(v),
                "exclusiveMaximum" => s.exclusive_maximum = boolean(v),
                "minimum" => s.minimum = float(v),
                "exclusiveMinimum" => s.exclusive_minimum = boolean(v),
                "maxLength" => s.max_length = int(v),
                "minLength" => s.min_length = int(v),
                "pattern" => s.pattern = string(v),
                "maxItems" => s.max_items = int(v),
                "minItems" => s.min_items = int(v),
                "uniqueItems" => s.unique_items = boolean(v),
                "maxProperties" => s.max_properties = int(v),
                "minProperties" => s.min_properties = int(v),
                "required" => s.required = strings(v),
                "enum" => s.r#enum = v.as_array().into_iter().flatten().map(any).collect(),
                "additionalProperties" => {
                    use g::additional_properties_item::Oneof;
                    let oneof = match v {
                        Value::Bool(b) => Oneof::Boolean(*b),
                        other => Oneof::Schema(Box::new(
                            self.schema(other, &format!("{path}.additionalProperties")),
                        )),
                    };
                    s.additional_properties =
                        Some(g::AdditionalPropertiesItem { oneof: Some(oneof) });
                }
                "type" => s.r#type = Some(g::TypeItem { value: strings(v) }),
                "items" => {
                    let items_path = format!("{path}.items");
                    let schema = match v {
                        Value::Array(a) => a.iter().map(|i| self.schema(i, &items_path)).collect(),
                        other => vec![self.schema(other, &items_path)],
                    };
                    s.items = Some(g::ItemsItem { schema });
                }
                "allOf" => {
                    let all_path = format!("{path}.allOf");
                    s.all_of = v
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|i| self.schema(i, &all_path))
                        .collect();
                }
                "properties" => {
                    s.properties = Some(g::Properties {
                        additional_properties: self.named_schemas(v, path),
                    })
                }
                "discriminator" => s.discriminator = string(v),
                "readOnly" => s.read_only = boolean(v),
                "xml" => {
                    let mut x = g::Xml::default();
                    for (xk, xv) in object(v) {
                        match xk.as_str() {
                            "name" => x.name = string(xv),
                            "namespace" => x.namespace = string(xv),
                            "prefix" => x.prefix = string(xv),
                            "attribute" => x.attribute = boolean(xv),
                            "wrapped" => x.wrapped = boolean(xv),
                            _ => self.extension(&mut x.vendor_extension, path, xk, xv),
                        }
                    }
                    s.xml = Some(x);
                }
                "externalDocs" => s.external_docs = Some(self.external_docs(v, path)),
                "example" => s.example = Some(any(v)),
                _ => self.extension(&mut s.vendor_extension, path, k, v),
            }
        }
        s
    }
}

/// A `{"$ref": ...}` object (gnostic's `JsonReference`), as opposed to an inline definition.
fn json_reference(v: &Value) -> Option<g::JsonReference> {
    let m = v.as_object()?;
    let xref = m.get("$ref")?.as_str()?.to_string();
    Some(g::JsonReference {
        xref,
        description: m.get("description").map(string).unwrap_or_default(),
    })
}

fn security(v: &Value) -> Vec<g::SecurityRequirement> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|req| g::SecurityRequirement {
            additional_properties: object(req)
                .iter()
                .map(|(name, scopes)| g::NamedStringArray {
                    name: name.clone(),
                    value: Some(g::StringArray {
                        value: strings(scopes),
                    }),
                })
                .collect(),
        })
        .collect()
}
