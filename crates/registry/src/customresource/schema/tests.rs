//! Cases with kube-apiserver's exact messages for each part of the schema engine.

use super::*;
use serde_json::json;

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

#[test]
fn prunes_unknown_fields_with_upstream_paths() {
    let s = widget();
    let mut obj = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "bogus": 1},
        "spec": {
            "image": "x", "foo": 1,
            "list": [{"x": 1, "y": 2}],
            "free": {"anything": {"goes": true}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "zz": 1}, "spec": {}, "other": 1}
        },
        "extra": true
    });
    let pruned = s.prune(&mut obj);
    assert_eq!(
        pruned,
        vec![
            "extra",
            "spec.foo",
            "spec.list[0].y",
            "spec.template.other",
            "metadata.bogus",
            "spec.template.metadata.zz",
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {
                "image": "x",
                "list": [{"x": 1}],
                "free": {"anything": {"goes": true}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
            }
        })
    );
}

#[test]
fn pruning_is_idempotent() {
    let s = widget();
    let mut obj =
        json!({"spec": {"image": "x", "foo": {"bar": 1}, "list": [{"y": 1}, {"x": 2}]}, "z": 1});
    s.prune(&mut obj);
    let once = obj.clone();
    assert!(s.prune(&mut obj).is_empty());
    assert_eq!(obj, once);
}

#[test]
fn prunes_nulls_without_defaults() {
    let s = widget();
    let mut obj = json!({"spec": {"image": null, "opt": null, "replicas": null}});
    s.prune(&mut obj);
    // image: not nullable, no default: dropped; opt: nullable: kept; replicas: has a default.
    assert_eq!(obj, json!({"spec": {"opt": null, "replicas": null}}));
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"opt": null, "replicas": 1, "mode": "a"}})
    );
}

#[test]
fn defaults_then_pruning_keeps_defaults() {
    let s = widget();
    let mut obj = json!({"spec": {"image": "x"}});
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["replicas"], json!(1));
    assert_eq!(obj["spec"]["mode"], json!("a"));
    let before = obj.clone();
    assert!(s.prune(&mut obj).is_empty());
    assert_eq!(obj, before);
}

#[test]
fn type_errors() {
    let s = widget();
    let errs = s.validate(&json!({"spec": {"image": "x", "replicas": "3"}}));
    assert_eq!(
        messages(&errs),
        vec![
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        ]
    );
    let errs = s.validate(&json!({"spec": {"image": "x", "replicas": 1.5}}));
    assert_eq!(
        messages(&errs),
        vec![
            r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#
        ]
    );
    // 2.0 is an integer to upstream.
    assert!(s
        .validate(&json!({"spec": {"image": "x", "replicas": 2.0}}))
        .is_empty());
}

#[test]
fn null_where_not_nullable() {
    let s = widget();
    let errs = s.validate(&json!({"spec": {"image": null}}));
    assert_eq!(
        messages(&errs),
        vec![
            r#"spec.image: Invalid value: "null": spec.image in body must be of type string: "null""#
        ]
    );
    assert!(s
        .validate(&json!({"spec": {"image": "x", "opt": null}}))
        .is_empty());
}

#[test]
fn required() {
    let s = widget();
    let errs = s.validate(&json!({"spec": {}}));
    assert_eq!(messages(&errs), vec!["spec.image: Required value"]);
    assert_eq!(errs[0].error_type.cause_reason(), "FieldValueRequired");
}

