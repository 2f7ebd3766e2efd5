//! The OpenAPI definition of a custom kind, as upstream's CRD OpenAPI builder
//! (`apiextensions-apiserver/pkg/controller/openapi/builder`) publishes it: the version's
//! schema with `apiVersion`, `kind` and `metadata` added, and for `/openapi/v2` the schema
//! cut down to what kubectl's v2 validation copes with (`ToStructuralOpenAPIV2`).

use serde_json::{json, Map, Value};

use kapi_machinery::gvk::{API_VERSION_DOC, KIND_DOC};

const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
// An embedded resource's own wording (upstream's `addEmbeddedProperties`).
const EMBEDDED_API_VERSION_DOC: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DOC: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";

fn is_true(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool) == Some(true)
}

/// The kind's definition from the version's `openAPIV3Schema` (`None`: the version has none);
/// `object_meta` is the `$ref` to ObjectMeta's definition.
pub(crate) fn kind_schema(raw: Option<&Value>, object_meta: &Value, v2: bool) -> Value {
    let mut schema = match raw {
        // kubectl's v2 validation would take the added properties as the only ones allowed, so
        // a schema that keeps unknown fields at its root is published as a bare object.
        Some(Value::Object(m)) if !(v2 && is_true(m, PRESERVE)) => Value::Object(m.clone()),
        _ if v2 => return json!({"type": "object"}),
        _ => json!({"type": "object", PRESERVE: true}),
    };
    let Value::Object(obj) = &mut schema else {
        return schema;
    };
    if v2 {
        to_v2(obj);
    }
    obj.entry("type").or_insert_with(|| json!("object"));
    let props = obj.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(props) = props {
        props.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": API_VERSION_DOC}),
        );
        props.insert(
            "kind".into(),
            json!({"type": "string", "description": KIND_DOC}),
        );
        props.insert(
            "metadata".into(),
            with_description(object_meta, METADATA_DOC),
        );
    }
    add_embedded_properties(obj, object_meta, v2);
    schema
}

fn with_description(schema: &Value, description: &str) -> Value {
    let mut s = schema.clone();
    if let Value::Object(m) = &mut s {
        m.insert("description".into(), json!(description));
    }
    s
}

/// Children of a schema node: `properties`, `items` and `additionalProperties` schemas.
fn for_children(s: &mut Map<String, Value>, mut f: impl FnMut(&mut Map<String, Value>)) {
    if let Some(Value::Object(props)) = s.get_mut("properties") {
        props
            .values_mut()
            .filter_map(Value::as_object_mut)
            .for_each(&mut f);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(Value::Object(child)) = s.get_mut(key) {
            f(child);
        }
    }
}

/// Upstream's `ToStructuralOpenAPIV2`, node by node before the node's children: junctors
/// dropped, a nullable node made untyped and empty, a node keeping unknown fields left
/// without properties or items, and nullable properties no longer required.
fn to_v2(s: &mut Map<String, Value>) {
    for key in ["allOf", "oneOf", "anyOf", "not"] {
        s.remove(key);
    }
    if s.remove("nullable").and_then(|v| v.as_bool()) == Some(true) {
        s.remove("type");
        s.remove("items");
        s.remove("properties");
    }
    let preserve = is_true(s, PRESERVE);
    if preserve {
        s.remove("items");
        s.remove("properties");
    }
    let ty = s.get("type").and_then(Value::as_str);
    if (ty == Some("array") && !s.contains_key("items")) || (preserve && ty == Some("object")) {
        s.remove("type");
    }
    let nullable_props: Vec<String> = match s.get("properties") {
        Some(Value::Object(props)) => props
            .iter()
            .filter(|(_, p)| p.as_object().is_some_and(|p| is_true(p, "nullable")))
            .map(|(k, _)| k.clone())
            .collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Array(required)) = s.get_mut("required") {
        required.retain(|r| {
            r.as_str()
                .is_none_or(|r| !nullable_props.iter().any(|p| p == r))
        });
        if required.is_empty() {
            s.remove("required");
        }
    }
    if let Some(Value::Object(ap)) = s.get("additionalProperties") {
        if is_true(ap, "nullable") {
            s.remove("required");
        }
    }
    for_children(s, to_v2);
}

