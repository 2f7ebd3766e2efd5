//! The schema as OpenAPI publishes it, after upstream's `pkg/controller/openapi/builder`: v3
//! keeps the schema as written; v2 goes through `openapiv2.ToStructuralOpenAPIV2`, which drops
//! what v2 clients (kubectl's older validation) cannot read. The document around it (the
//! `ObjectMeta` reference, `x-kubernetes-group-version-kind`) is the endpoints' job.

use serde_json::{Map, Value};

/// `ToStructuralOpenAPIV2` on the schema JSON: no `allOf`/`anyOf`/`oneOf`/`not`; a nullable
/// schema loses its type, items and properties (and is no longer required by its parent); a
/// schema preserving unknown fields loses items and properties, and its `object` type; an array
/// left without items loses its type; nullable map values drop the map's `required`.
pub fn to_v2(schema: &Value) -> Value {
    let mut out = schema.clone();
    if let Value::Object(m) = &mut out {
        visit(m, 0);
    }
    out
}

fn is_true(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool) == Some(true)
}

fn visit(s: &mut Map<String, Value>, depth: usize) {
    if depth > super::node::MAX_DEPTH {
        return;
    }
    for k in ["allOf", "anyOf", "oneOf", "not"] {
        s.remove(k);
    }
    if is_true(s, "nullable") {
        s.remove("type");
        s.remove("nullable");
        s.remove("items");
        s.remove("properties");
    }
    if is_true(s, "x-kubernetes-preserve-unknown-fields") {
        s.remove("items");
        s.remove("properties");
    }
    if !s.contains_key("items") && s.get("type").and_then(Value::as_str) == Some("array") {
        s.remove("type");
    }
    // kubectl's v2 reading of an object type with unknown fields rejects what it cannot see.
    if is_true(s, "x-kubernetes-preserve-unknown-fields")
        && s.get("type").and_then(Value::as_str) == Some("object")
    {
        s.remove("type");
    }
    // A nullable field may be sent as null, which v2 clients would report as missing.
    let nullable: Vec<String> = s
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(_, v)| v.get("nullable").and_then(Value::as_bool) == Some(true))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    let nullable_values = s
        .get("additionalProperties")
        .and_then(|a| a.get("nullable"))
        .and_then(Value::as_bool)
        == Some(true);
    if nullable_values {
        s.remove("required");
    }
    if let Some(Value::Array(required)) = s.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !nullable.iter().any(|n| n == r)));
        if required.is_empty() {
            s.remove("required");
        }
    }
    if let Some(Value::Object(p)) = s.get_mut("properties") {
        for v in p.values_mut() {
            if let Value::Object(m) = v {
                visit(m, depth.saturating_add(1));
            }
        }
    }
    for k in ["items", "additionalProperties"] {
        if let Some(Value::Object(m)) = s.get_mut(k) {
            visit(m, depth.saturating_add(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::to_v2;
    use serde_json::json;

    #[test]
    fn v2_drops_what_v2_clients_cannot_read() {
        let v3 = json!({
            "type": "object",
            "required": ["a", "n"],
            "properties": {
                "a": {"type": "string", "oneOf": [{"format": "x"}]},
                "n": {"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"k": {"type": "string"}}},
                "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                         "items": {"type": "string"}},
                "m": {"type": "object", "required": ["z"],
                      "additionalProperties": {"type": "string", "nullable": true}}
            }
        });
        assert_eq!(
            to_v2(&v3),
            json!({
                "type": "object",
                "required": ["a"],
                "properties": {
                    "a": {"type": "string"},
                    "n": {},
                    "free": {"x-kubernetes-preserve-unknown-fields": true},
                    "list": {"x-kubernetes-preserve-unknown-fields": true},
                    "m": {"type": "object", "additionalProperties": {}}
                }
            })
        );
    }
}