#[test]
fn enum_values() {
    let s = widget();
    let errs = s.validate(&json!({"spec": {"image": "x", "mode": "c"}}));
    assert_eq!(
        messages(&errs),
        vec![r#"spec.mode: Unsupported value: "c": supported values: "a", "b""#]
    );
}

#[test]
fn numeric_bounds() {
    let s = widget();
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "replicas": 0}}))),
        vec!["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"]
    );
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "replicas": 11}}))),
        vec!["spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"]
    );
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "ratio": 0.7}}))),
        vec!["spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"]
    );
    let excl = compiled(json!({"type": "object", "properties": {"n": {
        "type": "number", "minimum": 1, "exclusiveMinimum": true, "maximum": 2, "exclusiveMaximum": true}}}));
    assert_eq!(
        messages(&excl.validate(&json!({"n": 1}))),
        vec!["n: Invalid value: 1: n in body should be greater than 1"]
    );
    assert_eq!(
        messages(&excl.validate(&json!({"n": 2.0}))),
        vec!["n: Invalid value: 2: n in body should be less than 2"]
    );
}

#[test]
fn string_bounds() {
    let s = widget();
    let errs = s.validate(&json!({"spec": {"image": "abcdef"}}));
    assert_eq!(
        messages(&errs),
        vec!["spec.image: Too long: may not be more than 5 bytes"]
    );
    assert_eq!(errs[0].error_type.cause_reason(), "FieldValueTooLong");
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "name": "a"}}))),
        vec![r#"spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long"#]
    );
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "name": "AB"}}))),
        vec![r#"spec.name: Invalid value: "AB": spec.name in body should match '^[a-z]+$'"#]
    );
}

#[test]
fn list_and_map_bounds() {
    let s = widget();
    let errs = s.validate(&json!({"spec": {"image": "x", "tags": ["a", "b", "c"]}}));
    assert_eq!(
        messages(&errs),
        vec!["spec.tags: Too many: 3: must have at most 2 items"]
    );
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "tags": []}}))),
        vec!["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
    );
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "labels": {"a": "1", "b": "2"}}}))),
        vec!["spec.labels: Too many: 2: must have at most 1 item"]
    );
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "labels": {"a": 1}}}))),
        vec![
            r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#
        ]
    );
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "list": [{"x": "no"}]}}))),
        vec![
            r#"spec.list[0].x: Invalid value: "string": spec.list[0].x in body must be of type integer: "string""#
        ]
    );
}

#[test]
fn formats() {
    let s = widget();
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "when": "yesterday"}}))),
        vec![
            r#"spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday""#
        ]
    );
    assert!(s
        .validate(&json!({"spec": {"image": "x", "when": "2024-01-02T03:04:05Z", "id": "123e4567-e89b-12d3-a456-426614174000"}}))
        .is_empty());
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "id": "nope"}}))),
        vec![r#"spec.id: Invalid value: "nope": spec.id in body must be of type uuid: "nope""#]
    );
    for (format, good, bad) in [
        ("byte", "aGVsbG8=", "not base64!"),
        ("date", "2024-02-29", "2023-02-29"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "::1", "10.0.0.1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
        ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
        ("hostname", "example.com", "-bad-.com"),
        ("email", "a@example.com", "not-an-email"),
        ("duration", "1h30m", "forever"),
        ("uri", "https://example.com/x", "no scheme"),
    ] {
        let s = compiled(
            json!({"type": "object", "properties": {"f": {"type": "string", "format": format}}}),
        );
        assert!(
            s.validate(&json!({"f": good})).is_empty(),
            "{format} {good}"
        );
        assert_eq!(s.validate(&json!({"f": bad})).len(), 1, "{format} {bad}");
    }
    // Formats upstream does not know are ignored.
    let s = compiled(
        json!({"type": "object", "properties": {"f": {"type": "string", "format": "k8s-short-name"}}}),
    );
    assert!(s.validate(&json!({"f": "Anything Goes"})).is_empty());
}

#[test]
fn int_or_string() {
    let s = widget();
    assert!(s
        .validate(&json!({"spec": {"image": "x", "port": 80}}))
        .is_empty());
    assert!(s
        .validate(&json!({"spec": {"image": "x", "port": "http"}}))
        .is_empty());
    assert_eq!(
        messages(&s.validate(&json!({"spec": {"image": "x", "port": true}}))),
        vec![
            r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
        ]
    );
}

