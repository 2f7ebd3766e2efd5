use super::*;
use kapi_machinery::{Object, RequestInfo};
use serde_json::json;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

fn obj(v: serde_json::Value) -> Object {
    Object::from_value(v).unwrap()
}

fn role(ns: &str, name: &str, rules: serde_json::Value) -> Object {
    obj(json!({"metadata": {"name": name, "namespace": ns}, "rules": rules}))
}

fn cluster_role(name: &str, labels: serde_json::Value, rules: serde_json::Value) -> Object {
    obj(json!({"metadata": {"name": name, "labels": labels}, "rules": rules}))
}

fn binding(ns: &str, name: &str, kind: &str, role: &str, subjects: serde_json::Value) -> Object {
    obj(json!({
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": subjects
    }))
}

fn attrs(u: &UserInfo, method: &str, path: &str) -> Attributes {
    Attributes::from_request(u, &RequestInfo::resolve(method, path, ""))
}

fn allowed(a: &RbacAuthorizer, u: &UserInfo, method: &str, path: &str) -> bool {
    a.decide(&attrs(u, method, path)).0 == Decision::Allow
}

#[test]
fn a_role_binding_grants_its_role_in_its_namespace_only() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::Role,
        &role(
            "d",
            "cm",
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]),
        ),
    );
    index.apply(
        RbacKind::RoleBinding,
        &binding(
            "d",
            "cm",
            "Role",
            "cm",
            json!([{"kind": "User", "name": "u"}]),
        ),
    );
    let a = RbacAuthorizer::new(index.clone());
    let u = user("u", &["system:authenticated"]);
    assert!(allowed(&a, &u, "GET", "/api/v1/namespaces/d/configmaps"));
    assert!(allowed(&a, &u, "GET", "/api/v1/namespaces/d/configmaps/x"));
    assert!(!allowed(
        &a,
        &u,
        "DELETE",
        "/api/v1/namespaces/d/configmaps/x"
    ));
    assert!(!allowed(&a, &u, "GET", "/api/v1/namespaces/e/configmaps"));
    assert!(!allowed(&a, &u, "GET", "/api/v1/configmaps"));
    assert!(!allowed(&a, &u, "GET", "/api/v1/namespaces/d/secrets"));
    assert!(!allowed(
        &a,
        &user("v", &[]),
        "GET",
        "/api/v1/namespaces/d/configmaps"
    ));
    let (d, reason) = a.decide(&attrs(&u, "GET", "/api/v1/namespaces/d/configmaps"));
    assert_eq!(d, Decision::Allow);
    assert_eq!(
        reason,
        r#"RBAC: allowed by RoleBinding "cm/d" of Role "cm" to User "u""#
    );
    index.remove(RbacKind::RoleBinding, "d", "cm");
    assert!(!allowed(&a, &u, "GET", "/api/v1/namespaces/d/configmaps"));
}

