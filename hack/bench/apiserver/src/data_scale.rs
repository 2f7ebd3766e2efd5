//! `--data-scale`: many stored objects on a running server (kapi or kube-apiserver; it starts
//! nothing). Two stages, each run by `hack/bench/data-scale.sh` around a restart it makes:
//!
//! - `load`: creates `--objects` ConfigMaps (the bench's ~690-byte shape) in one namespace, a
//!   fifth first, then the rest; reads the server's memory 12 s after each step (past
//!   jemalloc's 10 s decay; Go's heap has no such delay to wait for); walks all of them in
//!   pages of 500 (the encoded size is the walk's bytes per item; a walk that outlives the
//!   server's compaction interval ends in 410 Expired, reported as such); then a watch from a
//!   recent resourceVersion (see [`watch_from_recent`]).
//! - `restart`: the server was just started again on the same data at `--started-ms`: time
//!   to `/readyz`, to its first consistent LIST (`limit=1`), to its first LIST from the watch
//!   cache (`resourceVersion=0`, a selector matching nothing), its memory then, the paged
//!   walk and the watch again.
//!
//! Each stage prints its rows and one `data-scale key=value ...` line the script tabulates.

use crate::{proc_kib, status_kib, Args};
use anyhow::{bail, Context, Result};
use futures::stream::{self, StreamExt};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NS: &str = "bench-data";

/// How long after a step the settled memory is read (past jemalloc's 10 s decay).
const SETTLED: Duration = Duration::from_secs(12);

/// Objects created, then replayed by the watch from a recent resourceVersion.
const RECENT: usize = 100;

/// What one memory reading holds, in KiB.
#[derive(Clone, Copy, Default)]
struct Memory {
    rss: u64,
    anon: u64,
    pss: u64,
    private_dirty: u64,
}

