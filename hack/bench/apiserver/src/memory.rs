//! `memory`: RSS per stored object, and start-up with many objects stored (issue 15 points 6
//! and 7). Prints the idle RSS at ready and once settled (read before any other scenario runs),
//! creates `--paged-objects` ConfigMaps
//! of ~690 bytes in two steps (a fifth, then the rest), prints the server's RSS against the
//! objects' encoded size (the JSON of one unpaged list, read after the RSS) — in all, and per
//! object added by the second step, which leaves out every fixed cost (the window of recent
//! changes, caches of other resources, OpenAPI), read 2 s and 12 s after each step's creates —
//! then restarts the server on the same data and
//! prints its time to `/readyz`, to its first consistent LIST (`limit=1`), to its first LIST
//! from the watch cache, and its RSS then and once the allocator has settled.

use crate::{proc_kib, rss_kib, status_kib, Args, Server};
use anyhow::Result;
use std::time::{Duration, Instant};

const NS: &str = "bench-mem";

/// Bytes of the JSON body of an unpaged LIST of `NS`.
async fn list_bytes(client: &kube::Client) -> Result<usize> {
    let req = http::Request::get(format!("/api/v1/namespaces/{NS}/configmaps")).body(Vec::new())?;
    Ok(client.request_text(req).await?.len())
}

/// How long after a restart's ready, or after creates, the settled RSS is read (past the
/// allocator's 10 s decay: what the server holds while running, not what it freed lately).
const SETTLED: Duration = Duration::from_secs(12);

/// How long after ready the settled idle RSS is read: the OpenAPI documents are built in the
/// first seconds, and jemalloc returns what that build freed over its 10 s decay.
const IDLE_SETTLE: Duration = Duration::from_secs(30);

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// A row of RSS added per object against the encoded size added, for `objects` created.
fn per_object_row(what: &str, added_kib: u64, added_bytes: usize, objects: usize) -> String {
    let objects = objects.max(1) as f64;
    format!(
        "| {what}: RSS added / encoded size added | {:.0} / {:.0} bytes | **{:.2}×** |",
        added_kib as f64 * 1024.0 / objects,
        added_bytes as f64 / objects,
        added_kib as f64 * 1024.0 / added_bytes.max(1) as f64
    )
}

/// What an idle server holds once settled, read before any other scenario runs.
#[derive(Clone, Copy)]
pub struct SettledIdle {
    anon_kib: u64,
    file_kib: u64,
    private_kib: u64,
}

impl SettledIdle {
    /// Waits until the server has settled after ready (the OpenAPI documents built, and what
    /// that build freed returned by jemalloc's 10 s decay), then reads its memory.
    pub async fn read(pid: u32) -> Result<Self> {
        tokio::time::sleep(IDLE_SETTLE).await;
        Ok(Self {
            anon_kib: status_kib(pid, "RssAnon:")?,
            file_kib: status_kib(pid, "RssFile:")?,
            private_kib: proc_kib(pid, "smaps_rollup", "Private_Dirty:")?,
        })
    }
}