#[test]
fn composition() {
    let s = compiled(json!({"type": "object", "properties": {
        "a": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}]},
        "o": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
        "n": {"type": "string", "not": {"enum": ["bad"]}},
        "all": {"type": "integer", "allOf": [{"minimum": 5}]}
    }}));
    assert_eq!(
        messages(&s.validate(&json!({"a": "abc"}))),
        vec![
            r#"<nil>: Invalid value: "": "a" must validate at least one schema (anyOf)"#,
            "a: Too long: may not be more than 1 byte",
        ]
    );
    assert_eq!(
        messages(&s.validate(&json!({"o": 5}))),
        vec![
            r#"<nil>: Invalid value: "": "o" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        ]
    );
    assert_eq!(
        messages(&s.validate(&json!({"n": "bad"}))),
        vec![r#"<nil>: Invalid value: "": "n" must not validate the schema (not)"#]
    );
    assert_eq!(
        messages(&s.validate(&json!({"all": 1}))),
        vec![
            "all: Invalid value: 1: all in body should be greater than or equal to 5",
            r#"<nil>: Invalid value: "": "all" must validate all the schemas (allOf). None validated"#,
        ]
    );
}

#[test]
fn list_type_set_and_map_duplicates() {
    let s = compiled(json!({"type": "object", "properties": {
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "objs": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "multi": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object", "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}}
    }}));
    assert_eq!(
        messages(&s.validate(&json!({"set": ["a", "b", "a", "a"]}))),
        vec![r#"set[2]: Duplicate value: "a""#]
    );
    assert_eq!(
        messages(&s.validate(&json!({"objs": [{"a": 1}, {"a": 1}]}))),
        vec![r#"objs[1]: Duplicate value: map[string]interface {}{"a":1}"#]
    );
    assert_eq!(
        messages(&s.validate(
            &json!({"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]})
        )),
        vec![r#"ports[1]: Duplicate value: map[string]interface {}{"name":"http"}"#]
    );
    assert_eq!(
        messages(&s.validate(&json!({"multi": [{"port": 80}, {"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}]}))),
        vec![r#"multi[1]: Duplicate value: map[string]interface {}{"port":80, "protocol":"TCP"}"#]
    );
    assert_eq!(
        messages(&s.validate(&json!({"ports": ["x"]}))),
        vec![
            r#"ports[0]: Invalid value: "string": ports[0] in body must be of type object: "string""#,
            r#"ports[0]: Invalid value: "x": must be an object for an array of list-type map"#
        ]
    );
}

#[test]
fn embedded_resources() {
    let s = widget();
    let errs = s.validate(
        &json!({"spec": {"image": "x", "template": {"metadata": {"name": "Bad_Name/x"}}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![
            "spec.template.apiVersion: Required value: must not be empty",
            "spec.template.kind: Required value: must not be empty",
            r#"spec.template.metadata.name: Invalid value: "Bad_Name/x": may not contain '/'"#,
        ]
    );
    assert!(s
        .validate(&json!({"spec": {"image": "x", "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}}}}))
        .is_empty());
    let errs = s.validate(
        &json!({"spec": {"image": "x", "template": {"apiVersion": "a/b/c", "kind": ""}}}),
    );
    assert_eq!(
        messages(&errs),
        vec![
            r#"spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
            r#"spec.template.kind: Invalid value: "": must not be empty"#,
        ]
    );
}

#[test]
fn compiled_schema_is_shareable() {
    fn shareable<T: Send + Sync + Clone>() {}
    shareable::<CompiledSchema>();
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

#[test]
fn cel_rules_fail_with_upstream_messages() {
    let s = ruled();
    assert!(s.has_rules());
    assert!(s
        .validate_rules(&json!({"spec": {"min": 1, "max": 2, "name": "a"}}), None)
        .is_empty());
    assert_eq!(
        messages(&s.validate_rules(&json!({"spec": {"min": 3, "max": 2}}), None)),
        vec![r#"<nil>: Invalid value: "object": failed rule: self.spec.min <= self.spec.max"#]
    );
    assert_eq!(
        messages(&s.validate_rules(&json!({"spec": {"min": -1, "max": 2}}), None)),
        vec![r#"spec: Invalid value: "object": min must not be negative"#]
    );
    assert_eq!(
        messages(&s.validate_rules(&json!({"spec": {"min": 7, "max": 9}}), None)),
        vec![r#"spec: Invalid value: "object": min is 7"#]
    );
    let errs = s.validate_rules(&json!({"spec": {"min": 8, "max": 9}}), None);
    assert_eq!(
        messages(&errs),
        vec!["spec: Required value: failed rule: self.min != 8"]
    );
    assert_eq!(errs[0].error_type.cause_reason(), "FieldValueRequired");
}

#[test]
fn cel_transition_rules_need_an_old_value() {
    let s = ruled();
    let new = json!({"spec": {"min": 1, "max": 2, "name": "b"}});
    assert!(s.validate_rules(&new, None).is_empty());
    let old = json!({"spec": {"min": 1, "max": 2, "name": "a"}});
    let errs = s.validate_rules(&new, Some(&old));
    assert_eq!(
        messages(&errs),
        vec!["spec.name: Forbidden: name is immutable"]
    );
    assert_eq!(errs[0].error_type.cause_reason(), "FieldValueForbidden");
}

#[test]
fn cel_rules_on_items_and_map_values() {
    let s = ruled();
    let errs = s.validate_rules(
        &json!({"spec": {"min": 1, "max": 2, "items": ["ok", "long"], "byKey": {"a": 1, "b": 0}}}),
        None,
    );
    assert_eq!(
        messages(&errs),
        vec![
            r#"spec.byKey[b]: Invalid value: "integer": failed rule: self > 0"#,
            r#"spec.items[1]: Invalid value: "string": failed rule: self.size() < 3"#,
        ]
    );
}

#[test]
fn cel_runtime_errors() {
    let s = ruled();
    let errs = s.validate_rules(&json!({"spec": {"min": 9, "max": 10}}), None);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        r#"spec: Invalid value: "object": no such key: missing evaluating rule: self.min != 9 || self.missing == 1"#
    );
}

#[test]
fn blocking_errors_keep_rules_from_running() {
    let s = widget();
    let errs = s.validate(&json!({"spec": {}}));
    assert!(errs.iter().any(is_blocking));
    assert_eq!(
        rules_not_checked().to_string(),
        r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
    );
    let errs = s.validate(&json!({"spec": {"image": "x", "replicas": 0}}));
    assert!(!errs.iter().any(is_blocking));
}

const P: &str = "spec.validation.openAPIV3Schema";

#[test]
fn structural_type_required() {
    let errs = validate_structural(
        &json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}, "list": {"type": "array"}}}),
        P,
    );
    assert_eq!(
        messages(&errs),
        vec![
            "spec.validation.openAPIV3Schema.properties[list].items: Required value: must be specified",
            "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
        ]
    );
    assert_eq!(
        messages(&validate_structural(&json!({"properties": {}}), P)),
        vec!["spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root"]
    );
    assert_eq!(
        messages(&validate_structural(&json!({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}), P)),
        vec!["spec.validation.openAPIV3Schema.properties[l].items.type: Required value: must not be empty for specified array items"]
    );
    assert_eq!(
        messages(&validate_structural(&json!({"type": "string"}), P)),
        vec![
            r#"spec.validation.openAPIV3Schema.type: Invalid value: "string": must be object at the root"#
        ]
    );
    // preserve-unknown-fields and int-or-string need no type.
    assert!(validate_structural(
        &json!({"type": "object", "properties": {"a": {"x-kubernetes-preserve-unknown-fields": true}, "b": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
        P
    )
    .is_empty());
}

#[test]
fn structural_forbidden_in_value_validations() {
    let errs = validate_structural(
        &json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [
            {"type": "string", "description": "d", "nullable": true, "default": "x", "x-kubernetes-validations": [{"rule": "true"}]}
        ]}}}),
        P,
    );
    assert_eq!(
        messages(&errs),
        vec![
            "spec.validation.openAPIV3Schema.properties[a].anyOf[0].default: Forbidden: must be undefined to be structural",
            "spec.validation.openAPIV3Schema.properties[a].anyOf[0].description: Forbidden: must be empty to be structural",
            "spec.validation.openAPIV3Schema.properties[a].anyOf[0].nullable: Forbidden: must be false to be structural",
            "spec.validation.openAPIV3Schema.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
            "spec.validation.openAPIV3Schema.properties[a].anyOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
        ]
    );
}

#[test]
fn structural_completeness_and_metadata() {
    let errs = validate_structural(
        &json!({"type": "object", "properties": {"spec": {"type": "object"}},
            "anyOf": [{"properties": {"spec": {"properties": {"x": {"minLength": 1}}}}}]}),
        P,
    );
    assert_eq!(
        messages(&errs),
        vec!["spec.validation.openAPIV3Schema.properties[spec].properties[x]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[spec].properties[x]"]
    );
    let errs = validate_structural(
        &json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}, "labels": {"type": "object"}}}}}),
        P,
    );
    assert_eq!(
        messages(&errs),
        vec!["spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"]
    );
    assert!(validate_structural(
        &json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}}}),
        P
    )
    .is_empty());
}

#[test]
fn structural_embedded_and_extensions() {
    let errs = validate_structural(
        &json!({"type": "object", "additionalProperties": {"type": "string"}, "properties": {
            "e": {"x-kubernetes-embedded-resource": true},
            "i": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}
        }}),
        P,
    );
    assert_eq!(
        messages(&errs),
        vec![
            "spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
            "spec.validation.openAPIV3Schema.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            "spec.validation.openAPIV3Schema.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            "spec.validation.openAPIV3Schema.properties[i].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
        ]
    );
}

#[test]
fn rule_checks_and_compilation() {
    let p = "spec.versions[0].schema.openAPIV3Schema";
    let m = messages(&validate_structural(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.a ==", "message": "m"}]}}}),
        p,
    ));
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(m[0].starts_with(r#"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.a ==", Message:"m", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:"#), "{}", m[0]);
    // Rule checks are schema errors: they keep the node's rules from being compiled.
    let m = messages(&validate_structural(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.a ==", "message": "m"},
            {"rule": " "},
            {"rule": "true", "reason": "Nope"},
            {"rule": "true", "fieldPath": ".b"},
            {"rule": "true", "fieldPath": ".a"},
            {"rule": "true", "message": "two\nlines"}
        ]}}}),
        p,
    ));
    assert_eq!(
        m,
        vec![
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule: Required value: rule is not specified",
            r#"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].reason: Unsupported value: "Nope": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#,
            r#"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[3].fieldPath: Invalid value: ".b": fieldPath must be a valid path"#,
            r#"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[5].message: Invalid value: "two\nlines": message must not contain line breaks"#,
        ]
    );
}

#[test]
fn old_self_rules_need_correlatable_values() {
    let m = messages(&validate_structural(
        &json!({"type": "object", "properties": {
            "l": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
            "s": {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''", "optionalOldSelf": true}]}
        }}),
        P,
    ));
    assert_eq!(
        m,
        vec![
            r#"spec.validation.openAPIV3Schema.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[l]"#,
            "spec.validation.openAPIV3Schema.properties[s].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule",
        ]
    );
}

#[test]
fn undeclared_references_fail_compilation() {
    let errs = validate_structural(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.all(k, self[k] > 0) && foo == 1"},
            {"rule": "self.exists(x, x == 'a') && sets.contains([1], [1]) && type(self) == map"}
        ]}}}),
        P,
    );
    assert_eq!(
        messages(&errs),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.all(k, self[k] > 0) && foo == 1\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:29: undeclared reference to 'foo' (in container '')\n | self.all(k, self[k] > 0) && foo == 1\n | ............................^"
        ]
    );
}

