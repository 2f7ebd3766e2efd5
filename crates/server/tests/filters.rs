//! The filter stack over real HTTPS: authentication (x509, anonymous, 401), authorization
//! denials, max-in-flight (429), panic recovery and the request timeout.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use bytes::Bytes;
use http_body_util::BodyExt;
use kapi_server::body::{full, HttpResponse, Request};
use kapi_server::filters::{build_handler_chain, ChainConfig};
use kapi_server::AuthorizationMode;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

#[tokio::test]
async fn x509_anonymous_and_unknown_ca() {
    let t =
        common::start_with(|c| c.authorization_modes = vec![AuthorizationMode::AlwaysAllow]).await;

    // No certificate: anonymous, allowed by AlwaysAllow.
    let mut anon = common::connect(&t.server, None).await;
    let r = anon.send("GET", "/api/v1/namespaces/default", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["metadata"]["name"], "default");

    // kapi's admin certificate.
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let r = conn.send("GET", "/api/v1/namespaces/default", None).await;
    assert_eq!(r.status, 200);

    // A certificate from a CA kapi does not trust: 401, as kube-apiserver.
    let stranger = common::foreign_identity("mallory");
    let mut conn = common::connect(&t.server, Some(&stranger)).await;
    let r = conn.send("GET", "/api/v1/namespaces/default", None).await;
    assert_eq!(r.status, 401);
    let s = r.json();
    assert_eq!(s["kind"], "Status");
    assert_eq!(s["reason"], "Unauthorized");
    assert_eq!(s["message"], "Unauthorized");
    assert_eq!(s["code"], 401);
    t.server.shutdown().await;
}

#[tokio::test]
async fn anonymous_disabled_is_401() {
    let t = common::start_with(|c| c.anonymous_auth = false).await;
    let mut anon = common::connect(&t.server, None).await;
    let r = anon.send("GET", "/api/v1/namespaces", None).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["reason"], "Unauthorized");
    let admin = common::admin_identity(&t);
    let r = common::connect(&t.server, Some(&admin))
        .await
        .send("GET", "/api/v1/namespaces", None)
        .await;
    assert_eq!(r.status, 200);
    t.server.shutdown().await;
}

#[tokio::test]
async fn always_deny_is_403_in_upstream_words() {
    let t =
        common::start_with(|c| c.authorization_modes = vec![AuthorizationMode::AlwaysDeny]).await;
    let mut conn = common::connect(&t.server, None).await;
    let r = conn
        .send("GET", "/api/v1/namespaces/default/configmaps", None)
        .await;
    assert_eq!(r.status, 403);
    let s = r.json();
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(
        s["message"],
        r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default": Everything is forbidden."#
    );
    // system:masters may do anything whatever the modes, as upstream.
    let admin = common::admin_identity(&t);
    let r = common::connect(&t.server, Some(&admin))
        .await
        .send("GET", "/api/v1/namespaces/default/configmaps", None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(s["details"]["kind"], "configmaps");
    let r = common::connect(&t.server, None)
        .await
        .send("GET", "/healthz", None)
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json()["message"],
        r#"forbidden: User "system:anonymous" cannot get path "/healthz": Everything is forbidden."#
    );
    t.server.shutdown().await;
}

