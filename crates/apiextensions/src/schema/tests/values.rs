//! Pruning, defaulting and value validation, with kube-apiserver's messages.

use super::*;
use serde_json::json;

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
fn strfmt_duration_and_date_time_forms() {
    let s = compiled(json!({"type": "object", "properties": {
        "d": {"type": "string", "format": "duration"},
        "t": {"type": "string", "format": "date-time"},
        "h": {"type": "string", "format": "hostname"}
    }}));
    for ok in ["1h30m", "3 days", "2weeks", "10 s", "0"] {
        assert!(s.validate(&json!({"d": ok})).is_empty(), "{ok}");
    }
    for ok in ["2024-01-02T03:04:05.123+01:00", "2024-01-02t03:04:05z"] {
        assert!(s.validate(&json!({"t": ok})).is_empty(), "{ok}");
    }
    assert_eq!(
        messages(&s.validate(&json!({"t": "2024-01-02T24:00:00Z"}))),
        vec![
            r#"t: Invalid value: "2024-01-02T24:00:00Z": t in body must be of type date-time: "2024-01-02T24:00:00Z""#
        ]
    );
    let long_label = format!("{}.com", "a".repeat(64));
    assert_eq!(s.validate(&json!({"h": long_label})).len(), 1);
}

#[test]
fn unsupported_formats_are_stripped_before_type_checks() {
    let s = compiled(json!({"type": "object", "properties": {
        "s": {"type": "string", "format": "foo"},
        "u": {"type": "integer", "format": "uint32"}
    }}));
    assert_eq!(
        messages(&s.validate(&json!({"s": 1}))),
        vec![r#"s: Invalid value: "integer": s in body must be of type string: "integer""#]
    );
    assert!(s.validate(&json!({"u": 1})).is_empty());
}
