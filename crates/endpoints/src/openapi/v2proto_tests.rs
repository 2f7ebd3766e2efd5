//! `/openapi/v2` in gnostic's protobuf form: the message decodes with the same prost types and
//! says what the JSON document says (definitions schema for schema, paths, extensions), and the
//! handler answers as kube-openapi's: content types, ETag shared with JSON, 304, Vary, gzip.

use super::gnostic as g;
use super::tests::{get, groups};
use super::*;
use prost::Message;
use serde_json::{json, Map, Value};

/// A value carried as gnostic `Any` YAML, read back.
pub(super) fn any_value(a: &g::Any) -> Value {
    serde_saphyr::from_str(&a.yaml).unwrap()
}

fn extensions(out: &mut Map<String, Value>, ext: &[g::NamedAny]) {
    for e in ext {
        out.insert(e.name.clone(), any_value(e.value.as_ref().unwrap()));
    }
}

/// A gnostic schema back as Swagger 2.0 JSON (the fields kapi's documents use, and the
/// numeric and string fields whenever set).
pub(super) fn schema_json(s: &g::Schema) -> Value {
    let mut m = Map::new();
    let mut text = |k: &str, v: &str| {
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    };
    text("$ref", &s.xref);
    text("format", &s.format);
    text("title", &s.title);
    text("description", &s.description);
    text("pattern", &s.pattern);
    text("discriminator", &s.discriminator);
    if let Some(d) = &s.default {
        m.insert("default".into(), any_value(d));
    }
    for (k, v) in [
        ("maxLength", s.max_length),
        ("minLength", s.min_length),
        ("maxItems", s.max_items),
        ("minItems", s.min_items),
        ("maxProperties", s.max_properties),
        ("minProperties", s.min_properties),
    ] {
        if v != 0 {
            m.insert(k.into(), json!(v));
        }
    }
    for (k, v) in [("uniqueItems", s.unique_items), ("readOnly", s.read_only)] {
        if v {
            m.insert(k.into(), json!(true));
        }
    }
    if !s.required.is_empty() {
        m.insert("required".into(), json!(s.required));
    }
    if !s.r#enum.is_empty() {
        m.insert(
            "enum".into(),
            Value::Array(s.r#enum.iter().map(any_value).collect()),
        );
    }
    if let Some(ap) = &s.additional_properties {
        let v = match ap.oneof.as_ref().unwrap() {
            g::additional_properties_item::Oneof::Schema(s) => schema_json(s),
            g::additional_properties_item::Oneof::Boolean(b) => json!(b),
        };
        m.insert("additionalProperties".into(), v);
    }
    if let Some(t) = &s.r#type {
        let v = match t.value.as_slice() {
            [one] => json!(one),
            many => json!(many),
        };
        m.insert("type".into(), v);
    }
    if let Some(items) = &s.items {
        let v = match items.schema.as_slice() {
            [one] => schema_json(one),
            many => Value::Array(many.iter().map(schema_json).collect()),
        };
        m.insert("items".into(), v);
    }
    if !s.all_of.is_empty() {
        m.insert(
            "allOf".into(),
            Value::Array(s.all_of.iter().map(schema_json).collect()),
        );
    }
    if let Some(p) = &s.properties {
        let props: Map<String, Value> = p
            .additional_properties
            .iter()
            .map(|n| (n.name.clone(), schema_json(n.value.as_ref().unwrap())))
            .collect();
        m.insert("properties".into(), Value::Object(props));
    }
    extensions(&mut m, &s.vendor_extension);
    Value::Object(m)
}

/// Two JSON values equal regardless of key order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

/// Every definition of `json` reads back from `doc` unchanged, in the same order.
pub(super) fn assert_definitions_match(doc: &g::Document, json: &Value) {
    let defs = &doc.definitions.as_ref().unwrap().additional_properties;
    let json_defs = json["definitions"].as_object().unwrap();
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    let json_names: Vec<&str> = json_defs.keys().map(String::as_str).collect();
    assert_eq!(names, json_names);
    for d in defs {
        let back = schema_json(d.value.as_ref().unwrap());
        assert!(
            same(&back, &json_defs[&d.name]),
            "{}:\n{back}\n!=\n{}",
            d.name,
            json_defs[&d.name]
        );
    }
}

fn operations(item: &g::PathItem) -> Vec<(&'static str, &g::Operation)> {
    [
        ("get", &item.get),
        ("put", &item.put),
        ("post", &item.post),
        ("delete", &item.delete),
        ("patch", &item.patch),
        ("head", &item.head),
        ("options", &item.options),
    ]
    .into_iter()
    .filter_map(|(m, op)| op.as_ref().map(|op| (m, op)))
    .collect()
}

