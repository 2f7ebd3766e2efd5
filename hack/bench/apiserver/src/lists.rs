//! The LIST scenarios of issue 15, each printed with the reference measured in the same run:
//!
//! - `list`: LIST of 1,000 ConfigMaps as JSON and protobuf, with `resourceVersion=""`
//!   (consistent) and `"0"`, against etcd's own range read of 1,000 keys of the same size
//!   through its HTTP gateway (`POST /v3/kv/range`), at the same concurrency.
//! - `paging`: over N ConfigMaps, the first and the last page of `limit=500`, the whole paged
//!   walk (what kubectl's `--chunk-size=500` does), one unpaged list, and kubectl's own walk
//!   (`kubectl get configmaps -A --chunk-size=500 -o name`, when kubectl is on the PATH).
//! - `namespace`: LIST of a namespace of 10 on a server holding nothing else, then while N
//!   objects live in another namespace.

use anyhow::{bail, Context, Result};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use futures::stream::{self, StreamExt};
use std::time::{Duration, Instant};

const JSON: &str = "application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A ConfigMap of about 450 bytes, as the issue's figures use.
pub fn configmap(ns: &str, i: usize) -> http::Request<Vec<u8>> {
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","labels":{{"app":"bench","shard":"s{}"}}}},"data":{{"key":"value-{i}","payload":"{}"}}}}"#,
        i % 10,
        "x".repeat(200)
    );
    http::Request::post(format!("/api/v1/namespaces/{ns}/configmaps"))
        .header("content-type", "application/json")
        .body(body.into_bytes())
        .unwrap_or_default()
}

/// Creates namespace `ns` and `n` ConfigMaps in it, `concurrency` at a time.
pub async fn fill(client: &kube::Client, ns: &str, n: usize, concurrency: usize) -> Result<()> {
    create_namespace(client, ns).await?;
    add(client, ns, 0, n, concurrency).await
}

/// Creates namespace `ns`.
pub async fn create_namespace(client: &kube::Client, ns: &str) -> Result<()> {
    let body = format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{ns}"}}}}"#);
    client
        .request_text(
            http::Request::post("/api/v1/namespaces")
                .header("content-type", "application/json")
                .body(body.into_bytes())?,
        )
        .await?;
    Ok(())
}

/// Creates ConfigMaps `from..from + n` of the benchmark's shape in an existing `ns`.
pub async fn add(
    client: &kube::Client,
    ns: &str,
    from: usize,
    n: usize,
    concurrency: usize,
) -> Result<()> {
    super::rate(client, n, concurrency, |i| configmap(ns, from + i)).await?;
    Ok(())
}

