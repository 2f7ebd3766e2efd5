//! kubectl against the discovery and OpenAPI documents of the real built-in registry, served
//! over a real loopback HTTP/1.1 listener: `api-resources` (aggregated discovery, and legacy
//! discovery for a client that only knows v2beta1 when that is switched off) and `explain`
//! (OpenAPI v3, and v2 in protobuf for kubectl 1.27 and 1.28). Skipped when the bundled
//! kubectl binaries are not installed.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
// Helpers outside `#[test]` functions work on documents and processes the tests just made.
#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use kapi_endpoints::discovery::Discovery;
use kapi_endpoints::openapi::OpenApi;
use kapi_resources::{build, RegistryConfig};
use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::DynStorage;
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KUBECTL_DIR: &str = "/usr/lib/google-cloud-sdk/bin";

struct Docs {
    discovery: Discovery,
    openapi: OpenApi,
    /// `METHOD target` of every request, in arrival order.
    log: std::sync::Mutex<Vec<String>>,
    /// (content type, body) of every request with a body.
    bodies: std::sync::Mutex<Vec<(String, String)>>,
    /// Canned answers to GET of an object path.
    objects: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

/// Answers one request: discovery, OpenAPI, `/version`, else a 404 Status.
fn answer(docs: &Docs, target: &str, headers: &HeaderMap) -> http::Response<Bytes> {
    let (path, query) = target
        .split_once('?')
        .map_or((target, None), |(p, q)| (p, Some(q)));
    if path == "/version" {
        let body = r#"{"major":"1","minor":"33","gitVersion":"v1.33.0","platform":"linux/amd64"}"#;
        let mut r = http::Response::new(Bytes::from_static(body.as_bytes()));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return r;
    }
    if let Some(obj) = docs.objects.lock().unwrap().get(path) {
        let mut r = http::Response::new(Bytes::from(obj.clone()));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return r;
    }
    if let Some(r) = docs
        .discovery
        .serve(path, headers)
        .or_else(|| docs.openapi.serve(path, query, headers))
    {
        return r;
    }
    let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#;
    let mut r = http::Response::new(Bytes::from_static(body.as_bytes()));
    *r.status_mut() = http::StatusCode::NOT_FOUND;
    r
}

/// A minimal HTTP/1.1 server: one request per connection, `Connection: close`.
async fn serve(listener: tokio::net::TcpListener, docs: Arc<Docs>) {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            return;
        };
        let docs = docs.clone();
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf).to_string();
            let mut lines = head.split("\r\n");
            let request_line = lines.next().unwrap_or_default().to_string();
            if let Ok(mut log) = docs.log.lock() {
                log.push(
                    request_line
                        .rsplit_once(' ')
                        .map_or(request_line.clone(), |(l, _)| l.to_string()),
                );
            }
            let target = Some(request_line.as_str())
                .and_then(|l| l.split(' ').nth(1))
                .unwrap_or("/")
                .to_string();
            let mut headers = HeaderMap::new();
            for line in lines.take_while(|l| !l.is_empty()) {
                if let Some((k, v)) = line.split_once(':') {
                    if let (Ok(k), Ok(v)) = (
                        HeaderName::from_bytes(k.trim().as_bytes()),
                        HeaderValue::from_str(v.trim()),
                    ) {
                        headers.append(k, v);
                    }
                }
            }
            let header_end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0) + 4;
            let length: usize = headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .unwrap_or(0);
            while buf.len() < header_end + length {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            if length > 0 {
                let content_type = headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                let body = String::from_utf8_lossy(&buf[header_end.min(buf.len())..]).into_owned();
                docs.bodies.lock().unwrap().push((content_type, body));
            }
            let resp = answer(&docs, &target, &headers);
            let mut out = format!("HTTP/1.1 {}\r\n", resp.status());
            for (k, v) in resp.headers() {
                out.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap_or_default()));
            }
            out.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                resp.body().len()
            ));
            let _ = sock.write_all(out.as_bytes()).await;
            let _ = sock.write_all(resp.body()).await;
            let _ = sock.shutdown().await;
        });
    }
}

async fn start(v2beta1: bool) -> (String, tempfile::TempDir, Arc<Docs>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: DynStorage =
        Arc::new(EmbeddedStorage::open(dir.path()).expect("open embedded storage"));
    let mut config = RegistryConfig::new(storage);
    config.watch_cache = false;
    let groups = build(config).await.expect("build");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let docs = Arc::new(Docs {
        discovery: Discovery::new(&groups, &addr.to_string()).with_v2beta1(v2beta1),
        openapi: OpenApi::new(&groups, "v1.33.0"),
        log: std::sync::Mutex::new(Vec::new()),
        bodies: std::sync::Mutex::new(Vec::new()),
        objects: std::sync::Mutex::new(std::collections::HashMap::new()),
    });
    tokio::spawn(serve(listener, docs.clone()));
    (format!("http://{addr}"), dir, docs)
}

