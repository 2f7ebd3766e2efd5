//! kapi in process with the kubelet stand-in (`kapi_testing::kubelet`) behind a Node on
//! 127.0.0.1: `pods/log` through kube-rs, `pods/exec` over SPDY spliced to the kubelet (kapi's
//! own SPDY client on the client side) and over WebSocket v5 (translated by kapi), and
//! upstream's refusals.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Node, Pod};
use kapi_proxy::spdy::{Role, Session};
use kapi_testing::kubelet::{Config, Kubelet};
use kapi_testing::raw::{connect_tls, Identity};
use kapi_testing::TestServer;
use kube::api::{LogParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

async fn setup() -> (TestServer, Kubelet, tempfile::TempDir) {
    let kubelet = Kubelet::start(Config {
        require_client_cert: true,
        ..Default::default()
    })
    .await
    .expect("the stand-in starts");
    let dir = tempfile::tempdir().expect("a temp dir");
    for (name, pem) in [
        ("ca.crt", &kubelet.pki.ca_pem),
        ("client.crt", &kubelet.pki.client_cert_pem),
        ("client.key", &kubelet.pki.client_key_pem),
    ] {
        std::fs::write(dir.path().join(name), pem).expect("writing the stand-in's PKI");
    }
    let p = dir.path().to_path_buf();
    let server = TestServer::builder()
        .disable_admission_plugins(["ServiceAccount"])
        .configure(move |c| {
            c.kubelet = kapi_proxy::KubeletClientConfig {
                certificate_authority: Some(p.join("ca.crt")),
                client_certificate: Some(p.join("client.crt")),
                client_key: Some(p.join("client.key")),
                preferred_address_types: vec!["InternalIP".into()],
                ..Default::default()
            };
        })
        .start()
        .await
        .expect("kapi starts");
    let nodes: Api<Node> = Api::all(server.client());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let status = json!({"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.addr.port()}}}});
    nodes
        .patch_status("n1", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for (name, node) in [("p", Some("n1")), ("pending", None)] {
        let mut pod = json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "a", "image": "busybox"}]}});
        if let Some(n) = node {
            pod["spec"]["nodeName"] = json!(n);
        }
        let pod: Pod = serde_json::from_value(pod).unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    (server, kubelet, dir)
}

/// A TLS connection to kapi as its admin, HTTP/1.1.
async fn tls(server: &TestServer) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    connect_tls(
        &server.server,
        Some(&Identity::admin(&server.cert_dir())),
        b"http/1.1",
    )
    .await
}

#[tokio::test]
async fn logs_reach_the_kubelet_with_their_options() {
    let (server, _kubelet, _dir) = setup().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let all = pods.logs("p", &LogParams::default()).await.unwrap();
    assert_eq!(all.lines().count(), 5, "{all}");
    let tail = LogParams {
        tail_lines: Some(2),
        ..Default::default()
    };
    assert_eq!(
        pods.logs("p", &tail).await.unwrap(),
        "line 4 of p/a\nline 5 of p/a\n"
    );
    // A pod not on a node has nothing to stream.
    assert_eq!(
        pods.logs("pending", &LogParams::default()).await.unwrap(),
        ""
    );
    let err = pods
        .logs(
            "p",
            &LogParams {
                container: Some("zz".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("container zz is not valid for pod p"),
        "{err}"
    );
}

#[tokio::test]
async fn exec_over_spdy_is_spliced_to_the_kubelet() {
    let (server, _kubelet, _dir) = setup().await;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(tls(&server).await))
            .await
            .unwrap();
    tokio::spawn(conn.with_upgrades());
    let req = http::Request::post(
        "/api/v1/namespaces/default/pods/p/exec?command=sh&command=-c&command=echo%20hi%3B%20exit%207&stdout=true",
    )
    .header("Host", "localhost")
    .header("Connection", "Upgrade")
    .header("Upgrade", "SPDY/3.1")
    .header("X-Stream-Protocol-Version", "v4.channel.k8s.io")
    .body(http_body_util::Empty::<Bytes>::new())
    .unwrap();
    let mut resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 101);
    assert_eq!(
        resp.headers()["x-stream-protocol-version"],
        "v4.channel.k8s.io"
    );
    let io = hyper::upgrade::on(&mut resp).await.unwrap();
    let (session, _) = Session::new(TokioIo::new(io), Role::Client);
    let mut error = session
        .open(vec![("streamtype".into(), "error".into())])
        .await
        .unwrap();
    let mut stdout = session
        .open(vec![("streamtype".into(), "stdout".into())])
        .await
        .unwrap();
    let mut out = Vec::new();
    while let Some(d) = stdout.read().await {
        out.extend_from_slice(&d);
    }
    assert_eq!(out, b"hi\n");
    let mut status = Vec::new();
    while let Some(d) = error.read().await {
        status.extend_from_slice(&d);
    }
    let status: Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(status["reason"], "NonZeroExitCode");
    assert_eq!(status["details"]["causes"][0]["message"], "7");
}

