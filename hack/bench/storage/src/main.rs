//! Storage benchmark: creates/s, gets/s and full-list latency for N objects at several
//! concurrencies, for the embedded backend, etcd through `kapi-storage`, and raw `etcd-client`
//! puts and gets at the same concurrency (the ceiling). Prints Markdown tables.
//!
//! etcd creates are measured in several rounds, alternating between this crate, raw puts and
//! raw guarded transactions, and reported as median and range, with the CPU time etcd and this
//! process spent per create (so a gap can be placed on one side of the connection).
//!
//! `cargo run --release -p kapi-bench-storage -- [--objects 10000] [--concurrency 1,16,64]
//! [--rounds 5] [--etcd http://127.0.0.1:2379 --etcd-pid <pid>]`; without `--etcd` it starts
//! its own etcd on free ports. `--compaction [--objects N --history H]` instead times the
//! embedded store's writes while it compacts (`compaction.rs`).
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "benchmark driver, never on a request path: a panic is a failed run"
)]

mod compaction;
mod creates;

use anyhow::{Context, Result};
use clap::Parser;
use creates::{Raw, Sample, Writer};
use kapi_machinery::{ListOptions, Object};
use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::etcd::{EtcdConfig, EtcdStorage};
use kapi_storage::testing::EtcdProcess;
use kapi_storage::{DynStorage, GetOptions};
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "kapi storage benchmark")]
struct Args {
    /// Objects created (and read) per run.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Concurrency levels, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    concurrency: Vec<usize>,
    /// An etcd to use instead of starting one.
    #[arg(long)]
    etcd: Option<String>,
    /// The pid of the etcd given with `--etcd`, to report its CPU time per create.
    #[arg(long)]
    etcd_pid: Option<u32>,
    /// Rounds of etcd creates; each round runs every writer once, in a rotating order.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Which etcd writers to run (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    writers: Vec<Writer>,
    /// Skip the embedded backend (e.g. while profiling etcd).
    #[arg(long)]
    no_embedded: bool,
    /// Where the embedded store and the started etcd keep their data (default: a temp dir).
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// Instead of the tables: how long the embedded store's writes wait while it compacts
    /// (`--objects` live keys, 2,000 hot keys with `--history` superseded rows each).
    #[arg(long)]
    compaction: bool,
    /// With `--compaction`: superseded rows per hot key.
    #[arg(long, default_value_t = 30)]
    history: usize,
}

/// A ConfigMap-sized object (~600 bytes of JSON).
pub(crate) fn object(name: &str) -> Object {
    let data: serde_json::Map<String, serde_json::Value> = (0..8)
        .map(|i| {
            (
                format!("key-{i}"),
                json!(format!("value-{i}-{}", "x".repeat(40))),
            )
        })
        .collect();
    Object::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "bench", "uid": format!("00000000-0000-0000-0000-{name:0>12}"),
                     "labels": {"app": "bench"}, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "data": data,
    }))
    .expect("a JSON object")
}

