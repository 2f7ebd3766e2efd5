//! Benchmark of a running kapi through its full HTTPS + authentication path: time to
//! `/readyz`, idle RSS, POST/GET rates and LIST-of-1,000 latency at a given concurrency, and
//! RSS after the load, then the same POST and LIST load for a custom resource with a validated
//! schema and one CEL rule, with its ratios to the ConfigMap figures. It starts the server binary itself (embedded store in a temporary
//! directory, or the etcd given with `--etcd-servers`) and prints one table.
//!
//!   cargo run --release -p kapi-bench-apiserver -- --server target/release/kapi-apiserver
//!
//! With `--admission`, it then times creates with no dynamic admission, through one no-op
//! validating webhook and through one CEL policy, and prints the ratios.
//!
//! With `--startup`, it measures start-up instead (see [`startup`]): time to the first request
//! for kapi-testing's in-process `TestServer`, the binary, and the binary on a fresh etcd, and
//! what 100 in-process start/stop cycles leave behind.
//!
//! `--scenarios` picks what runs (comma-separated; default `basic`): `basic` (the table
//! above), `list` (LIST of 1,000 JSON/protobuf with `resourceVersion` "" and "0", beside etcd's
//! own range read of 1,000 keys through its HTTP gateway, given `--etcd-reference` or
//! `--etcd-servers`), `paging` (first/last page of `limit=500` and the paged walk over
//! `--paged-objects` ConfigMaps), `namespace` (LIST of a namespace of 10, empty server vs
//! `--paged-objects` elsewhere), see `lists`; `creates` (where a POST's time goes, against the
//! storage layer's and raw etcd's creates, see `creates`); `watch` (fan-out to `--watchers`
//! watchers, see `watch`); `memory` (RSS per stored object and a restart with
//! `--paged-objects` stored, see `memory`). `--profile <dir>` records a perf profile of the
//! server during each phase of `creates` (see `profile`).
//!
//! With `--fairness <admin kubeconfig>`, it starts nothing: it measures API Priority and
//! Fairness on the server that kubeconfig points at, one user flooding it while two quiet ones
//! (a reader and a node renewing its Lease) go on, with bearer tokens from `--tokens` (see
//! [`fairness`]; `hack/bench/fairness.sh` runs it against kapi and kube-apiserver).
//!
//! With `--cluster-load <admin kubeconfig>`, it starts nothing either: it puts a cluster's API
//! load on that server, `--nodes` simulated nodes and ClusterLoader2's "load" shape of
//! Deployments, beside the cluster's own kube-scheduler and kube-controller-manager, and prints
//! the request latencies against SIG Scalability's SLOs and the pod start-up latency (see
//! [`cluster`]; `hack/bench/cluster-load.sh` runs it against kapi and kube-apiserver).
//!
//! With `--data-scale <admin kubeconfig>`, it stores `--objects` ConfigMaps on that server and
//! measures its memory per object, a paged walk of all, a watch from a recent
//! resourceVersion and, after the script restarts the server, its time to ready (see
//! [`data_scale`]; `hack/bench/data-scale.sh`).
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "benchmark driver, never on a request path: a panic is a failed run"
)]

mod admission;
mod cluster;
mod cpu;
mod crd;
mod creates;
mod data_scale;
mod fairness;
mod lists;
mod memory;
mod profile;
mod requests;
mod startup;
mod watch;