impl Memory {
    fn read(pid: u32) -> Result<Self> {
        Ok(Self {
            rss: status_kib(pid, "VmRSS:")?,
            anon: status_kib(pid, "RssAnon:")?,
            pss: proc_kib(pid, "smaps_rollup", "Pss:")?,
            private_dirty: proc_kib(pid, "smaps_rollup", "Private_Dirty:")?,
        })
    }
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Creates ConfigMaps `from..from + n` in `NS`, `concurrency` at a time, retrying a request
/// that failed up to 5 times (a 429 or a dropped connection is the server's to give, not a
/// failed run); returns creates per second.
async fn create(client: &kube::Client, from: usize, n: usize, concurrency: usize) -> Result<f64> {
    let done = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let first_error = std::sync::Mutex::new(None::<String>);
    let started = Instant::now();
    stream::iter(from..from + n)
        .for_each_concurrent(concurrency, |i| {
            let (done, failed, first_error) = (&done, &failed, &first_error);
            async move {
                for attempt in 0..5u64 {
                    match client.request_text(crate::lists::configmap(NS, i)).await {
                        Ok(_) => break,
                        // Created by an attempt whose answer was lost.
                        Err(kube::Error::Api(e)) if e.code == 409 && attempt > 0 => break,
                        Err(e) if attempt == 4 => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            if let Ok(mut first) = first_error.lock() {
                                first.get_or_insert_with(|| e.to_string());
                            }
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(200 << attempt)).await,
                    }
                }
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if d % 100_000 == 0 {
                    eprintln!(
                        "data-scale: {} created, {:.0}/s",
                        from + d,
                        d as f64 / started.elapsed().as_secs_f64()
                    );
                }
            }
        })
        .await;
    let failed = failed.into_inner();
    if failed > 0 {
        let first = first_error.into_inner().ok().flatten().unwrap_or_default();
        bail!("{failed} of {n} creates failed, first: {first}");
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

/// What a paged walk saw.
struct Walk {
    took: Duration,
    pages: usize,
    /// The bench's `cm-*` items among the pages' items.
    items: usize,
    /// Bytes of the pages' bodies.
    bytes: usize,
    /// The walk ended with 410 Expired: the continue token's revision was compacted (the
    /// walk took longer than the server's compaction interval).
    expired: bool,
}

impl Walk {
    /// The walk's time, or where it expired.
    fn outcome(&self) -> String {
        if self.expired {
            format!("expired@{:.1}", self.took.as_secs_f64())
        } else {
            format!("{:.1}", self.took.as_secs_f64())
        }
    }
}

/// A walk over every ConfigMap of `NS` in pages of 500. The namespace may also hold
/// `kube-root-ca.crt` (kapi's controllers publish it; a bare kube-apiserver has no controller
/// manager to) and the watches' `recent-*` objects, which are not counted as items.
async fn walk(client: &kube::Client) -> Result<Walk> {
    let base = format!("/api/v1/namespaces/{NS}/configmaps?limit=500");
    let started = Instant::now();
    let mut walk = Walk {
        took: Duration::ZERO,
        pages: 0,
        items: 0,
        bytes: 0,
        expired: false,
    };
    let mut token: Option<String> = None;
    loop {
        let path = match &token {
            Some(t) => format!("{base}&continue={}", crate::lists::urlencode(t)),
            None => base.clone(),
        };
        let text = match client
            .request_text(http::Request::get(path).body(Vec::new())?)
            .await
        {
            Ok(text) => text,
            Err(kube::Error::Api(e)) if e.code == 410 => {
                walk.expired = true;
                break;
            }
            Err(e) => return Err(e.into()),
        };
        walk.bytes += text.len();
        let list: serde_json::Value = serde_json::from_str(&text)?;
        walk.pages += 1;
        walk.items += list["items"].as_array().map_or(0, |items| {
            items
                .iter()
                .filter(|i| {
                    i["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("cm-"))
                })
                .count()
        });
        token = list["metadata"]["continue"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(String::from);
        if token.is_none() {
            break;
        }
    }
    walk.took = started.elapsed();
    Ok(walk)
}

/// The resourceVersion of a consistent `limit=1` LIST of `NS`.
async fn current_revision(client: &kube::Client) -> Result<String> {
    let path = format!("/api/v1/namespaces/{NS}/configmaps?limit=1");
    let text = client
        .request_text(http::Request::get(path).body(Vec::new())?)
        .await?;
    let list: serde_json::Value = serde_json::from_str(&text)?;
    list["metadata"]["resourceVersion"]
        .as_str()
        .map(String::from)
        .context("a LIST without a resourceVersion")
}

/// A watch from a recent resourceVersion: reads the current one, creates [`RECENT`]
/// ConfigMaps, then opens a watch from the revision read before them, which must replay every
/// one of them as ADDED, in order. Returns the time from opening the watch to its last event.
async fn watch_from_recent(client: &kube::Client, tag: &str) -> Result<Duration> {
    use http_body_util::BodyExt;
    let from = current_revision(client).await?;
    let base = format!("/api/v1/namespaces/{NS}/configmaps");
    for i in 0..RECENT {
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"recent-{tag}-{i}"}},"data":{{"i":"{i}"}}}}"#
        );
        let req = http::Request::post(&base)
            .header("content-type", "application/json")
            .body(body.into_bytes())?;
        client.request_text(req).await?;
    }
    let started = Instant::now();
    let req = http::Request::get(format!("{base}?watch=1&resourceVersion={from}"))
        .body(kube::client::Body::empty())?;
    let resp = client.send(req).await?;
    if !resp.status().is_success() {
        bail!("watch from {from}: {}", resp.status());
    }
    let mut body = resp.into_body();
    let (mut buf, mut seen, mut last) = (Vec::<u8>::new(), 0, 0u64);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while seen < RECENT {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .with_context(|| format!("watch from {from}: {seen} of {RECENT} events in 60 s"))?
            .with_context(|| format!("watch from {from} ended after {seen} events"))?
            .map_err(|e| anyhow::anyhow!("watch from {from}: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let event: serde_json::Value = serde_json::from_slice(&line)?;
            let kind = event["type"].as_str().unwrap_or("");
            let name = event["object"]["metadata"]["name"].as_str().unwrap_or("");
            let rv: u64 = event["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            if kind != "ADDED" || name != format!("recent-{tag}-{seen}") || rv <= last {
                bail!("watch from {from}: event {seen} is {kind} {name} at {rv}, expected ADDED recent-{tag}-{seen} after {last}");
            }
            last = rv;
            seen += 1;
        }
    }
    Ok(started.elapsed())
}

