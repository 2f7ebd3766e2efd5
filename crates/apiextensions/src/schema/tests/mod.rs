//! Cases with kube-apiserver's exact messages for each part of the schema engine.

use super::*;
use serde_json::json;

mod cel;
mod checking;
mod schema;
mod values;

fn compiled(schema: Value) -> CompiledSchema {
    CompiledSchema::new(&schema).expect("schema compiles")
}

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn widget() -> CompiledSchema {
    compiled(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["image"],
                "properties": {
                    "image": {"type": "string", "maxLength": 5},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "ratio": {"type": "number", "multipleOf": 0.5},
                    "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
                    "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
                    "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
                    "when": {"type": "string", "format": "date-time"},
                    "id": {"type": "string", "format": "uuid"},
                    "port": {"x-kubernetes-int-or-string": true},
                    "opt": {"type": "string", "nullable": true},
                    "list": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"x": {"type": "integer"}}
                    }},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "properties": {"spec": {"type": "object"}}}
                }
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    }))
}

fn ruled() -> CompiledSchema {
    compiled(json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.spec.min <= self.spec.max"}],
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.min >= 0", "message": "min must not be negative"},
                {"rule": "self.name == oldSelf.name", "message": "name is immutable", "reason": "FieldValueForbidden", "fieldPath": ".name"},
                {"rule": "self.min != 7", "messageExpression": "'min is ' + string(self.min)"},
                {"rule": "self.min != 8", "reason": "FieldValueRequired"},
                {"rule": "self.min != 9 || self.missing == 1"}
            ],
            "properties": {
                "min": {"type": "integer"},
                "max": {"type": "integer"},
                "name": {"type": "string"},
                "items": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}},
                "byKey": {"type": "object", "additionalProperties": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0"}]}}
            }
        }}
    }))
}

const P: &str = "spec.validation.openAPIV3Schema";