#[test]
fn cel_rules_ratchet_unchanged_values_and_skip_nulls() {
    let s = ruled();
    // min is negative in both: the failure is ratcheted on update, not on create.
    let old = json!({"spec": {"min": -1, "max": 2, "name": "a"}});
    let new = json!({"spec": {"min": -1, "max": 2, "name": "a"}});
    assert_eq!(s.validate_rules(&new, None).len(), 1);
    assert!(s.validate_rules(&new, Some(&old)).is_empty());
    let changed = json!({"spec": {"min": -1, "max": 3, "name": "a"}});
    assert_eq!(
        messages(&s.validate_rules(&changed, Some(&old))),
        vec![r#"spec: Invalid value: "object": min must not be negative"#]
    );
    // A null value runs no rules.
    assert!(s
        .validate_rules(
            &json!({"spec": {"min": 1, "max": 2, "byKey": {"a": null}}}),
            None
        )
        .is_empty());
}

#[test]
fn message_expression_must_not_be_empty() {
    let s = compiled(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "false", "messageExpression": "''"},
        {"rule": "false", "messageExpression": "'x'", "fieldPath": ".a['b']"}
    ], "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}));
    assert_eq!(
        messages(&s.validate_rules(&json!({}), None)),
        vec![
            r#"<nil>: Invalid value: "object": messageExpression should evaluate to a non-empty string"#
        ]
    );
}

