//! Helpers for the in-process server tests, on `kapi-testing`: a server on 127.0.0.1:0 with the
//! embedded store in a temporary directory, a kube-rs client from the kubeconfig it writes, and
//! a raw HTTPS client (with or without a client certificate) for what kube-rs cannot show
//! (status lines, headers, streaming request bodies).
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

pub mod protobuf;

use kapi_server::{RunningServer, ServerConfig};
pub use kapi_testing::raw::{channel_body, connect, connect_tls, read, Conn, Identity, Reply};
pub use kapi_testing::TestServer;

/// Starts a server with the test defaults, adjusted by `tweak`.
pub async fn start_with(tweak: impl FnOnce(&mut ServerConfig) + Send + 'static) -> TestServer {
    TestServer::builder()
        .configure(tweak)
        .start()
        .await
        .expect("server starts")
}

pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

/// Polls `check` every 50 ms until it holds, for up to 30 seconds: what a cache or a
/// controller makes true shortly after a request returns.
pub async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..600 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{what} never happened");
}

/// Waits until a GET of `path` with `resourceVersion=0` (answered by the watch cache) finds
/// the object, so that what follows reads it from the cache.
pub async fn until_cached(server: &RunningServer, identity: &Identity, path: &str) {
    let cached = format!("{path}?resourceVersion=0");
    until(&format!("the watch cache holds {path}"), || async {
        let mut conn = connect(server, Some(identity)).await;
        conn.send("GET", &cached, None).await.status == 200
    })
    .await;
}

/// The sum of `etcd_request_duration_seconds_count` for one storage operation and resource.
pub async fn storage_reads(conn: &mut Conn, operation: &str, resource: &str) -> u64 {
    let m = conn.send("GET", "/metrics", None).await;
    assert_eq!(m.status, 200);
    m.body
        .lines()
        .filter(|l| {
            l.starts_with("etcd_request_duration_seconds_count{")
                && l.contains(&format!(r#"operation="{operation}""#))
                && l.contains(&format!(r#"type="{resource}""#))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// A kube-rs client from the kubeconfig the server wrote.
pub async fn kube_client(server: &RunningServer) -> kube::Client {
    kapi_testing::kube_client(server).await.unwrap()
}

/// The admin identity from the server's certificate directory.
pub fn admin_identity(t: &TestServer) -> Identity {
    Identity::admin(&t.cert_dir())
}

/// A client certificate for `cn`/`orgs` signed by a CA the server does not know.
pub fn foreign_identity(cn: &str) -> Identity {
    Identity::foreign(cn)
}

/// Polls `/metrics` until `line` appears (a precondition, not a timing assertion).
/// A create whose body has not finished arriving: it holds a mutating in-flight slot (seen in
/// `apiserver_current_inflight_requests`) until the rest of its body is sent on the returned
/// sender; the handle answers the create. The connection is returned to be kept open.
pub async fn hold_mutating_slot(
    t: &TestServer,
    admin: &Identity,
) -> (
    Conn,
    tokio::sync::mpsc::Sender<bytes::Bytes>,
    tokio::task::JoinHandle<Reply>,
) {
    let mut slow = connect(&t.server, Some(admin)).await;
    let (body, reply) = slow
        .send_streaming("POST", "/api/v1/namespaces/default/configmaps")
        .await;
    body.send(bytes::Bytes::from_static(
        br#"{"apiVersion":"v1","kind":"ConfigMap","#,
    ))
    .await
    .unwrap();
    wait_for_metric(
        &t.server,
        admin,
        r#"apiserver_current_inflight_requests{request_kind="mutating"} 1"#,
    )
    .await;
    (slow, body, reply)
}

pub async fn wait_for_metric(server: &RunningServer, identity: &Identity, line: &str) {
    kapi_testing::raw::wait_for_metric_line(server, identity, |l| l == line).await
}

/// Polls `/metrics` until a line satisfies `pred`.
pub async fn wait_for_metric_line(
    server: &RunningServer,
    identity: &Identity,
    pred: impl Fn(&str) -> bool,
) {
    kapi_testing::raw::wait_for_metric_line(server, identity, pred).await
}

/// The `metadata.name` of each item of a list response, in order.
pub fn item_names(list: &serde_json::Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}
