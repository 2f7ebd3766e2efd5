//! `--startup`: what a test suite waits for before its first request. Times from start to the
//! first successful request (GET of the `default` namespace, through TLS and client-certificate
//! authentication), median of `--starts` runs, for
//!
//! - `TestServer` in-process (kapi-testing), with its data on disk and on a memory file system,
//!   plus 100 ConfigMap creates on each (does the embedded store's fsync dominate a test?);
//! - the kapi binary with its embedded store;
//! - the kapi binary on a fresh etcd, started for each run, as envtest starts its control plane
//!   (etcd polled on /health first).
//!
//! Then it starts and stops 100 in-process servers and prints the process's threads, open file
//! descriptors and RSS before and after.

use crate::{free_port, Server};
use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kapi_testing::{Storage, TestServer};
use kube::api::{Api, PostParams};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs every measurement and prints one table.
pub async fn run(server_bin: &Path, starts: usize, cycles: usize) -> Result<()> {
    let disk = time_in_process(Storage::TempDir, starts).await?;
    let memory = time_in_process(Storage::Memory, starts).await?;
    let creates_disk = time_creates(Storage::TempDir).await?;
    let creates_memory = time_creates(Storage::Memory).await?;
    let binary = time_binary(server_bin, starts, false).await?;
    let etcd = time_binary(server_bin, starts, true).await?;
    let leaks = start_stop_cycles(cycles).await?;

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| start to first successful request (median of {starts}) | time | × TestServer |");
    println!("|---|---|---|");
    let rows = [
        ("TestServer in-process, embedded store in a temp dir", disk),
        ("TestServer in-process, embedded store on /dev/shm", memory),
        ("kapi binary, embedded store", binary),
        ("kapi binary on a fresh etcd (etcd start included)", etcd),
    ];
    for (name, d) in rows {
        println!("| {name} | {:.1} ms | {:.1}× |", ms(d), ms(d) / ms(disk));
    }
    println!();
    println!("| 100 ConfigMap creates, one at a time | time |");
    println!("|---|---|");
    println!(
        "| embedded store in a temp dir (fsync) | {:.0} ms |",
        ms(creates_disk)
    );
    println!(
        "| embedded store on /dev/shm (fsync is free) | {:.0} ms ({:.2}×) |",
        ms(creates_memory),
        ms(creates_memory) / ms(creates_disk)
    );
    println!();
    println!("| {cycles} TestServers started, used and stopped | before | after |");
    println!("|---|---|---|");
    println!("| threads | {} | {} |", leaks.0.threads, leaks.1.threads);
    println!(
        "| open file descriptors | {} | {} |",
        leaks.0.fds, leaks.1.fds
    );
    println!(
        "| RSS | {:.1} MB | {:.1} MB |",
        leaks.0.rss_kib as f64 / 1024.0,
        leaks.1.rss_kib as f64 / 1024.0
    );
    println!(
        "| ports still accepting after stop | – | {} of {cycles} |",
        leaks.2
    );
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The first request a test makes.
async fn first_request(client: kube::Client) -> Result<()> {
    let ns: Api<Namespace> = Api::all(client);
    ns.get("default").await?;
    Ok(())
}

async fn time_in_process(storage: Storage, starts: usize) -> Result<Duration> {
    let mut times = Vec::with_capacity(starts);
    for _ in 0..starts {
        let began = Instant::now();
        let t = TestServer::builder()
            .storage(storage.clone())
            .start()
            .await?;
        first_request(t.client()).await?;
        times.push(began.elapsed());
        t.shutdown().await;
    }
    Ok(median(times))
}

async fn time_creates(storage: Storage) -> Result<Duration> {
    let t = TestServer::builder().storage(storage).start().await?;
    let cms: Api<ConfigMap> = Api::namespaced(t.client(), "default");
    let began = Instant::now();
    for i in 0..100 {
        let cm = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(format!("cm-{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        cms.create(&PostParams::default(), &cm).await?;
    }
    let elapsed = began.elapsed();
    t.shutdown().await;
    Ok(elapsed)
}

/// A child process killed (and reaped) on drop.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh etcd on free loopback ports, as envtest starts it; returns once /health answers.
async fn start_etcd(dir: &Path) -> Result<(Reaped, String)> {
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    let child = Command::new("etcd")
        .arg(format!("--advertise-client-urls={url}"))
        .arg(format!("--data-dir={}", dir.join("etcd").display()))
        .arg(format!("--listen-client-urls={url}"))
        .arg("--listen-peer-urls=http://localhost:0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting etcd")?;
    let etcd = Reaped(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let health = format!("127.0.0.1:{port}");
    loop {
        if etcd_healthy(&health).await {
            return Ok((etcd, url));
        }
        if Instant::now() > deadline {
            bail!("etcd not healthy within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `GET /health` over plain HTTP answers 200.
async fn etcd_healthy(addr: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    let req = format!("GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    buf.starts_with(b"HTTP/1.0 200") || buf.starts_with(b"HTTP/1.1 200")
}

async fn time_binary(server_bin: &Path, starts: usize, on_etcd: bool) -> Result<Duration> {
    let mut times = Vec::with_capacity(starts);
    for _ in 0..starts {
        let dir = tempfile::tempdir()?;
        let began = Instant::now();
        let etcd = if on_etcd {
            Some(start_etcd(dir.path()).await?)
        } else {
            None
        };
        let port = free_port()?;
        let mut cmd = Command::new(server_bin);
        cmd.arg("--secure-port")
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(dir.path().join("kapi"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((_, url)) = &etcd {
            cmd.arg("--etcd-servers").arg(url);
        }
        let child = cmd.spawn().context("starting kapi")?;
        let kubeconfig: PathBuf = dir.path().join("kapi").join("admin.kubeconfig");
        let server = Server {
            child,
            _dir: dir,
            kubeconfig,
            prefix: None,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if server.kubeconfig.exists() {
                if let Ok(client) = crate::client_for(&server.kubeconfig).await {
                    if first_request(client).await.is_ok() {
                        break;
                    }
                }
            }
            if Instant::now() > deadline {
                bail!("kapi not serving within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        times.push(began.elapsed());
        drop(server);
        drop(etcd);
    }
    Ok(median(times))
}

/// Threads, open file descriptors and RSS of this process.
struct Usage {
    threads: usize,
    fds: usize,
    rss_kib: u64,
}

fn usage() -> Result<Usage> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| -> Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("no {name} in /proc/self/status"))?;
        Ok(line
            .split_whitespace()
            .nth(1)
            .context("bad line")?
            .parse()?)
    };
    Ok(Usage {
        threads: field("Threads:")? as usize,
        fds: std::fs::read_dir("/proc/self/fd")?.count(),
        rss_kib: field("VmRSS:")?,
    })
}

/// How long the bench waits for idle blocking-pool threads to end before it counts (tokio
/// keeps an idle one for 10 s).
const SETTLE: Duration = Duration::from_secs(11);

/// Starts, uses and stops `cycles` servers; usage before and after (each after a few warm-up
/// cycles and the blocking pool's idle time), and how many stopped servers' ports still
/// accepted a connection.
async fn start_stop_cycles(cycles: usize) -> Result<(Usage, Usage, usize)> {
    for _ in 0..3 {
        one_cycle().await?;
    }
    tokio::time::sleep(SETTLE).await;
    let before = usage()?;
    let mut still_open = 0;
    for _ in 0..cycles {
        let addr = one_cycle().await?;
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            still_open += 1;
        }
    }
    tokio::time::sleep(SETTLE).await;
    Ok((before, usage()?, still_open))
}

/// One server: start, one request, graceful stop; returns the address it listened on.
async fn one_cycle() -> Result<std::net::SocketAddr> {
    let t = TestServer::start().await?;
    first_request(t.client()).await?;
    let addr = t.server.addr;
    t.shutdown().await;
    Ok(addr)
}
