//! `x-kubernetes-validations` evaluation: messages, reasons, transition rules, ratcheting.

use super::*;
use serde_json::json;

#[test]
fn compiled_schema_is_shareable() {
    fn shareable<T: Send + Sync + Clone>() {}
    shareable::<CompiledSchema>();
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

#[test]
fn nested_comprehensions_over_large_lists_exceed_the_call_limit() {
    let s = compiled(json!({"type": "object", "properties": {"l": {
        "type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y || x != y))"}]
    }}}));
    assert!(s.validate_rules(&json!({"l": [1, 2, 3]}), None).is_empty());
    let big: Vec<i64> = (0..2000).collect();
    assert_eq!(
        messages(&s.validate_rules(&json!({"l": big}), None)),
        vec![
            r#"l: Invalid value: "array": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.all(y, x == y || x != y))"#
        ]
    );
}

#[test]
fn optional_old_self_is_an_optional() {
    let s = compiled(
        json!({"type": "object", "properties": {"v": {"type": "string",
        "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": true, "message": "immutable"}]}}}),
    );
    assert!(s.validate_rules(&json!({"v": "a"}), None).is_empty());
    assert!(s
        .validate_rules(&json!({"v": "a"}), Some(&json!({})))
        .is_empty());
    assert_eq!(
        messages(&s.validate_rules(&json!({"v": "b"}), Some(&json!({"v": "a"})))),
        vec![r#"v: Invalid value: "string": immutable"#]
    );
    let s = compiled(
        json!({"type": "object", "properties": {"v": {"type": "integer",
        "x-kubernetes-validations": [{"rule": "self >= oldSelf.orValue(0)", "optionalOldSelf": true}]}}}),
    );
    assert!(s.validate_rules(&json!({"v": 1}), None).is_empty());
    assert_eq!(
        messages(&s.validate_rules(&json!({"v": 1}), Some(&json!({"v": 2})))),
        vec![r#"v: Invalid value: "integer": failed rule: self >= oldSelf.orValue(0)"#]
    );
}

#[test]
fn validate_object_runs_rules_only_without_blocking_errors() {
    let s = compiled(
        json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer",
        "minimum": 0, "x-kubernetes-validations": [{"rule": "self != 5", "message": "not five"}]}}}),
    );
    assert_eq!(
        messages(&s.validate_object(&json!({}), None)),
        vec![
            "n: Required value",
            r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#,
        ]
    );
    assert_eq!(
        messages(&s.validate_object(&json!({"n": 5}), None)),
        vec![r#"n: Invalid value: "integer": not five"#]
    );
    // A bound is not blocking: the rules still run (and pass here).
    assert_eq!(s.validate_object(&json!({"n": -1}), None).len(), 1);
    assert!(s
        .validate_object(&json!({"n": 5}), Some(&json!({"n": 5})))
        .is_empty());
}

#[test]
fn optional_field_selection_is_evaluated() {
    let s = compiled(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"},
            "inner": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "x-kubernetes-validations": [
            {"rule": "self.?min.orValue(0) <= self.?max.orValue(10)", "message": "min above max"},
            {"rule": "self.?inner.?n.orValue(1) > 0", "message": "n not positive"},
            {"rule": "!self.?inner.hasValue() || self.inner.?n.hasValue()", "message": "inner without n"}
        ]}}}),
    );
    assert!(s.validate_rules(&json!({"spec": {}}), None).is_empty());
    assert!(s
        .validate_rules(&json!({"spec": {"min": 3, "inner": {"n": 2}}}), None)
        .is_empty());
    assert_eq!(
        messages(&s.validate_rules(&json!({"spec": {"min": 11}}), None)),
        vec![r#"spec: Invalid value: "object": min above max"#]
    );
    assert_eq!(
        messages(&s.validate_rules(&json!({"spec": {"max": 1, "min": 2, "inner": {}}}), None)),
        vec![
            r#"spec: Invalid value: "object": min above max"#,
            r#"spec: Invalid value: "object": inner without n"#
        ]
    );
    assert_eq!(
        messages(&s.validate_rules(&json!({"spec": {"inner": {"n": -1}}}), None)),
        vec![r#"spec: Invalid value: "object": n not positive"#]
    );
}