#[tokio::test]
async fn max_in_flight_answers_429_and_spares_masters() {
    let t = common::start_with(|c| {
        // max-in-flight's own limits, without APF in its place
        c.enable_priority_and_fairness = false;
        c.max_mutating_requests_inflight = 1;
        c.max_requests_inflight = 1;
        c.authorization_modes = vec![AuthorizationMode::AlwaysAllow];
    })
    .await;
    let admin = common::admin_identity(&t);

    // A create whose body has not finished arriving holds the only mutating slot.
    let (_slow, body, reply) = common::hold_mutating_slot(&t, &admin).await;

    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}"#;
    let r = common::connect(&t.server, None)
        .await
        .send("POST", "/api/v1/namespaces/default/configmaps", Some(cm))
        .await;
    assert_eq!(r.status, 429);
    assert_eq!(r.headers["retry-after"], "1");
    assert_eq!(r.body, "Too many requests, please try again later.\n");

    // Health probes are exempt.
    let r = common::connect(&t.server, None)
        .await
        .send("GET", "/readyz", None)
        .await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));

    // Reads have their own bucket.
    let r = common::connect(&t.server, None)
        .await
        .send("GET", "/api/v1/namespaces/default/configmaps", None)
        .await;
    assert_eq!(r.status, 200);

    // system:masters is never turned away.
    let r = common::connect(&t.server, Some(&admin))
        .await
        .send("POST", "/api/v1/namespaces/default/configmaps", Some(cm))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);

    body.send(Bytes::from_static(br#""metadata":{"name":"slow"}}"#))
        .await
        .unwrap();
    drop(body);
    let r = reply.await.unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["metadata"]["name"], "slow");

    let m = common::connect(&t.server, Some(&admin))
        .await
        .send("GET", "/metrics", None)
        .await;
    assert!(
        m.body
            .lines()
            .any(|l| l == r#"apiserver_dropped_requests_total{request_kind="mutating"} 1"#),
        "{}",
        m.body
    );
    assert!(m
        .body
        .lines()
        .any(|l| l.starts_with("apiserver_request_total{") && l.contains(r#"code="429""#)));
    t.server.shutdown().await;
}

/// A chain around an inner service, with test settings.
fn chain<S>(
    inner: S,
    request_timeout: Duration,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> kapi_server::filters::Chain
where
    S: tower::Service<Request, Response = HttpResponse, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    build_handler_chain(
        inner,
        ChainConfig {
            metrics: kapi_server::metrics::Metrics::new().unwrap(),
            known_resource: None,
            request_timeout,
            authenticators: Vec::new(),
            request_header: None,
            anonymous_auth: true,
            authorizer: Arc::new(kapi_server::filters::authorization::AlwaysAllow),
            max_requests_inflight: 0,
            max_mutating_requests_inflight: 0,
            apf: None,
            shutdown,
            auditor: None,
        },
    )
}

fn get(path: &str) -> Request {
    http::Request::builder()
        .uri(path)
        .body(full(Bytes::new()))
        .unwrap()
}

#[tokio::test]
async fn a_panic_is_a_500_for_that_request_only() {
    let inner = tower::service_fn(|req: Request| async move {
        if req.uri().path() == "/api/v1/namespaces/boom/configmaps" {
            panic!("handler bug");
        }
        Ok::<_, Infallible>(http::Response::new(full("fine")))
    });
    let (_running, shutdown) = tokio::sync::watch::channel(false);
    let svc = chain(inner, Duration::from_secs(60), shutdown);
    let resp = svc
        .clone()
        .oneshot(get("/api/v1/namespaces/boom/configmaps"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 500);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        &body[..],
        b"This request caused apiserver to panic. Look in the logs for details.\n"
    );
    let resp = svc
        .oneshot(get("/api/v1/namespaces/calm/configmaps"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// The chain behind the real accept loop (TLS, ALPN): a panic reaches the client as upstream's
/// 500 on HTTP/2 as on HTTP/1.1, and the connection serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_a_500_over_http2_and_http1() {
    kapi_server::tls::install_crypto_provider();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let mut tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![der.clone()], key)
        .unwrap();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let inner = tower::service_fn(|req: Request| async move {
        if req.uri().path() == "/api/v1/namespaces/boom/configmaps" {
            panic!("handler bug");
        }
        Ok::<_, Infallible>(http::Response::new(full("fine")))
    });
    let (_running, shutdown) = tokio::sync::watch::channel(false);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(kapi_server::serve::serve(
        listener,
        Arc::new(tls),
        chain(inner, Duration::from_secs(60), shutdown),
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(1),
        Default::default(),
    ));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der).unwrap();
    type Body = http_body_util::Full<Bytes>;
    let get = |path: &str| {
        http::Request::builder()
            .uri(format!("https://localhost{path}"))
            .body(Body::new(Bytes::new()))
            .unwrap()
    };
    for h2 in [true, false] {
        let mut client = rustls::ClientConfig::builder()
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        client.alpn_protocols = vec![if h2 {
            b"h2".to_vec()
        } else {
            b"http/1.1".to_vec()
        }];
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(client))
            .connect("localhost".try_into().unwrap(), tcp)
            .await
            .unwrap();
        let io = hyper_util::rt::TokioIo::new(tls);
        // The panicking path, then another on the same connection (the two client types share
        // no trait, hence a macro).
        macro_rules! both {
            ($send:expr) => {{
                let mut send = $send;
                let mut replies = Vec::new();
                for path in [
                    "/api/v1/namespaces/boom/configmaps",
                    "/api/v1/namespaces/calm/configmaps",
                ] {
                    send.ready().await.unwrap();
                    let resp = send.send_request(get(path)).await.expect("an answer");
                    replies.push(common::read(resp).await);
                }
                replies
            }};
        }
        let replies = if h2 {
            let (send, conn) =
                hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                    .await
                    .unwrap();
            tokio::spawn(conn);
            both!(send)
        } else {
            let (send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            both!(send)
        };
        assert_eq!(replies[0].status, 500, "h2={h2}");
        assert_eq!(
            replies[0].body,
            "This request caused apiserver to panic. Look in the logs for details.\n",
            "h2={h2}"
        );
        assert_eq!(
            (replies[1].status, replies[1].body.as_str()),
            (200, "fine"),
            "h2={h2}"
        );
    }
    let _ = stop.send(());
    server.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn slow_requests_get_upstreams_504_and_watches_do_not() {
    let inner = tower::service_fn(|_req: Request| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok::<_, Infallible>(http::Response::new(full("late")))
    });
    let (_running, shutdown) = tokio::sync::watch::channel(false);
    let svc = chain(inner, Duration::from_secs(60), shutdown);
    let resp = svc
        .clone()
        .oneshot(get("/api/v1/namespaces/d/configmaps"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 504);
    let status: serde_json::Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["message"],
        "Timeout: request did not complete within the allotted timeout"
    );
    assert_eq!(status["code"], 504);

    // ?timeout= shortens it; a bad one is a 400.
    let resp = svc
        .clone()
        .oneshot(get("/api/v1/namespaces/d/configmaps?timeout=5s"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 504);
    let resp = svc
        .clone()
        .oneshot(get("/api/v1/namespaces/d/configmaps?timeout=soon"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);

    // A watch is long-running: it outlives the request timeout.
    let watch = svc.oneshot(get("/api/v1/namespaces/d/configmaps?watch=true"));
    let outcome = tokio::time::timeout(Duration::from_secs(600), watch).await;
    assert!(outcome.is_err(), "the watch was cut short");
}

#[tokio::test(start_paused = true)]
async fn a_slow_write_gets_the_write_handlers_504_only_past_their_34_s_bound() {
    let inner = tower::service_fn(|_req: Request| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok::<_, Infallible>(http::Response::new(full("late")))
    });
    let post = |path: &str| {
        http::Request::builder()
            .method("POST")
            .uri(path)
            .body(full(Bytes::new()))
            .unwrap()
    };
    let message = |resp: HttpResponse| async move {
        assert_eq!(resp.status(), 504);
        let s: serde_json::Value =
            serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(s["reason"], "Timeout");
        s["message"].as_str().unwrap_or_default().to_string()
    };
    let (_running, shutdown) = tokio::sync::watch::channel(false);
    // The default request timeout (60 s) is past upstream's requestTimeoutUpperBound: the
    // create handler gives up first, in its words.
    let svc = chain(inner, Duration::from_secs(60), shutdown);
    let started = tokio::time::Instant::now();
    let resp = svc
        .clone()
        .oneshot(post("/api/v1/namespaces/d/configmaps"))
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(34));
    assert_eq!(
        message(resp).await,
        "Timeout: request did not complete within requested timeout - context deadline exceeded"
    );
    // A shorter deadline: the timeout filter answers first, for a write as for a read.
    let resp = svc
        .clone()
        .oneshot(post("/api/v1/namespaces/d/configmaps?timeout=5s"))
        .await
        .unwrap();
    assert_eq!(
        message(resp).await,
        "Timeout: request did not complete within the allotted timeout"
    );
    // A read waits for the whole request timeout.
    let started = tokio::time::Instant::now();
    let resp = svc
        .oneshot(get("/api/v1/namespaces/d/configmaps"))
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(60));
    assert_eq!(
        message(resp).await,
        "Timeout: request did not complete within the allotted timeout"
    );
}

#[tokio::test]
async fn impersonation_changes_the_user_after_checking_it() {
    // The inner service answers with the user it sees.
    let inner = tower::service_fn(|req: Request| async move {
        let user = req
            .extensions()
            .get::<kapi_machinery::UserInfo>()
            .cloned()
            .unwrap_or_default();
        let body =
            serde_json::json!({"name": user.name, "groups": user.groups, "extra": user.extra});
        Ok::<_, Infallible>(http::Response::new(full(body.to_string())))
    });
    let (_running, shutdown) = tokio::sync::watch::channel(false);
    let svc = chain(inner, Duration::from_secs(60), shutdown);
    let req = http::Request::builder()
        .uri("/api/v1/namespaces")
        .header("Impersonate-User", "bob")
        .header("Impersonate-Group", "devs")
        .header("Impersonate-Extra-Scopes", "view")
        .body(full(Bytes::new()))
        .unwrap();
    let resp = svc.oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let seen: serde_json::Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(seen["name"], "bob");
    assert_eq!(
        seen["groups"],
        serde_json::json!(["devs", "system:authenticated"])
    );
    assert_eq!(seen["extra"]["scopes"], serde_json::json!(["view"]));
}

#[tokio::test]
async fn impersonation_denied_is_403_in_upstream_words() {
    let t =
        common::start_with(|c| c.authorization_modes = vec![AuthorizationMode::AlwaysDeny]).await;
    let mut conn = common::connect(&t.server, None).await;
    let r = conn
        .send_with(
            "GET",
            "/api/v1/namespaces",
            &[("impersonate-user", "bob")],
            None,
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json()["message"],
        r#"users "bob" is forbidden: User "system:anonymous" cannot impersonate resource "users" in API group "" at the cluster scope: Everything is forbidden."#
    );
    t.server.shutdown().await;
}
