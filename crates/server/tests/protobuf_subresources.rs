//! The bodies of create-only subresources and reviews in protobuf, as client-go sends them
//! (binding, eviction in policy/v1 and v1beta1, TokenRequest, TokenReview, the access
//! reviews), and the authorization of subresources by their own name. Each case checks the
//! effect on the server, not only the code.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::protobuf::{
    create_pod, delete_options, ensure_default_service_account, framed, get, meta, post_json,
    put_json, send_pb, PROTOBUF,
};
use common::Conn;
use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::authorization::v1 as authz;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::policy::{v1 as policy, v1beta1 as policy_beta};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as metav1;
use serde_json::json;

/// A policy/v1 PodDisruptionBudget over `app: <app>` whose status says how many disruptions
/// it allows (as its controller would have written it).
async fn budget(conn: &mut Conn, name: &str, app: &str, allowed: i64) {
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let path = format!("{pdbs}/{name}");
    let mut pdb = match get(conn, &path).await {
        r if r.status == 200 => r.json(),
        _ => {
            post_json(
                conn,
                pdbs,
                json!({"metadata": {"name": name},
                       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}}),
            )
            .await
        }
    };
    pdb["status"] = json!({"observedGeneration": pdb["metadata"]["generation"],
        "disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1});
    put_json(conn, &format!("{path}/status"), pdb).await;
}

/// A running, ready pod (so that an eviction has to ask its budget).
async fn running_pod(conn: &mut Conn, name: &str, app: &str) {
    let mut pod = create_pod(conn, name, json!({"app": app}), None).await;
    pod["status"] = json!({"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]});
    put_json(
        conn,
        &format!("/api/v1/namespaces/default/pods/{name}/status"),
        pod,
    )
    .await;
}

fn eviction(name: &str) -> policy::Eviction {
    policy::Eviction {
        metadata: Some(meta(name)),
        delete_options: None,
    }
}

#[tokio::test]
async fn binding_and_eviction_in_protobuf() {
    let t = common::start().await;
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    ensure_default_service_account(&mut conn).await;
    let pods = "/api/v1/namespaces/default/pods";

    // Both subresources are in discovery as upstream lists them.
    let v1 = get(&mut conn, "/api/v1").await.json();
    let find = |name: &str| {
        v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in /api/v1"))
    };
    let b = find("pods/binding");
    assert_eq!(
        (b["kind"].clone(), b["verbs"].clone()),
        (json!("Binding"), json!(["create"]))
    );
    let e = find("pods/eviction");
    assert_eq!(
        (e["group"].clone(), e["version"].clone(), e["kind"].clone()),
        (json!("policy"), json!("v1"), json!("Eviction"))
    );
    assert_eq!(e["verbs"], json!(["create"]));

    // Binding sets the node, merges annotations and marks the pod scheduled.
    create_pod(&mut conn, "p", json!({}), None).await;
    let mut binding_meta = meta("p");
    binding_meta
        .annotations
        .insert("scheduler.example/by".into(), "pb".into());
    let binding = core::Binding {
        metadata: Some(binding_meta),
        target: Some(core::ObjectReference {
            kind: Some("Node".into()),
            name: Some("node-1".into()),
            ..Default::default()
        }),
    };
    let r = send_pb(
        &mut conn,
        "POST",
        &format!("{pods}/p/binding"),
        "v1",
        "Binding",
        &binding,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let status = r.json();
    assert_eq!(
        (status["kind"].clone(), status["status"].clone()),
        (json!("Status"), json!("Success"))
    );
    let pod = get(&mut conn, &format!("{pods}/p")).await.json();
    assert_eq!(pod["spec"]["nodeName"], "node-1");
    assert_eq!(pod["metadata"]["annotations"]["scheduler.example/by"], "pb");
    let scheduled = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
        .unwrap();
    assert_eq!(scheduled["status"], "True");
    // A bound pod cannot be bound again.
    let r = send_pb(
        &mut conn,
        "POST",
        &format!("{pods}/p/binding"),
        "v1",
        "Binding",
        &binding,
    )
    .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-1\""
    );

    // A body naming another pod than the URL acts on neither: upstream's 400.
    running_pod(&mut conn, "guarded", "guarded").await;
    let r = send_pb(
        &mut conn,
        "POST",
        &format!("{pods}/guarded/eviction"),
        "policy/v1",
        "Eviction",
        &eviction("p"),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "name in URL does not match name in Eviction object"
    );
    assert_eq!(get(&mut conn, &format!("{pods}/p")).await.status, 200);

    // An eviction the budget forbids is a 429 with the DisruptionBudget cause.
    budget(&mut conn, "guard", "guarded", 0).await;
    let r = send_pb(
        &mut conn,
        "POST",
        &format!("{pods}/guarded/eviction"),
        "policy/v1",
        "Eviction",
        &eviction("guarded"),
    )
    .await;
    assert_eq!(r.status, 429, "{}", r.body);
    let status = r.json();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(
        status["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
                "message": "The disruption budget guard needs 1 healthy pods and has 1 currently"}])
    );
    assert_eq!(get(&mut conn, &format!("{pods}/guarded")).await.status, 200);

    // Once the budget allows one, a policy/v1beta1 Eviction deletes the pod and takes the
    // disruption from the budget.
    budget(&mut conn, "guard", "guarded", 1).await;
    let beta = policy_beta::Eviction {
        metadata: Some(meta("guarded")),
        delete_options: None,
    };
    let r = send_pb(
        &mut conn,
        "POST",
        &format!("{pods}/guarded/eviction"),
        "policy/v1beta1",
        "Eviction",
        &beta,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(get(&mut conn, &format!("{pods}/guarded")).await.status, 404);
    let pdb = get(
        &mut conn,
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/guard",
    )
    .await
    .json();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(
        pdb["status"]["disruptedPods"]["guarded"].is_string(),
        "{pdb}"
    );

    // A pod no budget covers is deleted, with the eviction's own DeleteOptions.
    running_pod(&mut conn, "free", "free").await;
    let mut free = eviction("free");
    free.delete_options = Some(delete_options(|o| o.grace_period_seconds = Some(0)));
    let r = send_pb(
        &mut conn,
        "POST",
        &format!("{pods}/free/eviction"),
        "policy/v1",
        "Eviction",
        &free,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(get(&mut conn, &format!("{pods}/free")).await.status, 404);
}

#[tokio::test]
async fn subresources_are_authorized_by_their_own_name() {
    let t = common::start().await;
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    ensure_default_service_account(&mut conn).await;
    post_json(
        &mut conn,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        json!({"metadata": {"name": "evictor"},
               "rules": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]}),
    )
    .await;
    post_json(
        &mut conn,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        json!({"metadata": {"name": "evictor"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "evictor"},
               "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
    )
    .await;
    create_pod(&mut conn, "p", json!({}), None).await;
    let as_alice = [("Impersonate-User", "alice")];
    let binding = core::Binding {
        metadata: Some(meta("p")),
        target: Some(core::ObjectReference {
            name: Some("node-1".into()),
            ..Default::default()
        }),
    };
    let r = conn
        .send_bytes(
            "POST",
            "/api/v1/namespaces/default/pods/p/binding",
            PROTOBUF,
            &as_alice,
            framed("v1", "Binding", &binding),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "pods \"p\" is forbidden: User \"alice\" cannot create resource \"pods/binding\" in API group \"\" in the namespace \"default\""
    );
    // The pod is Pending: an eviction deletes it without asking any budget.
    let r = conn
        .send_bytes(
            "POST",
            "/api/v1/namespaces/default/pods/p/eviction",
            PROTOBUF,
            &as_alice,
            framed("policy/v1", "Eviction", &eviction("p")),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        get(&mut conn, "/api/v1/namespaces/default/pods/p")
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn token_and_review_requests_in_protobuf() {
    let t = common::start().await;
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    post_json(
        &mut conn,
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "robot"}}),
    )
    .await;
    let request = authn::TokenRequest {
        metadata: Some(meta("robot")),
        spec: Some(authn::TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            bound_object_ref: None,
        }),
        status: Some(authn::TokenRequestStatus {
            token: Some(String::new()),
            expiration_timestamp: None,
        }),
    };
    let r = send_pb(
        &mut conn,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        "authentication.k8s.io/v1",
        "TokenRequest",
        &request,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let issued = r.json();
    assert_eq!(issued["kind"], "TokenRequest");

    // A body naming another service account is refused, as upstream's TokenREST.
    let mut other = request.clone();
    other.metadata = Some(meta("default"));
    let r = send_pb(
        &mut conn,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        "authentication.k8s.io/v1",
        "TokenRequest",
        &other,
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "TokenRequest.authentication.k8s.io \"robot\" is invalid: metadata.name: Invalid value: \"default\": must match the service account name if specified"
    );
    let token = issued["status"]["token"].as_str().unwrap().to_string();
    assert!(!token.is_empty());

    let review = authn::TokenReview {
        metadata: Some(meta("")),
        spec: Some(authn::TokenReviewSpec {
            token: Some(token),
            audiences: Vec::new(),
        }),
        status: None,
    };
    let r = send_pb(
        &mut conn,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        "authentication.k8s.io/v1",
        "TokenReview",
        &review,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let reviewed = r.json();
    assert_eq!(reviewed["status"]["authenticated"], true, "{reviewed}");
    assert_eq!(
        reviewed["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );

    let attributes = || authz::ResourceAttributes {
        namespace: Some("default".into()),
        verb: Some("get".into()),
        group: Some(String::new()),
        version: Some(String::new()),
        resource: Some("pods".into()),
        subresource: Some(String::new()),
        name: Some(String::new()),
        ..Default::default()
    };
    let sar = authz::SubjectAccessReview {
        metadata: Some(meta("")),
        spec: Some(authz::SubjectAccessReviewSpec {
            resource_attributes: Some(attributes()),
            user: Some("alice".into()),
            uid: Some(String::new()),
            ..Default::default()
        }),
        status: None,
    };
    let r = send_pb(
        &mut conn,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &sar,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["status"]["allowed"], false);

    let local = authz::LocalSubjectAccessReview {
        metadata: Some(metav1::ObjectMeta {
            namespace: Some("default".into()),
            ..meta("")
        }),
        spec: sar.spec.clone(),
        status: None,
    };
    let r = send_pb(
        &mut conn,
        "POST",
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        &local,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["status"]["allowed"], false);

    let own = authz::SelfSubjectAccessReview {
        metadata: Some(meta("")),
        spec: Some(authz::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(attributes()),
            non_resource_attributes: None,
        }),
        status: None,
    };
    let r = send_pb(
        &mut conn,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &own,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["status"]["allowed"], true);
}