#[tokio::test]
async fn exec_over_websocket_v5_is_translated() {
    let (server, _kubelet, _dir) = setup().await;
    let mut req = format!(
        "wss://localhost:{}/api/v1/namespaces/default/pods/p/exec?command=cat&stdin=true&stdout=true",
        server.server.addr.port()
    )
    .into_client_request()
    .unwrap();
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        "v5.channel.k8s.io".parse().unwrap(),
    );
    let (mut ws, resp) = tokio_tungstenite::client_async(req, tls(&server).await)
        .await
        .unwrap();
    assert_eq!(
        resp.headers()["sec-websocket-protocol"],
        "v5.channel.k8s.io"
    );
    // The empty message on stdout says the session is up.
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::Binary(vec![1].into())
    );
    ws.send(Message::Binary(b"\x00hello\n".to_vec().into()))
        .await
        .unwrap();
    ws.send(Message::Binary(vec![255, 0].into())).await.unwrap();
    let mut out = Vec::new();
    let mut status = Value::Null;
    while let Some(Ok(m)) = ws.next().await {
        match m {
            Message::Binary(d) if d.first() == Some(&1) => out.extend_from_slice(&d[1..]),
            Message::Binary(d) if d.first() == Some(&3) => {
                status = serde_json::from_slice(&d[1..]).unwrap()
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    assert_eq!(out, b"hello\n");
    assert_eq!(status, json!({"metadata": {}, "status": "Success"}));
}

#[tokio::test]
async fn refusals_are_upstreams() {
    let (server, _kubelet, _dir) = setup().await;
    let mut conn =
        kapi_testing::raw::connect(&server.server, Some(&Identity::admin(&server.cert_dir())))
            .await;
    let r = conn
        .send(
            "POST",
            "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true",
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json()["message"].clone()),
        (400, json!("Upgrade request required"))
    );
    let r = conn
        .send(
            "POST",
            "/api/v1/namespaces/default/pods/pending/exec?command=ls",
            None,
        )
        .await;
    assert_eq!(
        r.json()["message"],
        "pod pending does not have a host assigned"
    );
    let r = conn
        .send(
            "PUT",
            "/api/v1/namespaces/default/pods/p/exec?command=ls",
            None,
        )
        .await;
    assert_eq!(r.status, 405);
    assert_eq!(
        r.json()["message"],
        "the server does not allow this method on the requested resource"
    );
    // Without --allow-loopback-proxy-targets, a node on 127.0.0.1 is not proxied.
    let r = conn
        .send("GET", "/api/v1/nodes/n1/proxy/healthz", None)
        .await;
    assert_eq!(
        (r.status, r.json()["message"].clone()),
        (400, json!("address not allowed"))
    );
    let r = conn
        .send(
            "GET",
            "/api/v1/namespaces/default/pods/p/log?tailLines=x",
            None,
        )
        .await;
    assert_eq!(
        r.json()["message"],
        "strconv.ParseInt: parsing \"x\": invalid syntax"
    );
}
