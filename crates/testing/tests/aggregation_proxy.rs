//! The aggregator's proxy in process: an APIService served by a Service whose Endpoints point
//! at an HTTPS server on 127.0.0.1 (the kubelet stand-in, which answers any other path with
//! `kubelet stand-in: <METHOD> <path>`), reached with `--enable-aggregator-routing`; the
//! discovery check, a proxied request, and upstream's 503s once the server is gone.

use kapi_testing::kubelet::{Config, Kubelet};
use kapi_testing::raw::{connect, Identity};
use kapi_testing::TestServer;
use serde_json::{json, Value};
use std::time::Duration;

async fn create(server: &TestServer, path: &str, body: Value) {
    let mut conn = connect(&server.server, Some(&Identity::admin(&server.cert_dir()))).await;
    let r = conn.send("POST", path, Some(&body.to_string())).await;
    assert_eq!(r.status, 201, "{path}: {}", r.body);
}

/// `status|reason|message` of the APIService's `Available` condition.
async fn available(server: &TestServer) -> String {
    let mut conn = connect(&server.server, Some(&Identity::admin(&server.cert_dir()))).await;
    let r = conn
        .send(
            "GET",
            "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.wardle.example.com",
            None,
        )
        .await;
    let c = &r.json()["status"]["conditions"][0];
    format!(
        "{}|{}|{}",
        c["status"].as_str().unwrap_or_default(),
        c["reason"].as_str().unwrap_or_default(),
        c["message"].as_str().unwrap_or_default()
    )
}

async fn wait_for(server: &TestServer, prefix: &str) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        last = available(server).await;
        if last.starts_with(prefix) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the APIService did not become {prefix}: {last}");
}

#[tokio::test]
async fn a_remote_group_version_is_proxied_to_its_endpoint() {
    let backend = Kubelet::start(Config::default()).await.unwrap();
    let port = backend.addr.port();
    let server = TestServer::builder()
        .configure(|c| c.enable_aggregator_routing = true)
        .start()
        .await
        .unwrap();
    create(
        &server,
        "/api/v1/namespaces",
        json!({"metadata": {"name": "wardle"}}),
    )
    .await;
    create(
        &server,
        "/api/v1/namespaces/wardle/services",
        json!({"metadata": {"name": "api"}, "spec": {"ports": [{"port": 443, "name": "https"}]}}),
    )
    .await;
    create(
        &server,
        "/api/v1/namespaces/wardle/endpoints",
        json!({"metadata": {"name": "api"}, "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"port": port, "name": "https"}]}]}),
    )
    .await;
    create(
        &server,
        "/apis/apiregistration.k8s.io/v1/apiservices",
        json!({"metadata": {"name": "v1alpha1.wardle.example.com"}, "spec": {
            "group": "wardle.example.com", "version": "v1alpha1", "groupPriorityMinimum": 1000,
            "versionPriority": 15, "insecureSkipTLSVerify": true,
            "service": {"namespace": "wardle", "name": "api"}}}),
    )
    .await;
    assert_eq!(
        wait_for(&server, "True").await,
        "True|Passed|all checks passed"
    );

    let mut conn = connect(&server.server, Some(&Identity::admin(&server.cert_dir()))).await;
    let r = conn
        .send(
            "GET",
            "/apis/wardle.example.com/v1alpha1/flunders?limit=1",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body,
        "kubelet stand-in: GET /apis/wardle.example.com/v1alpha1/flunders?limit=1\n"
    );
    let r = conn.send("GET", "/apis/wardle.example.com", None).await;
    assert_eq!(r.json()["preferredVersion"]["version"], "v1alpha1");
    let r = conn.send("GET", "/apis", None).await;
    assert!(
        r.body.contains("\"name\":\"wardle.example.com\""),
        "{}",
        r.body
    );

    // The server goes away: the dial error, then upstream's `service unavailable`.
    drop(backend);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = conn
        .send("GET", "/apis/wardle.example.com/v1alpha1/flunders", None)
        .await;
    assert_eq!(r.status, 503);
    assert_eq!(
        r.body,
        format!("error trying to reach service: dial tcp 127.0.0.1:{port}: connect: connection refused\n")
    );
    let url = format!("https://127.0.0.1:{port}/apis/wardle.example.com/v1alpha1");
    assert_eq!(
        wait_for(&server, "False").await,
        format!(
            "False|FailedDiscoveryCheck|failing or missing response from {url}: Get {url:?}: dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    let r = conn
        .send("GET", "/apis/wardle.example.com/v1alpha1/flunders", None)
        .await;
    assert_eq!((r.status, r.body.as_str()), (503, "service unavailable\n"));
}