#[test]
fn cluster_roles_bind_cluster_wide_or_per_namespace() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::ClusterRole,
        &cluster_role("reader", json!({}), json!([{"verbs": ["get", "list", "watch"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments"]}])),
    );
    index.apply(
        RbacKind::RoleBinding,
        &binding(
            "d",
            "r",
            "ClusterRole",
            "reader",
            json!([{"kind": "Group", "name": "team"}]),
        ),
    );
    let a = RbacAuthorizer::new(index.clone());
    let u = user("u", &["team"]);
    assert!(allowed(&a, &u, "GET", "/api/v1/namespaces/d/pods"));
    assert!(allowed(
        &a,
        &u,
        "GET",
        "/apis/apps/v1/namespaces/d/deployments"
    ));
    assert!(!allowed(&a, &u, "GET", "/api/v1/pods"));
    index.apply(
        RbacKind::ClusterRoleBinding,
        &obj(json!({"metadata": {"name": "r"}, "roleRef": {"kind": "ClusterRole", "name": "reader"}, "subjects": [{"kind": "Group", "name": "team"}]})),
    );
    assert!(allowed(&a, &u, "GET", "/api/v1/pods"));
    assert!(allowed(&a, &u, "GET", "/api/v1/namespaces/e/pods"));
}

#[test]
fn service_account_subjects_match_their_user_name() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::Role,
        &role(
            "d",
            "r",
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
        ),
    );
    // No namespace on the subject: the binding's namespace.
    index.apply(
        RbacKind::RoleBinding,
        &binding(
            "d",
            "b",
            "Role",
            "r",
            json!([{"kind": "ServiceAccount", "name": "sa"}]),
        ),
    );
    let a = RbacAuthorizer::new(index.clone());
    assert!(allowed(
        &a,
        &user("system:serviceaccount:d:sa", &[]),
        "DELETE",
        "/apis/apps/v1/namespaces/d/deployments/x"
    ));
    assert!(!allowed(
        &a,
        &user("system:serviceaccount:e:sa", &[]),
        "GET",
        "/api/v1/namespaces/d/pods"
    ));
    assert!(!allowed(
        &a,
        &user("sa", &[]),
        "GET",
        "/api/v1/namespaces/d/pods"
    ));
}

#[test]
fn subresources_resource_names_and_wildcards() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::ClusterRole,
        &cluster_role("c", json!({}), json!([
            {"verbs": ["update"], "apiGroups": [""], "resources": ["pods/status"]},
            {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]},
            {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["one"]}
        ])),
    );
    index.apply(
        RbacKind::ClusterRoleBinding,
        &obj(json!({"metadata": {"name": "c"}, "roleRef": {"kind": "ClusterRole", "name": "c"}, "subjects": [{"kind": "User", "name": "u"}]})),
    );
    let a = RbacAuthorizer::new(index);
    let u = user("u", &[]);
    assert!(allowed(&a, &u, "PUT", "/api/v1/namespaces/d/pods/p/status"));
    assert!(!allowed(&a, &u, "PUT", "/api/v1/namespaces/d/pods/p"));
    assert!(!allowed(
        &a,
        &u,
        "GET",
        "/api/v1/namespaces/d/pods/p/status"
    ));
    assert!(allowed(
        &a,
        &u,
        "GET",
        "/apis/apps/v1/namespaces/d/deployments/x/scale"
    ));
    assert!(!allowed(
        &a,
        &u,
        "GET",
        "/apis/apps/v1/namespaces/d/deployments/x"
    ));
    assert!(allowed(&a, &u, "GET", "/api/v1/namespaces/d/secrets/one"));
    assert!(!allowed(&a, &u, "GET", "/api/v1/namespaces/d/secrets/two"));
    // A list names nothing, so a named rule does not allow it.
    assert!(!allowed(&a, &u, "GET", "/api/v1/namespaces/d/secrets"));
}

#[test]
fn non_resource_urls_with_star_suffix() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::ClusterRole,
        &cluster_role(
            "disc",
            json!({}),
            json!([{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/healthz"]}]),
        ),
    );
    index.apply(
        RbacKind::ClusterRoleBinding,
        &obj(json!({"metadata": {"name": "disc"}, "roleRef": {"kind": "ClusterRole", "name": "disc"}, "subjects": [{"kind": "Group", "name": "system:unauthenticated"}]})),
    );
    let a = RbacAuthorizer::new(index);
    let anon = user("system:anonymous", &["system:unauthenticated"]);
    assert!(allowed(&a, &anon, "GET", "/api"));
    assert!(allowed(&a, &anon, "GET", "/api/v1"));
    assert!(allowed(&a, &anon, "GET", "/healthz"));
    assert!(!allowed(&a, &anon, "GET", "/healthz/etcd"));
    assert!(!allowed(&a, &anon, "GET", "/apis"));
    assert!(!allowed(&a, &anon, "POST", "/api"));
}

#[test]
fn a_missing_role_is_a_reason() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::RoleBinding,
        &binding(
            "d",
            "b",
            "Role",
            "gone",
            json!([{"kind": "User", "name": "u"}]),
        ),
    );
    let a = RbacAuthorizer::new(index);
    let (d, _) = a.decide(&attrs(&user("u", &[]), "GET", "/api/v1/namespaces/d/pods"));
    assert_eq!(
        d,
        Decision::NoOpinion(r#"RBAC: role.rbac.authorization.k8s.io "gone" not found"#.into())
    );
}

#[test]
fn rules_for_lists_cluster_and_namespace_rules() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::ClusterRole,
        &cluster_role(
            "disc",
            json!({}),
            json!([{"verbs": ["get"], "nonResourceURLs": ["/api"]}]),
        ),
    );
    index.apply(
        RbacKind::ClusterRoleBinding,
        &obj(json!({"metadata": {"name": "disc"}, "roleRef": {"kind": "ClusterRole", "name": "disc"}, "subjects": [{"kind": "Group", "name": "g"}]})),
    );
    index.apply(
        RbacKind::Role,
        &role(
            "d",
            "r",
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
        ),
    );
    index.apply(
        RbacKind::RoleBinding,
        &binding(
            "d",
            "r",
            "Role",
            "r",
            json!([{"kind": "User", "name": "u"}]),
        ),
    );
    let a = RbacAuthorizer::new(index);
    let r = a.rules_for(&user("u", &["g"]), "d");
    assert_eq!(
        r.resource_rules,
        vec![PolicyRule::resource(&["get"], &[""], &["pods"])]
    );
    assert_eq!(
        r.non_resource_rules,
        vec![PolicyRule::urls(&["get"], &["/api"])]
    );
    assert!(!r.incomplete);
    assert!(a
        .rules_for(&user("u", &["g"]), "e")
        .resource_rules
        .is_empty());
}