/// One GET with an `Accept` header; returns the body's size.
async fn get(client: &kube::Client, path: &str, accept: &str) -> Result<usize> {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(kube::client::Body::empty())?;
    let resp = client.send(req).await?;
    let status = resp.status();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .map_err(|e| anyhow::anyhow!("reading {path}: {e}"))?
        .to_bytes();
    if !status.is_success() {
        bail!("{path}: {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(body.len())
}

/// `n` requests made by `one`, `concurrency` in flight: requests per second, best of `rounds`.
async fn best_rate<F, Fut>(rounds: usize, n: usize, concurrency: usize, one: F) -> Result<f64>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<usize>>,
{
    let mut rates = Vec::new();
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let results: Vec<Result<usize>> = stream::iter(0..n)
            .map(|_| one())
            .buffer_unordered(concurrency)
            .collect()
            .await;
        for r in results {
            r?;
        }
        rates.push(n as f64 / started.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    Ok(rates[rates.len() / 2])
}

/// etcd's HTTP gateway, for the reference read.
struct Gateway {
    client: kube::Client,
}

impl Gateway {
    fn new(url: &str) -> Result<Gateway> {
        let config = kube::Config::new(url.parse().context("the etcd URL")?);
        Ok(Gateway {
            client: kube::Client::try_from(config)?,
        })
    }

    async fn post(&self, path: &str, body: serde_json::Value) -> Result<usize> {
        let req = http::Request::post(path)
            .header("content-type", "application/json")
            .body(body.to_string().into_bytes())?;
        Ok(self.client.request_text(req).await?.len())
    }
}

/// The `list` scenario. Returns the printed rows.
pub async fn list_scenario(
    client: &kube::Client,
    etcd: Option<&str>,
    lists: usize,
    concurrency: usize,
    rounds: usize,
) -> Result<Vec<String>> {
    fill(client, "bench-list", 1000, concurrency).await?;
    let path = "/api/v1/namespaces/bench-list/configmaps";
    let mut rows = Vec::new();
    let reference = match etcd {
        Some(url) => {
            let gw = Gateway::new(url)?;
            let prefix = format!(
                "/bench-reference-{}/configmaps/bench-list/",
                std::process::id()
            );
            // The same 1,000 keys with values of a stored ConfigMap's size.
            let value = B64.encode(
                br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-000","namespace":"bench-list","uid":"00000000-0000-0000-0000-000000000000","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench","shard":"s0"},"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:key":{},"f:payload":{}}}}]},"data":{"key":"value-0","payload":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}"#,
            );
            let gw_ref = &gw;
            let puts: Vec<Result<usize>> = stream::iter(0..1000)
                .map(|i| {
                    let key = B64.encode(format!("{prefix}cm-{i:04}"));
                    let body = serde_json::json!({"key": key, "value": value});
                    async move { gw_ref.post("/v3/kv/put", body).await }
                })
                .buffer_unordered(concurrency)
                .collect()
                .await;
            for p in puts {
                p?;
            }
            let range = serde_json::json!({
                "key": B64.encode(&prefix),
                "range_end": B64.encode(format!("{}0", prefix.trim_end_matches('/'))),
            });
            let r = best_rate(rounds, lists, concurrency, || {
                gw_ref.post("/v3/kv/range", range.clone())
            })
            .await?;
            rows.push(format!(
                "| etcd range read of 1,000 keys (HTTP gateway), reference | {r:.0} /s | 1.00× |"
            ));
            Some(r)
        }
        None => None,
    };
    for (name, accept) in [("JSON", JSON), ("protobuf", PROTOBUF)] {
        for (rv_name, query) in [("\"\"", ""), ("0", "?resourceVersion=0")] {
            let full = format!("{path}{query}");
            let full = &full;
            let r = best_rate(rounds, lists, concurrency, || get(client, full, accept)).await?;
            let ratio = reference.map_or("–".to_string(), |e| format!("{:.2}×", r / e));
            rows.push(format!(
                "| LIST 1,000 configmaps, {name}, resourceVersion={rv_name} | {r:.0} /s | {ratio} |"
            ));
        }
    }
    Ok(rows)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Reads a page and returns its continue token and how many items it held.
async fn page(client: &kube::Client, path: &str) -> Result<(Option<String>, usize)> {
    let req = http::Request::get(path).body(Vec::new())?;
    let text = client.request_text(req).await?;
    let list: serde_json::Value = serde_json::from_str(&text)?;
    let items = list["items"].as_array().map_or(0, Vec::len);
    let token = list["metadata"]["continue"]
        .as_str()
        .filter(|c| !c.is_empty())
        .map(String::from);
    Ok((token, items))
}

/// The `paging` scenario over namespace `ns` holding `n` objects.
pub async fn paging_scenario(
    client: &kube::Client,
    kubeconfig: &std::path::Path,
    ns: &str,
    n: usize,
) -> Result<Vec<String>> {
    let base = format!("/api/v1/namespaces/{ns}/configmaps?limit=500");
    // The first page, a few times (median).
    let mut firsts = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        page(client, &base).await?;
        firsts.push(t.elapsed());
    }
    firsts.sort();
    // The whole walk, timing each page; "last" is the last full page (the namespace also
    // holds its kube-root-ca.crt, which may spill into a page of its own).
    let started = Instant::now();
    let mut token = page(client, &base).await?.0;
    let mut last = Duration::ZERO;
    let mut pages = 1;
    let mut last_full = 1;
    while let Some(t) = token {
        let path = format!("{base}&continue={}", urlencode(&t));
        let at = Instant::now();
        let (next, items) = page(client, &path).await?;
        pages += 1;
        if items == 500 {
            last = at.elapsed();
            last_full = pages;
        }
        token = next;
    }
    let walk = started.elapsed();
    let t = Instant::now();
    page(client, &format!("/api/v1/namespaces/{ns}/configmaps")).await?;
    let unpaged = t.elapsed();
    let kubectl = kubectl_walk(kubeconfig).await;
    Ok(vec![
        format!(
            "| {n} configmaps: first page of limit=500 | {:.1} ms |  |",
            ms(firsts[firsts.len() / 2])
        ),
        format!(
            "| {n} configmaps: last full page (page {last_full}) | {:.1} ms |  |",
            ms(last)
        ),
        format!(
            "| {n} configmaps: paged list, all {pages} pages | {:.0} ms | {:.2}× the unpaged list |",
            ms(walk),
            walk.as_secs_f64() / unpaged.as_secs_f64()
        ),
        format!("| {n} configmaps: one unpaged list | {:.0} ms |  |", ms(unpaged)),
        match kubectl {
            Ok((took, names)) => format!(
                "| kubectl get configmaps -A --chunk-size=500 -o name ({names} names) | {:.0} ms |  |",
                ms(took)
            ),
            Err(e) => format!("| kubectl get configmaps -A --chunk-size=500 | not run: {e} |  |"),
        },
    ])
}

/// The paged list as kubectl makes it (issue 15's "kubectl's paged list of 100,000 took 49 s"):
/// its time and how many names it printed.
async fn kubectl_walk(kubeconfig: &std::path::Path) -> Result<(Duration, usize)> {
    let kubeconfig = kubeconfig.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        let out = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["get", "configmaps", "-A", "--chunk-size=500", "-o", "name"])
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running kubectl")?;
        let took = t.elapsed();
        if !out.status.success() {
            bail!("kubectl exited with {}", out.status);
        }
        Ok((took, out.stdout.iter().filter(|b| **b == b'\n').count()))
    })
    .await?
}

pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// LISTs per second of the namespace of 10.
pub async fn small_namespace_rate(
    client: &kube::Client,
    lists: usize,
    concurrency: usize,
    rounds: usize,
) -> Result<f64> {
    let path = "/api/v1/namespaces/bench-small/configmaps";
    best_rate(rounds, lists * 10, concurrency, || get(client, path, JSON)).await
}