/// Runs `op(i)` for i in 0..n on `conc` workers; returns operations per second.
pub(crate) async fn run<F, Fut>(n: usize, conc: usize, op: F) -> Result<f64>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..conc {
        let (op, next) = (op.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                op(i).await?;
            }
        }));
    }
    for w in workers {
        w.await??;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

/// Objects built before the clock starts (building them is the caller's cost, not storage's),
/// each taken exactly once.
pub(crate) fn prebuilt(n: usize) -> Arc<Vec<std::sync::Mutex<Option<Object>>>> {
    Arc::new(
        (0..n)
            .map(|i| std::sync::Mutex::new(Some(object(&format!("cm-{i}")))))
            .collect(),
    )
}

/// `conc` full lists at once; returns the mean latency.
async fn list_latency(
    s: &DynStorage,
    prefix: &str,
    conc: usize,
    expect: usize,
) -> Result<Duration> {
    let mut tasks = Vec::new();
    for _ in 0..conc {
        let (s, prefix) = (s.clone(), prefix.to_string());
        tasks.push(tokio::spawn(async move {
            let start = Instant::now();
            let list = s.list(&prefix, &ListOptions::default()).await?;
            anyhow::ensure!(
                list.items.len() == expect,
                "listed {} of {expect}",
                list.items.len()
            );
            Ok::<_, anyhow::Error>(start.elapsed())
        }));
    }
    let mut total = Duration::ZERO;
    for t in tasks {
        total += t.await??;
    }
    Ok(total / u32::try_from(conc).unwrap_or(1))
}

async fn gets(s: &DynStorage, prefix: &str, n: usize, conc: usize) -> Result<f64> {
    let (s, p) = (s.clone(), prefix.to_string());
    run(n, conc, move |i| {
        let (s, key) = (s.clone(), format!("{p}cm-{i}"));
        async move {
            s.get(&key, &GetOptions::default())
                .await?
                .context("missing object")?;
            Ok(())
        }
    })
    .await
}

async fn raw_gets(
    client: &etcd_client::Client,
    prefix: &str,
    n: usize,
    conc: usize,
) -> Result<f64> {
    let (c, p) = (client.clone(), prefix.to_string());
    run(n, conc, move |i| {
        let (mut kv, key) = (c.kv_client(), format!("{p}cm-{i}"));
        async move {
            anyhow::ensure!(!kv.get(key, None).await?.kvs().is_empty(), "missing key");
            Ok(())
        }
    })
    .await
}

/// A row of the main table; `creates` is the median for etcd rows.
struct Row {
    backend: String,
    conc: usize,
    creates: f64,
    gets: Option<f64>,
    list: Option<Duration>,
}

/// Every round's samples of one concurrency.
struct Rounds {
    conc: usize,
    rounds: Vec<Vec<(Writer, Sample)>>,
}

impl Rounds {
    fn of(&self, w: Writer) -> impl Iterator<Item = &Sample> + '_ {
        self.rounds
            .iter()
            .flat_map(move |r| r.iter().filter(move |(x, _)| *x == w).map(|(_, s)| s))
    }

    fn median_rate(&self, w: Writer) -> f64 {
        creates::spread(self.of(w).map(|s| s.rate).collect()).map_or(f64::NAN, |s| s.0)
    }

    /// The crate's rate over `other`'s, round by round (one round's runs share its load).
    fn ratios(&self, other: Writer) -> Vec<f64> {
        self.rounds
            .iter()
            .filter_map(|r| {
                let get = |w| r.iter().find(|(x, _)| *x == w).map(|(_, s)| s.rate);
                Some(get(Writer::Crate)? / get(other)? * 100.0)
            })
            .collect()
    }
}

fn fmt_spread(v: Vec<f64>, unit: &str, digits: usize) -> String {
    creates::spread(v).map_or("—".into(), |(m, lo, hi)| {
        format!("{m:.digits$}{unit} ({lo:.digits$}–{hi:.digits$})")
    })
}

