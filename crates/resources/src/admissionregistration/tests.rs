use super::*;
use kapi_registry::rest::FieldValidation;

fn decode(s: &dyn Strategy, v: Value) -> Object {
    s.decode(Object::from_value(v).unwrap(), FieldValidation::Strict)
        .unwrap()
        .0
}

fn errors(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn hook(extra: Value) -> Value {
    let mut h = json!({"name": "a.b.c", "clientConfig": {"url": "https://x/y"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    if let (Some(h), Some(e)) = (h.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            h.insert(k.clone(), v.clone());
        }
    }
    json!({"metadata": {"name": "w"}, "webhooks": [h]})
}

#[test]
fn webhook_defaults_are_upstreams() {
    let s = MutatingWebhookConfigurationStrategy;
    let o = decode(
        &s,
        hook(
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}],
            "clientConfig": {"service": {"name": "s", "namespace": "n"}}}),
        ),
    );
    let h = &o.get("webhooks").unwrap()[0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["reinvocationPolicy"], "Never");
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["objectSelector"], json!({}));
    assert_eq!(h["rules"][0]["scope"], "*");
    assert_eq!(h["clientConfig"]["service"]["port"], 443);
    assert!(s.validate(&o).is_empty(), "{:?}", s.validate(&o));
    let v = decode(&ValidatingWebhookConfigurationStrategy, hook(json!({})));
    assert!(v.get("webhooks").unwrap()[0]
        .get("reinvocationPolicy")
        .is_none());
}

#[test]
fn webhook_validation_wording() {
    let s = ValidatingWebhookConfigurationStrategy;
    let bad = decode(
        &s,
        json!({"metadata": {"name": "w"}, "webhooks": [
            {"name": "short", "clientConfig": {"url": "http://x/y?q=1"}, "timeoutSeconds": 31,
             "admissionReviewVersions": ["v2"], "sideEffects": "Some",
             "rules": [{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"], "resources": ["*/*", "pods"], "scope": "Everywhere"}]},
            {"name": "a.b.c", "clientConfig": {}},
            {"name": "a.b.c", "clientConfig": {"url": "https://x"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}
        ]}),
    );
    let got = errors(s.validate(&bad));
    for want in [
        r#"webhooks[0].name: Invalid value: "short": should be a domain with at least three segments separated by dots"#,
        r#"webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{"*", "CREATE"}: if '*' is present, must not specify other operations"#,
        "webhooks[0].rules[0].apiGroups: Required value",
        r#"webhooks[0].rules[0].resources: Invalid value: []string{"*/*", "pods"}: if '*/*' is present, must not specify other resources"#,
        r#"webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced""#,
        r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#,
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        r#"webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
        r#"webhooks[0].clientConfig.url: Invalid value: "q=1": query parameters are not permitted in the URL"#,
        r#"webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, v1beta1"#,
        "webhooks[1].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[1].clientConfig: Required value: exactly one of url or service is required",
        "webhooks[1].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        r#"webhooks[2].name: Duplicate value: "a.b.c""#,
    ] {
        assert!(got.iter().any(|g| g == want), "missing {want}\ngot {got:#?}");
    }
}

#[test]
fn policy_and_binding_validation() {
    let s = ValidatingAdmissionPolicyStrategy;
    let p = decode(
        &s,
        json!({"metadata": {"name": "p"}, "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
            "validations": [{"expression": "object.spec.x > 1"}]}}),
    );
    assert_eq!(p.get("spec").unwrap()["failurePolicy"], "Fail");
    assert_eq!(
        p.get("spec").unwrap()["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert!(s.validate(&p).is_empty(), "{:?}", s.validate(&p));
    let bad = decode(
        &s,
        json!({"metadata": {"name": "p"}, "spec": {"validations": [{"expression": "object.("}], "variables": [{"name": "1x", "expression": "1"}]}}),
    );
    let got = errors(s.validate(&bad));
    assert!(
        got.contains(&"spec.matchConstraints: Required value".to_string()),
        "{got:?}"
    );
    assert!(got.contains(
        &r#"spec.variables[0].name: Invalid value: "1x": name is not a valid CEL identifier"#
            .to_string()
    ));
    assert!(got.iter().any(|g| g.starts_with(
        r#"spec.validations[0].expression: Invalid value: "object.(": compilation failed: "#
    )));
    let empty = decode(&s, json!({"metadata": {"name": "p"}, "spec": {}}));
    assert!(errors(s.validate(&empty)).contains(
        &"spec.validations: Required value: validations or auditAnnotations must contain at least one item".to_string()
    ));

    let b = ValidatingAdmissionPolicyBindingStrategy;
    let bad = decode(
        &b,
        json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny", "Warn"],
            "paramRef": {"name": "x", "selector": {}}}}),
    );
    let got = errors(b.validate(&bad));
    for want in [
        "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
        "spec.paramRef.parameterNotFoundAction: Required value",
        r#"spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"#,
    ] {
        assert!(
            got.iter().any(|g| g == want),
            "missing {want}\ngot {got:#?}"
        );
    }
    let none = decode(
        &b,
        json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}),
    );
    assert_eq!(
        errors(b.validate(&none)),
        vec!["spec.validationActions: Required value: at least one validation action is required"]
    );
}

fn mutating(spec: Value) -> Vec<String> {
    let s = mutating_policy::MutatingAdmissionPolicyStrategy;
    let o = decode(&s, json!({"metadata": {"name": "p"}, "spec": spec}));
    errors(s.validate(&o))
}

#[test]
fn mutating_policy_defaults_and_validation_are_upstreams() {
    let rules = json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]});
    let ok = json!({"matchConstraints": rules, "reinvocationPolicy": "Never",
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/x', value: 1}]"}},
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: Object.spec{x: 1}}"}}]});
    assert_eq!(mutating(ok.clone()), Vec::<String>::new());
    let s = mutating_policy::MutatingAdmissionPolicyStrategy;
    let o = decode(&s, json!({"metadata": {"name": "p"}, "spec": ok}));
    assert_eq!(o.get("spec").unwrap()["failurePolicy"], "Fail");
    assert_eq!(
        o.get("spec").unwrap()["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(
        mutating(json!({"matchConstraints": {"resourceRules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["x"]}]}})),
        [
            "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
            "spec.mutations: Required value: mutations must contain at least one item",
            "spec.reinvocationPolicy: Required value",
        ]
    );
    let e = mutating(
        json!({"matchConstraints": rules, "reinvocationPolicy": "Sometimes",
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "[JSONPatch{op: 'add'}]"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{nope: 1}]"}}]}),
    );
    assert!(
        e[0].contains("must evaluate to Object but got list(JSONPatch)"),
        "{e:?}"
    );
    assert!(e[1].contains("undefined field 'nope'"), "{e:?}");
    assert!(
        e[2].starts_with("spec.reinvocationPolicy: Unsupported value: \"Sometimes\""),
        "{e:?}"
    );
    let b = mutating_policy::MutatingAdmissionPolicyBindingStrategy;
    let o = decode(
        &b,
        json!({"metadata": {"name": "b"}, "spec": {"paramRef": {"name": "x"},
        "matchResources": {"resourceRules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["x"]}]}}}),
    );
    assert_eq!(
        errors(b.validate(&o)),
        [
            "spec.policyName: Required value",
            "spec.paramRef.parameterNotFoundAction: Required value",
            "spec.matchResources.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
        ]
    );
}
