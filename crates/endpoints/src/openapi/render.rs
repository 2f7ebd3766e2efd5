//! Renders routes as OpenAPI 3.0 `paths` and Swagger 2.0 `paths` (keys in Go's sorted order,
//! as kube-apiserver's encoder writes them).

use super::params::Param;
use super::paths::{Body, Operation, Route, PATCH_TYPES};
use super::schemas::RefStyle;
use serde_json::{json, Map, Value};

fn param(p: &Param, style: RefStyle) -> Value {
    let mut m = Map::new();
    if !p.description.is_empty() {
        m.insert("description".into(), json!(p.description));
    }
    m.insert("in".into(), json!(p.location));
    m.insert("name".into(), json!(p.name));
    if p.required {
        m.insert("required".into(), json!(true));
    }
    match style {
        RefStyle::V3 => {
            m.insert(
                "schema".into(),
                json!({ "type": p.ty, "uniqueItems": true }),
            );
        }
        RefStyle::V2 => {
            m.insert("type".into(), json!(p.ty));
            m.insert("uniqueItems".into(), json!(true));
        }
    }
    Value::Object(m)
}

fn content(media_types: &[&str], schema: &str, style: RefStyle) -> Value {
    let mut sorted = media_types.to_vec();
    sorted.sort_unstable();
    let mut m = Map::new();
    for mt in sorted {
        m.insert(mt.to_string(), json!({ "schema": style.reference(schema) }));
    }
    Value::Object(m)
}

const ANY: &[&str] = &["*/*"];

/// A body's media types, schema name and whether it is required.
fn body_parts(body: &Body) -> (&'static [&'static str], &str, bool) {
    match body {
        Body::Object(s) => (ANY, s.as_str(), true),
        Body::Patch(s) => (PATCH_TYPES, s.as_str(), true),
        Body::DeleteOptions(s) => (ANY, s.as_str(), false),
    }
}

fn operation(op: &Operation, tag: &str, style: RefStyle) -> Value {
    let mut m = Map::new();
    if style == RefStyle::V2 {
        let consumes: Vec<&str> = op
            .body
            .as_ref()
            .map(|b| body_parts(b).0.to_vec())
            .unwrap_or_else(|| vec!["*/*"]);
        m.insert("consumes".into(), json!(consumes));
    }
    m.insert("description".into(), json!(op.description));
    m.insert("operationId".into(), json!(op.operation_id));
    let mut params: Vec<Value> = Vec::new();
    if let (RefStyle::V2, Some(body)) = (style, &op.body) {
        let (_, schema, required) = body_parts(body);
        params.push(if required {
            json!({ "in": "body", "name": "body", "schema": style.reference(schema), "required": true })
        } else {
            json!({ "in": "body", "name": "body", "schema": style.reference(schema) })
        });
    }
    params.extend(op.params.iter().map(|p| param(p, style)));
    if !params.is_empty() {
        m.insert("parameters".into(), Value::Array(params));
    }
    if style == RefStyle::V2 {
        m.insert("produces".into(), json!(op.produces));
    }
    if let (RefStyle::V3, Some(body)) = (style, &op.body) {
        let (types, schema, required) = body_parts(body);
        let content = content(types, schema, style);
        let rb = if required {
            json!({ "content": content, "required": true })
        } else {
            json!({ "content": content })
        };
        m.insert("requestBody".into(), rb);
    }
    let mut responses = Map::new();
    for (code, description, schema) in &op.responses {
        let mut r = Map::new();
        match (style, schema) {
            (RefStyle::V3, Some(s)) => {
                r.insert("content".into(), content(op.produces, s, style));
                r.insert("description".into(), json!(description));
            }
            (RefStyle::V2, Some(s)) => {
                r.insert("description".into(), json!(description));
                r.insert("schema".into(), style.reference(s));
            }
            (_, None) => {
                r.insert("description".into(), json!(description));
            }
        }
        responses.insert(code.to_string(), Value::Object(r));
    }
    m.insert("responses".into(), Value::Object(responses));
    if style == RefStyle::V2 {
        m.insert("schemes".into(), json!(["https"]));
    }
    m.insert("tags".into(), json!([tag]));
    if let Some(action) = op.action {
        m.insert("x-kubernetes-action".into(), json!(action));
    }
    if let Some((g, v, k)) = &op.gvk {
        m.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({ "group": g, "kind": k, "version": v }),
        );
    }
    Value::Object(m)
}

/// The members of the `paths` object for `routes`, in order, each rendered only when the
/// iterator reaches it. Of routes with the same path the last one is the member (the place
/// is the first one's: they are adjacent once sorted), as inserting each into a map gives.
pub fn path_items(routes: &[Route], style: RefStyle) -> impl Iterator<Item = (&str, Value)> {
    let mut sorted: Vec<&Route> = routes.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut sorted = sorted.into_iter().peekable();
    std::iter::from_fn(move || loop {
        let route = sorted.next()?;
        if sorted.peek().is_some_and(|next| next.path == route.path) {
            continue;
        }
        return Some((route.path.as_str(), path_item(route, style)));
    })
}

fn path_item(route: &Route, style: RefStyle) -> Value {
    let mut item = Map::new();
    let mut ops: Vec<&Operation> = route.operations.iter().collect();
    ops.sort_by_key(|o| o.method);
    for op in ops {
        item.insert(op.method.to_string(), operation(op, &route.tag, style));
    }
    if !route.params.is_empty() {
        item.insert(
            "parameters".into(),
            Value::Array(route.params.iter().map(|p| param(p, style)).collect()),
        );
    }
    // "parameters" sorts among the methods in Go's key order.
    let mut keys: Vec<String> = item.keys().cloned().collect();
    keys.sort();
    let ordered: Map<String, Value> = keys
        .into_iter()
        .filter_map(|k| item.remove(&k).map(|v| (k, v)))
        .collect();
    Value::Object(ordered)
}

/// The bearer-token security scheme every kube-apiserver document declares.
pub fn bearer_scheme() -> Value {
    json!({ "BearerToken": { "description": "Bearer Token authentication", "in": "header", "name": "authorization", "type": "apiKey" } })
}
