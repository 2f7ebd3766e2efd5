//! `--fairness <admin kubeconfig>`: API Priority and Fairness under a flood, against a server
//! that is already running (kapi or kube-apiserver; `hack/bench/fairness.sh` starts each in
//! turn and runs this against it). Three users authenticate with bearer tokens from the
//! server's static token file (`--tokens`, the file given to `--token-auth-file`):
//!
//! - [`FLOODER`] (no group: APF's `global-default` FlowSchema) runs `--flood-lists` concurrent
//!   loops of LIST of [`OBJECTS`] ConfigMaps (JSON, `resourceVersion` unset) and
//!   `--flood-creates` concurrent loops of ConfigMap creates in another namespace. A request
//!   answered 429 is counted and not retried (kube-client's own retry is off for every user).
//! - [`READER`] (also `global-default`, a different flow) GETs one ConfigMap in a loop, one
//!   request at a time.
//! - [`NODE`] (group `system:nodes`: the `system-node-high` FlowSchema for its Lease) renews
//!   its Lease in `kube-node-lease` once a second: a PUT of the Lease last returned, with
//!   `renewTime` updated, as the kubelet does.
//!
//! The admin kubeconfig (exempt) does the set-up: namespace [`LIST_NS`] with the
//! [`OBJECTS`] ConfigMaps, the reader's ConfigMap, the Lease. Then two phases of
//! `--phase-seconds`: "alone" (reader and node) and "flood" (reader, node and flooder). The
//! flood starts no earlier than `--settle-seconds` after the set-up ended, so that the
//! server's object count for ConfigMaps (taken once a minute, by kapi and kube-apiserver alike)
//! holds the [`OBJECTS`] and a LIST is estimated at its full width, as on a server that has
//! been up for a while.
//!
//! Per phase and user (the flooder's LISTs and creates apart): requests answered 2xx within
//! the phase and per second, p50 and p99 latency (request sent to body read, over every
//! answered request), answers that were not 2xx (by status; `error` for no answer), and the
//! FlowSchema / priority level the server classified the user's requests to (from the
//! `X-Kubernetes-PF-*-UID` response headers). With `--server-pid` (and `--etcd-pid`), the CPU
//! of the server (etcd, this benchmark) and the whole machine per phase. Printed as Markdown
//! table rows whose first cell is `--label`, for `fairness.sh` to put side by side.

use crate::requests::{get, json_req as json_request};
use crate::{cpu, lists, Args};
use anyhow::{bail, Context, Result};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const FLOODER: &str = "flooder";
pub const READER: &str = "reader";
pub const NODE: &str = "system:node:bench-node";
/// The namespace the flooder LISTs.
const LIST_NS: &str = "bench-fair";
/// ConfigMaps in [`LIST_NS`].
const OBJECTS: usize = 1000;
/// The namespace of the reader's ConfigMap.
const QUIET_NS: &str = "bench-quiet";
/// The namespace the flooder creates in.
const CREATE_NS: &str = "bench-flood";
const LEASE_NS: &str = "kube-node-lease";
const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/bench-node";
const FLOWCONTROL: &str = "/apis/flowcontrol.apiserver.k8s.io/v1beta3";

/// What one user (or one of the flooder's two loads) saw in a phase.
#[derive(Default)]
struct Record {
    /// Latency of every answered request (any status).
    latencies: Vec<Duration>,
    /// 2xx answers that came before the phase's end.
    ok_in_phase: usize,
    /// Answers that were not 2xx, by status (`error`: none, the connection failed).
    not_ok: BTreeMap<String, usize>,
    /// The `X-Kubernetes-PF-FlowSchema-UID` and `-PriorityLevel-UID` of the first answer.
    classified: Option<(String, String)>,
}