#[test]
fn field_path_is_normalized() {
    let s = compiled(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "false", "message": "m", "fieldPath": ".a['b']"}
    ], "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}));
    assert_eq!(
        messages(&s.validate_rules(&json!({}), None)),
        vec![r#"a.b: Invalid value: "object": m"#]
    );
}

#[test]
fn update_ratchets_unchanged_values() {
    let s = widget();
    let old = json!({"spec": {"image": "toolong", "replicas": 0, "tags": ["a", "a"]}});
    // Nothing changed: nothing is judged again.
    assert!(s.validate_update(&old, &old).is_empty());
    // Only the changed field is judged.
    let new = json!({"spec": {"image": "toolong", "replicas": 11, "tags": ["a", "a"]}});
    assert_eq!(
        messages(&s.validate_update(&new, &old)),
        vec!["spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"]
    );
    // On create everything is.
    assert_eq!(s.validate(&new).len(), 2);
}

#[test]
fn additional_properties_false_and_min_properties() {
    let s = compiled(json!({"type": "object", "properties": {
        "closed": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}},
        "some": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "string"}}
    }}));
    assert_eq!(
        messages(&s.validate(&json!({"closed": {"a": "x", "b": "y"}}))),
        vec![r#"closed: Invalid value: "b": closed.b in body is a forbidden property"#]
    );
    assert_eq!(
        messages(&s.validate(&json!({"some": {"a": "x"}}))),
        vec!["some: Invalid value: 1: some in body should have at least 2 properties"]
    );
}

