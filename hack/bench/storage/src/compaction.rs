//! `--compaction`: how long the embedded store's writes wait while it compacts. A store holds
//! `--objects` live ConfigMaps (a cluster's pods and the rest) and 2,000 hot keys (a cluster's
//! Leases); the hot keys are updated until every one has `--history` superseded rows, then the
//! same updates go on, timed one by one, while `compact` runs to the revision before them.
//! Every write queues behind the one writer thread, so whatever compaction does inside it shows
//! as the updates' tail.

use anyhow::{Context, Result};
use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::DynStorage;
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Hot keys, each updated in turn (2,000 nodes' Leases).
const HOT: usize = 2_000;
/// Updates in flight at once.
const WRITERS: usize = 32;

/// Updates the `i`th update's hot key (one superseded row per call).
async fn update(s: &DynStorage, i: usize) -> Result<()> {
    let key = format!("/leases/hot/cm-{}", i % HOT);
    let mut f = move |cur: Option<kapi_machinery::Object>| {
        Box::pin(async move {
            let mut o = cur.ok_or_else(|| kapi_storage::Error::Internal("missing key".into()))?;
            o.insert("data", json!({"n": i.to_string()}));
            Ok(o)
        }) as futures::future::BoxFuture<'static, kapi_storage::Result<_>>
    };
    s.guaranteed_update(&key, None, false, &mut f).await?;
    Ok(())
}

/// Runs updates over the hot keys on [`WRITERS`] tasks until `stop`; returns each one's
/// latency.
async fn update_load(s: DynStorage, stop: Arc<AtomicBool>) -> Result<Vec<Duration>> {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (s, stop) = (s.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut took = Vec::new();
            let mut i = w;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                update(&s, i).await?;
                took.push(t.elapsed());
                i += WRITERS;
            }
            Ok::<_, anyhow::Error>(took)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    all.sort();
    Ok(all)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn run(data: &Path, live: usize, history: usize) -> Result<()> {
    let store = EmbeddedStorage::open_with(
        &data.join("compaction"),
        EmbeddedConfig {
            compaction_interval: None,
            ..Default::default()
        },
    )?;
    let s: DynStorage = Arc::new(store);
    crate::creates::crate_creates(&s, "/configmaps/live/", live, 64).await?;
    crate::creates::crate_creates(&s, "/leases/hot/", HOT, 64).await?;
    let superseded = HOT * history;
    crate::run(superseded, WRITERS, {
        let s = s.clone();
        move |i| {
            let s = s.clone();
            async move { update(&s, i).await }
        }
    })
    .await?;
    let revision = s.current_revision().await?;
    eprintln!("compaction: {live} live keys, {superseded} superseded rows at revision {revision}");

    // The same updates, timed, with a compaction to `revision` one second in.
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(update_load(s.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let t = Instant::now();
    s.compact(revision).await.context("compact")?;
    let compact = t.elapsed();
    // Long enough for a sweep in steps to finish under the load.
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    let took = load.await??;
    anyhow::ensure!(!took.is_empty(), "no update finished");
    let pct = |p: f64| ms(took[((took.len() - 1) as f64 * p) as usize]);
    println!("| live keys | superseded rows compacted | compact() returned in ms | updates during | p50 ms | p99 ms | p99.9 ms | max ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {live} | {superseded} | {:.1} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
        ms(compact),
        took.len(),
        pct(0.5),
        pct(0.99),
        pct(0.999),
        ms(*took.last().context("no update")?)
    );
    Ok(())
}
