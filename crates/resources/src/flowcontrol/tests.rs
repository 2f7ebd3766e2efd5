use super::*;
use kapi_registry::rest::FieldValidation;

fn decode(s: &dyn Strategy, v: Value) -> Object {
    s.decode(Object::from_value(v).unwrap(), FieldValidation::Strict)
        .unwrap()
        .0
}

const V1_PL: PriorityLevelStrategy = PriorityLevelStrategy { version: "v1" };
const V1BETA3_PL: PriorityLevelStrategy = PriorityLevelStrategy { version: "v1beta3" };
const V1_FS: FlowSchemaStrategy = FlowSchemaStrategy { version: "v1" };

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn priority_level_defaults_per_version() {
    let body = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 0, "limitResponse": {"type": "Queue", "queuing": {}}}}});
    let v1 = decode(&V1_PL, body.clone());
    assert_eq!(
        v1.get("spec").unwrap()["limited"],
        json!({"nominalConcurrencyShares": 0, "lendablePercent": 0, "limitResponse": {"type": "Queue",
            "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    assert!(V1_PL.validate(&v1).is_empty());
    let beta = decode(&V1BETA3_PL, body);
    assert_eq!(
        beta.get("spec").unwrap()["limited"]["nominalConcurrencyShares"],
        json!(30)
    );
    let missing = decode(
        &V1_PL,
        json!({"metadata": {"name": "p"}, "spec": {"type": "Limited",
        "limited": {"limitResponse": {"type": "Reject"}}}}),
    );
    assert_eq!(
        missing.get("spec").unwrap()["limited"]["nominalConcurrencyShares"],
        json!(30)
    );
}

#[test]
fn priority_level_messages_are_upstreams() {
    let bad = decode(
        &V1BETA3_PL,
        json!({"metadata": {"name": "bad"}, "spec": {"type": "Limited",
        "exempt": {}, "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101,
        "borrowingLimitPercent": -1, "limitResponse": {"type": "Queue",
        "queuing": {"queues": 4, "handSize": 9, "queueLengthLimit": -1}}}}}),
    );
    assert_eq!(
        messages(V1BETA3_PL.validate(&bad)),
        [
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be positive",
            "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 9: should not be greater than queues (4)",
            "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            "spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
        ]
    );
}

#[test]
fn flow_schema_messages_are_upstreams() {
    let bad = decode(
        &V1_FS,
        json!({"metadata": {"name": "bad"}, "spec": {
        "matchingPrecedence": 1, "distinguisherMethod": {"type": "Foo"},
        "priorityLevelConfiguration": {"name": ""},
        "rules": [{"subjects": []}, {"subjects": [{"kind": "User"},
            {"kind": "Group", "group": {"name": ""}, "user": {"name": "x"}}],
            "resourceRules": [{"verbs": ["*", "get"], "apiGroups": [], "resources": ["*", "x"],
                "namespaces": ["Bad_ns"]}, {"verbs": ["frob"], "apiGroups": ["*"], "resources": ["x"]}],
            "nonResourceRules": [{"verbs": [], "nonResourceURLs": ["x", "*"]}]}]}}),
    );
    let got = messages(V1_FS.validate(&bad));
    assert_eq!(got[0], "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1");
    assert_eq!(got[1], "spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:\"Foo\"}: supported values: \"ByNamespace\", \"ByUser\"");
    assert!(got.contains(&"spec.rules[1].resourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: if '*' is present, must not specify other verbs".to_string()), "{got:#?}");
    assert!(got.contains(&"spec.rules[1].resourceRules[1].verbs: Unsupported value: []string{\"frob\"}: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"".to_string()), "{got:#?}");
    assert!(got.contains(&"spec.rules[1].nonResourceRules[0].nonResourceURLs: Invalid value: []string{\"x\", \"*\"}: if '*' is present, must not specify other non-resource URLs".to_string()), "{got:#?}");
    assert_eq!(got.len(), 16, "{got:#?}");
}

#[test]
fn mandatory_objects_validate_and_catch_all_is_fixed() {
    for pl in kapi_flowcontrol::bootstrap::priority_levels() {
        let obj = decode(&V1_PL, serde_json::to_value(&pl).unwrap());
        assert!(V1_PL.validate(&obj).is_empty(), "{:?}", obj.name());
    }
    for fs in kapi_flowcontrol::bootstrap::flow_schemas() {
        let obj = decode(&V1_FS, serde_json::to_value(&fs).unwrap());
        assert!(V1_FS.validate(&obj).is_empty(), "{:?}", obj.name());
    }
    let mut catch_all =
        serde_json::to_value(kapi_flowcontrol::bootstrap::priority_level_catch_all()).unwrap();
    catch_all["spec"]["limited"]["nominalConcurrencyShares"] = json!(6);
    let errs = messages(V1_PL.validate(&decode(&V1_PL, catch_all)));
    assert!(
        errs[0].ends_with("spec of 'catch-all' must equal the fixed value"),
        "{errs:?}"
    );
}

#[test]
fn both_kinds_have_status_and_are_stored_as_v1beta3() {
    let beta_fs = FlowSchemaStrategy { version: "v1beta3" };
    for s in [&V1_PL as &dyn Strategy, &V1BETA3_PL, &V1_FS, &beta_fs] {
        assert!(s.has_status() && s.tracks_generation());
        let obj = Object::from_value(json!({"apiVersion": "x", "kind": "FlowSchema"})).unwrap();
        assert_eq!(
            s.to_storage(obj).api_version(),
            "flowcontrol.apiserver.k8s.io/v1beta3"
        );
    }
    // what an earlier kapi (or kube-apiserver 1.30) stored as v1 is served at each version
    for (s, version) in [(&beta_fs as &dyn Strategy, "v1beta3"), (&V1_FS, "v1")] {
        let stored = Object::from_value(
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema"}),
        )
        .unwrap();
        assert!(s.converts_from_storage());
        assert_eq!(
            s.convert_from_storage(stored).api_version(),
            format!("flowcontrol.apiserver.k8s.io/{version}")
        );
    }
}

#[test]
fn v1beta3_bodies_are_read_and_answered_as_v1beta3() {
    let beta_fs = FlowSchemaStrategy { version: "v1beta3" };
    let body = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
        "metadata": {"name": "f"}, "spec": {"priorityLevelConfiguration": {"name": "workload-low"}}});
    let obj = decode(&beta_fs, body.clone());
    assert_eq!(obj.api_version(), "flowcontrol.apiserver.k8s.io/v1beta3");
    assert_eq!(obj.get("spec").unwrap()["matchingPrecedence"], json!(1000));
    // canonical field order through the v1 type, the version kept
    let canonical = beta_fs.canonicalize(obj);
    assert_eq!(
        canonical.api_version(),
        "flowcontrol.apiserver.k8s.io/v1beta3"
    );
    let keys: Vec<&String> = canonical.as_map().keys().collect();
    assert_eq!(keys, ["apiVersion", "kind", "metadata", "spec"]);
    // a body of the other version names the endpoint's, as upstream's check does
    let err = V1_FS
        .decode(Object::from_value(body).unwrap(), FieldValidation::Strict)
        .unwrap_err();
    assert_eq!(
        err.message,
        "the API version in the data (flowcontrol.apiserver.k8s.io/v1beta3) does not match the expected API version (flowcontrol.apiserver.k8s.io/v1)"
    );
    // strict decoding errors name the served version (kube-apiserver 1.28.7's words)
    let bad = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
        "metadata": {"name": "f"}, "spec": {"bogus": 1, "priorityLevelConfiguration": {"name": "x"}}});
    let err = beta_fs
        .decode(Object::from_value(bad).unwrap(), FieldValidation::Strict)
        .unwrap_err();
    assert_eq!(
        err.message,
        "FlowSchema in version \"v1beta3\" cannot be handled as a FlowSchema: strict decoding error: unknown field \"spec.bogus\""
    );
}