/// The embedded store's row at one concurrency, in a fresh directory.
async fn embedded_row(data: &std::path::Path, n: usize, conc: usize) -> Result<Row> {
    let dir = data.join(format!("embedded-c{conc}"));
    let embedded: DynStorage = Arc::new(EmbeddedStorage::open_with(
        &dir,
        EmbeddedConfig {
            compaction_interval: None,
            ..Default::default()
        },
    )?);
    let prefix = format!("/configmaps/bench-c{conc}/");
    let c = creates::crate_creates(&embedded, &prefix, n, conc).await?;
    let g = gets(&embedded, &prefix, n, conc).await?;
    let l = list_latency(&embedded, &prefix, conc, n).await?;
    eprintln!("embedded c={conc} done");
    Ok(Row {
        backend: "embedded (SQLite)".into(),
        conc,
        creates: c,
        gets: Some(g),
        list: Some(l),
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let tmp = tempfile::tempdir()?;
    let data = args
        .data_dir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    if args.compaction {
        return compaction::run(&data, args.objects, args.history).await;
    }
    let mut _etcd = None;
    let (endpoint, etcd_pid) = match &args.etcd {
        Some(e) => (e.clone(), args.etcd_pid),
        None => {
            let p = EtcdProcess::start(&data.join("etcd"));
            let started = (p.client_url(), p.pid());
            _etcd = Some(p);
            started
        }
    };
    let etcd_cfg = EtcdConfig {
        endpoints: vec![endpoint.clone()],
        compaction_interval: None,
        // 64 concurrent unpaged lists of 10,000 objects on a busy machine can take longer than
        // the server's default 10s; the benchmark measures them rather than timing them out.
        request_timeout: Duration::from_secs(120),
        ..Default::default()
    };
    let raw = Raw::connect(&endpoint).await?;
    let writers = if args.writers.is_empty() {
        Writer::ALL.to_vec()
    } else {
        args.writers.clone()
    };

    let mut rows = Vec::new();
    let mut all_rounds = Vec::new();
    for &conc in &args.concurrency {
        let n = args.objects;
        if !args.no_embedded {
            rows.push(embedded_row(&data, n, conc).await?);
        }

        let etcd: DynStorage = Arc::new(
            EtcdStorage::connect(EtcdConfig {
                prefix: format!("/registry-c{conc}"),
                ..etcd_cfg.clone()
            })
            .await?,
        );
        let mut rounds = Rounds {
            conc,
            rounds: Vec::new(),
        };
        for r in 0..args.rounds.max(1) {
            rounds
                .rounds
                .push(creates::round(&etcd, &raw, &writers, etcd_pid, (n, conc), r).await?);
            eprintln!("etcd c={conc} round {r} done");
        }
        // Reads go over what round 0 wrote, when the writer they read through ran.
        let (mut g, mut l, mut raw_g) = (None, None, None);
        if writers.contains(&Writer::Crate) {
            let prefix = creates::prefix(Writer::Crate, conc, 0);
            g = Some(gets(&etcd, &prefix, n, conc).await?);
            l = Some(list_latency(&etcd, &prefix, conc, n).await?);
        }
        if writers.contains(&Writer::RawPut) {
            let prefix = creates::prefix(Writer::RawPut, conc, 0);
            raw_g = Some(raw_gets(&raw.client, &prefix, n, conc).await?);
        }
        for &w in &writers {
            rows.push(Row {
                backend: w.label(),
                conc,
                creates: rounds.median_rate(w),
                gets: match w {
                    Writer::Crate => g,
                    Writer::RawPut => raw_g,
                    _ => None,
                },
                list: if w == Writer::Crate { l } else { None },
            });
        }
        all_rounds.push(rounds);
    }

    let rounds = args.rounds.max(1);
    println!(
        "| backend | concurrency | creates/s (etcd: median of {rounds}) | gets/s | full list of {} (mean latency) |",
        args.objects
    );
    println!("|---|---:|---:|---:|---:|");
    for r in &rows {
        let list = r.list.map_or("—".to_string(), |d| {
            format!("{:.1} ms", d.as_secs_f64() * 1000.0)
        });
        let gets = r.gets.map_or("—".to_string(), |g| format!("{g:.0}"));
        println!(
            "| {} | {} | {:.0} | {} | {} |",
            r.backend, r.conc, r.creates, gets, list
        );
    }

    println!();
    println!("etcd creates over {rounds} rounds: median (min–max), and CPU time per create");
    println!();
    println!("| writer | concurrency | creates/s | etcd CPU µs/create | client CPU µs/create |");
    println!("|---|---:|---:|---:|---:|");
    for rs in &all_rounds {
        for &w in &writers {
            let samples: Vec<&Sample> = rs.of(w).collect();
            println!(
                "| {} | {} | {} | {} | {} |",
                w.label(),
                rs.conc,
                fmt_spread(samples.iter().map(|s| s.rate).collect(), "", 0),
                fmt_spread(samples.iter().filter_map(|s| s.etcd_us).collect(), "", 0),
                fmt_spread(samples.iter().filter_map(|s| s.client_us).collect(), "", 0),
            );
        }
    }

    println!();
    println!("etcd creates through kapi-storage relative to the raw writers, per round: median (min–max)");
    println!();
    println!(
        "| concurrency | vs raw puts | vs raw guarded txn | vs raw guarded txn, {} connections |",
        creates::CONNECTIONS
    );
    println!("|---:|---:|---:|---:|");
    for rs in &all_rounds {
        println!(
            "| {} | {} | {} | {} |",
            rs.conc,
            fmt_spread(rs.ratios(Writer::RawPut), "%", 0),
            fmt_spread(rs.ratios(Writer::RawTxn), "%", 0),
            fmt_spread(rs.ratios(Writer::RawTxnConnections), "%", 0),
        );
    }
    Ok(())
}