async fn kubectl(minor: u32, server: &str, cache: &Path, args: &[&str]) -> (bool, String, String) {
    let bin = format!("{KUBECTL_DIR}/kubectl.1.{minor}");
    let out = tokio::process::Command::new(&bin)
        .arg(format!("--server={server}"))
        .arg(format!("--cache-dir={}", cache.display()))
        .args(args)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .await
        .expect("run kubectl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn have_kubectl() -> bool {
    let ok = Path::new(&format!("{KUBECTL_DIR}/kubectl.1.33")).exists();
    if !ok {
        eprintln!("skipped: no kubectl under {KUBECTL_DIR}");
    }
    ok
}

fn configmaps_line(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("no configmaps in\n{stdout}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_api_resources_and_explain() {
    if !have_kubectl() {
        return;
    }
    let (server, dir, _) = start(true).await;
    for minor in [33, 32, 31, 30, 29, 28, 27] {
        let cache = dir.path().join(format!("cache-{minor}"));
        let (ok, stdout, stderr) = kubectl(minor, &server, &cache, &["api-resources"]).await;
        assert!(ok, "kubectl 1.{minor} api-resources: {stderr}");
        assert_eq!(
            configmaps_line(&stdout),
            ["configmaps", "cm", "v1", "true", "ConfigMap"],
            "kubectl 1.{minor}"
        );
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("deployments ") && l.contains("apps/v1")),
            "{stdout}"
        );
        // kubectl 1.27 and 1.28 explain from OpenAPI v2 in protobuf, the others from v3.
        let (ok, stdout, stderr) =
            kubectl(minor, &server, &cache, &["explain", "configmap.data"]).await;
        assert!(ok, "kubectl 1.{minor} explain: {stderr}");
        assert!(
            stdout.contains("Data contains the configuration data."),
            "kubectl 1.{minor}:\n{stdout}"
        );
        let field = "deployment.spec.template.spec.containers.image";
        let (ok, stdout, stderr) = kubectl(minor, &server, &cache, &["explain", field]).await;
        assert!(ok, "kubectl 1.{minor} explain: {stderr}");
        assert!(
            stdout.contains("Container image name"),
            "kubectl 1.{minor}:\n{stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_falls_back_to_legacy_discovery() {
    if !have_kubectl() {
        return;
    }
    // Without v2beta1, kubectl 1.27 (which asks only for it) walks /api, /apis and each group-version.
    let (server, dir, _) = start(false).await;
    let cache = dir.path().join("cache-legacy");
    let (ok, stdout, stderr) = kubectl(27, &server, &cache, &["api-resources"]).await;
    assert!(ok, "{stderr}");
    assert_eq!(
        configmaps_line(&stdout),
        ["configmaps", "cm", "v1", "true", "ConfigMap"]
    );
    let (ok, stdout, stderr) = kubectl(27, &server, &cache, &["api-versions"]).await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.lines().any(|l| l == "apps/v1") && stdout.lines().any(|l| l == "v1"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_finds_server_side_field_validation() {
    if !have_kubectl() {
        return;
    }
    let (server, dir, docs) = start(true).await;
    let manifest = dir.path().join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    // The stub answers the create itself with 404; what matters is how kubectl sent it.
    let _ = kubectl(
        33,
        &server,
        &cache,
        &["create", "-f", manifest.to_str().unwrap()],
    )
    .await;
    let log = docs.log.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|l| l.starts_with("GET /openapi/v3/api/v1?hash=")),
        "kubectl did not fetch the core v3 document: {log:?}"
    );
    let post = log
        .iter()
        .find(|l| l.starts_with("POST "))
        .unwrap_or_else(|| panic!("no POST in {log:?}"));
    assert!(post.contains("fieldValidation=Strict"), "{post}");
}

/// Strategic-merge patches for built-in kinds are computed with list merge keys. The v3
/// documents do not advertise strategic merge (their schemas lack patch metadata), so kubectl
/// takes the keys from its compiled-in types, as it does against kube-apiserver's metadata.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_apply_patches_with_merge_keys() {
    if !have_kubectl() {
        return;
    }
    let (server, dir, docs) = start(true).await;
    let old = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}}}"#;
    let mut live: serde_json::Value = serde_json::from_str(old).unwrap();
    live["metadata"]["annotations"] =
        serde_json::json!({ "kubectl.kubernetes.io/last-applied-configuration": old });
    live["metadata"]["resourceVersion"] = serde_json::json!("5");
    docs.objects.lock().unwrap().insert(
        "/apis/apps/v1/namespaces/default/deployments/d".into(),
        live.to_string(),
    );
    let manifest = dir.path().join("d.json");
    std::fs::write(&manifest, old.replace("a:1", "a:2")).unwrap();
    let cache = dir.path().join("cache");
    let _ = kubectl(
        33,
        &server,
        &cache,
        &["apply", "-f", manifest.to_str().unwrap()],
    )
    .await;
    let bodies = docs.bodies.lock().unwrap().clone();
    let (content_type, patch) = bodies
        .iter()
        .find(|(_, b)| b.contains("a:2"))
        .unwrap_or_else(|| panic!("no patch sent: {bodies:?}"));
    assert_eq!(content_type, "application/strategic-merge-patch+json");
    let patch: serde_json::Value = serde_json::from_str(patch).unwrap();
    let pod_spec = &patch["spec"]["template"]["spec"];
    assert_eq!(
        pod_spec["$setElementOrder/containers"],
        serde_json::json!([{"name": "a"}, {"name": "b"}])
    );
    assert_eq!(
        pod_spec["containers"],
        serde_json::json!([{"image": "a:2", "name": "a"}]),
        "only the changed container, by merge key"
    );
}