/// `x-kubernetes-embedded-resource` objects get `apiVersion`, `kind` and `metadata`, and
/// require the first two; in v2 not where unknown fields are kept.
fn add_embedded_properties(s: &mut Map<String, Value>, object_meta: &Value, v2: bool) {
    for_children(s, |c| add_embedded_properties(c, object_meta, v2));
    if (v2 && is_true(s, PRESERVE)) || !is_true(s, "x-kubernetes-embedded-resource") {
        return;
    }
    let props = s.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(props) = props {
        props.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": EMBEDDED_API_VERSION_DOC}),
        );
        props.insert(
            "kind".into(),
            json!({"type": "string", "description": EMBEDDED_KIND_DOC}),
        );
        props.insert(
            "metadata".into(),
            with_description(object_meta, METADATA_DOC),
        );
    }
    let required = s.entry("required").or_insert_with(|| json!([]));
    if let Value::Array(required) = required {
        required.extend([json!("kind"), json!("apiVersion")]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Value {
        json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"})
    }

    /// Without properties, `apiVersion`, `kind` and `metadata` (compared elsewhere).
    fn own(mut v: Value) -> Value {
        if let Some(Value::Object(p)) = v.get_mut("properties") {
            for k in ["apiVersion", "kind", "metadata"] {
                p.remove(k);
            }
            if p.is_empty() {
                v.as_object_mut().map(|m| m.remove("properties"));
            }
        }
        v
    }

    /// kube-apiserver 1.28.7's `/openapi/v2` definition of a CRD whose schema is
    /// `{type: object, x-kubernetes-preserve-unknown-fields: true}` (what e2e's
    /// "works for CRD without validation schema" creates) or that has none: a bare object.
    #[test]
    fn v2_root_preserving_unknown_fields_is_a_bare_object() {
        let preserve =
            json!({"type": "object", PRESERVE: true, "properties": {"spec": {"type": "object"}}});
        assert_eq!(
            kind_schema(Some(&preserve), &meta(), true),
            json!({"type": "object"})
        );
        assert_eq!(kind_schema(None, &meta(), true), json!({"type": "object"}));
        // v3 keeps the schema and adds the type and object meta
        let v3 = kind_schema(Some(&preserve), &meta(), false);
        assert_eq!(v3[PRESERVE], true);
        assert_eq!(v3["properties"]["metadata"]["$ref"], meta()["$ref"]);
        assert_eq!(v3["properties"]["spec"], json!({"type": "object"}));
        assert_eq!(kind_schema(None, &meta(), false)[PRESERVE], true);
    }

    /// What kube-apiserver 1.28.7 publishes in `/openapi/v2` for the same schema.
    #[test]
    fn v2_drops_what_kubectl_cannot_validate() {
        let raw = json!({"type": "object", "description": "d", "required": ["spec", "nn"], "properties": {
            "spec": {"type": "object", PRESERVE: true, "properties": {"x": {"type": "string"}}},
            "nn": {"type": "string", "nullable": true},
            "n": {"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}},
            "arr": {"type": "array", "items": {"type": "object", PRESERVE: true}},
            "any": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "v": {"type": "string", "allOf": [{"maxLength": 5}], "oneOf": [{"pattern": "a"}], "not": {"pattern": "c"}},
            "ao": {"type": "object", "required": ["k"], "additionalProperties": {"type": "string", "nullable": true}},
            "ao2": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
            "emb": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"z": {"type": "string"}}},
            "embp": {"type": "object", "x-kubernetes-embedded-resource": true, PRESERVE: true},
        }});
        let v2 = own(kind_schema(Some(&raw), &meta(), true));
        let emb_props = json!({
            "apiVersion": {"type": "string", "description": EMBEDDED_API_VERSION_DOC},
            "kind": {"type": "string", "description": EMBEDDED_KIND_DOC},
            "metadata": {"$ref": meta()["$ref"], "description": METADATA_DOC},
            "z": {"type": "string"},
        });
        assert_eq!(
            v2,
            json!({"type": "object", "description": "d", "required": ["spec"], "properties": {
                "spec": {PRESERVE: true},
                "nn": {},
                "n": {},
                "arr": {"type": "array", "items": {PRESERVE: true}},
                "any": {"x-kubernetes-int-or-string": true},
                "v": {"type": "string"},
                "ao": {"type": "object", "additionalProperties": {}},
                "ao2": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "required": ["kind", "apiVersion"], "properties": emb_props},
                "embp": {"x-kubernetes-embedded-resource": true, PRESERVE: true},
            }})
        );
        // v3 keeps the schema as given, embedded resources' meta included
        let v3 = own(kind_schema(Some(&raw), &meta(), false));
        assert_eq!(v3["properties"]["nn"], raw["properties"]["nn"]);
        assert_eq!(v3["properties"]["emb"]["properties"], emb_props);
        assert_eq!(
            v3["properties"]["embp"]["required"],
            json!(["kind", "apiVersion"])
        );
    }
}
