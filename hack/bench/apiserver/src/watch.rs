//! `watch`: watch fan-out (issue 15 point 5). `--watchers` watches of one namespace's
//! ConfigMaps, then ConfigMaps created there at `--write-rate` per second for `--watch-seconds`;
//! each watcher checks that it receives every event, in order (each event's resourceVersion
//! above the last). One more watcher never reads its stream while the writes go on: it must be
//! cut off (its stream ends early) without slowing the others. The server's CPU time per
//! delivered event is the CPU of the fan-out phase minus that of the same writes with no
//! watcher (a phase run first), divided by the events delivered.

use crate::Args;
use anyhow::{bail, Result};
use futures::stream::{self, StreamExt};
use http_body_util::BodyExt;
use std::time::{Duration, Instant};

const NS: &str = "bench-watch";

/// What one watcher saw.
struct Seen {
    events: usize,
    in_order: bool,
    /// When it had every event.
    complete_at: Option<Instant>,
    /// Whether its stream ended (the server closed it) before it had every event.
    ended: bool,
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

/// Reads `body` until `expected` events have come or it ends.
async fn follow(mut body: kube::client::Body, expected: usize, limit: Duration) -> Seen {
    let mut seen = Seen {
        events: 0,
        in_order: true,
        complete_at: None,
        ended: false,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut last = 0;
    let deadline = tokio::time::Instant::now() + limit;
    while seen.events < expected {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(f))) => f,
            Ok(_) => {
                seen.ended = true;
                break;
            }
            Err(_) => break,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let rv = revision_of(&line).unwrap_or(0);
            seen.in_order &= rv > last;
            last = rv;
            seen.events += 1;
        }
    }
    if seen.events >= expected {
        seen.complete_at = Some(Instant::now());
    }
    seen
}

/// Server CPU time (user + system) from `/proc/<pid>/stat`.
fn cpu(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| -> u64 { fields.get(i).and_then(|f| f.parse().ok()).unwrap_or(0) };
    // utime and stime (fields 14 and 15 of stat(5)); USER_HZ is 100.
    Ok(Duration::from_millis((tick(11) + tick(12)) * 10))
}

/// Creates `n` ConfigMaps named `prefix-i` at `rate` per second; returns when all are done.
async fn paced_writes(client: &kube::Client, prefix: &str, n: usize, rate: f64) -> Result<()> {
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut pending = Vec::with_capacity(n);
    for i in 0..n {
        ticker.tick().await;
        let client = client.clone();
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{prefix}-{i}"}},"data":{{"key":"value-{i}"}}}}"#
        );
        let req = http::Request::post(format!("/api/v1/namespaces/{NS}/configmaps"))
            .header("content-type", "application/json")
            .body(body.into_bytes())?;
        pending.push(tokio::spawn(async move { client.request_text(req).await }));
    }
    for p in pending {
        p.await??;
    }
    Ok(())
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

/// The scenario; returns the printed rows.
pub async fn run(args: &Args, client: &kube::Client, pid: u32) -> Result<Vec<String>> {
    let writes = (args.write_rate * args.watch_seconds).round() as usize;
    crate::lists::fill(client, NS, 0, 1).await?;
    // The same writes with nobody watching: the CPU the writes themselves cost.
    let c0 = cpu(pid)?;
    paced_writes(client, "base", writes, args.write_rate).await?;
    let base_cpu = cpu(pid)?.saturating_sub(c0);

    let from = current(client).await?;
    let bodies: Vec<Result<kube::client::Body>> = stream::iter(0..args.watchers)
        .map(|_| open(client, &from))
        .buffer_unordered(64)
        .collect()
        .await;
    let bodies: Vec<kube::client::Body> = bodies.into_iter().collect::<Result<_>>()?;
    let slow = open(client, &from).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let limit = Duration::from_secs_f64(args.watch_seconds * 4.0 + 30.0);
    let followers: Vec<_> = bodies
        .into_iter()
        .map(|b| tokio::spawn(follow(b, writes, limit)))
        .collect();
    let c1 = cpu(pid)?;
    let started = Instant::now();
    paced_writes(client, "fan", writes, args.write_rate).await?;
    let written = Instant::now();
    let mut seen = Vec::with_capacity(followers.len());
    for f in followers {
        seen.push(f.await?);
    }
    let fan_cpu = cpu(pid)?.saturating_sub(c1);
    // Only now does the slow watcher read: what it has is what was queued before it was cut.
    let slow_seen = follow(slow, writes, Duration::from_secs(5)).await;

    let delivered: usize = seen.iter().map(|s| s.events).sum();
    let complete = seen.iter().filter(|s| s.complete_at.is_some()).count();
    let ordered = seen.iter().filter(|s| s.in_order).count();
    let lag = seen
        .iter()
        .filter_map(|s| s.complete_at)
        .max()
        .map_or(0.0, |t| {
            t.saturating_duration_since(written).as_secs_f64() * 1000.0
        });
    let write_secs = written.duration_since(started).as_secs_f64();
    let per_event = fan_cpu.saturating_sub(base_cpu).as_secs_f64() * 1e6 / delivered.max(1) as f64;
    let w = args.watchers;
    Ok(vec![
        format!(
            "| {w} watchers, {writes} creates at {:.0}/s (took {write_secs:.1} s) | {delivered} events delivered of {} | {:.1}% |",
            args.write_rate,
            writes * w,
            delivered as f64 * 100.0 / (writes * w).max(1) as f64
        ),
        format!("| watchers that got every event | {complete} of {w} |  |"),
        format!("| watchers whose events were all in order | {ordered} of {w} |  |"),
        format!("| last watcher complete after the last write | {lag:.0} ms |  |"),
        format!(
            "| server CPU: writes alone / writes + fan-out | {:.2} s / {:.2} s |  |",
            base_cpu.as_secs_f64(),
            fan_cpu.as_secs_f64()
        ),
        format!("| server CPU per delivered event | {per_event:.1} µs |  |"),
        format!(
            "| a watcher that never read during the writes | {} events, then {} |  |",
            slow_seen.events,
            match (slow_seen.complete_at, slow_seen.ended) {
                (Some(_), _) => "had them all (socket buffers held them: not cut off)",
                (None, true) => "its stream ended (cut off)",
                (None, false) => "nothing more within 5 s (neither complete nor closed)",
            }
        ),
    ])
}
