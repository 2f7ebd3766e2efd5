//! Authentication end to end in process, over real HTTPS with kube-rs and a raw client:
//! TokenRequest issues service-account tokens that authenticate as bearer tokens (and stop when
//! the account is deleted), TokenReview and SelfSubjectReview answer, static tokens work, bad
//! tokens are upstream's 401. The authorizer is explicit (AlwaysAllow): this is about who, not
//! what.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview};
use k8s_openapi::api::core::v1::ServiceAccount;
use kapi_server::AuthorizationMode;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

const STATIC: &str = "31ada4fd-adec-460c-809a-9e56ceb75269";

/// A server with a token file; the returned directory holds the file.
async fn server() -> (common::TestServer, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let path = files.path().join("tokens.csv");
    std::fs::write(&path, format!("{STATIC},jane,1001,\"dev,ops\"\n")).unwrap();
    let t = common::start_with(|c| {
        c.authorization_modes = vec![AuthorizationMode::AlwaysAllow];
        c.token_auth_file = Some(path);
    })
    .await;
    (t, files)
}

fn ssr() -> &'static str {
    r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#
}

/// Who the server says `token` is (SelfSubjectReview over a connection without a client
/// certificate); the reply as is.
async fn whoami(t: &common::TestServer, token: &str) -> common::Reply {
    let mut conn = common::connect(&t.server, None).await;
    conn.send_with(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[("authorization", &format!("Bearer {token}"))],
        Some(ssr()),
    )
    .await
}

#[tokio::test]
async fn service_account_tokens_authenticate_until_the_account_is_gone() {
    let (t, _files) = server().await;
    let client = common::kube_client(&t.server).await;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap();
    sas.create(&PostParams::default(), &sa).await.unwrap();

    let req: TokenRequest = serde_json::from_value(json!({"spec": {"audiences": []}})).unwrap();
    let issued = sas
        .create_token_request("robot", &PostParams::default(), &req)
        .await
        .unwrap();
    assert_eq!(issued.spec.expiration_seconds, Some(3600));
    assert_eq!(
        issued.spec.audiences,
        vec!["https://kubernetes.default.svc.cluster.local"]
    );
    let status = issued.status.unwrap();
    assert!(!status.token.is_empty());

    // The account is read from its watch cache once the cache holds it, as upstream's
    // token getter reads its informer: authenticating reads no storage.
    let admin = common::admin_identity(&t);
    common::until_cached(
        &t.server,
        &admin,
        "/api/v1/namespaces/default/serviceaccounts/robot",
    )
    .await;
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let reads = common::storage_reads(&mut conn, "get", "serviceaccounts").await;
    for _ in 0..3 {
        assert_eq!(whoami(&t, &status.token).await.status, 201);
    }
    assert_eq!(
        common::storage_reads(&mut conn, "get", "serviceaccounts").await,
        reads
    );
    let reply = whoami(&t, &status.token).await;
    assert_eq!(reply.status, 201);
    let user = &reply.json()["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );

    // TokenReview agrees, and names the audiences.
    let reviews: Api<TokenReview> = Api::all(client.clone());
    let review: TokenReview =
        serde_json::from_value(json!({"spec": {"token": status.token}})).unwrap();
    let answer = reviews
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let st = answer.status.unwrap();
    assert_eq!(st.authenticated, Some(true));
    assert_eq!(
        st.user.unwrap().username.as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    assert_eq!(
        st.audiences.unwrap(),
        vec!["https://kubernetes.default.svc.cluster.local"]
    );

    // Tokens are checked against the accounts' watch cache, as upstream's informers: the
    // deletion ends the token once the cache has it.
    sas.delete("robot", &DeleteParams::default()).await.unwrap();
    common::until("the deleted account's token is refused", || async {
        whoami(&t, &status.token).await.status == 401
    })
    .await;
    let review: TokenReview =
        serde_json::from_value(json!({"spec": {"token": status.token}})).unwrap();
    let st = reviews
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(st.authenticated, None);
    assert_eq!(
        st.error.as_deref(),
        Some(r#"serviceaccounts "robot" not found"#)
    );
}

#[tokio::test]
async fn token_requests_are_validated_as_upstream() {
    let (t, _files) = server().await;
    let mut conn = common::connect(&t.server, Some(&common::admin_identity(&t))).await;
    let sa = r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}"#;
    let reply = conn
        .send(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            Some(sa),
        )
        .await;
    assert_eq!(reply.status, 201);
    let body = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":60}}"#;
    let reply = conn
        .send(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/robot/token",
            Some(body),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.json()["message"],
        r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"#
    );
    let reply = conn
        .send(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/ghost/token",
            Some(r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#),
        )
        .await;
    assert_eq!(reply.status, 404);
    assert_eq!(
        reply.json()["message"],
        r#"serviceaccounts "ghost" not found"#
    );
    let reply = conn
        .send(
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            Some(r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}"#),
        )
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json()["message"],
        "token is required for TokenReview in authentication"
    );
}

#[tokio::test]
async fn static_tokens_and_bad_tokens() {
    let (t, _files) = server().await;
    let reply = whoami(&t, STATIC).await;
    assert_eq!(reply.status, 201);
    let user = &reply.json()["status"]["userInfo"];
    assert_eq!(user["username"], "jane");
    assert_eq!(user["uid"], "1001");
    assert_eq!(
        user["groups"],
        json!(["dev", "ops", "system:authenticated"])
    );

    let reply = whoami(&t, "garbage").await;
    assert_eq!(reply.status, 401);
    let status = reply.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Unauthorized");
    assert_eq!(status["message"], "Unauthorized");

    // No credentials at all: anonymous (the default).
    let mut conn = common::connect(&t.server, None).await;
    let reply = conn
        .send(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            Some(ssr()),
        )
        .await;
    assert_eq!(reply.status, 201);
    assert_eq!(
        reply.json()["status"]["userInfo"],
        json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]})
    );
}

#[tokio::test]
async fn without_anonymous_auth_no_credentials_is_401() {
    let t = common::start_with(|c| {
        c.authorization_modes = vec![AuthorizationMode::AlwaysAllow];
        c.anonymous_auth = false;
    })
    .await;
    let mut conn = common::connect(&t.server, None).await;
    let reply = conn.send("GET", "/api", None).await;
    assert_eq!(reply.status, 401);
    let mut conn = common::connect(&t.server, Some(&common::admin_identity(&t))).await;
    assert_eq!(conn.send("GET", "/api", None).await.status, 200);
}
