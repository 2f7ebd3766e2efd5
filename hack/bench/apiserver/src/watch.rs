//! `watch`: watch fan-out (issue 15 point 5). `--watchers` watches of one namespace's
//! ConfigMaps, then ConfigMaps created there at `--write-rate` per second for `--watch-seconds`;
//! each watcher checks that it receives every event, in order (each event's resourceVersion
//! above the last). One more watcher never reads its stream while the writes go on: it must be
//! cut off (its stream ends early) without slowing the others. `--watch-sweep` runs several
//! such points (`WATCHERSxRATE`, e.g. `1000x50,1000x500,100x500`) and prints one row each, to
//! show where delivery stops being complete.
//!
//! The writes run on a thread and runtime of their own, so that the readers (which share the
//! machine) cannot delay the pacing, with at most [`WRITES_IN_FLIGHT`] POSTs outstanding (below
//! the server's 200 mutating requests in flight). They are never retried: kube-client's default
//! client retries a request answered 429, 503 or 504, and a create retried after it committed
//! meets itself (409 AlreadyExists) and counts its event twice. A create that fails is counted
//! as failed, and the watchers expect one event per create that succeeded.
//!
//! Figures per point: the write rate reached; events delivered (and per second, from the first
//! write to the last event read); server CPU per delivered event = (server CPU of the writes
//! with the watchers − the CPU the same number of writes cost with none, measured in a phase
//! run first) / events delivered; the benchmark's own CPU per event likewise (its readers
//! share the two cores with the server); the lag of an event = when a watcher read it − when
//! its POST was answered (0 when it came first), over every tenth watcher.

use crate::Args;
use anyhow::{anyhow, bail, Context, Result};
use futures::stream::{self, StreamExt};
use http_body_util::BodyExt;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NS: &str = "bench-watch";
/// POSTs outstanding at once; the ticker waits beyond this.
const WRITES_IN_FLIGHT: usize = 128;
/// Every how many watchers records each event's arrival time (for the lag).
const LAG_SAMPLE: usize = 10;

/// What one watcher saw.
struct Seen {
    events: usize,
    in_order: bool,
    /// Whether it had every event of the creates that succeeded.
    complete: bool,
    /// Whether its stream ended (the server closed it) before it had every event.
    ended: bool,
    /// When it read its last event.
    last_at: Option<Instant>,
    /// (revision, when read) of every event, for sampled watchers.
    arrivals: Vec<(u64, Instant)>,
}

/// The revision in `line` (the first `"resourceVersion":"N"`, the object's).
fn revision_of(line: &[u8]) -> Option<u64> {
    const PAT: &[u8] = b"\"resourceVersion\":\"";
    let at = line.windows(PAT.len()).position(|w| w == PAT)? + PAT.len();
    let rest = line.get(at..)?;
    let end = rest.iter().position(|b| *b == b'"')?;
    std::str::from_utf8(rest.get(..end)?).ok()?.parse().ok()
}

async fn open(client: &kube::Client, from: &str) -> Result<kube::client::Body> {
    let path = format!("/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={from}");
    let req = http::Request::get(path).body(kube::client::Body::empty())?;
    let resp = client.send(req).await?;
    if !resp.status().is_success() {
        bail!("watch: {}", resp.status());
    }
    Ok(resp.into_body())
}

