//! `--cluster-load <admin kubeconfig>`: a cluster's API load in the shape of a real one, from
//! one process, against a server that is already running with the cluster's own
//! kube-scheduler and kube-controller-manager (`hack/bench/cluster-load.sh` starts kapi or
//! kube-apiserver with upstream's v1.28.7 scheduler and controller manager through
//! `hack/local-cluster.sh`, then this). As kwok does, there is no kubelet: `--nodes` simulated
//! nodes (see [`node`]), each a few async tasks, register, renew their Leases, heartbeat their
//! status, watch the pods bound to them and write those pods' lifecycle into their status.
//! The load is ClusterLoader2's "load" test (see [`load`]): Deployments with a Service,
//! ConfigMap and Secret each, created at `--pod-churn` pods per second until the cluster holds
//! `--pods-per-node` × `--nodes` pods, then scaled, then deleted. Deployments → ReplicaSets →
//! Pods → binding (and Endpoints) are the scheduler's and controller manager's work; with
//! `--simulate-scheduler` the binding is this process's (see [`scheduler`]), for clusters
//! whose scheduling alone would take the machine's cores.
//!
//! Measured here, from the end of the `settle` phase that follows the nodes' registration
//! (`--settle-seconds`), client side, against SIG Scalability's SLOs (see [`stats`]): every
//! request this process makes, by (verb, resource, scope): the nodes' Lease renewals and status
//! patches, the pods' status patches and final deletes, the Deployment CRUD, a LIST of pods in a
//! namespace and across the cluster every `--list-interval` seconds; pod start-up latency (the
//! pod's `creationTimestamp` to a cluster-wide pod watch, opened before the load, seeing it
//! Running); whether every watch (the nodes' and that one) saw resourceVersions increase; and,
//! when the server has it, `apiserver_request_duration_seconds` from `/metrics` over the run
//! (every client's requests, the scheduler's and controllers' too).
//!
//! Every request goes out as the admin user of the kubeconfig (system:masters), so API
//! Priority and Fairness exempts it, and the Node authorizer and NodeRestriction do not see
//! node identities: a real kubelet's requests would go through both.

mod load;
mod node;
mod scheduler;
mod stats;

use crate::requests::get;
pub use crate::requests::json_req;
use crate::Args;
use anyhow::Result;
use futures::stream::{self, StreamExt};
use kube::api::WatchEvent;
use serde_json::Value;
use stats::{class, Class, Scope, ServerHistograms, Stats};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift64*), for timer offsets and scale factors.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Pods of the load as the measuring watch saw them.
#[derive(Default)]
struct Tracked {
    pods: HashMap<String, PodSeen>,
    /// creationTimestamp → watch saw it Running, seconds.
    startup: Vec<f64>,
    /// First watch event of the pod → watch saw it Running, seconds (no 1 s truncation).
    startup_seen: Vec<f64>,
    /// Pods first seen Running in a relist rather than a watch event (not timed).
    untimed: usize,
    /// The watch's first event of a pod → the watch saw it bound to a node (the scheduler's
    /// share, with two watch deliveries), and bound → Running (the node's watch, its status
    /// patch and the delivery back), seconds: where a start-up tail comes from.
    to_bound: Vec<f64>,
    bound_to_running: Vec<f64>,
    /// (seconds since the watch's first event, start-up seconds) of each timed pod: when in
    /// the run the slow ones came.
    timeline: Vec<(f64, f64)>,
    origin: Option<Instant>,
    /// With `--simulate-scheduler`: its pod watch's first sight of each unbound pod → the
    /// Binding answered, and the measuring watch's first event of the pod → that sight (where
    /// the bind step's time goes: the server's delivery to this process or its own handling).
    sched_seen_to_bound: Vec<f64>,
    sched_watch_lag: Vec<f64>,
}

struct PodSeen {
    created: Option<k8s_openapi::jiff::Timestamp>,
    first_seen: Instant,
    bound_seen: Option<Instant>,
    running: bool,
    terminating: bool,
    /// `namespace/name` and the resourceVersion of the last event or item seen of it.
    name: String,
    resource_version: String,
}

impl Tracked {
    /// (Running and not terminating, not yet deleted).
    fn counts(&self) -> (usize, usize) {
        let running = self
            .pods
            .values()
            .filter(|p| p.running && !p.terminating)
            .count();
        (running, self.pods.len())
    }
}

