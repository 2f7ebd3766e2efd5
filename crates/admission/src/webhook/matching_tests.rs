use super::*;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};
use serde_json::json;

fn attrs(
    op: Operation,
    group: &str,
    version: &str,
    resource: &str,
    sub: &str,
    ns: &str,
) -> Attributes {
    let mut a = Attributes::new(
        op,
        GroupVersionKind::new(group, version, "X"),
        GroupVersionResource::new(group, version, resource),
        ns,
        "n",
    );
    a.subresource = sub.to_string();
    a
}

fn rule(v: serde_json::Value) -> Rule {
    serde_json::from_value(v).unwrap()
}

#[test]
fn rules_match_wildcards_subresources_and_scope() {
    let pods = attrs(Operation::Create, "", "v1", "pods", "", "d");
    let status = attrs(Operation::Update, "", "v1", "pods", "status", "d");
    let all = rule(
        json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}),
    );
    assert!(all.matches_exact(&pods));
    assert!(
        !all.matches_exact(&status),
        "`*` does not match subresources"
    );
    let all_sub = rule(
        json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}),
    );
    assert!(all_sub.matches_exact(&status));
    let pod_status = rule(
        json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"]}),
    );
    assert!(pod_status.matches_exact(&status));
    assert!(!pod_status.matches_exact(&pods));
    let any_status = rule(
        json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/status"]}),
    );
    assert!(any_status.matches_exact(&status));
    let create_only = rule(
        json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/*"]}),
    );
    assert!(!create_only.matches_exact(&status));

    let cluster = rule(
        json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
    );
    let namespaced = rule(
        json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
    );
    assert!(!cluster.matches_exact(&pods));
    assert!(namespaced.matches_exact(&pods));
    // A namespace object is cluster-scoped even when its request names the namespace.
    let ns = attrs(Operation::Create, "", "v1", "namespaces", "", "x");
    assert!(cluster.matches_exact(&ns));
    assert!(!namespaced.matches_exact(&ns));
}

#[test]
fn equivalent_matches_other_versions_and_groups_exact_does_not() {
    let deploy = attrs(Operation::Create, "apps", "v1", "deployments", "", "d");
    let beta = rule(
        json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1beta1"], "resources": ["deployments"]}),
    );
    assert!(rules_match(std::slice::from_ref(&beta), None, &deploy));
    assert!(rules_match(
        std::slice::from_ref(&beta),
        Some("Equivalent"),
        &deploy
    ));
    assert!(!rules_match(
        std::slice::from_ref(&beta),
        Some("Exact"),
        &deploy
    ));
    let ext = rule(
        json!({"operations": ["CREATE"], "apiGroups": ["extensions"], "apiVersions": ["v1beta1"], "resources": ["deployments"]}),
    );
    assert!(rules_match(std::slice::from_ref(&ext), None, &deploy));
    let other = rule(
        json!({"operations": ["CREATE"], "apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["deployments"]}),
    );
    assert!(!rules_match(&[other], None, &deploy));
}

#[test]
fn selectors_match_old_or_new_object_and_the_namespace_itself() {
    let sel = label_selector(Some(
        &json!({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["x"]}]}),
    ));
    let mut a = attrs(Operation::Update, "", "v1", "configmaps", "", "d");
    a.object = Some(Object::from_value(json!({"metadata": {"labels": {"a": "2"}}})).unwrap());
    assert!(!object_selector_matches(&sel, &a));
    a.old_object = Some(Object::from_value(json!({"metadata": {"labels": {"a": "1"}}})).unwrap());
    assert!(
        object_selector_matches(&sel, &a),
        "the old object's labels count"
    );
    assert!(label_selector(Some(
        &json!({"matchExpressions": [{"key": "b", "operator": "Bad"}]})
    ))
    .is_none());
    assert!(object_selector_matches(&label_selector(None), &a));

    let ns = Object::from_value(json!({"metadata": {"name": "d", "labels": {"a": "1"}}})).unwrap();
    assert!(namespace_selector_matches(&sel, &a, Some(&ns)));
    assert!(!namespace_selector_matches(&sel, &a, None));
    let cluster = attrs(Operation::Create, "", "v1", "nodes", "", "");
    assert!(
        namespace_selector_matches(&sel, &cluster, None),
        "cluster-scoped always match"
    );
    let nsreq = attrs(Operation::Create, "", "v1", "namespaces", "", "");
    assert!(!namespace_selector_matches(&sel, &nsreq, None));
}

#[test]
fn policy_rules_honour_resource_names_and_exclusions() {
    let a = attrs(Operation::Create, "", "v1", "configmaps", "", "d");
    let named = rule(
        json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["configmaps"], "resourceNames": ["other"]}),
    );
    assert!(!resource_rules_match(&[named], &[], None, &a));
    let any = rule(
        json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["configmaps"]}),
    );
    let excl = rule(
        json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "resourceNames": ["n"]}),
    );
    assert!(resource_rules_match(
        std::slice::from_ref(&any),
        &[],
        None,
        &a
    ));
    assert!(!resource_rules_match(&[any], &[excl], None, &a));
}