/// Runs the stage `--data-scale-stage` names against the server of `kubeconfig`.
pub async fn run(args: &Args, kubeconfig: &Path) -> Result<()> {
    let pid = args.server_pid.context("--server-pid is needed")?;
    let label = &args.label;
    let n = args.objects;
    match args.data_scale_stage.as_str() {
        "load" => load(args, kubeconfig, pid, label, n).await,
        "restart" => restart(args, kubeconfig, pid, label, n).await,
        other => bail!("--data-scale-stage: {other:?} is neither load nor restart"),
    }
}

async fn load(args: &Args, kubeconfig: &Path, pid: u32, label: &str, n: usize) -> Result<()> {
    let client = crate::client_for(&kubeconfig.to_path_buf()).await?;
    let idle = Memory::read(pid)?;
    crate::lists::create_namespace(&client, NS).await?;
    let first = n / 5;
    let t = Instant::now();
    create(&client, 0, first, args.concurrency).await?;
    tokio::time::sleep(SETTLED).await;
    let at_first = Memory::read(pid)?;
    let fill_first = t.elapsed().saturating_sub(SETTLED);
    let t = Instant::now();
    create(&client, first, n - first, args.concurrency).await?;
    let rate = n as f64 / (fill_first + t.elapsed()).as_secs_f64();
    tokio::time::sleep(SETTLED).await;
    let loaded = Memory::read(pid)?;
    // Printed as soon as measured: a later step may fail on a server that does not hold.
    println!("| {label}: {n} ConfigMaps created | {rate:.0} /s |");
    println!(
        "| {label}: memory idle → loaded (12 s after) | RSS {:.1} → {:.1} MB, RssAnon {:.1} → {:.1}, PSS {:.1} → {:.1}, Private_Dirty {:.1} → {:.1} |",
        mb(idle.rss), mb(loaded.rss), mb(idle.anon), mb(loaded.anon), mb(idle.pss), mb(loaded.pss),
        mb(idle.private_dirty), mb(loaded.private_dirty)
    );
    let walk = walk(&client).await?;
    if !walk.expired && walk.items != n {
        bail!(
            "the paged walk found {} ConfigMaps, {n} were created",
            walk.items
        );
    }
    let per_object = loaded.rss.saturating_sub(at_first.rss) as f64 * 1024.0 / (n - first) as f64;
    // Every object has the same shape: the pages read give the size even when the walk expired.
    let encoded = walk.bytes as f64 / walk.items.max(1) as f64;
    println!(
        "| {label}: RSS per object of the last {} / encoded size (JSON, from the walk) | {per_object:.0} / {encoded:.0} bytes: {:.2}× |",
        n - first,
        per_object / encoded
    );
    if walk.expired {
        println!(
            "| {label}: paged walk of all (limit=500) | 410 Expired after {:.1} s, {} pages: the continue token's revision was compacted |",
            walk.took.as_secs_f64(),
            walk.pages
        );
    } else {
        println!(
            "| {label}: paged walk of all (limit=500) | {:.1} s, {} pages, {:.0} MB |",
            walk.took.as_secs_f64(),
            walk.pages,
            walk.bytes as f64 / 1_048_576.0
        );
    }
    let watch = watch_from_recent(&client, "load").await?;
    let after = Memory::read(pid)?;
    let etcd = match args.etcd_pid {
        Some(p) => format!("{:.0}", mb(Memory::read(p)?.rss)),
        None => "0".to_string(),
    };
    println!(
        "| {label}: watch from a recent resourceVersion ({RECENT} events replayed) | {:.1} ms |",
        ms(watch)
    );
    println!(
        "data-scale stage=load label={label} objects={n} create_per_s={rate:.0} idle_rss_mb={:.1} rss_mb={:.1} anon_mb={:.1} pss_mb={:.1} private_dirty_mb={:.1} rss_after_walk_mb={:.1} per_object_b={per_object:.0} encoded_b={encoded:.0} ratio={:.2} walk_s={} pages={} watch_ms={:.1} etcd_rss_mb={etcd}",
        mb(idle.rss), mb(loaded.rss), mb(loaded.anon), mb(loaded.pss), mb(loaded.private_dirty),
        mb(after.rss), per_object / encoded, walk.outcome(), walk.pages, ms(watch)
    );
    Ok(())
}