/// Runs the scenario on a started server; returns the printed rows and the restarted server.
pub async fn run(
    args: &Args,
    server: Server,
    client: &kube::Client,
    idle_kib: u64,
    settled: &SettledIdle,
) -> Result<(Vec<String>, Server)> {
    let n = args.paged_objects;
    let pid = server.child.id();
    let SettledIdle {
        anon_kib,
        file_kib,
        private_kib,
    } = *settled;
    let first = n / 5;
    let started = Instant::now();
    crate::lists::fill(client, NS, first, args.concurrency).await?;
    let mut fill = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let first_kib = rss_kib(pid)?;
    tokio::time::sleep(SETTLED.saturating_sub(Duration::from_secs(2))).await;
    let first_settled_kib = rss_kib(pid)?;
    let first_bytes = list_bytes(client).await?;
    let started = Instant::now();
    crate::lists::add(client, NS, first, n - first, args.concurrency).await?;
    fill += started.elapsed();
    // Let the allocator settle as it would between bursts.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let loaded_kib = rss_kib(pid)?;
    tokio::time::sleep(SETTLED.saturating_sub(Duration::from_secs(2))).await;
    let loaded_settled_kib = rss_kib(pid)?;
    let bytes = list_bytes(client).await?;
    let after_list_kib = rss_kib(pid)?;
    let grown = loaded_kib.saturating_sub(idle_kib) as f64 * 1024.0;
    let added_bytes = bytes.saturating_sub(first_bytes);
    let mut rows = vec![
        format!("| idle RSS | {:.1} MB |  |", mb(idle_kib)),
        format!(
            "| idle RSS {} s after ready | {:.1} MB | RssAnon {:.1} MB + RssFile {:.1} MB (the binary's pages) |",
            IDLE_SETTLE.as_secs(),
            mb(anon_kib + file_kib),
            mb(anon_kib),
            mb(file_kib)
        ),
        format!(
            "| of which written by the server (Private_Dirty: heap, stacks) | {:.1} MB | the rest is the binary's clean pages, which every kapi process on the machine shares |",
            mb(private_kib)
        ),
        format!(
            "| {n} configmaps created ({:.0} /s) | RSS {:.1} MB | {:.0} bytes of RSS per object |",
            n as f64 / fill.as_secs_f64(),
            mb(loaded_kib),
            loaded_kib as f64 * 1024.0 / n as f64
        ),
        format!(
            "| their encoded size (JSON of one unpaged list) | {:.1} MB ({:.0} bytes each) | RSS above idle = {:.2}× it |",
            bytes as f64 / 1048576.0,
            bytes as f64 / n as f64,
            grown / bytes as f64
        ),
        per_object_row(
            &format!("per object of the last {} created", n - first),
            loaded_kib.saturating_sub(first_kib),
            added_bytes,
            n - first,
        ),
        per_object_row(
            &format!(
                "the same, each RSS read {} s after its creates (the allocator settled)",
                SETTLED.as_secs()
            ),
            loaded_settled_kib.saturating_sub(first_settled_kib),
            added_bytes,
            n - first,
        ),
        format!(
            "| RSS after one unpaged list of them | {:.1} MB |  |",
            mb(after_list_kib)
        ),
    ];
    let (server, ready) = crate::restart(args, server).await?;
    let client = crate::client_for(&server.kubeconfig).await?;
    let t = Instant::now();
    let req = http::Request::get(format!("/api/v1/namespaces/{NS}/configmaps?limit=1"))
        .body(Vec::new())?;
    client.request_text(req).await?;
    let first_list = ready + t.elapsed();
    // A limited list without selectors is answered by the storage while the cache loads (as
    // upstream's); one from the cache (resourceVersion=0) waits for the load. Its selector
    // matches nothing, so the time is the load's, not a transfer's.
    let req = http::Request::get(format!(
        "/api/v1/namespaces/{NS}/configmaps?resourceVersion=0&labelSelector=bench-none%3Dx"
    ))
    .body(Vec::new())?;
    client.request_text(req).await?;
    let cache_loaded = ready + t.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let restarted_kib = rss_kib(server.child.id())?;
    rows.push(format!(
        "| restart with {n} configmaps stored: start → /readyz | {:.0} ms |  |",
        ready.as_secs_f64() * 1000.0
    ));
    rows.push(format!(
        "| restart: start → first consistent LIST answered | {:.0} ms |  |",
        first_list.as_secs_f64() * 1000.0
    ));
    rows.push(format!(
        "| restart: start → first LIST from the watch cache (resourceVersion=0) answered | {:.0} ms |  |",
        cache_loaded.as_secs_f64() * 1000.0
    ));
    rows.push(format!(
        "| restart: RSS 2 s after ready | {:.1} MB | RSS above the first start's idle = {:.2}× the encoded size |",
        mb(restarted_kib),
        restarted_kib.saturating_sub(idle_kib) as f64 * 1024.0 / bytes as f64
    ));
    // Once jemalloc's 10 s decay has returned what the load freed.
    tokio::time::sleep(SETTLED.saturating_sub(Duration::from_secs(2))).await;
    let settled_kib = rss_kib(server.child.id())?;
    rows.push(format!(
        "| restart: RSS {} s after ready | {:.1} MB | RSS above the first start's idle = {:.2}× the encoded size |",
        SETTLED.as_secs(),
        mb(settled_kib),
        settled_kib.saturating_sub(idle_kib) as f64 * 1024.0 / bytes as f64
    ));
    Ok((rows, server))
}
