//! Upstream's v1 defaults (`SetDefaults_CustomResourceDefinition`,
//! `SetDefaults_CustomResourceDefinitionSpec`, `SetDefaults_ServiceReference`) and the Go zero
//! values of required fields a body leaves out.

use super::storage_version;
use kapi_machinery::Object;
use kapi_registry::kind::{default_in, object_at_mut, objects_at_mut};
use serde_json::{json, Map, Value};

/// Sets each `(key, zero)` that is absent or null.
fn zeros(m: &mut Map<String, Value>, fields: &[(&str, Value)]) {
    for (k, z) in fields {
        default_in(m, k, z.clone());
    }
}

/// Every schema nested in a `JSONSchemaProps` (as JSON).
fn sub_schemas(s: &mut Map<String, Value>) -> Vec<&mut Map<String, Value>> {
    let mut out = Vec::new();
    for (k, v) in s.iter_mut() {
        match (k.as_str(), v) {
            (
                "properties" | "patternProperties" | "definitions" | "dependencies",
                Value::Object(m),
            ) => out.extend(m.values_mut().filter_map(Value::as_object_mut)),
            ("items" | "additionalProperties" | "additionalItems" | "not", Value::Object(m)) => {
                out.push(m)
            }
            ("items" | "allOf" | "anyOf" | "oneOf", Value::Array(a)) => {
                out.extend(a.iter_mut().filter_map(Value::as_object_mut))
            }
            _ => {}
        }
    }
    out
}

fn fill_schema(s: &mut Map<String, Value>) {
    for rule in objects_at_mut(s, "x-kubernetes-validations") {
        zeros(rule, &[("rule", json!(""))]);
    }
    for sub in sub_schemas(s) {
        fill_schema(sub);
    }
}

/// Fills the fields the typed struct requires with Go's zero values where the body left them
/// out.
pub fn fill_go_zeros(mut body: Object) -> Object {
    let root = body.as_map_mut();
    zeros(root, &[("spec", json!({}))]);
    if let Some(spec) = object_at_mut(root, "spec") {
        zeros(
            spec,
            &[
                ("group", json!("")),
                ("names", json!({})),
                ("scope", json!("")),
                ("versions", json!([])),
            ],
        );
        if let Some(names) = object_at_mut(spec, "names") {
            zeros(names, &[("kind", json!("")), ("plural", json!(""))]);
        }
        for v in objects_at_mut(spec, "versions") {
            zeros(
                v,
                &[
                    ("name", json!("")),
                    ("served", json!(false)),
                    ("storage", json!(false)),
                ],
            );
            for c in objects_at_mut(v, "additionalPrinterColumns") {
                zeros(
                    c,
                    &[
                        ("name", json!("")),
                        ("type", json!("")),
                        ("jsonPath", json!("")),
                    ],
                );
            }
            for f in objects_at_mut(v, "selectableFields") {
                zeros(f, &[("jsonPath", json!(""))]);
            }
            if let Some(scale) =
                object_at_mut(v, "subresources").and_then(|s| object_at_mut(s, "scale"))
            {
                zeros(
                    scale,
                    &[
                        ("specReplicasPath", json!("")),
                        ("statusReplicasPath", json!("")),
                    ],
                );
            }
            if let Some(s) =
                object_at_mut(v, "schema").and_then(|s| object_at_mut(s, "openAPIV3Schema"))
            {
                fill_schema(s);
            }
        }
        if let Some(conv) = object_at_mut(spec, "conversion") {
            zeros(conv, &[("strategy", json!(""))]);
            if let Some(wh) = object_at_mut(conv, "webhook") {
                zeros(wh, &[("conversionReviewVersions", json!([]))]);
                if let Some(svc) =
                    object_at_mut(wh, "clientConfig").and_then(|c| object_at_mut(c, "service"))
                {
                    zeros(svc, &[("name", json!("")), ("namespace", json!(""))]);
                }
            }
        }
    }
    if let Some(status) = object_at_mut(root, "status") {
        if let Some(names) = object_at_mut(status, "acceptedNames") {
            zeros(names, &[("kind", json!("")), ("plural", json!(""))]);
        }
        for c in objects_at_mut(status, "conditions") {
            zeros(c, &[("type", json!("")), ("status", json!(""))]);
        }
    }
    body
}

fn non_empty_str<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The v1 defaults: `singular` (lowercase kind) and `listKind` (kind + `List`), conversion
/// `None`, webhook service port 443, and `status.storedVersions` from the storage version when
/// empty.
pub fn set_defaults(obj: &mut Object) {
    let storage = storage_version(obj).map(str::to_string);
    if let Some(spec) = object_at_mut(obj.as_map_mut(), "spec") {
        if let Some(names) = object_at_mut(spec, "names") {
            let kind = non_empty_str(names, "kind").unwrap_or_default().to_string();
            if non_empty_str(names, "singular").is_none() {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
            if non_empty_str(names, "listKind").is_none() && !kind.is_empty() {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
        }
        default_in(spec, "conversion", json!({"strategy": "None"}));
        if let Some(svc) = object_at_mut(spec, "conversion")
            .and_then(|c| object_at_mut(c, "webhook"))
            .and_then(|w| object_at_mut(w, "clientConfig"))
            .and_then(|c| object_at_mut(c, "service"))
        {
            default_in(svc, "port", json!(443));
        }
    }
    let Some(storage) = storage else {
        return;
    };
    let empty = obj
        .get("status")
        .and_then(|s| s.get("storedVersions"))
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty {
        kapi_registry::kind::obj_mut(obj, &["status"])
            .insert("storedVersions".into(), json!([storage]));
    }
}
