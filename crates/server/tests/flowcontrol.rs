//! API Priority and Fairness through the real server: the bootstrap configuration written,
//! requests classified (response headers naming the FlowSchema and priority level by UID),
//! a user's FlowSchema and PriorityLevelConfiguration taking effect at once, 429 with
//! `Retry-After` from a level without seats, `Dangling` conditions, the debug dumps, and
//! max-in-flight back when APF is off.

use crate::common::{self, admin_identity, connect, Conn, Reply};
use serde_json::{json, Value};
use std::time::Duration;

const FC: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

async fn get_uid(conn: &mut Conn, kind: &str, name: &str) -> Option<String> {
    let r = conn.send("GET", &format!("{FC}/{kind}/{name}"), None).await;
    (r.status == 200).then(|| r.json()["metadata"]["uid"].as_str().unwrap().to_string())
}

/// `GET path` as `user` (impersonated by the admin: APF sees the impersonated user).
async fn as_user(conn: &mut Conn, path: &str, user: &str, groups: &[&str]) -> Reply {
    let mut headers = vec![("impersonate-user", user)];
    headers.extend(groups.iter().map(|g| ("impersonate-group", *g)));
    conn.send_with("GET", path, &headers, None).await
}

/// POSTs `body` to the v1 `resource`; it must be created.
async fn create(conn: &mut Conn, resource: &str, body: &Value) -> Reply {
    let r = conn
        .send("POST", &format!("{FC}/{resource}"), Some(&body.to_string()))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r
}