#[test]
fn aggregation_unions_the_selected_roles_rules() {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::ClusterRole,
        &obj(json!({
            "metadata": {"name": "view"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]},
        })),
    );
    index.apply(
        RbacKind::ClusterRole,
        &cluster_role(
            "b",
            json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
            json!([
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}
            ]),
        ),
    );
    index.apply(
        RbacKind::ClusterRole,
        &cluster_role(
            "a",
            json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
            json!([
                {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}
            ]),
        ),
    );
    index.apply(
        RbacKind::ClusterRole,
        &cluster_role(
            "other",
            json!({"x": "y"}),
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
        ),
    );
    assert_eq!(
        index.aggregated_rules("view").unwrap(),
        vec![
            PolicyRule::resource(&["list"], &[""], &["pods"]),
            PolicyRule::resource(&["get"], &[""], &["pods"]),
        ]
    );
    assert_eq!(index.aggregated_rules("a"), None);
    let names: Vec<String> = index
        .aggregated_cluster_roles()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, vec!["view"]);
    // matchExpressions too.
    index.apply(
        RbacKind::ClusterRole,
        &obj(json!({
            "metadata": {"name": "agg2"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "x", "operator": "In", "values": ["y"]}]}]},
        })),
    );
    assert_eq!(
        index.aggregated_rules("agg2").unwrap(),
        vec![PolicyRule::resource(&["*"], &["*"], &["*"])]
    );
}

fn escalation_index() -> Arc<RbacIndex> {
    let index = RbacIndex::new();
    index.apply(
        RbacKind::Role,
        &role("d", "mine", json!([
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]},
            {"verbs": ["create"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}
        ])),
    );
    index.apply(
        RbacKind::RoleBinding,
        &binding(
            "d",
            "mine",
            "Role",
            "mine",
            json!([{"kind": "User", "name": "u"}]),
        ),
    );
    index
}

#[test]
fn escalation_is_refused_with_upstreams_message() {
    let index = escalation_index();
    let u = user("u", &["dev", "system:authenticated"]);
    assert_eq!(
        confirm_no_escalation(
            &index,
            &u,
            "d",
            &[PolicyRule::resource(&["get"], &[""], &["configmaps"])]
        ),
        Ok(())
    );
    assert_eq!(
        confirm_no_escalation(
            &index,
            &u,
            "d",
            &[PolicyRule::resource(&["get"], &[""], &["pods/status"])]
        ),
        Ok(())
    );
    let err = confirm_no_escalation(
        &index,
        &u,
        "d",
        &[
            PolicyRule::resource(&["get", "delete", "watch"], &[""], &["configmaps"]),
            PolicyRule::resource(&["get"], &["apps"], &["deployments"]).with_names(&["x"]),
            PolicyRule::urls(&["get"], &["/metrics"]),
        ],
    )
    .unwrap_err();
    assert_eq!(
        err,
        "user \"u\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\" \"watch\"]}\n\
         {APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"x\"], Verbs:[\"get\"]}\n\
         {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
    );
    // Rules held in another namespace do not count.
    assert!(confirm_no_escalation(
        &index,
        &u,
        "e",
        &[PolicyRule::resource(&["get"], &[""], &["configmaps"])]
    )
    .is_err());
    assert!(escalation_allowed(&user("admin", &["system:masters"])));
    assert!(!escalation_allowed(&u));
}

#[test]
fn covers_handles_wildcards_names_and_urls() {
    let owner = vec![
        PolicyRule::resource(&["*"], &["apps"], &["*"]),
        PolicyRule::resource(&["get"], &[""], &["secrets"]).with_names(&["a", "b"]),
        PolicyRule::urls(&["get"], &["/healthz/*"]),
    ];
    assert!(
        covers(
            &owner,
            &[PolicyRule::resource(
                &["delete"],
                &["apps"],
                &["deployments/scale"]
            )]
        )
        .0
    );
    assert!(
        covers(
            &owner,
            &[PolicyRule::resource(&["get"], &[""], &["secrets"]).with_names(&["a"])]
        )
        .0
    );
    assert!(
        !covers(
            &owner,
            &[PolicyRule::resource(&["get"], &[""], &["secrets"])]
        )
        .0
    );
    assert!(covers(&owner, &[PolicyRule::urls(&["get"], &["/healthz/etcd"])]).0);
    assert!(!covers(&owner, &[PolicyRule::urls(&["get"], &["/livez"])]).0);
}
