use super::{info, setup, user, Setup};
use crate::rules::hash_flow_id;
use crate::{Classification, RequestDigest};
use k8s_openapi::api::flowcontrol::v1::FlowSchema;
use tokio::time::Instant;

pub(crate) async fn classify(
    s: &Setup,
    name: &str,
    groups: &[&str],
    method: &str,
    path: &str,
) -> Classification {
    let u = user(name, groups);
    let i = info(method, path);
    let d = RequestDigest {
        info: &i,
        user: &u,
        query: path.split_once('?').map_or("", |(_, q)| q),
        received_at: Instant::now(),
        deadline: None,
    };
    match s.controller.handle(&d).await {
        Ok(a) => a.classification().clone(),
        Err(r) => r.classification,
    }
}

/// user, groups, method, path, flow schema, priority level
type Case<'a> = (&'a str, &'a [&'a str], &'a str, &'a str, &'a str, &'a str);

const AUTH: &str = "system:authenticated";

#[tokio::test]
async fn bootstrap_schemas_take_their_requests() {
    let s = setup(600);
    let cases: &[Case] = &[
        // kubelet heartbeats: leases and node status go to node-high
        (
            "system:node:n1",
            &["system:nodes", AUTH],
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
            "system-node-high",
            "node-high",
        ),
        (
            "system:node:n1",
            &["system:nodes", AUTH],
            "PATCH",
            "/api/v1/nodes/n1/status",
            "system-node-high",
            "node-high",
        ),
        // other kubelet traffic
        (
            "system:node:n1",
            &["system:nodes", AUTH],
            "GET",
            "/api/v1/namespaces/default/pods/p",
            "system-nodes",
            "system",
        ),
        (
            "system:node:n1",
            &["system:nodes", AUTH],
            "GET",
            "/version",
            "system-nodes",
            "system",
        ),
        // probes from anyone are exempt
        (
            "system:anonymous",
            &["system:unauthenticated"],
            "GET",
            "/healthz",
            "probes",
            "exempt",
        ),
        ("alice", &[AUTH], "GET", "/livez/ping", "probes", "exempt"),
        ("alice", &[AUTH], "GET", "/readyz", "probes", "exempt"),
        // system:masters are exempt
        (
            "admin",
            &["system:masters", AUTH],
            "DELETE",
            "/api/v1/namespaces/x",
            "exempt",
            "exempt",
        ),
        (
            "admin",
            &["system:masters", AUTH],
            "GET",
            "/healthz",
            "exempt",
            "exempt",
        ),
        // leader election
        (
            "system:kube-controller-manager",
            &[AUTH],
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager",
            "system-leader-election",
            "leader-election",
        ),
        (
            "system:kube-scheduler",
            &[AUTH],
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
            "system-leader-election",
            "leader-election",
        ),
        (
            "system:serviceaccount:kube-system:foo",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                AUTH,
            ],
            "PUT",
            "/api/v1/namespaces/kube-system/configmaps/lock",
            "workload-leader-election",
            "leader-election",
        ),
        // endpoints controller
        (
            "system:kube-controller-manager",
            &[AUTH],
            "PUT",
            "/api/v1/namespaces/default/endpoints/kubernetes",
            "endpoint-controller",
            "workload-high",
        ),
        (
            "system:serviceaccount:kube-system:endpoint-controller",
            &["system:serviceaccounts", AUTH],
            "PUT",
            "/api/v1/namespaces/default/endpoints/svc",
            "endpoint-controller",
            "workload-high",
        ),
        // controllers and scheduler
        (
            "system:kube-controller-manager",
            &[AUTH],
            "GET",
            "/api/v1/namespaces/default/configmaps",
            "kube-controller-manager",
            "workload-high",
        ),
        (
            "system:kube-scheduler",
            &[AUTH],
            "POST",
            "/api/v1/namespaces/default/pods/p/binding",
            "kube-scheduler",
            "workload-high",
        ),
        (
            "system:serviceaccount:kube-system:foo",
            &["system:serviceaccounts", AUTH],
            "GET",
            "/api/v1/pods",
            "kube-system-service-accounts",
            "workload-high",
        ),
        // other service accounts
        (
            "system:serviceaccount:default:app",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                AUTH,
            ],
            "GET",
            "/api/v1/namespaces/default/pods",
            "service-accounts",
            "workload-low",
        ),
        // everyone else
        (
            "alice",
            &[AUTH],
            "GET",
            "/api/v1/namespaces/default/pods",
            "global-default",
            "global-default",
        ),
        (
            "system:anonymous",
            &["system:unauthenticated"],
            "GET",
            "/version",
            "global-default",
            "global-default",
        ),
        // in no group at all: nothing matches, the catch-all schema takes it
        ("nobody", &[], "GET", "/version", "catch-all", "catch-all"),
    ];
    for (name, groups, method, path, fs, pl) in cases {
        let c = classify(&s, name, groups, method, path).await;
        assert_eq!(
            (c.flow_schema_name.as_str(), c.priority_level_name.as_str()),
            (*fs, *pl),
            "{name} {method} {path}"
        );
    }
}