use anyhow::{bail, Context, Result};
use clap::Parser;
use futures::stream::{self, StreamExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// The kapi-apiserver binary to start (not with `--fairness` or `--cluster-load`).
    #[arg(long, required_unless_present_any = ["fairness", "cluster_load", "data_scale"])]
    server: Option<PathBuf>,
    /// Use this etcd instead of the embedded store.
    #[arg(long)]
    etcd_servers: Option<String>,
    /// Concurrent requests in flight.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Objects created (and then read) in the POST and GET phases.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// How many LISTs of 1,000 objects to time.
    #[arg(long, default_value_t = 200)]
    lists: usize,
    /// Also time creates through a no-op validating webhook and through a CEL policy.
    #[arg(long)]
    admission: bool,
    /// Measure start-up (in-process TestServer, binary, binary on a fresh etcd) instead.
    #[arg(long)]
    startup: bool,
    /// `--startup`: starts timed per flavour (the median is printed).
    #[arg(long, default_value_t = 20)]
    starts: usize,
    /// `--startup`: in-process servers started and stopped for the leak count.
    #[arg(long, default_value_t = 100)]
    cycles: usize,
    /// Scenarios to run, comma-separated: basic, creates, watch, list, namespace, paging,
    /// memory, all.
    #[arg(long, default_value = "basic", value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Objects in the paging and namespace scenarios.
    #[arg(long, default_value_t = 20_000)]
    paged_objects: usize,
    /// Rounds of each rate in the list scenarios (the median is printed).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The etcd whose HTTP gateway serves the reference range read (default: --etcd-servers).
    #[arg(long)]
    etcd_reference: Option<String>,
    /// `watch`: how many watchers.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,
    /// `watch`: creates per second while they watch.
    #[arg(long, default_value_t = 500.0)]
    write_rate: f64,
    /// `watch`: for how long.
    #[arg(long, default_value_t = 5.0)]
    watch_seconds: f64,
    /// `watch`: instead of one point, these `WATCHERSxRATE` points (e.g. `1000x50,100x500`).
    #[arg(long, value_delimiter = ',')]
    watch_sweep: Vec<String>,
    /// `creates`: record a CPU profile of the server per phase (POST, dry run, GET) into
    /// this directory with `perf record -g` (see `profile`).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Run the priority-and-fairness scenario against the running server of this admin
    /// kubeconfig instead (see `fairness`).
    #[arg(long, value_name = "KUBECONFIG")]
    fairness: Option<PathBuf>,
    /// `--fairness`: the server's `--token-auth-file`, with tokens for the users `flooder`,
    /// `reader` and `system:node:bench-node`.
    #[arg(long)]
    tokens: Option<PathBuf>,
    /// `--fairness`, `--cluster-load`: the server's name in the printed rows.
    #[arg(long, default_value = "server")]
    label: String,
    /// `--fairness`: length of each phase (alone, flood), in seconds.
    #[arg(long, default_value_t = 20.0)]
    phase_seconds: f64,
    /// `--fairness`: the flood starts no earlier than this many seconds after the set-up;
    /// `--cluster-load`: the measurement starts this long after the nodes registered (past
    /// the 60 s status interval, so every node has renewed and reported once).
    #[arg(long, default_value_t = 65.0)]
    settle_seconds: f64,
    /// `--fairness`: the flooder's concurrent LISTs.
    #[arg(long, default_value_t = 64)]
    flood_lists: usize,
    /// `--fairness`: the flooder's concurrent creates.
    #[arg(long, default_value_t = 4)]
    flood_creates: usize,
    /// `--fairness`: the server's pid, for its CPU per phase; `--data-scale`: for its memory.
    #[arg(long)]
    server_pid: Option<u32>,
    /// `--fairness`: etcd's pid, for its CPU per phase; `--data-scale`: for its memory.
    #[arg(long)]
    etcd_pid: Option<u32>,
    /// Put a cluster's load (simulated nodes, ClusterLoader2's Deployments) on the running
    /// server of this admin kubeconfig instead (see `cluster`).
    #[arg(long, value_name = "KUBECONFIG")]
    cluster_load: Option<PathBuf>,
    /// `--cluster-load`: simulated nodes.
    #[arg(long, default_value_t = 100)]
    nodes: usize,
    /// `--cluster-load`: pods per node at the load's peak (ClusterLoader2's default is 30).
    #[arg(long, default_value_t = 30)]
    pods_per_node: usize,
    /// `--cluster-load`: namespaces the Deployments spread over (0: one per 100 nodes).
    #[arg(long, default_value_t = 0)]
    namespaces: usize,
    /// `--cluster-load`: pods created (scaled, deleted) per second.
    #[arg(long, default_value_t = 20.0)]
    pod_churn: f64,
    /// `--cluster-load`: seconds between LISTs of pods (one namespace, then the cluster).
    #[arg(long, default_value_t = 5.0)]
    list_interval: f64,
    /// `--cluster-load`: longest wait, in seconds, for a phase's pods to settle.
    #[arg(long, default_value_t = 600.0)]
    phase_timeout: f64,
    /// `--cluster-load`: seconds the load is held at its size after the pods of the create
    /// phase are Running, and again after the scale phase.
    #[arg(long, default_value_t = 30.0)]
    hold_seconds: f64,
    /// `--cluster-load`: end after the scale phase's hold, the load left in place (no delete
    /// phase): the peak measured in about half the time.
    #[arg(long)]
    no_delete: bool,
    /// `--cluster-load`: bind the pods from this process (see `cluster::scheduler`), for a
    /// cluster run without kube-scheduler.
    #[arg(long)]
    simulate_scheduler: bool,
    /// `--cluster-load`: seed of the timers' offsets and the scale factors.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Measure `--objects` stored ConfigMaps on the running server of this admin kubeconfig
    /// instead (see `data_scale`; `hack/bench/data-scale.sh` runs it).
    #[arg(long, value_name = "KUBECONFIG")]
    data_scale: Option<PathBuf>,
    /// `--data-scale`: `load` (create, memory, paged walk, watch) or `restart` (after the
    /// server was started again on the same data).
    #[arg(long, default_value = "load")]
    data_scale_stage: String,
    /// `--data-scale restart`: when the server was started again, in ms since the Unix epoch.
    #[arg(long)]
    started_ms: Option<u64>,
}