/// Reads `body` until it has `expected` events (known once the writes are done), it ends, or
/// `limit` passes.
async fn follow(
    mut body: kube::client::Body,
    mut expected: tokio::sync::watch::Receiver<usize>,
    limit: Duration,
    sample: bool,
) -> Seen {
    let mut seen = Seen {
        events: 0,
        in_order: true,
        complete: false,
        ended: false,
        last_at: None,
        arrivals: Vec::new(),
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut last = 0;
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if seen.events >= *expected.borrow() {
            seen.complete = true;
            break;
        }
        let frame = tokio::select! {
            f = tokio::time::timeout_at(deadline, body.frame()) => match f {
                Ok(Some(Ok(f))) => f,
                Ok(_) => {
                    seen.ended = true;
                    break;
                }
                Err(_) => break,
            },
            changed = expected.changed() => {
                if changed.is_err() {
                    break;
                }
                continue;
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let now = Instant::now();
        buf.extend_from_slice(&data);
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|b| *b == b'\n') {
            let line = &buf[start..start + nl];
            start += nl + 1;
            let rv = revision_of(line).unwrap_or(0);
            seen.in_order &= rv > last;
            last = rv;
            seen.events += 1;
            seen.last_at = Some(now);
            if sample {
                seen.arrivals.push((rv, now));
            }
        }
        buf.drain(..start);
    }
    seen
}

/// What a paced run of creates did.
struct Writes {
    /// Creates answered 201, with their revision and when the answer came.
    answered: Vec<(u64, Instant)>,
    failed: usize,
    first_error: Option<String>,
    /// From the first POST sent to the last one sent, and to the last one answered.
    sending: Duration,
    total: Duration,
    started: Instant,
}

impl Writes {
    fn sent_rate(&self) -> f64 {
        let n = self.answered.len() + self.failed;
        n.saturating_sub(1) as f64 / self.sending.as_secs_f64().max(1e-9)
    }
}

/// Creates `n` ConfigMaps named `prefix-i` at `rate` per second on a thread of its own, with
/// a client that never retries (see the module's comment).
fn paced_writes(
    kubeconfig: &Path,
    prefix: &str,
    n: usize,
    rate: f64,
) -> tokio::sync::oneshot::Receiver<Result<Writes>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let kubeconfig = kubeconfig.to_path_buf();
    let prefix = prefix.to_string();
    std::thread::spawn(move || {
        let result = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(write_all(kubeconfig, prefix, n, rate)));
        let _ = tx.send(result);
    });
    rx
}

async fn write_all(kubeconfig: PathBuf, prefix: String, n: usize, rate: f64) -> Result<Writes> {
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig)?;
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;
    let slots = Arc::new(tokio::sync::Semaphore::new(WRITES_IN_FLIGHT));
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut pending = Vec::with_capacity(n);
    let started = Instant::now();
    let mut last_sent = started;
    for i in 0..n {
        ticker.tick().await;
        let slot = slots.clone().acquire_owned().await?;
        last_sent = Instant::now();
        let client = client.clone();
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{prefix}-{i}"}},"data":{{"key":"value-{i}"}}}}"#
        );
        let req = http::Request::post(format!("/api/v1/namespaces/{NS}/configmaps"))
            .header("content-type", "application/json")
            .body(body.into_bytes())?;
        pending.push(tokio::spawn(async move {
            let answer = client.request_text(req).await;
            let at = Instant::now();
            drop(slot);
            let text = answer.map_err(|e| e.to_string())?;
            let created: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let rv = created["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .ok_or_else(|| "no resourceVersion in the answer".to_string())?;
            Ok::<_, String>((rv, at))
        }));
    }
    let sending = last_sent.duration_since(started);
    let mut writes = Writes {
        answered: Vec::with_capacity(n),
        failed: 0,
        first_error: None,
        sending,
        total: Duration::ZERO,
        started,
    };
    for p in pending {
        match p.await? {
            Ok(done) => writes.answered.push(done),
            Err(e) => {
                writes.failed += 1;
                writes.first_error.get_or_insert(e);
            }
        }
    }
    writes.total = writes
        .answered
        .iter()
        .map(|(_, at)| at.duration_since(started))
        .max()
        .unwrap_or_default();
    Ok(writes)
}

async fn wait_writes(rx: tokio::sync::oneshot::Receiver<Result<Writes>>) -> Result<Writes> {
    rx.await.map_err(|_| anyhow!("the writer thread died"))?
}

/// The namespace's current resourceVersion.
async fn current(client: &kube::Client) -> Result<String> {
    let req = http::Request::get(format!("/api/v1/namespaces/{NS}/configmaps?limit=1"))
        .body(Vec::new())?;
    let list: serde_json::Value = serde_json::from_str(&client.request_text(req).await?)?;
    Ok(list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string())
}

/// The cost of the writes alone (no watcher), per create: (server CPU, this process's CPU).
struct Base {
    server: Duration,
    client: Duration,
}

/// One point's figures.
struct Point {
    watchers: usize,
    rate: f64,
    writes: Writes,
    delivered: usize,
    complete: usize,
    ordered: usize,
    /// Events per second from the first write to the last event read.
    delivery_rate: f64,
    server_us: f64,
    /// Server CPU of the phase / events, nothing subtracted.
    server_gross_us: f64,
    client_us: f64,
    /// Busy share of all cores while the writes and deliveries ran.
    busy: f64,
    lag_p99_ms: f64,
    lag_max_ms: f64,
    slow: String,
}