fn header<'a>(r: &'a Reply, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Waits until `request` is classified into FlowSchema `fs` (by its stored UID) and level `pl`.
async fn wait_classified<F>(conn: &mut Conn, fs: &str, pl: &str, mut request: F) -> Reply
where
    F: for<'c> FnMut(&'c mut Conn) -> futures::future::BoxFuture<'c, Reply>,
{
    for _ in 0..100 {
        let (fs_uid, pl_uid) = (
            get_uid(conn, "flowschemas", fs).await,
            get_uid(conn, "prioritylevelconfigurations", pl).await,
        );
        let r = request(conn).await;
        if fs_uid.is_some()
            && fs_uid.as_deref() == Some(header(&r, "x-kubernetes-pf-flowschema-uid"))
            && pl_uid.as_deref() == Some(header(&r, "x-kubernetes-pf-prioritylevel-uid"))
        {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("requests never classified into {fs}/{pl}");
}

#[tokio::test]
async fn requests_are_classified_by_the_bootstrap_configuration() {
    let t = common::start().await;
    let mut conn = connect(&t.server, Some(&admin_identity(&t))).await;
    // system:masters: exempt
    wait_classified(&mut conn, "exempt", "exempt", |c| {
        Box::pin(c.send("GET", "/api/v1/namespaces", None))
    })
    .await;
    // a node renewing its lease: system-node-high
    let lease = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1";
    wait_classified(&mut conn, "system-node-high", "node-high", |c| {
        Box::pin(as_user(c, lease, "system:node:n1", &["system:nodes"]))
    })
    .await;
    // an authenticated user: global-default
    let r = wait_classified(&mut conn, "global-default", "global-default", |c| {
        Box::pin(as_user(
            c,
            "/api/v1/namespaces/default/configmaps",
            "alice",
            &["system:authenticated"],
        ))
    })
    .await;
    assert_eq!(r.status, 403, "{}", r.body);
    // the suggested and mandatory objects, with their Dangling conditions written
    let list = conn
        .send("GET", &format!("{FC}/flowschemas"), None)
        .await
        .json();
    let names = common::item_names(&list);
    assert_eq!(names.len(), 13, "{names:?}");
    let fs = conn
        .send("GET", &format!("{FC}/flowschemas/catch-all"), None)
        .await
        .json();
    assert_eq!(
        fs["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    // v1beta3 serves the same objects
    let beta = conn
        .send(
            "GET",
            "/apis/flowcontrol.apiserver.k8s.io/v1beta3/prioritylevelconfigurations/exempt",
            None,
        )
        .await;
    assert_eq!(beta.status, 200, "{}", beta.body);
    assert_eq!(
        beta.json()["apiVersion"],
        "flowcontrol.apiserver.k8s.io/v1beta3"
    );
    // the debug dumps
    let dump = conn
        .send(
            "GET",
            "/debug/api_priority_and_fairness/dump_priority_levels",
            None,
        )
        .await;
    assert_eq!(dump.status, 200);
    assert!(dump.body.starts_with("PriorityLevelName"), "{}", dump.body);
    assert!(dump.body.contains("global-default"), "{}", dump.body);
    t.shutdown().await;
}

fn condition(fs: &Value) -> Option<(String, String)> {
    fs["status"]["conditions"].as_array()?.iter().find_map(|c| {
        (c["type"] == "Dangling").then(|| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
    })
}

#[tokio::test]
async fn a_users_objects_take_effect_and_a_level_without_seats_rejects() {
    // A queued request waits a quarter of its time: one second here.
    let t = common::start_with(|c| c.request_timeout = Duration::from_secs(4)).await;
    let mut conn = connect(&t.server, Some(&admin_identity(&t))).await;
    // no seats of its own, none borrowed; one queue of one request
    let pl = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "tiny"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 0, "borrowingLimitPercent": 0, "limitResponse": {"type": "Queue",
            "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}});
    let r = create(&mut conn, "prioritylevelconfigurations", &pl).await;
    assert_eq!(r.json()["spec"]["limited"]["lendablePercent"], 0);
    let fs = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "bob"}, "spec": {"priorityLevelConfiguration": {"name": "tiny"},
        "matchingPrecedence": 500, "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "User", "user": {"name": "bob"}}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                "namespaces": ["*"], "clusterScope": true}]}]}});
    create(&mut conn, "flowschemas", &fs).await;
    let r = wait_classified(&mut conn, "bob", "tiny", |c| {
        Box::pin(as_user(c, "/api/v1/namespaces", "bob", &[]))
    })
    .await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.body, "Too many requests, please try again later.\n");
    assert_eq!(header(&r, "content-type"), "text/plain; charset=utf-8");
    let retry: i64 = header(&r, "retry-after").parse().unwrap();
    assert!(retry >= 1, "{retry}");
    // Queue full: with one request waiting, the next is turned away at once.
    let t0 = std::time::Instant::now();
    let mut other = connect(&t.server, Some(&admin_identity(&t))).await;
    let waiting =
        tokio::spawn(async move { as_user(&mut other, "/api/v1/pods", "bob", &[]).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let full = as_user(&mut conn, "/api/v1/pods", "bob", &[]).await;
    assert_eq!(full.status, 429);
    assert!(
        t0.elapsed() < Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(waiting.await.unwrap().status, 429);

    // A FlowSchema naming a missing level is Dangling; an existing one is not.
    let dangling = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "lost"}, "spec": {"priorityLevelConfiguration": {"name": "nope"},
        "rules": []}});
    let r = create(&mut conn, "flowschemas", &dangling).await;
    assert_eq!(r.json()["spec"]["matchingPrecedence"], 1000);
    let mut seen = (None, None);
    for _ in 0..100 {
        let lost = conn
            .send("GET", &format!("{FC}/flowschemas/lost"), None)
            .await
            .json();
        let bob = conn
            .send("GET", &format!("{FC}/flowschemas/bob"), None)
            .await
            .json();
        seen = (condition(&lost), condition(&bob));
        if seen.0.is_some() && seen.1.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen.0, Some(("True".into(), "NotFound".into())));
    assert_eq!(seen.1, Some(("False".into(), "Found".into())));
    t.shutdown().await;
}

#[tokio::test]
async fn mandatory_specs_are_fixed() {
    let t = common::start().await;
    let mut conn = connect(&t.server, Some(&admin_identity(&t))).await;
    for _ in 0..100 {
        if get_uid(&mut conn, "flowschemas", "global-default")
            .await
            .is_some()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let path = format!("{FC}/prioritylevelconfigurations/catch-all");
    let mut pl = conn.send("GET", &path, None).await.json();
    pl["spec"]["limited"]["nominalConcurrencyShares"] = json!(6);
    let r = conn.send("PUT", &path, Some(&pl.to_string())).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("spec of 'catch-all' must equal the fixed value"),
        "{}",
        r.body
    );
    t.shutdown().await;
}

#[tokio::test]
async fn without_apf_max_in_flight_applies_and_no_headers_are_set() {
    let t = common::start_with(|c| c.enable_priority_and_fairness = false).await;
    let mut conn = connect(&t.server, Some(&admin_identity(&t))).await;
    let r = conn.send("GET", "/api/v1/namespaces", None).await;
    assert_eq!(r.status, 200);
    assert!(r.headers.get("x-kubernetes-pf-flowschema-uid").is_none());
    let dump = conn
        .send(
            "GET",
            "/debug/api_priority_and_fairness/dump_priority_levels",
            None,
        )
        .await;
    assert_eq!(dump.status, 404);
    t.shutdown().await;
}