impl Args {
    fn wants(&self, scenario: &str) -> bool {
        self.scenarios.iter().any(|s| s == scenario || s == "all")
    }
}

struct Server {
    child: Child,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    /// The etcd prefix it stores under, on etcd (a restart reuses it).
    prefix: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmRSS:")
}

/// One KiB figure of `/proc/PID/status`, by its field name (with the colon).
fn status_kib(pid: u32, field: &str) -> Result<u64> {
    proc_kib(pid, "status", field)
}

/// One KiB figure of a `/proc/PID/<file>` of `Name: value kB` lines (`status`,
/// `smaps_rollup`), by its field name (with the colon).
fn proc_kib(pid: u32, file: &str, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/{file}"))?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .with_context(|| format!("no {field} in {file}"))?;
    Ok(line
        .split_whitespace()
        .next()
        .with_context(|| format!("bad {field} in {file}"))?
        .parse()?)
}

async fn client_for(kubeconfig: &PathBuf) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// Starts the server and returns it with the time until `/readyz` answered 200.
async fn start(args: &Args) -> Result<(Server, Duration)> {
    let prefix = args
        .etcd_servers
        .as_ref()
        .map(|_| format!("/bench-{}-{}", std::process::id(), free_port().unwrap_or(0)));
    spawn(args, tempfile::tempdir()?, prefix).await
}

/// Stops `server` and starts it again on the same data (directory or etcd prefix).
async fn restart(args: &Args, mut server: Server) -> Result<(Server, Duration)> {
    let _ = server.child.kill();
    let _ = server.child.wait();
    let dir = tempfile::tempdir()?;
    let old = std::mem::replace(&mut server._dir, dir);
    let prefix = server.prefix.take();
    drop(server);
    // The admin kubeconfig of the last run must not count as a sign of readiness.
    let _ = std::fs::remove_file(old.path().join("admin.kubeconfig"));
    spawn(args, old, prefix).await
}