impl Record {
    fn add(&mut self, took: Duration, in_phase: bool, answer: &Answer) {
        match answer.status {
            Some(s) => {
                self.latencies.push(took);
                if s.is_success() {
                    self.ok_in_phase += usize::from(in_phase);
                } else {
                    *self.not_ok.entry(s.as_u16().to_string()).or_default() += 1;
                }
            }
            None => *self.not_ok.entry("error".to_string()).or_default() += 1,
        }
        if self.classified.is_none() {
            self.classified = answer.classified.clone();
        }
    }

    fn merge(&mut self, other: Record) {
        self.latencies.extend(other.latencies);
        self.ok_in_phase += other.ok_in_phase;
        for (k, v) in other.not_ok {
            *self.not_ok.entry(k).or_default() += v;
        }
        if self.classified.is_none() {
            self.classified = other.classified;
        }
    }
}

/// One answer: its status (none when the request failed), body and APF classification.
struct Answer {
    status: Option<http::StatusCode>,
    body: bytes::Bytes,
    classified: Option<(String, String)>,
}

async fn send(client: &kube::Client, req: http::Request<Vec<u8>>) -> Answer {
    let failed = Answer {
        status: None,
        body: bytes::Bytes::new(),
        classified: None,
    };
    let Ok(resp) = client.send(req.map(kube::client::Body::from)).await else {
        return failed;
    };
    let status = resp.status();
    let classified = {
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(String::from)
        };
        header("x-kubernetes-pf-flowschema-uid").zip(header("x-kubernetes-pf-prioritylevel-uid"))
    };
    match resp.into_body().collect().await {
        Ok(body) => Answer {
            status: Some(status),
            body: body.to_bytes(),
            classified,
        },
        Err(_) => failed,
    }
}

/// A client for the server of `kubeconfig` authenticating with `token` only, never retrying.
async fn user_client(kubeconfig: &Path, token: &str) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// The token of each user of a `--token-auth-file` CSV (`token,user,uid[,"groups"]`).
fn tokens(path: &Path) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path:?}"))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut f = l.split(',');
            let token = f.next()?.trim();
            let user = f.next()?.trim();
            Some((user.to_string(), token.to_string()))
        })
        .collect())
}

/// `renewTime` now, as a Lease holds it (RFC 3339 with microseconds).
fn now_micro() -> Value {
    serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ))
    .unwrap_or(Value::Null)
}

/// Creates (as admin) what the users need; returns the Lease as created.
async fn set_up(admin: &kube::Client, concurrency: usize) -> Result<Value> {
    lists::fill(admin, LIST_NS, OBJECTS, concurrency).await?;
    lists::fill(admin, QUIET_NS, 1, 1).await?;
    for ns in [CREATE_NS, LEASE_NS] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let a = send(
            admin,
            json_request(http::Method::POST, "/api/v1/namespaces", &body),
        )
        .await;
        // kube-node-lease is there already on both servers.
        if !a
            .status
            .is_some_and(|s| s.is_success() || s == http::StatusCode::CONFLICT)
        {
            bail!("creating namespace {ns}: {:?}", a.status);
        }
    }
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "bench-node", "namespace": LEASE_NS},
        "spec": {"holderIdentity": "bench-node", "leaseDurationSeconds": 40, "renewTime": now_micro()},
    });
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases");
    let a = send(admin, json_request(http::Method::POST, &path, &lease)).await;
    if !a.status.is_some_and(|s| s.is_success()) {
        bail!(
            "creating the Lease: {:?} {}",
            a.status,
            String::from_utf8_lossy(&a.body)
        );
    }
    Ok(serde_json::from_slice(&a.body)?)
}

/// Requests made by `make`, one after the other, until `end`.
async fn closed_loop<F>(client: kube::Client, end: Instant, make: F) -> Record
where
    F: Fn() -> http::Request<Vec<u8>>,
{
    let mut rec = Record::default();
    while Instant::now() < end {
        let t = Instant::now();
        let a = send(&client, make()).await;
        rec.add(t.elapsed(), Instant::now() <= end, &a);
    }
    rec
}