/// A parameter back as JSON (kapi's parameters: body with a schema, or a primitive).
fn parameter_json(p: &g::ParametersItem) -> Value {
    let g::parameters_item::Oneof::Parameter(p) = p.oneof.as_ref().unwrap() else {
        panic!("kapi's documents inline every parameter");
    };
    match p.oneof.as_ref().unwrap() {
        g::parameter::Oneof::BodyParameter(b) => {
            let mut m = Map::new();
            if !b.description.is_empty() {
                m.insert("description".into(), json!(b.description));
            }
            m.insert("in".into(), json!(b.r#in));
            m.insert("name".into(), json!(b.name));
            if b.required {
                m.insert("required".into(), json!(true));
            }
            m.insert("schema".into(), schema_json(b.schema.as_ref().unwrap()));
            Value::Object(m)
        }
        g::parameter::Oneof::NonBodyParameter(n) => {
            use g::non_body_parameter::Oneof;
            let (required, location, description, name, ty, unique) =
                match n.oneof.as_ref().unwrap() {
                    Oneof::QueryParameterSubSchema(q) | Oneof::FormDataParameterSubSchema(q) => (
                        q.required,
                        &q.r#in,
                        &q.description,
                        &q.name,
                        &q.r#type,
                        q.unique_items,
                    ),
                    Oneof::PathParameterSubSchema(q) | Oneof::HeaderParameterSubSchema(q) => (
                        q.required,
                        &q.r#in,
                        &q.description,
                        &q.name,
                        &q.r#type,
                        q.unique_items,
                    ),
                };
            let mut m = Map::new();
            if !description.is_empty() {
                m.insert("description".into(), json!(description));
            }
            m.insert("in".into(), json!(location));
            m.insert("name".into(), json!(name));
            if required {
                m.insert("required".into(), json!(true));
            }
            m.insert("type".into(), json!(ty));
            if unique {
                m.insert("uniqueItems".into(), json!(true));
            }
            Value::Object(m)
        }
    }
}

fn operation_json(op: &g::Operation) -> Value {
    let mut m = Map::new();
    m.insert("consumes".into(), json!(op.consumes));
    m.insert("description".into(), json!(op.description));
    m.insert("operationId".into(), json!(op.operation_id));
    if !op.parameters.is_empty() {
        m.insert(
            "parameters".into(),
            Value::Array(op.parameters.iter().map(parameter_json).collect()),
        );
    }
    m.insert("produces".into(), json!(op.produces));
    let mut responses = Map::new();
    for r in &op.responses.as_ref().unwrap().response_code {
        let g::response_value::Oneof::Response(resp) =
            r.value.as_ref().unwrap().oneof.as_ref().unwrap()
        else {
            panic!("kapi's documents inline every response");
        };
        let mut rm = Map::new();
        rm.insert("description".into(), json!(resp.description));
        if let Some(schema) = &resp.schema {
            let g::schema_item::Oneof::Schema(s) = schema.oneof.as_ref().unwrap() else {
                panic!("a file schema");
            };
            rm.insert("schema".into(), schema_json(s));
        }
        responses.insert(r.name.clone(), Value::Object(rm));
    }
    m.insert("responses".into(), Value::Object(responses));
    m.insert("schemes".into(), json!(op.schemes));
    m.insert("tags".into(), json!(op.tags));
    extensions(&mut m, &op.vendor_extension);
    if op.consumes.is_empty() {
        m.remove("consumes");
    }
    Value::Object(m)
}

/// Every path of `json` reads back from `doc` unchanged: operations with their parameters,
/// responses and extensions, and the path's shared parameters.
pub(super) fn assert_paths_match(doc: &g::Document, json: &Value) {
    let paths = &doc.paths.as_ref().unwrap().path;
    let json_paths = json["paths"].as_object().unwrap();
    assert_eq!(paths.len(), json_paths.len());
    for p in paths {
        let item = p.value.as_ref().unwrap();
        let mut m = Map::new();
        for (method, op) in operations(item) {
            m.insert(method.into(), operation_json(op));
        }
        if !item.parameters.is_empty() {
            m.insert(
                "parameters".into(),
                Value::Array(item.parameters.iter().map(parameter_json).collect()),
            );
        }
        extensions(&mut m, &item.vendor_extension);
        let back = Value::Object(m);
        assert!(
            same(&back, &json_paths[&p.name]),
            "{}:\n{back}\n!=\n{}",
            p.name,
            json_paths[&p.name]
        );
    }
}

fn v2_json(api: &OpenApi) -> Value {
    serde_json::from_slice(get(api, "/openapi/v2", None, &[("accept", "application/json")]).body())
        .unwrap()
}

fn v2_protobuf(api: &OpenApi, accept: &str) -> http::Response<Bytes> {
    get(api, "/openapi/v2", None, &[("accept", accept)])
}

#[test]
fn protobuf_document_says_what_the_json_says() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let json = v2_json(&api);
    let (_, unplaced) = v2proto::document(&json);
    assert_eq!(unplaced, Vec::<String>::new(), "every key has a field");

    let resp = v2_protobuf(&api, V2_PROTOBUF);
    assert_eq!(resp.status(), 200);
    let doc = g::Document::decode(resp.body().as_ref()).unwrap();
    assert_eq!(doc.swagger, "2.0");
    let info = doc.info.as_ref().unwrap();
    assert_eq!(
        (info.title.as_str(), info.version.as_str()),
        ("Kubernetes", "v1.33.0")
    );
    assert_definitions_match(&doc, &json);
    assert_paths_match(&doc, &json);

    // The security scheme and requirement.
    let scheme = &doc
        .security_definitions
        .as_ref()
        .unwrap()
        .additional_properties[0];
    assert_eq!(scheme.name, "BearerToken");
    let Some(g::security_definitions_item::Oneof::ApiKeySecurity(key)) =
        &scheme.value.as_ref().unwrap().oneof
    else {
        panic!("BearerToken is an apiKey scheme");
    };
    assert_eq!(
        (key.r#type.as_str(), key.name.as_str(), key.r#in.as_str()),
        ("apiKey", "authorization", "header")
    );
    assert_eq!(doc.security[0].additional_properties[0].name, "BearerToken");

    // What kubectl reads: a kind's GVK extension as a YAML list, a PATCH's fieldValidation
    // query parameter and the operation's single GVK.
    let cm = doc
        .definitions
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .find(|d| d.name == "io.k8s.api.core.v1.ConfigMap")
        .unwrap();
    let gvk = cm
        .value
        .as_ref()
        .unwrap()
        .vendor_extension
        .iter()
        .find(|e| e.name == "x-kubernetes-group-version-kind")
        .unwrap();
    assert_eq!(
        any_value(gvk.value.as_ref().unwrap()),
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    let item = doc
        .paths
        .as_ref()
        .unwrap()
        .path
        .iter()
        .find(|p| p.name == "/api/v1/namespaces/{namespace}/configmaps/{name}")
        .unwrap()
        .value
        .clone()
        .unwrap();
    let patch = item.patch.unwrap();
    assert!(patch.parameters.iter().any(|p| matches!(
        &p.oneof,
        Some(g::parameters_item::Oneof::Parameter(g::Parameter {
            oneof: Some(g::parameter::Oneof::NonBodyParameter(g::NonBodyParameter {
                oneof: Some(g::non_body_parameter::Oneof::QueryParameterSubSchema(q)),
            })),
        })) if q.name == "fieldValidation"
    )));
    let op_gvk = patch
        .vendor_extension
        .iter()
        .find(|e| e.name == "x-kubernetes-group-version-kind")
        .unwrap();
    assert_eq!(
        any_value(op_gvk.value.as_ref().unwrap()),
        json!({"group": "", "kind": "ConfigMap", "version": "v1"})
    );
}

#[test]
fn any_values_are_yaml() {
    // Strings YAML would read as another type stay strings.
    for v in [
        json!("true"),
        json!("1"),
        json!(""),
        json!("a: b"),
        json!(null),
        json!(3),
        json!(["x", {"k": "v"}]),
    ] {
        let a = v2proto::any(&v);
        assert_eq!(any_value(&a), v, "{}", a.yaml);
        assert!(a.value.is_none());
    }
    assert_eq!(v2proto::any(&json!("get")).yaml.trim_end(), "get");
}

#[test]
fn unknown_keys_are_reported() {
    let doc = json!({
        "swagger": "2.0",
        "definitions": {"a": {"type": "object", "nullable": true, "x-kubernetes-map-type": "atomic"}},
    });
    let (d, unplaced) = v2proto::document(&doc);
    assert_eq!(unplaced, vec!["$.definitions.a.nullable".to_string()]);
    let a = d.definitions.unwrap().additional_properties.remove(0);
    assert_eq!(
        schema_json(&a.value.unwrap()),
        json!({"type": "object", "x-kubernetes-map-type": "atomic"})
    );
}

#[test]
fn both_protobuf_spellings_get_the_current_content_type_and_the_json_etag() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let json_resp = get(&api, "/openapi/v2", None, &[("accept", "application/json")]);
    let etag = json_resp.headers()["etag"].clone();
    for accept in [
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf, application/json",
    ] {
        let resp = v2_protobuf(&api, accept);
        assert_eq!(resp.status(), 200, "{accept}");
        let h = resp.headers();
        assert_eq!(h["content-type"], V2_PROTOBUF, "{accept}");
        assert_eq!(h["etag"], etag, "one ETag for both encodings");
        assert!(h.contains_key("last-modified"));
        assert_eq!(h["accept-ranges"], "bytes");
        assert!(!h.contains_key("cache-control"));
        let vary: Vec<&str> = h
            .get_all("vary")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(vary, ["Accept-Encoding", "Accept"]);
    }
    // No Accept is `*/*`: the first offer, JSON.
    let any = get(&api, "/openapi/v2", None, &[]);
    assert_eq!(any.headers()["content-type"], "application/json");
    // Nothing kube-openapi offers: a bare 406 that still varies.
    let none = get(&api, "/openapi/v2", None, &[("accept", "text/html")]);
    assert_eq!(none.status(), 406);
    assert!(none.body().is_empty());
    let vary: Vec<&str> = none
        .headers()
        .get_all("vary")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(vary, ["Accept-Encoding", "Accept"]);
}

#[test]
fn protobuf_etag_and_dates_give_304() {
    let api = OpenApi::new(&groups(), "v1.33.0");
    let first = v2_protobuf(&api, V2_PROTOBUF);
    let etag = first.headers()["etag"].to_str().unwrap().to_string();
    let last_modified = first.headers()["last-modified"]
        .to_str()
        .unwrap()
        .to_string();
    for (name, value) in [
        ("if-none-match", etag.clone()),
        ("if-none-match", format!("W/{etag}")),
        ("if-none-match", format!("\"other\", {etag}")),
        ("if-modified-since", last_modified.clone()),
    ] {
        let resp = get(
            &api,
            "/openapi/v2",
            None,
            &[("accept", V2_PROTOBUF), (name, value.as_str())],
        );
        assert_eq!(resp.status(), 304, "{name}: {value}");
        let h = resp.headers();
        assert!(resp.body().is_empty());
        assert_eq!(h["etag"].to_str().unwrap(), etag);
        assert!(!h.contains_key("content-type"), "a 304 has no content type");
        assert!(
            !h.contains_key("last-modified"),
            "dropped when an ETag is set"
        );
        assert!(!h.contains_key("content-encoding"));
    }
    // A different ETag wins over a matching date.
    let stale = get(
        &api,
        "/openapi/v2",
        None,
        &[
            ("accept", V2_PROTOBUF),
            ("if-none-match", "\"old\""),
            ("if-modified-since", last_modified.as_str()),
        ],
    );
    assert_eq!(stale.status(), 200);
    let older = get(
        &api,
        "/openapi/v2",
        None,
        &[
            ("accept", V2_PROTOBUF),
            ("if-modified-since", "Mon, 02 Jan 2006 15:04:05 GMT"),
        ],
    );
    assert_eq!(older.status(), 200);
}

#[test]
fn gzip_when_accepted() {
    use std::io::Read;
    let api = OpenApi::new(&groups(), "v1.33.0");
    let plain = v2_protobuf(&api, V2_PROTOBUF);
    assert!(!plain.headers().contains_key("content-encoding"));
    for encoding in ["gzip", "deflate, gzip;q=0.5"] {
        let resp = get(
            &api,
            "/openapi/v2",
            None,
            &[("accept", V2_PROTOBUF), ("accept-encoding", encoding)],
        );
        assert_eq!(resp.headers()["content-encoding"], "gzip", "{encoding}");
        assert_eq!(resp.headers()["content-type"], V2_PROTOBUF);
        let mut body = Vec::new();
        flate2::read::GzDecoder::new(resp.body().as_ref())
            .read_to_end(&mut body)
            .unwrap();
        assert_eq!(body, plain.body().as_ref());
    }
    for encoding in ["gzip;q=0", "br", "*"] {
        let resp = get(
            &api,
            "/openapi/v2",
            None,
            &[("accept", V2_PROTOBUF), ("accept-encoding", encoding)],
        );
        assert!(
            !resp.headers().contains_key("content-encoding"),
            "{encoding}"
        );
    }
}
