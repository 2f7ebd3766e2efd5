#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "test code: a panic is a failed test"
)]

use super::*;
use serde_json::json;

fn obj(v: Value) -> Object {
    Object::from_value(v).unwrap()
}

fn role(annotations: Value, rules: Value) -> Object {
    obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:kube-scheduler", "annotations": annotations,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "rules": rules,
    }))
}

fn policy_role() -> Object {
    role(
        json!({AUTOUPDATE: "true"}),
        json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["storage.k8s.io"], "resources": ["csistoragecapacities"], "verbs": ["get", "list", "watch"]},
        ]),
    )
}

#[test]
fn a_missing_role_is_created_as_the_policy_says() {
    let r = reconcile_role(None, &policy_role()).unwrap();
    assert_eq!(r.operation, Operation::Create);
    assert_eq!(r.object, policy_role());
}

#[test]
fn a_role_that_matches_is_left_alone() {
    let r = reconcile_role(Some(&policy_role()), &policy_role()).unwrap();
    assert_eq!(r.operation, Operation::None);
    assert!(!r.protected);
}

#[test]
fn missing_rules_are_added_back_broken_down_and_extra_rules_kept() {
    let existing = role(
        json!({AUTOUPDATE: "true"}),
        json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
            {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]},
        ]),
    );
    let r = reconcile_role(Some(&existing), &policy_role()).unwrap();
    assert_eq!(r.operation, Operation::Update);
    assert_eq!(
        r.object.get("rules").unwrap(),
        &json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
            {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["watch"]},
            {"apiGroups": ["storage.k8s.io"], "resources": ["csistoragecapacities"], "verbs": ["get"]},
            {"apiGroups": ["storage.k8s.io"], "resources": ["csistoragecapacities"], "verbs": ["list"]},
            {"apiGroups": ["storage.k8s.io"], "resources": ["csistoragecapacities"], "verbs": ["watch"]},
        ])
    );
    // Once added, nothing more to do.
    let again = reconcile_role(Some(&r.object), &policy_role()).unwrap();
    assert_eq!(again.operation, Operation::None);
}

#[test]
fn autoupdate_false_protects_the_role() {
    let existing = role(
        json!({AUTOUPDATE: "false"}),
        json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]),
    );
    let r = reconcile_role(Some(&existing), &policy_role()).unwrap();
    assert!(r.protected);
    assert_eq!(r.missing_rules.len(), 5, "reported, not written");
}

#[test]
fn policy_annotations_and_labels_are_added_but_the_objects_own_values_win() {
    let existing = obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:kube-scheduler", "labels": {"kubernetes.io/bootstrapping": "mine", "team": "a"}},
        "rules": policy_role().get("rules").unwrap().clone(),
    }));
    let r = reconcile_role(Some(&existing), &policy_role()).unwrap();
    assert_eq!(r.operation, Operation::Update);
    let md = r.object.metadata().unwrap();
    assert_eq!(md["annotations"], json!({AUTOUPDATE: "true"}));
    assert_eq!(
        md["labels"],
        json!({"kubernetes.io/bootstrapping": "mine", "team": "a"})
    );
}

fn aggregated(selectors: Value) -> Object {
    obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "view", "annotations": {AUTOUPDATE: "true"},
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "aggregationRule": {"clusterRoleSelectors": selectors},
    }))
}

#[test]
fn aggregated_roles_get_missing_selectors_and_keep_aggregated_rules() {
    let want = json!({"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}});
    let theirs = json!({"matchLabels": {"example.com/aggregate": "true"}});
    let mut existing = aggregated(json!([theirs]));
    // what the aggregation controller filled in is not "extra"
    existing.insert(
        "rules",
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
    );
    let r = reconcile_role(Some(&existing), &aggregated(json!([want]))).unwrap();
    assert_eq!(r.operation, Operation::Update);
    assert_eq!(
        r.object.get("aggregationRule").unwrap(),
        &json!({"clusterRoleSelectors": [theirs, want]})
    );
    assert_eq!(r.object.get("rules"), existing.get("rules"));
    let same = reconcile_role(Some(&r.object), &aggregated(json!([want]))).unwrap();
    assert_eq!(same.operation, Operation::None);
    // A role the policy does not aggregate loses the aggregation.
    let plain = reconcile_role(Some(&existing), &policy_role()).unwrap();
    assert!(plain.object.get("aggregationRule").is_none());
}

fn binding(annotations: Value, role: &str, subjects: Value) -> Object {
    obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "system:kube-scheduler", "annotations": annotations,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }))
}

#[test]
fn bindings_get_missing_subjects_keep_theirs_and_are_recreated_for_another_role() {
    let scheduler = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"});
    let extra = json!({"kind": "ServiceAccount", "name": "s", "namespace": "kube-system"});
    let expected = binding(
        json!({AUTOUPDATE: "true"}),
        "system:kube-scheduler",
        json!([scheduler]),
    );
    assert_eq!(
        reconcile_binding(None, &expected).operation,
        Operation::Create
    );
    let existing = binding(
        json!({AUTOUPDATE: "true"}),
        "system:kube-scheduler",
        json!([extra]),
    );
    let r = reconcile_binding(Some(&existing), &expected);
    assert_eq!(r.operation, Operation::Update);
    assert_eq!(
        r.object.get("subjects").unwrap(),
        &json!([extra, scheduler])
    );
    assert_eq!(
        reconcile_binding(Some(&r.object), &expected).operation,
        Operation::None
    );

    let other_role = binding(json!({AUTOUPDATE: "true"}), "view", json!([scheduler]));
    let r = reconcile_binding(Some(&other_role), &expected);
    assert_eq!(r.operation, Operation::Recreate);
    assert_eq!(r.object, expected);

    let mine = binding(
        json!({AUTOUPDATE: "false"}),
        "system:kube-scheduler",
        json!([]),
    );
    let r = reconcile_binding(Some(&mine), &expected);
    assert!(r.protected);
}