/// The node's renewals, one a second until `end`, from `lease` (the Lease last returned);
/// returns them with the Lease last returned.
async fn renewals(client: kube::Client, end: Instant, mut lease: Value) -> (Record, Value) {
    let mut rec = Record::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if Instant::now() >= end {
            break;
        }
        lease["spec"]["renewTime"] = now_micro();
        let t = Instant::now();
        let a = send(&client, json_request(http::Method::PUT, LEASE, &lease)).await;
        rec.add(t.elapsed(), Instant::now() <= end, &a);
        match a.status {
            Some(s) if s.is_success() => {
                if let Ok(l) = serde_json::from_slice(&a.body) {
                    lease = l;
                }
            }
            Some(http::StatusCode::CONFLICT) => {
                // Someone else's write: start again from the stored Lease (not counted).
                let a = send(&client, get(LEASE)).await;
                if let Ok(l) = serde_json::from_slice(&a.body) {
                    lease = l;
                }
            }
            _ => {}
        }
    }
    (rec, lease)
}

struct Users {
    flooder: kube::Client,
    reader: kube::Client,
    node: kube::Client,
}

/// The rows of one phase, in order.
const ROWS: [&str; 4] = [
    "reader GET",
    "node Lease PUT",
    "flooder LIST 1,000",
    "flooder POST",
];

/// One phase of `length`: the reader and the node, and the flooder when `flood`.
async fn phase(
    users: &Users,
    length: Duration,
    flood: (usize, usize),
    lease: Value,
) -> Result<(BTreeMap<&'static str, Record>, Value)> {
    let end = Instant::now() + length;
    let target = format!("/api/v1/namespaces/{QUIET_NS}/configmaps/cm-0");
    let reader = tokio::spawn(closed_loop(users.reader.clone(), end, move || get(&target)));
    let node = tokio::spawn(renewals(users.node.clone(), end, lease));
    let list_path = format!("/api/v1/namespaces/{LIST_NS}/configmaps");
    let lists: Vec<_> = (0..flood.0)
        .map(|_| {
            let path = list_path.clone();
            tokio::spawn(closed_loop(users.flooder.clone(), end, move || get(&path)))
        })
        .collect();
    let next = Arc::new(AtomicUsize::new(0));
    let creates: Vec<_> = (0..flood.1)
        .map(|_| {
            let next = next.clone();
            tokio::spawn(closed_loop(users.flooder.clone(), end, move || {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let body = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("flood-{i}")},
                    "data": {"key": format!("value-{i}")},
                });
                json_request(
                    http::Method::POST,
                    &format!("/api/v1/namespaces/{CREATE_NS}/configmaps"),
                    &body,
                )
            }))
        })
        .collect();
    let mut records = BTreeMap::new();
    records.insert(ROWS[0], reader.await?);
    let (node, lease) = node.await?;
    records.insert(ROWS[1], node);
    for (row, tasks) in [(ROWS[2], lists), (ROWS[3], creates)] {
        if tasks.is_empty() {
            continue;
        }
        let mut all = Record::default();
        for t in tasks {
            all.merge(t.await?);
        }
        records.insert(row, all);
    }
    Ok((records, lease))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Name by UID of the server's FlowSchemas or PriorityLevelConfigurations.
async fn names(admin: &kube::Client, kind: &str) -> BTreeMap<String, String> {
    let a = send(admin, get(&format!("{FLOWCONTROL}/{kind}"))).await;
    let list: Value = serde_json::from_slice(&a.body).unwrap_or_default();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let m = &o["metadata"];
            Some((
                m["uid"].as_str()?.to_string(),
                m["name"].as_str()?.to_string(),
            ))
        })
        .collect()
}