#[test]
fn unique_items_and_nullable_enum() {
    let s = compiled(json!({"type": "object", "properties": {
        "u": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}},
        "e": {"type": "string", "nullable": true, "enum": ["a"]}
    }}));
    assert_eq!(
        messages(&s.validate(&json!({"u": [1, 2, 1]}))),
        vec![r#"u: Invalid value: "": u in body shouldn't contain duplicates"#]
    );
    // kube-openapi checks enums on nulls too.
    assert_eq!(
        messages(&s.validate(&json!({"e": null}))),
        vec![r#"e: Unsupported value: "null": supported values: "a""#]
    );
}

#[test]
fn non_string_enum_values_are_json() {
    let s = compiled(
        json!({"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}),
    );
    assert_eq!(
        messages(&s.validate(&json!({"n": 3}))),
        vec![r#"n: Unsupported value: 3: supported values: "1", "2""#]
    );
    assert!(s.validate(&json!({"n": 2.0})).is_empty());
}

#[test]
fn numeric_formats() {
    let s = compiled(json!({"type": "object", "properties": {
        "i": {"type": "integer", "format": "int32"},
        "d": {"type": "number", "format": "double"}
    }}));
    assert!(s.validate(&json!({"i": 5, "d": 1.5})).is_empty());
    assert!(s.validate(&json!({"d": 2})).is_empty());
}

#[test]
fn defaults_in_items_and_additional_properties() {
    let s = compiled(json!({"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "object", "properties": {
            "p": {"type": "integer", "default": 80}}}},
        "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "on": {"type": "boolean", "default": true}}}},
        "obj": {"type": "object", "default": {}, "properties": {"x": {"type": "string", "default": "y"}}}
    }}));
    let mut obj = json!({"list": [{}, {"p": 1}], "map": {"a": {}}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"list": [{"p": 80}, {"p": 1}], "map": {"a": {"on": true}}, "obj": {"x": "y"}})
    );
}