async fn spawn(
    args: &Args,
    dir: tempfile::TempDir,
    prefix: Option<String>,
) -> Result<(Server, Duration)> {
    let port = free_port()?;
    let kubeconfig = dir.path().join("admin.kubeconfig");
    let mut cmd = Command::new(args.server.as_ref().context("--server is needed")?);
    cmd.arg("--secure-port")
        .arg(port.to_string())
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let (Some(etcd), Some(prefix)) = (&args.etcd_servers, &prefix) {
        cmd.arg("--etcd-servers")
            .arg(etcd)
            .arg("--etcd-prefix")
            .arg(prefix);
    }
    let started = Instant::now();
    let child = cmd.spawn().context("starting the server")?;
    let server = Server {
        child,
        _dir: dir,
        kubeconfig,
        prefix,
    };
    // The kubeconfig appears before the server is ready; poll both without sleeping long.
    let deadline = started + Duration::from_secs(30);
    loop {
        if Instant::now() > deadline {
            bail!("server not ready within 30s");
        }
        if server.kubeconfig.exists() {
            if let Ok(client) = client_for(&server.kubeconfig).await {
                let req = http::Request::get("/readyz").body(Vec::new())?;
                if client.request_text(req).await.is_ok() {
                    return Ok((server, started.elapsed()));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Runs `n` requests made by `make` with `concurrency` in flight; returns requests per second.
async fn rate<F>(client: &kube::Client, n: usize, concurrency: usize, make: F) -> Result<f64>
where
    F: Fn(usize) -> http::Request<Vec<u8>>,
{
    let started = Instant::now();
    let results: Vec<Result<String, kube::Error>> = stream::iter((0..n).map(make))
        .map(|req| async move { client.request_text(req).await })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    let failures = results.iter().filter(|r| r.is_err()).count();
    if failures > 0 {
        bail!(
            "{failures} of {n} requests failed, first: {:?}",
            results.into_iter().find_map(Result::err)
        );
    }
    Ok(n as f64 / elapsed)
}

/// Times `lists` LISTs of `path` with `concurrency` in flight: (lists per second, sorted latencies).
async fn time_lists(
    client: &kube::Client,
    path: &str,
    lists: usize,
    concurrency: usize,
) -> Result<(f64, Vec<Duration>)> {
    let started = Instant::now();
    let latencies: Vec<Result<Duration>> = stream::iter(0..lists)
        .map(|_| {
            let client = client.clone();
            async move {
                let req = http::Request::get(path).body(Vec::new())?;
                let t = Instant::now();
                client.request_text(req).await?;
                Ok(t.elapsed())
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let rate = lists as f64 / started.elapsed().as_secs_f64();
    let mut latencies: Vec<Duration> = latencies.into_iter().collect::<Result<_>>()?;
    latencies.sort();
    Ok((rate, latencies))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(kubeconfig) = &args.fairness {
        return fairness::run(&args, kubeconfig).await;
    }
    if let Some(kubeconfig) = &args.cluster_load {
        return cluster::run(&args, kubeconfig).await;
    }
    if let Some(kubeconfig) = &args.data_scale {
        return data_scale::run(&args, kubeconfig).await;
    }
    if args.startup {
        let server = args.server.as_ref().context("--server is needed")?;
        return startup::run(server, args.starts, args.cycles).await;
    }
    let (mut server, ready) = start(&args).await?;
    let pid = server.child.id();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_rss = rss_kib(pid)?;
    let settled_idle = if args.wants("memory") {
        Some(memory::SettledIdle::read(pid).await?)
    } else {
        None
    };
    let mut client = client_for(&server.kubeconfig).await?;
    let c = args.concurrency;
    let backend = if args.etcd_servers.is_some() {
        "etcd"
    } else {
        "embedded"
    };
    let scale = ["list", "paging", "namespace", "creates", "watch", "memory"];
    if scale.iter().any(|s| args.wants(s)) {
        println!("| figure ({backend}, concurrency {c}) | value | ratio |");
        println!("|---|---|---|");
    }
    let etcd_ref = args
        .etcd_reference
        .as_deref()
        .or(args.etcd_servers.as_deref())
        .and_then(|e| e.split(',').next())
        .map(str::to_string);
    if args.wants("creates") {
        let etcd = args
            .etcd_servers
            .as_deref()
            .and_then(|e| e.split(',').next());
        for row in
            creates::run(&client, etcd, args.objects, c, args.profile.as_deref(), pid).await?
        {
            println!("{row}");
        }
    }
    if args.wants("watch") {
        for row in watch::run(&args, &client, &server.kubeconfig, pid).await? {
            println!("{row}");
        }
    }
    if args.wants("list") {
        let etcd = etcd_ref.as_deref();
        for row in lists::list_scenario(&client, etcd, args.lists, c, args.rounds).await? {
            println!("{row}");
        }
    }
    if args.wants("namespace") {
        lists::fill(&client, "bench-small", 10, c).await?;
        let alone = lists::small_namespace_rate(&client, args.lists, c, args.rounds).await?;
        println!("| LIST of a namespace of 10, nothing else stored | {alone:.0} /s | 1.00× |");
        lists::fill(&client, "bench-page", args.paged_objects, c).await?;
        let crowded = lists::small_namespace_rate(&client, args.lists, c, args.rounds).await?;
        println!(
            "| LIST of a namespace of 10, {} objects in another | {crowded:.0} /s | {:.2}× |",
            args.paged_objects,
            crowded / alone
        );
    }
    if args.wants("paging") {
        if !args.wants("namespace") {
            lists::fill(&client, "bench-page", args.paged_objects, c).await?;
        }
        for row in lists::paging_scenario(
            &client,
            &server.kubeconfig,
            "bench-page",
            args.paged_objects,
        )
        .await?
        {
            println!("{row}");
        }
    }
    if let Some(settled_idle) = &settled_idle {
        // Last of the scale scenarios: it restarts the server.
        let (rows, restarted) = memory::run(&args, server, &client, idle_rss, settled_idle).await?;
        for row in rows {
            println!("{row}");
        }
        server = restarted;
        client = client_for(&server.kubeconfig).await?;
    }
    if !args.wants("basic") {
        drop(server);
        return Ok(());
    }

    let ns = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}"#;
    client
        .request_text(
            http::Request::post("/api/v1/namespaces")
                .header("content-type", "application/json")
                .body(ns.as_bytes().to_vec())?,
        )
        .await?;

    let post = rate(&client, args.objects, c, |i| {
        let body = format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}"}},"data":{{"key":"value-{i}"}}}}"#);
        http::Request::post("/api/v1/namespaces/bench/configmaps").header("content-type", "application/json").body(body.into_bytes()).unwrap_or_default()
    })
    .await?;
    let get = rate(&client, args.objects, c, |i| {
        http::Request::get(format!("/api/v1/namespaces/bench/configmaps/cm-{i}"))
            .body(Vec::new())
            .unwrap_or_default()
    })
    .await?;

    let (list_rate, latencies) = time_lists(
        &client,
        "/api/v1/namespaces/bench/configmaps?limit=1000",
        args.lists,
        c,
    )
    .await?;
    let loaded_rss = rss_kib(server.child.id())?;

    crd::install(&client).await?;
    let cr_post = rate(&client, args.objects, c, crd::create).await?;
    let (cr_list_rate, cr_latencies) = time_lists(&client, crd::LIST, args.lists, c).await?;

    println!("| metric ({backend}, concurrency {c}) | value |");
    println!("|---|---|");
    println!(
        "| time to /readyz | {:.1} ms |",
        ready.as_secs_f64() * 1000.0
    );
    println!("| idle RSS | {:.1} MB |", idle_rss as f64 / 1024.0);
    println!("| POST configmap | {post:.0} /s |");
    println!("| GET configmap | {get:.0} /s |");
    println!(
        "| LIST of 1,000 | {list_rate:.0} /s (p50 {:.1} ms, p99 {:.1} ms) |",
        percentile(&latencies, 0.5).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0
    );
    println!("| RSS after load | {:.1} MB |", loaded_rss as f64 / 1024.0);
    println!(
        "| POST custom resource (schema + CEL rule) | {cr_post:.0} /s ({:.2}× ConfigMap) |",
        cr_post / post
    );
    println!(
        "| LIST of 1,000 custom resources | {cr_list_rate:.0} /s ({:.2}× ConfigMap; p50 {:.1} ms, p99 {:.1} ms) |",
        cr_list_rate / list_rate,
        percentile(&cr_latencies, 0.5).as_secs_f64() * 1000.0,
        percentile(&cr_latencies, 0.99).as_secs_f64() * 1000.0
    );
    if args.admission {
        admission::set_up(&client).await?;
        let mut rates = Vec::new();
        for ns in ["adm-plain", "adm-webhook", "adm-policy"] {
            let r = rate(&client, args.objects, c, |i| {
                let body = format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}"}},"data":{{"key":"value-{i}"}}}}"#);
                http::Request::post(format!("/api/v1/namespaces/{ns}/configmaps")).header("content-type", "application/json").body(body.into_bytes()).unwrap_or_default()
            })
            .await?;
            rates.push(r);
        }
        println!(
            "| POST configmap, no dynamic admission | {:.0} /s |",
            rates[0]
        );
        println!(
            "| POST configmap through a no-op validating webhook | {:.0} /s ({:.2}x) |",
            rates[1],
            rates[1] / rates[0]
        );
        println!(
            "| POST configmap through one CEL policy | {:.0} /s ({:.2}x) |",
            rates[2],
            rates[2] / rates[0]
        );
    }
    Ok(())
}