async fn restart(args: &Args, kubeconfig: &Path, pid: u32, label: &str, n: usize) -> Result<()> {
    let started_ms = args
        .started_ms
        .context("--started-ms is needed for the restart stage")?;
    let started = UNIX_EPOCH + Duration::from_millis(started_ms);
    let since = || {
        SystemTime::now()
            .duration_since(started)
            .unwrap_or_default()
    };
    // Ready: /readyz answers 200 (the kubeconfig may be rewritten while the server starts).
    let deadline = Instant::now() + Duration::from_secs(600);
    let client = loop {
        if Instant::now() > deadline {
            bail!("{label} not ready 600 s after its restart");
        }
        if let Ok(client) = crate::client_for(&kubeconfig.to_path_buf()).await {
            let req = http::Request::get("/readyz").body(Vec::new())?;
            if client.request_text(req).await.is_ok() {
                break client;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let ready = since();
    let path = format!("/api/v1/namespaces/{NS}/configmaps?limit=1");
    client
        .request_text(http::Request::get(path).body(Vec::new())?)
        .await?;
    let first_list = since();
    let path = format!(
        "/api/v1/namespaces/{NS}/configmaps?resourceVersion=0&labelSelector=bench-none%3Dx"
    );
    client
        .request_text(http::Request::get(path).body(Vec::new())?)
        .await?;
    let cache = since();
    tokio::time::sleep(SETTLED).await;
    let settled = Memory::read(pid)?;
    let walk = walk(&client).await?;
    if !walk.expired && walk.items != n {
        bail!(
            "after the restart the paged walk found {} ConfigMaps, {n} were created",
            walk.items
        );
    }
    let watch = watch_from_recent(&client, "restart").await?;
    println!(
        "| {label}: restart with {n} stored: → /readyz / → first consistent LIST / → first LIST from the cache | {:.2} / {:.2} / {:.2} s |",
        ready.as_secs_f64(), first_list.as_secs_f64(), cache.as_secs_f64()
    );
    println!(
        "| {label}: memory 12 s after the cache's load | RSS {:.1} MB, RssAnon {:.1}, PSS {:.1}, Private_Dirty {:.1} |",
        mb(settled.rss), mb(settled.anon), mb(settled.pss), mb(settled.private_dirty)
    );
    println!(
        "| {label}: after the restart, paged walk / watch from a recent resourceVersion | {} s ({} pages) / {:.1} ms |",
        walk.outcome(), walk.pages, ms(watch)
    );
    println!(
        "data-scale stage=restart label={label} ready_s={:.2} first_list_s={:.2} cache_s={:.2} rss_mb={:.1} anon_mb={:.1} walk_s={} watch_ms={:.1}",
        ready.as_secs_f64(), first_list.as_secs_f64(), cache.as_secs_f64(), mb(settled.rss),
        mb(settled.anon), walk.outcome(), ms(watch)
    );
    Ok(())
}