#[test]
fn pruning_under_additional_properties_and_preserved_root() {
    let s = compiled(json!({"type": "object", "properties": {
        "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"k": {"type": "string"}}}}
    }}));
    let mut obj = json!({"m": {"a": {"k": "v", "z": 1}}});
    assert_eq!(s.prune(&mut obj), vec!["m.a.z"]);
    let open = compiled(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
    );
    let mut obj = json!({"anything": 1, "spec": {"a": "x", "b": 2}});
    assert_eq!(open.prune(&mut obj), vec!["spec.b"]);
    assert_eq!(obj, json!({"anything": 1, "spec": {"a": "x"}}));
}

#[test]
fn structural_kind_and_metadata_types() {
    let errs = validate_structural(
        &json!({"type": "object", "properties": {
            "kind": {"type": "integer"},
            "e": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"metadata": {"type": "string"}}},
            "p": {"type": "string", "pattern": "("}
        }}),
        P,
    );
    let m = messages(&errs);
    assert_eq!(m.len(), 3, "{m:#?}");
    assert_eq!(
        m[0],
        r#"spec.validation.openAPIV3Schema.properties[e].properties[metadata].type: Invalid value: "string": must be object"#
    );
    assert_eq!(
        m[1],
        r#"spec.validation.openAPIV3Schema.properties[kind].type: Invalid value: "integer": must be string"#
    );
    assert!(m[2].starts_with(r#"spec.validation.openAPIV3Schema.properties[p].pattern: Invalid value: "(": must be a valid regular expression, but isn't: "#), "{}", m[2]);
}

#[test]
fn transition_rules_correlate_list_map_items_by_key() {
    let s = compiled(json!({"type": "object", "properties": {"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "port": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "port is immutable"}]}
        }}
    }}}));
    let old = json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]});
    // Reordered, same ports: fine. A changed port for "b": refused at its new index.
    assert!(s
        .validate_rules(
            &json!({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}]}),
            Some(&old)
        )
        .is_empty());
    assert_eq!(
        messages(&s.validate_rules(&json!({"ports": [{"name": "b", "port": 3}]}), Some(&old))),
        vec![r#"ports[0].port: Invalid value: "integer": port is immutable"#]
    );
    // A new item has no old value: the transition rule does not run.
    assert!(s
        .validate_rules(&json!({"ports": [{"name": "c", "port": 9}]}), Some(&old))
        .is_empty());
}

#[test]
fn cel_sees_int_or_string_and_escaped_names() {
    let s = compiled(json!({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "self == 80 || self == 'http'"}]},
        "o": {"type": "object", "properties": {"my-field": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.my__dash__field > 1"}]}
    }}));
    assert_eq!(
        messages(&s.validate_rules(&json!({"port": 80, "o": {"my-field": 2}}), None)),
        Vec::<String>::new()
    );
    assert!(s.validate_rules(&json!({"port": "http"}), None).is_empty());
    assert_eq!(
        messages(&s.validate_rules(&json!({"o": {"my-field": 1}}), None)),
        vec![r#"o: Invalid value: "object": failed rule: self.my__dash__field > 1"#]
    );
}

