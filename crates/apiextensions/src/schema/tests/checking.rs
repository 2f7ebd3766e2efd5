//! Write-time type checking and cost estimation of rules, with upstream's paths and messages.

use super::*;
use serde_json::json;

const P: &str = "spec.versions[0].schema.openAPIV3Schema";

fn spec_rules(props: Value, rules: Value) -> Vec<String> {
    messages(&validate_structural(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": props, "x-kubernetes-validations": rules}}}),
        P,
    ))
}

#[test]
fn type_errors_fail_compilation() {
    let m = spec_rules(
        json!({"replicas": {"type": "integer"}, "name": {"type": "string"}}),
        json!([
            {"rule": "self.replicas == \"a\""},
            {"rule": "self.name + 1 == 'x'"},
            {"rule": "self.replicas"},
            {"rule": "self.replicas > 0", "messageExpression": "self.replicas"},
            {"rule": "self.name.startsWith('a')", "messageExpression": "'bad ' + self.name"},
        ]),
    );
    let v = |r: &str, me: &str| {
        format!("apiextensions.ValidationRule{{Rule:{r:?}, Message:\"\", MessageExpression:{me:?}, Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}")
    };
    let at = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        m,
        vec![
            format!("{at}[0].rule: Invalid value: {}: compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | self.replicas == \"a\"\n | ..............^", v("self.replicas == \"a\"", "")),
            format!("{at}[1].rule: Invalid value: {}: compilation failed: ERROR: <input>:1:11: found no matching overload for '_+_' applied to '(string, int)'\n | self.name + 1 == 'x'\n | ..........^", v("self.name + 1 == 'x'", "")),
            format!("{at}[2].rule: Invalid value: {}: cel expression must evaluate to a bool", v("self.replicas", "")),
            format!("{at}[3].messageExpression: Invalid value: {}: messageExpression must evaluate to a string", v("self.replicas > 0", "self.replicas")),
        ]
    );
}

#[test]
fn metadata_at_the_root_has_name_and_generate_name_only() {
    let m = messages(&validate_structural(
        &json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('a') && self.kind == 'K'"},
            {"rule": "self.metadata.labels.size() > 0"}
        ]}),
        P,
    ));
    assert_eq!(m.len(), 1, "{m:#?}");
    assert!(
        m[0].ends_with("compilation failed: ERROR: <input>:1:14: undefined field 'labels'\n | self.metadata.labels.size() > 0\n | .............^"),
        "{}",
        m[0]
    );
}

#[test]
fn unbounded_cost_is_refused_with_the_fix_hint() {
    let m = spec_rules(
        json!({"tags": {"type": "array", "items": {"type": "string"}},
               "bounded": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20}}}),
        json!([
            // A tenth of each unbounded string per item (upstream: over 100x); `startsWith`
            // alone costs a tenth of its argument and stays within the limit.
            {"rule": "self.tags.all(t, t.contains('a'))"},
            {"rule": "self.bounded.all(t, t.contains('a'))"},
            {"rule": "self.tags.all(t, t.startsWith('a'))"},
        ]),
    );
    let at = format!("{P}.properties[spec].x-kubernetes-validations");
    assert_eq!(
        m,
        vec![
            format!("{at}[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
            format!("{at}[0].rule: Forbidden: contributed to estimated rule & messageExpression cost total exceeding cost limit for entire OpenAPIv3 schema"),
            // 5,242,878 (cel-go's figure): within the limit, but over 1% of the CRD's.
            format!("{at}[2].rule: Forbidden: contributed to estimated rule & messageExpression cost total exceeding cost limit for entire OpenAPIv3 schema"),
            format!("{P}: Forbidden: x-kubernetes-validations estimated rule & messageExpression cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        ]
    );
}

#[test]
fn rules_repeated_by_lists_count_for_each_item() {
    // A rule under a list of objects runs once per item: each within the per-rule limit,
    // twenty of them over the per-CRD one.
    let rule = json!({"rule": "self.name.size() < 100 && self.name.contains('x')"});
    let item = json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 250}},
        "x-kubernetes-validations": vec![rule; 20]});
    let m = messages(&validate_structural(
        &json!({"type": "object", "properties": {"items": {"type": "array", "maxItems": 50000, "items": item}}}),
        P,
    ));
    let at = format!("{P}.properties[items].items.x-kubernetes-validations");
    assert_eq!(m.len(), 5, "{m:#?}");
    for (i, msg) in m.iter().take(4).enumerate() {
        assert_eq!(
            msg,
            &format!("{at}[{i}].rule: Forbidden: contributed to estimated rule & messageExpression cost total exceeding cost limit for entire OpenAPIv3 schema")
        );
    }
    assert!(
        m[4].starts_with(&format!("{P}: Forbidden: x-kubernetes-validations estimated rule & messageExpression cost total for entire OpenAPIv3 schema exceeds budget by factor of ")),
        "{}",
        m[4]
    );
}