pub struct Shared {
    pub client: kube::Client,
    pub stats: Stats,
    /// Watch events received (all watches) and those whose resourceVersion was not above the
    /// watch's last.
    events: AtomicU64,
    out_of_order: AtomicU64,
    tracked: Mutex<Tracked>,
}

/// Now as a Lease's `renewTime` (RFC 3339 with microseconds).
pub fn now_micro() -> Value {
    serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ))
    .unwrap_or(Value::Null)
}

/// Now as a `metav1.Time` (RFC 3339, seconds).
pub fn now_rfc3339() -> Value {
    serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::now(),
    ))
    .unwrap_or(Value::Null)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// An item of a (re)list.
    Listed,
    /// The (re)list's items have all been passed (the object is null).
    Synced,
    Added,
    Modified,
    Deleted,
}

/// A reflector, as client-go's: LIST `path?query` (timed as `list_class`), then WATCH from the
/// list's resourceVersion, calling `on` for every item and event. The first LIST asks for
/// `resourceVersion=0` (whatever the server's cache holds); each watch asks for a timeout
/// drawn from [300, 600) s, so watches started together do not all end together; a watch that
/// ends is resumed from the last resourceVersion seen, one that fails (410 Gone, an error)
/// starts over with a LIST from that resourceVersion, which the cache serves; only a LIST
/// refused as expired or too new is made consistent (no resourceVersion). Counts the events
/// whose resourceVersion is not above the last one of the same watch. Runs until aborted.
pub async fn reflect(
    shared: &Shared,
    path: &str,
    query: &str,
    list_class: Class,
    mut on: impl FnMut(Event, &Value),
) {
    let mut rng = Rng::new(query.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }));
    let mut list_rv = "0".to_string();
    // `path?` with the query's own parameters first, ready for more.
    let base = if query.is_empty() {
        format!("{path}?")
    } else {
        format!("{path}?{query}&")
    };
    loop {
        let url = if list_rv.is_empty() {
            format!("{path}?{query}")
        } else {
            format!("{base}resourceVersion={list_rv}")
        };
        let a = shared
            .stats
            .call(&shared.client, list_class, get(&url), &[])
            .await;
        if !a.ok() {
            let too_large = || {
                a.json()["details"]["causes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["reason"] == "ResourceVersionTooLarge")
            };
            let expired = a.is(410) || (a.is(504) && too_large());
            if expired {
                list_rv.clear();
            } else {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            continue;
        }
        let list = a.json();
        let mut rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("0")
            .to_string();
        for item in list["items"].as_array().into_iter().flatten() {
            on(Event::Listed, item);
        }
        on(Event::Synced, &Value::Null);
        'watch: loop {
            let timeout = 300 + rng.next() % 300;
            let url = format!(
                "{base}watch=true&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds={timeout}"
            );
            let Ok(events) = shared.client.request_events::<Value>(get(&url)).await else {
                break 'watch;
            };
            let mut events = std::pin::pin!(events);
            let mut last: u64 = rv.parse().unwrap_or(0);
            while let Some(ev) = events.next().await {
                let (kind, obj) = match ev {
                    Ok(WatchEvent::Added(o)) => (Event::Added, o),
                    Ok(WatchEvent::Modified(o)) => (Event::Modified, o),
                    Ok(WatchEvent::Deleted(o)) => (Event::Deleted, o),
                    Ok(WatchEvent::Bookmark(b)) => {
                        if let Ok(n) = b.metadata.resource_version.parse::<u64>() {
                            if n < last {
                                shared.out_of_order.fetch_add(1, Ordering::Relaxed);
                            }
                            last = last.max(n);
                        }
                        rv = b.metadata.resource_version;
                        continue;
                    }
                    // 410 Gone or another error: start over.
                    Ok(WatchEvent::Error(_)) | Err(_) => break 'watch,
                };
                shared.events.fetch_add(1, Ordering::Relaxed);
                let obj_rv = obj["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default();
                match obj_rv.parse::<u64>() {
                    Ok(n) => {
                        if n <= last {
                            let seen = shared.out_of_order.fetch_add(1, Ordering::Relaxed);
                            if seen < 5 {
                                eprintln!(
                                    "cluster-load: watch {path}?{query}: event at resourceVersion {n} after {last}"
                                );
                            }
                        }
                        last = last.max(n);
                    }
                    Err(_) => {
                        shared.out_of_order.fetch_add(1, Ordering::Relaxed);
                    }
                }
                rv = obj_rv.to_string();
                on(kind, &obj);
            }
            // The watch ended (timeoutSeconds): resume from the last resourceVersion.
        }
        list_rv = rv;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The measuring watch: every pod of the load, cluster-wide, from before the load on.
async fn measure_pods(shared: Arc<Shared>, listed: tokio::sync::oneshot::Sender<()>) {
    let mut listed = Some(listed);
    let query = format!("labelSelector={}", load::LABEL);
    let s = shared.clone();
    reflect(
        &shared,
        "/api/v1/pods",
        &query,
        class("LIST", "pods", Scope::Cluster),
        move |ev, pod| {
            if ev == Event::Synced {
                if let Some(tx) = listed.take() {
                    let _ = tx.send(());
                }
                return;
            }
            let m = &pod["metadata"];
            let uid = m["uid"].as_str().unwrap_or_default().to_string();
            let mut t = s.tracked.lock().unwrap_or_else(|e| e.into_inner());
            if ev == Event::Deleted {
                t.pods.remove(&uid);
                return;
            }
            let running = pod["status"]["phase"] == "Running";
            let bound = pod["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty());
            let origin = *t.origin.get_or_insert_with(Instant::now);
            let seen = t.pods.entry(uid).or_insert_with(|| PodSeen {
                created: m["creationTimestamp"].as_str().and_then(|c| c.parse().ok()),
                first_seen: Instant::now(),
                bound_seen: None,
                running: false,
                terminating: false,
                name: pod_name(m),
                resource_version: String::new(),
            });
            seen.terminating = !m["deletionTimestamp"].is_null();
            seen.resource_version = m["resourceVersion"].as_str().unwrap_or_default().into();
            if bound && seen.bound_seen.is_none() && ev != Event::Listed {
                seen.bound_seen = Some(Instant::now());
            }
            if running && !seen.running {
                seen.running = true;
                if ev == Event::Listed {
                    t.untimed += 1;
                } else {
                    let since_seen = seen.first_seen.elapsed().as_secs_f64();
                    let since_created = seen.created.map(|c| {
                        k8s_openapi::jiff::Timestamp::now()
                            .duration_since(c)
                            .as_secs_f64()
                    });
                    let split = seen.bound_seen.map(|b| {
                        (
                            b.saturating_duration_since(seen.first_seen).as_secs_f64(),
                            b.elapsed().as_secs_f64(),
                        )
                    });
                    let at = seen.first_seen.duration_since(origin).as_secs_f64();
                    t.startup_seen.push(since_seen);
                    if let Some((to_bound, to_running)) = split {
                        t.to_bound.push(to_bound);
                        t.bound_to_running.push(to_running);
                    }
                    if let Some(s) = since_created {
                        t.startup.push(s);
                        t.timeline.push((at, s));
                    }
                }
            }
        },
    )
    .await;
}

/// Where the start-up tail comes from: the split between the scheduler's share and the
/// node's, and the start-up p99 per 300 s of the run (by when the watch first saw the pod).
fn report_startup_split(t: &Tracked) {
    let (to_bound, to_running) = (sorted(&t.to_bound), sorted(&t.bound_to_running));
    println!(
        "pod start-up split ({} pods): first event → seen bound p50 {:.2} s, p99 {:.2} s, max {:.2} s; seen bound → seen Running p50 {:.2} s, p99 {:.2} s, max {:.2} s",
        to_bound.len(),
        pct(&to_bound, 0.5),
        pct(&to_bound, 0.99),
        to_bound.last().copied().unwrap_or(f64::NAN),
        pct(&to_running, 0.5),
        pct(&to_running, 0.99),
        to_running.last().copied().unwrap_or(f64::NAN),
    );
    const WINDOW: u64 = 300;
    let mut windows: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for &(at, s) in &t.timeline {
        windows.entry(at as u64 / WINDOW).or_default().push(s);
    }
    let line: Vec<String> = windows
        .into_iter()
        .map(|(w, v)| {
            let v = sorted(&v);
            let over = v.iter().filter(|&&s| s > 5.0).count();
            format!(
                "{}–{} s: {} pods, p99 {:.2} s, {over} over 5 s",
                w.saturating_mul(WINDOW),
                w.saturating_add(1).saturating_mul(WINDOW),
                v.len(),
                pct(&v, 0.99)
            )
        })
        .collect();
    println!(
        "pod start-up per 300 s (by the watch's first event of the pod): {}",
        line.join("; ")
    );
}

/// A LIST of pods in a namespace of the load and one across the cluster every `interval`.
async fn lists(shared: Arc<Shared>, interval: Duration, namespaces: usize, mut rng: Rng) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let ns = load::namespace((rng.next() % namespaces.max(1) as u64) as usize);
        let c = &shared.client;
        shared
            .stats
            .call(
                c,
                class("LIST", "pods", Scope::Namespace),
                get(&format!("/api/v1/namespaces/{ns}/pods")),
                &[],
            )
            .await;
        shared
            .stats
            .call(
                c,
                class("LIST", "pods", Scope::Cluster),
                get("/api/v1/pods"),
                &[],
            )
            .await;
    }
}

async fn metrics(client: &kube::Client) -> ServerHistograms {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .unwrap_or_default();
    match client.request_text(req).await {
        Ok(text) => ServerHistograms::parse(&text),
        Err(_) => ServerHistograms::default(),
    }
}

/// Waits until `done(running, live)` holds for the load's pods, or `timeout`; returns the
/// time waited and whether it held.
async fn wait_pods(
    shared: &Shared,
    timeout: Duration,
    done: impl Fn(usize, usize) -> bool,
) -> (Duration, bool) {
    let t = Instant::now();
    loop {
        let (running, live) = shared
            .tracked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .counts();
        if done(running, live) {
            return (t.elapsed(), true);
        }
        if t.elapsed() > timeout {
            eprintln!("cluster-load: gave up waiting: {running} Running, {live} pods in all");
            explain_wait(shared).await;
            return (t.elapsed(), false);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// After a wait that gave up: where the measuring watch's view of the load's pods differs
/// from a LIST of them (at most five pods of each kind of difference), so that a watch that
/// missed an event shows as one.
async fn explain_wait(shared: &Shared) {
    let url = format!("/api/v1/pods?labelSelector={}", load::LABEL);
    let Ok(list) = shared.client.request::<Value>(get(&url)).await else {
        eprintln!("cluster-load: the LIST to compare with failed");
        return;
    };
    let t = shared.tracked.lock().unwrap_or_else(|e| e.into_inner());
    let mut listed = HashSet::new();
    let (mut unseen, mut differ) = (Vec::new(), Vec::new());
    for pod in list["items"].as_array().into_iter().flatten() {
        let m = &pod["metadata"];
        let uid = m["uid"].as_str().unwrap_or_default();
        listed.insert(uid.to_string());
        let name = pod_name(m);
        let rv = m["resourceVersion"].as_str().unwrap_or_default();
        let running = pod["status"]["phase"] == "Running";
        let terminating = !m["deletionTimestamp"].is_null();
        match t.pods.get(uid) {
            None => unseen.push(format!("{name} (resourceVersion {rv})")),
            Some(seen) if seen.running != running || seen.terminating != terminating => differ
                .push(format!(
                    "{name}: the server has it {} at resourceVersion {rv}, the watch {} at {}",
                    state(running, terminating),
                    state(seen.running, seen.terminating),
                    seen.resource_version
                )),
            Some(_) => {}
        }
    }
    let gone: Vec<String> = t
        .pods
        .iter()
        .filter(|(uid, _)| !listed.contains(*uid))
        .map(|(_, seen)| {
            format!(
                "{} (last seen at resourceVersion {})",
                seen.name, seen.resource_version
            )
        })
        .collect();
    eprintln!(
        "cluster-load: against a LIST at resourceVersion {}: {} pods the watch never saw, {} it sees otherwise, {} it still has that are gone",
        list["metadata"]["resourceVersion"].as_str().unwrap_or_default(),
        unseen.len(),
        differ.len(),
        gone.len()
    );
    for line in unseen.iter().chain(&differ).chain(&gone).take(15) {
        eprintln!("cluster-load:   {line}");
    }
}

/// `namespace/name` of an object's metadata.
fn pod_name(m: &Value) -> String {
    format!(
        "{}/{}",
        m["namespace"].as_str().unwrap_or_default(),
        m["name"].as_str().unwrap_or_default()
    )
}

fn state(running: bool, terminating: bool) -> &'static str {
    match (running, terminating) {
        (_, true) => "terminating",
        (true, false) => "Running",
        (false, false) => "not Running",
    }
}

/// The load held as it is (nodes, lists and controllers going on) for `seconds`.
/// Holds the load at its size for `seconds`, and adds the hold to the phases.
async fn hold(seconds: f64, phases: &mut Vec<(&str, f64, String)>) {
    if seconds > 0.0 {
        eprintln!("cluster-load: holding for {seconds:.0} s");
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    }
    phases.push((
        "hold",
        seconds,
        "nothing created or deleted; nodes, LISTs and controllers go on".to_string(),
    ));
}

/// A sorted copy of `v`, for [`pct`].
fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub async fn run(args: &Args, kubeconfig: &Path) -> Result<()> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    // Every failure counts: no retry behind the measurement's back.
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;
    // Whether the machine itself was the limit: its busy share over the run, and ours.
    let (machine_busy0, machine_total0) = crate::cpu::machine()?;
    let own0 = crate::cpu::process("self")?;
    let n = args.nodes;
    let pods = args.pods_per_node * n;
    let namespaces = if args.namespaces > 0 {
        args.namespaces
    } else {
        n.div_ceil(100).max(1)
    };
    let mut plan = load::plan(pods, namespaces);
    // The Service CIDR of a test cluster (a /24 in hack/local-cluster.sh) holds ~250 addresses.
    let headless = plan.len() > 200;
    let label = &args.label;
    let shared = Arc::new(Shared {
        client: client.clone(),
        stats: Stats::default(),
        events: AtomicU64::new(0),
        out_of_order: AtomicU64::new(0),
        tracked: Mutex::new(Tracked::default()),
    });
    let mut rng = Rng::new(args.seed);
    let count = |size: usize| plan.iter().filter(|d| d.replicas == size).count();
    println!(
        "cluster-load ({label}): {n} simulated nodes in this process (kwok-style, no kubelet); {}",
        scheduler::describe(args.simulate_scheduler)
    );
    println!(
        "cluster-load ({label}): {} Deployments ({} of 250, {} of 30, {} of 5 or fewer) in {namespaces} namespaces, {pods} pods, \
         each with a ConfigMap, a Secret and a {} Service; {} pods/s; LISTs every {} s; held {} s after creating and after scaling{}",
        plan.len(),
        count(250),
        count(30),
        plan.len() - count(250) - count(30),
        if headless { "headless" } else { "ClusterIP" },
        args.pod_churn,
        args.list_interval,
        args.hold_seconds,
        if args.no_delete { "; no delete phase" } else { "" }
    );
    let mut tasks = Vec::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tasks.push(tokio::spawn(measure_pods(shared.clone(), tx)));
    rx.await.ok();
    if args.simulate_scheduler {
        tasks.push(tokio::spawn(scheduler::run(shared.clone())));
    }

    let mut phases: Vec<(&str, f64, String)> = Vec::new();
    let t = Instant::now();
    let registered: Vec<(usize, Option<Value>)> = stream::iter(0..n)
        .map(|i| {
            let shared = shared.clone();
            async move { (i, node::register(&shared, i).await) }
        })
        .buffer_unordered(args.concurrency)
        .collect()
        .await;
    let mut failed = 0;
    for (i, lease) in registered {
        let Some(lease) = lease else {
            failed += 1;
            continue;
        };
        tasks.push(tokio::spawn(node::heartbeats(
            shared.clone(),
            i,
            lease,
            Rng::new(rng.next()),
        )));
        tasks.push(tokio::spawn(node::kubelet(shared.clone(), i)));
    }
    phases.push((
        "register nodes",
        t.elapsed().as_secs_f64(),
        format!("{} registered, {failed} failed", n - failed),
    ));
    // The cluster exists before the test, as in ClusterLoader2: the SLOs are measured from
    // here, once every node has renewed its Lease and reported its status after registering,
    // so the registration's burst (every node's create, LIST and watch at once)
    // is not in them. Its length is in the phases table.
    let t = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(args.settle_seconds)).await;
    shared.stats.reset();
    let before = metrics(&client).await;
    phases.push((
        "settle",
        t.elapsed().as_secs_f64(),
        "the nodes renew and report; measured from the end of it".to_string(),
    ));
    tasks.push(tokio::spawn(lists(
        shared.clone(),
        Duration::from_secs_f64(args.list_interval),
        namespaces,
        Rng::new(rng.next()),
    )));
    load::create_namespaces(&shared, namespaces).await?;
    let timeout = Duration::from_secs_f64(args.phase_timeout);
    let rate = args.pod_churn;

    let t = Instant::now();
    let failed = load::create(&shared, &plan, rate, headless).await;
    let sent = t.elapsed().as_secs_f64();
    let (waited, ok) = wait_pods(&shared, timeout, |running, live| {
        running >= pods && live >= pods
    })
    .await;
    phases.push((
        "create",
        t.elapsed().as_secs_f64(),
        format!(
            "{} objects created in {sent:.1} s ({failed} failed); {pods} pods Running {:.1} s later{}",
            plan.len() * 4,
            waited.as_secs_f64(),
            if ok { "" } else { " (TIMED OUT)" }
        ),
    ));

    hold(args.hold_seconds, &mut phases).await;

    let t = Instant::now();
    let old: usize = plan.iter().map(|d| d.replicas).sum();
    let failed = load::scale(&shared, &mut plan, rate, &mut rng).await;
    let target: usize = plan.iter().map(|d| d.replicas).sum();
    let sent = t.elapsed().as_secs_f64();
    let (waited, ok) = wait_pods(&shared, timeout, |running, live| {
        running == target && live == target
    })
    .await;
    phases.push((
        "scale",
        t.elapsed().as_secs_f64(),
        format!(
            "{old} → {target} pods: patches sent in {sent:.1} s ({failed} failed); settled {:.1} s later{}",
            waited.as_secs_f64(),
            if ok { "" } else { " (TIMED OUT)" }
        ),
    ));

    hold(args.hold_seconds, &mut phases).await;

    if !args.no_delete {
        let t = Instant::now();
        let failed = load::delete(&shared, &plan, rate).await;
        let sent = t.elapsed().as_secs_f64();
        let (waited, ok) = wait_pods(&shared, timeout, |_, live| live == 0).await;
        phases.push((
            "delete",
            t.elapsed().as_secs_f64(),
            format!(
                "{} objects deleted in {sent:.1} s ({failed} failed); pods gone {:.1} s later{}",
                plan.len() * 4,
                waited.as_secs_f64(),
                if ok { "" } else { " (TIMED OUT)" }
            ),
        ));
    }
    let after = metrics(&client).await;
    for t in &tasks {
        t.abort();
    }

    println!();
    println!("| phase | seconds | what |");
    println!("|---|---|---|");
    for (name, secs, what) in &phases {
        println!("| {name} | {secs:.1} | {what} |");
    }
    println!();
    println!("Requests of this process (client side, send → body read):");
    println!();
    let server = after.since(&before);
    let worst = shared.stats.report(&server);
    if !server.is_empty() {
        println!();
        println!("Server side, apiserver_request_duration_seconds over the run (every client: this one, kube-scheduler, kube-controller-manager; classes served 10 times or more), p99 interpolated in buckets:");
        println!();
        println!("| verb | resource | scope | requests | p99 ms | SLO |");
        println!("|---|---|---|---|---|---|");
    }
    let mut server_worst: std::collections::BTreeMap<&str, (f64, String)> = Default::default();
    for (verb, res, scope, total, p99) in server.rows() {
        let slo = stats::server_slo(&verb, &scope);
        if let (Some((name, _)), Some(p)) = (slo, p99) {
            let w = server_worst.entry(name).or_insert((0.0, String::new()));
            if p >= w.0 {
                *w = (p, format!("{verb} {res} {scope}"));
            }
        }
        if total < 10.0 {
            continue;
        }
        println!(
            "| {verb} | {res} | {scope} | {total:.0} | {} | {} |",
            p99.map_or("–".to_string(), |p| format!("{:.1}", p * 1000.0)),
            slo.map_or("–".to_string(), |(n, b)| format!("{n} ≤ {b:.0} s"))
        );
    }
    for (name, (p, key)) in &server_worst {
        println!(
            "server-side worst p99 for {name}: {:.1} ms ({key})",
            p * 1000.0
        );
    }
    let t = shared.tracked.lock().unwrap_or_else(|e| e.into_inner());
    let (startup, seen) = (sorted(&t.startup), sorted(&t.startup_seen));
    let p99 = pct(&startup, 0.99);
    // A run without pods (`--pods-per-node 0`, the nodes' own load) has no start-up to judge.
    let startup_held = startup.is_empty() || p99 <= 5.0;
    println!();
    println!(
        "pod start-up (creationTimestamp → watch saw Running; creationTimestamp is truncated to the second): \
         {} pods, p50 {:.2} s, p99 {p99:.2} s, max {:.2} s, SLO p99 ≤ 5 s: {}",
        startup.len(),
        pct(&startup, 0.5),
        startup.last().copied().unwrap_or(f64::NAN),
        if startup.is_empty() {
            "not measured (no pods)"
        } else if startup_held {
            "pass"
        } else {
            "FAIL"
        }
    );
    println!(
        "pod start-up (watch's first event of the pod → watch saw Running): p50 {:.2} s, p99 {:.2} s; {} pods first seen Running in a relist (not timed)",
        pct(&seen, 0.5),
        pct(&seen, 0.99),
        t.untimed
    );
    report_startup_split(&t);
    if args.simulate_scheduler {
        let (lag, bind) = (sorted(&t.sched_watch_lag), sorted(&t.sched_seen_to_bound));
        println!(
            "simulated scheduler ({} pods): measuring watch's first event → its own watch saw the pod p50 {:.2} s, p99 {:.2} s; its sight → Binding answered p50 {:.2} s, p99 {:.2} s",
            bind.len(),
            pct(&lag, 0.5),
            pct(&lag, 0.99),
            pct(&bind, 0.5),
            pct(&bind, 0.99),
        );
    }
    let events = shared.events.load(Ordering::Relaxed);
    let ooo = shared.out_of_order.load(Ordering::Relaxed);
    println!(
        "watch events: {events} over {} watches, {ooo} out of order (resourceVersion not above the watch's last)",
        n + 1 + if args.simulate_scheduler { 2 } else { 0 }
    );
    let w = |name: &str| worst.get(name).map_or(f64::NAN, |(p, _)| p * 1000.0);
    let sw = |name: &str| server_worst.get(name).map_or(f64::NAN, |(p, _)| p * 1000.0);
    let pass = worst.values().all(|(_, ok)| *ok) && startup_held && ooo == 0;
    let (machine_busy1, machine_total1) = crate::cpu::machine()?;
    let machine_busy = (machine_busy1 - machine_busy0).as_secs_f64()
        / (machine_total1 - machine_total0)
            .as_secs_f64()
            .max(f64::MIN_POSITIVE);
    let own = (crate::cpu::process("self")? - own0).as_secs_f64();
    println!(
        "machine: {:.0}% of every core busy over the run; this generator used {own:.1} CPU s",
        machine_busy * 100.0
    );
    println!(
        "summary label={label} nodes={n} pods={pods} mutating_p99_ms={:.1} read_p99_ms={:.1} list_ns_p99_ms={:.1} list_cluster_p99_ms={:.1} \
         startup_p50_s={:.2} startup_p99_s={p99:.2} out_of_order={ooo} server_mutating_p99_ms={:.1} server_read_p99_ms={:.1} \
         server_list_ns_p99_ms={:.1} server_list_cluster_p99_ms={:.1} machine_busy_pct={:.0} generator_cpu_s={own:.1} slo={}",
        w("mutating"),
        w("read object"),
        w("LIST namespace"),
        w("LIST cluster"),
        pct(&startup, 0.5),
        sw("mutating"),
        sw("read object"),
        sw("LIST namespace"),
        sw("LIST cluster"),
        machine_busy * 100.0,
        if pass { "pass" } else { "FAIL" }
    );
    drop(t);
    Ok(())
}