pub async fn run(args: &Args, kubeconfig: &Path) -> Result<()> {
    let tokens_file = args
        .tokens
        .as_deref()
        .context("--fairness needs --tokens")?;
    let tokens = tokens(tokens_file)?;
    let token = |user: &str| {
        tokens
            .get(user)
            .with_context(|| format!("no token for {user} in {tokens_file:?}"))
    };
    let users = Users {
        flooder: user_client(kubeconfig, token(FLOODER)?).await?,
        reader: user_client(kubeconfig, token(READER)?).await?,
        node: user_client(kubeconfig, token(NODE)?).await?,
    };
    let admin = crate::client_for(&kubeconfig.to_path_buf()).await?;
    let label = &args.label;
    let length = Duration::from_secs_f64(args.phase_seconds);
    let server_pid = args.server_pid.map(|p| p.to_string());
    let etcd_pid = args.etcd_pid.map(|p| p.to_string());
    let mark = || match &server_pid {
        Some(p) => cpu::Mark::now(p, etcd_pid.as_deref()).map(Some),
        None => Ok(None),
    };

    eprintln!("fairness ({label}): set-up");
    let mut lease = set_up(&admin, args.concurrency).await?;
    let set_up_at = Instant::now();
    let mut results = Vec::new();
    for (name, flood) in [
        ("alone", (0, 0)),
        ("flood", (args.flood_lists, args.flood_creates)),
    ] {
        if flood.0 + flood.1 > 0 {
            let start = set_up_at + Duration::from_secs_f64(args.settle_seconds);
            let wait = start.saturating_duration_since(Instant::now());
            eprintln!(
                "fairness ({label}): waiting {:.0} s for the server's object count",
                wait.as_secs_f64()
            );
            tokio::time::sleep(wait).await;
        }
        eprintln!(
            "fairness ({label}): phase {name}, {:.0} s",
            length.as_secs_f64()
        );
        let before = mark()?;
        let (records, l) = phase(&users, length, flood, lease).await?;
        lease = l;
        let used = match before {
            Some(m) => Some(m.used()?),
            None => None,
        };
        results.push((name, records, used));
    }

    let schemas = names(&admin, "flowschemas").await;
    let levels = names(&admin, "prioritylevelconfigurations").await;
    let name_of = |names: &BTreeMap<String, String>, uid: &str| {
        names
            .get(uid)
            .cloned()
            .unwrap_or_else(|| format!("uid {uid:?}"))
    };
    println!("| server | phase | user | 2xx | 2xx/s | p50 ms | p99 ms | not 2xx | FlowSchema / priority level |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, records, _) in &results {
        for row in ROWS {
            let Some(r) = records.get(row) else {
                continue;
            };
            let mut l = r.latencies.clone();
            l.sort();
            let (p50, p99) = if l.is_empty() {
                (f64::NAN, f64::NAN)
            } else {
                (
                    ms(crate::percentile(&l, 0.5)),
                    ms(crate::percentile(&l, 0.99)),
                )
            };
            let not_ok = if r.not_ok.is_empty() {
                "0".to_string()
            } else {
                r.not_ok
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let class = r.classified.as_ref().map_or("–".to_string(), |(fs, pl)| {
                format!("{} / {}", name_of(&schemas, fs), name_of(&levels, pl))
            });
            println!(
                "| {label} | {name} | {row} | {} | {:.1} | {p50:.1} | {p99:.1} | {not_ok} | {class} |",
                r.ok_in_phase,
                r.ok_in_phase as f64 / length.as_secs_f64()
            );
        }
    }
    for (name, _, used) in &results {
        if let Some(u) = used {
            let pct = |d: Duration| 100.0 * d.as_secs_f64() / length.as_secs_f64();
            println!(
                "| {label} | {name} | CPU | server {:.0}% | etcd {} | benchmark {:.0}% | machine busy {:.0}% |  |  |  |",
                pct(u.server),
                u.etcd.map_or("–".to_string(), |e| format!("{:.0}%", pct(e))),
                pct(u.bench),
                u.busy * 100.0
            );
        }
    }
    Ok(())
}