/// One fan-out run: `watchers` watchers, creates at `rate` for `seconds`.
async fn point(
    client: &kube::Client,
    kubeconfig: &Path,
    pid: &str,
    base: &Base,
    (watchers, rate, seconds): (usize, f64, f64),
    name: &str,
) -> Result<Point> {
    let n = (rate * seconds).round().max(1.0) as usize;
    let from = current(client).await?;
    let bodies: Vec<Result<kube::client::Body>> = stream::iter(0..watchers)
        .map(|_| open(client, &from))
        .buffer_unordered(64)
        .collect()
        .await;
    let bodies: Vec<kube::client::Body> = bodies.into_iter().collect::<Result<_>>()?;
    let slow = open(client, &from).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let (expected_tx, expected_rx) = tokio::sync::watch::channel(usize::MAX);
    let limit = Duration::from_secs_f64(seconds * 4.0 + 30.0);
    let followers: Vec<_> = bodies
        .into_iter()
        .enumerate()
        .map(|(i, b)| tokio::spawn(follow(b, expected_rx.clone(), limit, i % LAG_SAMPLE == 0)))
        .collect();
    let mark = crate::cpu::Mark::now(pid, None)?;
    let writes = wait_writes(paced_writes(kubeconfig, name, n, rate)).await?;
    let ok = writes.answered.len();
    let _ = expected_tx.send(ok);
    let mut seen = Vec::with_capacity(followers.len());
    for f in followers {
        seen.push(f.await?);
    }
    let used = mark.used()?;
    let (server_cpu, client_cpu) = (used.server, used.bench);
    // Only now does the slow watcher read: what it has is what was queued before it was cut.
    let (_slow_tx, slow_rx) = tokio::sync::watch::channel(ok);
    let slow_seen = follow(slow, slow_rx, Duration::from_secs(5), false).await;

    let delivered: usize = seen.iter().map(|s| s.events).sum();
    let last = seen.iter().filter_map(|s| s.last_at).max();
    let delivery_secs = last.map_or(0.0, |l| {
        l.saturating_duration_since(writes.started).as_secs_f64()
    });
    let answered: HashMap<u64, Instant> = writes.answered.iter().copied().collect();
    let mut lags: Vec<f64> = seen
        .iter()
        .flat_map(|s| s.arrivals.iter())
        .filter_map(|(rv, at)| {
            let done = answered.get(rv)?;
            Some(at.saturating_duration_since(*done).as_secs_f64() * 1000.0)
        })
        .collect();
    lags.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if lags.is_empty() {
            return 0.0;
        }
        lags[((lags.len() - 1) as f64 * p).round() as usize]
    };
    let per_event = |total: Duration, per_write: Duration| -> f64 {
        let own = per_write.as_secs_f64() * ok as f64;
        (total.as_secs_f64() - own).max(0.0) * 1e6 / delivered.max(1) as f64
    };
    Ok(Point {
        watchers,
        rate,
        delivered,
        complete: seen.iter().filter(|s| s.complete).count(),
        ordered: seen.iter().filter(|s| s.in_order).count(),
        delivery_rate: delivered as f64 / delivery_secs.max(1e-9),
        server_us: per_event(server_cpu, base.server),
        server_gross_us: per_event(server_cpu, Duration::ZERO),
        client_us: per_event(client_cpu, base.client),
        busy: used.busy,
        lag_p99_ms: pct(0.99),
        lag_max_ms: pct(1.0),
        slow: match (slow_seen.complete, slow_seen.ended) {
            (true, _) => format!("{}, had them all (not cut off)", slow_seen.events),
            (false, true) => format!("{}, then cut off", slow_seen.events),
            (false, false) => format!("{}, then nothing within 5 s", slow_seen.events),
        },
        writes,
    })
}

/// Parses `WATCHERSxRATE`.
fn parse_point(s: &str) -> Result<(usize, f64)> {
    let (w, r) = s
        .split_once('x')
        .with_context(|| format!("--watch-sweep: {s:?} is not WATCHERSxRATE"))?;
    Ok((w.trim().parse()?, r.trim().parse()?))
}

