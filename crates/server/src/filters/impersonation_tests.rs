//! The impersonation filter with explicit authorizers: who the request becomes, which checks
//! it needs, and upstream's 403 when one is refused.

use super::*;
use crate::body::full;
use crate::filters::authorization::{AlwaysAllow, AlwaysDeny};
use bytes::Bytes;
use http_body_util::BodyExt;
use tower::ServiceExt;

fn requestor() -> UserInfo {
    UserInfo {
        name: "alice".into(),
        groups: vec!["dev".into(), AUTHENTICATED_GROUP.into()],
        ..Default::default()
    }
}

/// Sends a request with `headers` as alice; returns the status and the body (the effective
/// user as JSON, or the Status).
async fn send(
    authorizer: Arc<dyn Authorizer>,
    headers: &[(&str, &str)],
) -> (u16, serde_json::Value) {
    let inner = tower::service_fn(|req: Request| async move {
        let user = req
            .extensions()
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_default();
        let leftover: Vec<String> = req
            .headers()
            .keys()
            .filter(|k| k.as_str().starts_with("impersonate-"))
            .map(|k| k.to_string())
            .collect();
        let body = serde_json::json!({
            "name": user.name, "uid": user.uid, "groups": user.groups, "extra": user.extra,
            "leftover": leftover,
        });
        Ok::<_, Infallible>(http::Response::new(full(body.to_string())))
    });
    let svc = ImpersonationLayer::new(authorizer).layer(inner);
    let mut b = http::Request::builder().uri("/api/v1/namespaces/d/configmaps");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let mut req = b.body(full(Bytes::new())).unwrap();
    req.extensions_mut().insert(requestor());
    let resp = svc.oneshot(req).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn no_headers_keeps_the_requestor() {
    let (code, body) = send(Arc::new(AlwaysDeny), &[]).await;
    assert_eq!(code, 200);
    assert_eq!(body["name"], "alice");
}

#[tokio::test]
async fn a_user_gains_system_authenticated() {
    let (code, body) = send(Arc::new(AlwaysAllow), &[("Impersonate-User", "bob")]).await;
    assert_eq!(code, 200);
    assert_eq!(body["name"], "bob");
    assert_eq!(body["groups"], serde_json::json!([AUTHENTICATED_GROUP]));
    assert_eq!(body["leftover"], serde_json::json!([]));
}

#[tokio::test]
async fn groups_uid_and_extras_are_taken_as_given() {
    let (code, body) = send(
        Arc::new(AlwaysAllow),
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "g1"),
            ("Impersonate-Group", "g2"),
            ("Impersonate-Uid", "1234"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Extra-Scopes", "edit"),
            ("Impersonate-Extra-Example.com%2fteam", "a"),
        ],
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        body["groups"],
        serde_json::json!(["g1", "g2", AUTHENTICATED_GROUP])
    );
    assert_eq!(body["uid"], "1234");
    assert_eq!(body["extra"]["scopes"], serde_json::json!(["view", "edit"]));
    assert_eq!(body["extra"]["example.com/team"], serde_json::json!(["a"]));
    assert_eq!(body["leftover"], serde_json::json!([]));
}

#[tokio::test]
async fn service_accounts_get_their_groups_unless_groups_are_given() {
    let sa = "system:serviceaccount:ns1:robot";
    let (_, body) = send(Arc::new(AlwaysAllow), &[("Impersonate-User", sa)]).await;
    assert_eq!(
        body["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:ns1",
            AUTHENTICATED_GROUP
        ])
    );
    let (_, body) = send(
        Arc::new(AlwaysAllow),
        &[("Impersonate-User", sa), ("Impersonate-Group", "only")],
    )
    .await;
    assert_eq!(
        body["groups"],
        serde_json::json!(["only", AUTHENTICATED_GROUP])
    );
}

#[tokio::test]
async fn anonymous_and_unauthenticated_groups() {
    let (_, body) = send(
        Arc::new(AlwaysAllow),
        &[("Impersonate-User", ANONYMOUS_USER)],
    )
    .await;
    assert_eq!(body["groups"], serde_json::json!([UNAUTHENTICATED_GROUP]));
    let (_, body) = send(
        Arc::new(AlwaysAllow),
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", UNAUTHENTICATED_GROUP),
        ],
    )
    .await;
    assert_eq!(body["groups"], serde_json::json!([UNAUTHENTICATED_GROUP]));
}

#[tokio::test]
async fn refused_impersonation_is_upstreams_403() {
    let (code, body) = send(Arc::new(AlwaysDeny), &[("Impersonate-User", "bob")]).await;
    assert_eq!(code, 403);
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(body["details"]["kind"], "users");
    assert!(body["message"].as_str().unwrap().starts_with(
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    ));
    let (code, body) = send(
        Arc::new(AlwaysDeny),
        &[("Impersonate-User", "system:serviceaccount:ns1:robot")],
    )
    .await;
    assert_eq!(code, 403);
    assert!(body["message"].as_str().unwrap().starts_with(
        r#"serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1""#
    ));
}

#[tokio::test]
async fn groups_without_a_user_are_an_error() {
    let (code, body) = send(Arc::new(AlwaysAllow), &[("Impersonate-Group", "g1")]).await;
    assert_eq!(code, 500);
    assert_eq!(body["reason"], "InternalError");
}