#[tokio::test]
async fn distinguishers_follow_the_schema() {
    let s = setup(600);
    let c = classify(
        &s,
        "alice",
        &[AUTH],
        "GET",
        "/api/v1/namespaces/default/pods",
    )
    .await;
    assert_eq!(c.flow_distinguisher, "alice");
    let c = classify(
        &s,
        "system:kube-controller-manager",
        &[AUTH],
        "GET",
        "/api/v1/namespaces/ns1/pods",
    )
    .await;
    assert_eq!(c.flow_distinguisher, "ns1");
    // exempt and Reject levels have no queues and no distinguisher
    let c = classify(&s, "admin", &["system:masters"], "GET", "/api/v1/pods").await;
    assert_eq!(c.flow_distinguisher, "");
    assert_eq!(
        hash_flow_id("global-default", "alice"),
        17644606172554983095
    );
}

fn schema(name: &str, precedence: i32, level: &str) -> FlowSchema {
    let mut fs = crate::bootstrap::flow_schema_catch_all();
    fs.metadata.name = Some(name.into());
    let spec = fs.spec.as_mut().unwrap();
    spec.matching_precedence = Some(precedence);
    spec.priority_level_configuration.name = level.into();
    fs
}

#[tokio::test]
async fn precedence_ties_are_broken_by_name() {
    let s = setup(600);
    let mut schemas = crate::bootstrap::flow_schemas();
    schemas.push(schema("zz-first-by-precedence", 50, "workload-low"));
    schemas.push(schema("b-tied", 60, "workload-high"));
    schemas.push(schema("a-tied", 60, "global-default"));
    s.controller
        .replace_config(&crate::bootstrap::priority_levels(), &schemas);
    let order = s.controller.flow_schema_order();
    let pos = |n: &str| order.iter().position(|x| x == n).unwrap();
    assert!(pos("exempt") < pos("probes") && pos("probes") < pos("zz-first-by-precedence"));
    assert!(pos("zz-first-by-precedence") < pos("a-tied") && pos("a-tied") < pos("b-tied"));
    assert_eq!(order.last().map(String::as_str), Some("catch-all"));
    let c = classify(&s, "alice", &[AUTH], "GET", "/api/v1/pods").await;
    assert_eq!(c.flow_schema_name, "zz-first-by-precedence");

    let mut schemas = crate::bootstrap::flow_schemas();
    schemas.push(schema("b-tied", 60, "workload-high"));
    schemas.push(schema("a-tied", 60, "global-default"));
    s.controller
        .replace_config(&crate::bootstrap::priority_levels(), &schemas);
    let c = classify(&s, "alice", &[AUTH], "GET", "/api/v1/pods").await;
    assert_eq!(
        (c.flow_schema_name.as_str(), c.priority_level_name.as_str()),
        ("a-tied", "global-default")
    );
}

#[test]
fn subjects_and_non_resource_paths_match_as_upstream() {
    use crate::rules::matches_subject;
    use k8s_openapi::api::flowcontrol::v1::{ServiceAccountSubject, Subject};
    let sa = |ns: &str, name: &str| Subject {
        kind: "ServiceAccount".into(),
        service_account: Some(ServiceAccountSubject {
            name: name.into(),
            namespace: ns.into(),
        }),
        ..Default::default()
    };
    let u = user("system:serviceaccount:kube-system:foo", &[]);
    assert!(matches_subject(&u, &sa("kube-system", "*")));
    assert!(matches_subject(&u, &sa("kube-system", "foo")));
    assert!(!matches_subject(&u, &sa("kube-system", "bar")));
    assert!(!matches_subject(&u, &sa("kube", "*")));
    assert!(!matches_subject(&user("bob", &[]), &sa("kube-system", "*")));
}