/// Whatever the schema and the value, nothing panics and pruning twice changes nothing more.
#[test]
fn odd_inputs_do_not_panic() {
    let schemas = [
        json!({}),
        json!({"type": 5, "properties": [], "items": "x", "required": "a"}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
        json!({"type": "object", "additionalProperties": true, "x-kubernetes-validations": [{"rule": "self.x +"}, {"nope": 1}, 7]}),
        json!({"type": "object", "properties": {"m": {"type": "object", "x-kubernetes-embedded-resource": true}},
            "anyOf": [{"not": {"allOf": [{"properties": {"z": {}}}]}}], "pattern": "(", "enum": []}),
        json!({"type": "string", "format": "date-time", "minLength": -1, "maxLength": 1e300, "multipleOf": 0}),
    ];
    let values = [
        json!(null),
        json!(1),
        json!("x"),
        json!([1, {"a": null}]),
        json!({"a": [1, 2, {"b": "c"}], "m": {"metadata": 5, "apiVersion": 1}, "z": {"y": null}}),
        json!({"metadata": {"name": "n", "x": 1, "creationTimestamp": null}, "kind": 1}),
    ];
    for schema in &schemas {
        let _ = validate_structural(schema, P);
        let Ok(s) = CompiledSchema::new(schema) else {
            continue;
        };
        for v in &values {
            let mut x = v.clone();
            s.prune(&mut x);
            let once = x.clone();
            assert!(s.prune(&mut x).is_empty(), "{schema} {v}");
            assert_eq!(x, once);
            s.apply_defaults(&mut x);
            let _ = s.validate(&x);
            let _ = s.validate_update(&x, v);
            let _ = s.validate_rules(&x, Some(v));
        }
    }
    assert!(CompiledSchema::new(&json!("not an object")).is_err());
}

#[test]
fn openapi_v2_drops_what_v2_cannot_express() {
    let schema = json!({"type": "object", "required": ["a", "n"], "properties": {
        "a": {"type": "string", "anyOf": [{"maxLength": 1}], "x-kubernetes-validations": [{"rule": "true"}]},
        "n": {"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}},
        "free": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}}
    }});
    let s = compiled(schema.clone());
    assert_eq!(s.openapi_published(false), schema);
    assert_eq!(
        s.openapi_published(true),
        json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string", "x-kubernetes-validations": [{"rule": "true"}]},
            "n": {},
            "free": {"x-kubernetes-preserve-unknown-fields": true}
        }})
    );
}

#[test]
fn extension_checks() {
    let m = messages(&validate_extensions(
        &json!({"type": "object", "properties": {
            "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": false},
            "l": {"type": "object", "x-kubernetes-list-type": "map"},
            "t": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
            "k": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "missing"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}},
            "mt": {"type": "object", "x-kubernetes-map-type": "loose"}
        }}),
        P,
    ));
    assert_eq!(
        m,
        vec![
            r#"spec.validation.openAPIV3Schema.properties[k].x-kubernetes-list-map-keys: Invalid value: []string{"name", "missing"}: entries must all be names of item properties"#,
            "spec.validation.openAPIV3Schema.properties[k].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            r#"spec.validation.openAPIV3Schema.properties[l].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified"#,
            "spec.validation.openAPIV3Schema.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            "spec.validation.openAPIV3Schema.properties[l].items: Required value: must have a schema if x-kubernetes-list-type is map",
            r#"spec.validation.openAPIV3Schema.properties[mt].x-kubernetes-map-type: Unsupported value: "loose": supported values: "atomic", "granular""#,
            "spec.validation.openAPIV3Schema.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
            r#"spec.validation.openAPIV3Schema.properties[s].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set"#,
            r#"spec.validation.openAPIV3Schema.properties[t].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#,
        ]
    );
}
