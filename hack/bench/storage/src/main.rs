//! Storage benchmark: creates/s, gets/s and full-list latency for N objects at several
//! concurrencies, for the embedded backend, etcd through `kapi-storage`, and raw `etcd-client`
//! puts and gets at the same concurrency (the ceiling). Prints a Markdown table.
//!
//! `cargo run --release -p kapi-bench-storage -- [--objects 10000] [--concurrency 1,16,64]
//! [--etcd http://127.0.0.1:2379]`; without `--etcd` it starts its own etcd on free ports.

use anyhow::{Context, Result};
use clap::Parser;
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
    /// Rounds of etcd creates, alternating between this crate, raw puts and raw guarded
    /// transactions so that load from elsewhere on the machine hits all alike; the best round
    /// of each is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Where the embedded store and the started etcd keep their data (default: a temp dir).
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
}

/// A ConfigMap-sized object (~600 bytes of JSON).
fn object(name: &str) -> Object {
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
async fn run<F, Fut>(n: usize, conc: usize, op: F) -> Result<f64>
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

struct Row {
    backend: &'static str,
    conc: usize,
    creates: f64,
    gets: f64,
    list: Option<Duration>,
}

/// Objects built before the clock starts (building them is the caller's cost, not storage's),
/// each taken exactly once.
fn prebuilt(n: usize) -> Arc<Vec<std::sync::Mutex<Option<Object>>>> {
    Arc::new(
        (0..n)
            .map(|i| std::sync::Mutex::new(Some(object(&format!("cm-{i}")))))
            .collect(),
    )
}

async fn creates(s: &DynStorage, prefix: &str, n: usize, conc: usize) -> Result<f64> {
    let objects = prebuilt(n);
    let (s, p) = (s.clone(), prefix.to_string());
    run(n, conc, move |i| {
        let (s, key) = (s.clone(), format!("{p}cm-{i}"));
        let obj = objects[i].lock().ok().and_then(|mut o| o.take());
        async move {
            s.create(&key, obj.context("object already used")?, None)
                .await?;
            Ok(())
        }
    })
    .await
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

async fn raw_puts(
    client: &etcd_client::Client,
    prefix: &str,
    n: usize,
    conc: usize,
) -> Result<f64> {
    let value = Arc::new(object("cm-0").to_vec());
    let (c, p) = (client.clone(), prefix.to_string());
    run(n, conc, move |i| {
        let (mut kv, key, value) = (c.kv_client(), format!("{p}cm-{i}"), value.to_vec());
        async move {
            kv.put(key, value, None).await?;
            Ok(())
        }
    })
    .await
}

/// Raw creates the way this crate writes them: a transaction guarded on `create_revision == 0`.
async fn raw_txn_creates(
    client: &etcd_client::Client,
    prefix: &str,
    n: usize,
    conc: usize,
) -> Result<f64> {
    use etcd_client::{Compare, CompareOp, Txn, TxnOp};
    let value = Arc::new(object("cm-0").to_vec());
    let (c, p) = (client.clone(), prefix.to_string());
    run(n, conc, move |i| {
        let (mut kv, key, value) = (c.kv_client(), format!("{p}cm-{i}"), value.to_vec());
        async move {
            let txn = Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key, value, None)]);
            anyhow::ensure!(kv.txn(txn).await?.succeeded(), "key existed");
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

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let tmp = tempfile::tempdir()?;
    let data = args
        .data_dir
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let mut _etcd = None;
    let endpoint = match &args.etcd {
        Some(e) => e.clone(),
        None => {
            let p = EtcdProcess::start(&data.join("etcd"));
            let url = p.client_url();
            _etcd = Some(p);
            url
        }
    };
    let etcd_cfg = EtcdConfig {
        endpoints: vec![endpoint.clone()],
        compaction_interval: None,
        ..Default::default()
    };
    let raw = etcd_client::Client::connect([endpoint.as_str()], None).await?;

    let mut rows = Vec::new();
    for &conc in &args.concurrency {
        let n = args.objects;
        let dir = data.join(format!("embedded-c{conc}"));
        let embedded: DynStorage = Arc::new(EmbeddedStorage::open_with(
            &dir,
            EmbeddedConfig {
                compaction_interval: None,
                ..Default::default()
            },
        )?);
        let prefix = format!("/configmaps/bench-c{conc}/");
        let c = creates(&embedded, &prefix, n, conc).await?;
        let g = gets(&embedded, &prefix, n, conc).await?;
        let l = list_latency(&embedded, &prefix, conc, n).await?;
        rows.push(Row {
            backend: "embedded (SQLite)",
            conc,
            creates: c,
            gets: g,
            list: Some(l),
        });
        eprintln!("embedded c={conc} done");

        let etcd: DynStorage = Arc::new(
            EtcdStorage::connect(EtcdConfig {
                prefix: format!("/registry-c{conc}"),
                ..etcd_cfg.clone()
            })
            .await?,
        );
        let (mut ours, mut theirs, mut txns) = (0f64, 0f64, 0f64);
        for round in 0..args.rounds {
            let p = format!("/rawtxn-c{conc}/configmaps/bench-r{round}/");
            txns = txns.max(raw_txn_creates(&raw, &p, n, conc).await?);
            ours =
                ours.max(creates(&etcd, &format!("/configmaps/bench-r{round}/"), n, conc).await?);
            theirs = theirs.max(
                raw_puts(
                    &raw,
                    &format!("/raw-c{conc}/configmaps/bench-r{round}/"),
                    n,
                    conc,
                )
                .await?,
            );
        }
        let prefix = "/configmaps/bench-r0/";
        let g = gets(&etcd, prefix, n, conc).await?;
        let l = list_latency(&etcd, prefix, conc, n).await?;
        rows.push(Row {
            backend: "etcd via kapi-storage",
            conc,
            creates: ours,
            gets: g,
            list: Some(l),
        });
        let g = raw_gets(&raw, &format!("/raw-c{conc}/configmaps/bench-r0/"), n, conc).await?;
        rows.push(Row {
            backend: "raw etcd-client put/get",
            conc,
            creates: theirs,
            gets: g,
            list: None,
        });
        rows.push(Row {
            backend: "raw etcd-client guarded txn",
            conc,
            creates: txns,
            gets: f64::NAN,
            list: None,
        });
        eprintln!("etcd c={conc} done");
    }

    println!(
        "| backend | concurrency | creates/s | gets/s | full list of {} (mean latency) |",
        args.objects
    );
    println!("|---|---:|---:|---:|---:|");
    for r in &rows {
        let list = r.list.map_or("—".to_string(), |d| {
            format!("{:.1} ms", d.as_secs_f64() * 1000.0)
        });
        let gets = if r.gets.is_nan() {
            "—".to_string()
        } else {
            format!("{:.0}", r.gets)
        };
        println!(
            "| {} | {} | {:.0} | {} | {} |",
            r.backend, r.conc, r.creates, gets, list
        );
    }
    println!();
    for &conc in &args.concurrency {
        let find = |b: &str| {
            rows.iter()
                .find(|r| r.conc == conc && r.backend.starts_with(b))
                .map(|r| r.creates)
        };
        if let (Some(ours), Some(raw), Some(txn)) = (
            find("etcd via"),
            find("raw etcd-client put"),
            find("raw etcd-client guarded"),
        ) {
            println!(
                "etcd creates through kapi-storage at concurrency {conc}: {:.0}% of raw puts, {:.0}% of raw guarded transactions",
                ours / raw * 100.0,
                ours / txn * 100.0
            );
        }
    }
    Ok(())
}