/// The scenario; returns the printed rows.
pub async fn run(
    args: &Args,
    client: &kube::Client,
    kubeconfig: &Path,
    pid: u32,
) -> Result<Vec<String>> {
    let pid = pid.to_string();
    let points: Vec<(usize, f64)> = if args.watch_sweep.is_empty() {
        vec![(args.watchers, args.write_rate)]
    } else {
        args.watch_sweep
            .iter()
            .map(|s| parse_point(s))
            .collect::<Result<_>>()?
    };
    crate::lists::fill(client, NS, 0, 1).await?;
    // The same writes with nobody watching: the CPU the writes themselves cost, per create.
    let (rate0, n0) = (
        points[0].1,
        (points[0].1 * args.watch_seconds).round().max(1.0) as usize,
    );
    let mark = crate::cpu::Mark::now(&pid, None)?;
    let w0 = wait_writes(paced_writes(kubeconfig, "base", n0, rate0)).await?;
    let ok0 = w0.answered.len().max(1) as u32;
    let used = mark.used()?;
    let base = Base {
        server: used.server / ok0,
        client: used.bench / ok0,
    };
    let mut results = Vec::new();
    for (i, (watchers, rate)) in points.iter().copied().enumerate() {
        let p = point(
            client,
            kubeconfig,
            &pid,
            &base,
            (watchers, rate, args.watch_seconds),
            &format!("fan{i}"),
        )
        .await?;
        results.push(p);
        // Let the server drop the closed watchers before the next point.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut rows = vec![format!(
        "| writes alone ({} creates at {rate0:.0}/s asked, {:.0}/s sent, {} failed) | server {:.0} µs / client {:.0} µs per create |  |",
        n0,
        w0.sent_rate(),
        w0.failed,
        base.server.as_secs_f64() * 1e6,
        base.client.as_secs_f64() * 1e6
    )];
    if args.watch_sweep.is_empty() {
        rows.extend(single_rows(&results[0]));
    } else {
        rows.push(String::new());
        rows.push("| watchers | creates/s asked / sent (failed) | delivered | complete / in order | events/s delivered | server µs/event (gross) | bench µs/event | machine busy | lag p99 / max | never-reading watcher |".into());
        rows.push("|---|---|---|---|---|---|---|---|---|---|".into());
        for p in &results {
            let ok = p.writes.answered.len();
            rows.push(format!(
                "| {} | {:.0} / {:.0} ({}) | {:.1}% of {} | {} / {} | {:.0} | {:.2} ({:.2}) | {:.2} | {:.0}% | {:.0} / {:.0} ms | {} |",
                p.watchers,
                p.rate,
                p.writes.sent_rate(),
                p.writes.failed,
                p.delivered as f64 * 100.0 / (ok * p.watchers).max(1) as f64,
                ok * p.watchers,
                p.complete,
                p.ordered,
                p.delivery_rate,
                p.server_us,
                p.server_gross_us,
                p.client_us,
                p.busy * 100.0,
                p.lag_p99_ms,
                p.lag_max_ms,
                p.slow
            ));
        }
    }
    for p in &results {
        if let Some(e) = &p.writes.first_error {
            rows.push(format!(
                "| {}×{:.0}/s: {} creates failed, the first with | {e} |  |",
                p.watchers, p.rate, p.writes.failed
            ));
        }
    }
    Ok(rows)
}

fn single_rows(p: &Point) -> Vec<String> {
    let ok = p.writes.answered.len();
    let w = p.watchers;
    vec![
        format!(
            "| {w} watchers, {} creates asked at {:.0}/s: sent at {:.0}/s, {} answered 201 (last after {:.1} s), {} failed | {} events delivered of {} | {:.1}% |",
            ok + p.writes.failed,
            p.rate,
            p.writes.sent_rate(),
            ok,
            p.writes.total.as_secs_f64(),
            p.writes.failed,
            p.delivered,
            ok * w,
            p.delivered as f64 * 100.0 / (ok * w).max(1) as f64
        ),
        format!("| watchers that got every event | {} of {w} |  |", p.complete),
        format!("| watchers whose events were all in order | {} of {w} |  |", p.ordered),
        format!("| events delivered per second (first write to last event read) | {:.0} /s |  |", p.delivery_rate),
        format!("| lag, POST answered → event read (every {LAG_SAMPLE}th watcher): p99 / max | {:.0} ms / {:.0} ms |  |", p.lag_p99_ms, p.lag_max_ms),
        format!(
            "| server CPU per delivered event (without subtracting the writes) | {:.2} µs ({:.2} µs) |  |",
            p.server_us, p.server_gross_us
        ),
        format!("| benchmark (readers) CPU per delivered event | {:.2} µs |  |", p.client_us),
        format!("| machine busy while the writes and deliveries ran (all cores) | {:.0}% |  |", p.busy * 100.0),
        format!("| a watcher that never read during the writes | {} |  |", p.slow),
    ]
}
