//! CRD write-time checks of schemas: structural, `x-kubernetes-*`, rule checks and compilation.

use super::*;
use serde_json::json;

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
    // Malformed rules (reported by the CRD's own schema validation) keep the node's rules
    // from being compiled, so nothing is reported here.
    let m = messages(&validate_structural(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.a ==", "message": "m"},
            {"rule": " "}
        ]}}}),
        p,
    ));
    assert_eq!(m, Vec::<String>::new());
}

#[test]
fn old_self_rules_need_correlatable_values() {
    let m = messages(&validate_structural(
        &json!({"type": "object", "properties": {
            "l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10,
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
            {"rule": "['a'].exists(x, x == 'a') && sets.contains([1], [1]) && type(self) == map"}
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
fn bound_variables_are_declared() {
    assert!(validate_structural(
        &json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 100, "items": {"type": "integer"},
            "x-kubernetes-validations": [
                {"rule": "cel.bind(n, self.size(), n < 10)"},
                {"rule": "self.all(i, v, v >= 0)"},
                {"rule": "self.exists_one(x, x == 1) || self.map(x, x * 2).all(y, y > 0)"}
            ]}}}),
        P
    )
    .is_empty());
}

#[test]
fn defaults_are_validated_and_must_be_pruned() {
    let m = messages(&validate_structural(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 1, "default": 0},
            "mode": {"type": "string", "enum": ["a"], "default": "b"},
            "obj": {"type": "object", "properties": {"x": {"type": "string"}}, "default": {"x": "1", "y": 2}},
            "good": {"type": "object", "properties": {"x": {"type": "string", "default": "z"}}, "default": {}}
        }}}}),
        P,
    ));
    assert_eq!(
        m,
        vec![
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[mode].default: Unsupported value: "b": supported values: "a""#,
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[obj].default: Invalid value: map[string]interface {}{"x":"1", "y":2}: must not have unknown fields"#,
            "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1",
        ]
    );
}

#[test]
fn undefined_fields_fail_compilation() {
    let schema = json!({"type": "object",
    "x-kubernetes-validations": [{"rule": "self.metadata.name != '' && self.spec.replicas >= 0"}],
    "properties": {"spec": {"type": "object",
    "properties": {
        "replicas": {"type": "integer"},
        "my-field": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    },
    "x-kubernetes-validations": [
        {"rule": "self.replicas > 0 && self.my__dash__field != '' && self.labels.anything == 'x' && self.free.deep.x == 1"},
        {"rule": "has(self.replica) || self.replicas == 1"}
    ]}}});
    let m = messages(&validate_structural(&schema, P));
    assert_eq!(
        m,
        vec!["spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule: Invalid value: apiextensions.ValidationRule{Rule:\"has(self.replica) || self.replicas == 1\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:9: undefined field 'replica'\n | has(self.replica) || self.replicas == 1\n | ........^"]
    );
}
