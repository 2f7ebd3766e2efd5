//! etcd creates: this crate against the raw `etcd-client` ceilings, in alternating rounds, with
//! the CPU time each side of the connection spent per create.

use crate::{object, prebuilt, run};
use anyhow::{Context, Result};
use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};
use kapi_storage::DynStorage;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How many connections the multi-connection raw variant spreads its requests over.
pub const CONNECTIONS: usize = 4;

/// The ways of creating keys in etcd that are compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Writer {
    /// `Storage::create` of `kapi-storage` (encodes the object, guarded transaction).
    Crate,
    /// Blind `put` of pre-encoded bytes: no existence check, the ceiling the issue names.
    RawPut,
    /// The same guarded transaction the crate sends (`create_revision == 0` → put), with
    /// pre-encoded bytes: what etcd itself allows for a correct create.
    RawTxn,
    /// As [`Writer::RawTxn`], round-robin over several connections instead of one.
    RawTxnConnections,
}

impl Writer {
    pub const ALL: [Writer; 4] = [
        Writer::Crate,
        Writer::RawPut,
        Writer::RawTxn,
        Writer::RawTxnConnections,
    ];

    pub fn label(self) -> String {
        match self {
            Writer::Crate => "etcd via kapi-storage".into(),
            Writer::RawPut => "raw etcd-client put".into(),
            Writer::RawTxn => "raw etcd-client guarded txn".into(),
            Writer::RawTxnConnections => {
                format!("raw etcd-client guarded txn, {CONNECTIONS} connections")
            }
        }
    }

    pub fn tag(self) -> &'static str {
        match self {
            Writer::Crate => "crate",
            Writer::RawPut => "put",
            Writer::RawTxn => "txn",
            Writer::RawTxnConnections => "txnconns",
        }
    }
}

/// One timed run.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub rate: f64,
    /// etcd's CPU time per create, when its pid is known.
    pub etcd_us: Option<f64>,
    /// This process's CPU time per create.
    pub client_us: Option<f64>,
}

/// CPU time (user + system, all threads) a process has used, from `/proc/<pid>/stat`.
fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; the numeric fields start after its closing ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5); field 3 is the first after ')'.
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on Linux.
    Some(Duration::from_millis(ticks * 10))
}

async fn measured<F: Future<Output = Result<f64>>>(
    etcd_pid: Option<u32>,
    n: usize,
    f: F,
) -> Result<Sample> {
    let etcd = || etcd_pid.and_then(|p| cpu_time(&p.to_string()));
    let (etcd0, me0) = (etcd(), cpu_time("self"));
    let rate = f.await?;
    let (etcd1, me1) = (etcd(), cpu_time("self"));
    let per =
        |a: Option<Duration>, b: Option<Duration>| Some((b? - a?).as_secs_f64() * 1e6 / n as f64);
    Ok(Sample {
        rate,
        etcd_us: per(etcd0, etcd1),
        client_us: per(me0, me1),
    })
}

/// What the raw writers share.
pub struct Raw {
    pub client: Client,
    pub connections: Arc<Vec<Client>>,
}

impl Raw {
    pub async fn connect(endpoint: &str) -> Result<Raw> {
        let client = Client::connect([endpoint], None).await?;
        let mut connections = Vec::new();
        for _ in 0..CONNECTIONS {
            connections.push(Client::connect([endpoint], None).await?);
        }
        Ok(Raw {
            client,
            connections: Arc::new(connections),
        })
    }
}

/// Creates `n` ConfigMaps under `prefix` through the crate.
pub async fn crate_creates(s: &DynStorage, prefix: &str, n: usize, conc: usize) -> Result<f64> {
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

async fn raw_puts(client: &Client, prefix: &str, n: usize, conc: usize) -> Result<f64> {
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

/// Raw creates the way the crate writes them: a transaction guarded on `create_revision == 0`.
async fn raw_txn_creates(
    clients: Arc<Vec<Client>>,
    prefix: &str,
    n: usize,
    conc: usize,
) -> Result<f64> {
    let value = Arc::new(object("cm-0").to_vec());
    let p = prefix.to_string();
    run(n, conc, move |i| {
        let mut kv = clients[i % clients.len()].kv_client();
        let (key, value) = (format!("{p}cm-{i}"), value.to_vec());
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

/// Where `writer` puts round `round`'s keys (the crate's prefix is under its storage prefix).
pub fn prefix(writer: Writer, conc: usize, round: usize) -> String {
    match writer {
        Writer::Crate => format!("/configmaps/bench-r{round}/"),
        w => format!("/raw-{}-c{conc}/configmaps/bench-r{round}/", w.tag()),
    }
}

/// One round: every writer once, starting with a different one each round so that whatever
/// else loads the machine, and etcd's own state growing within the round, fall on all alike.
pub async fn round(
    storage: &DynStorage,
    raw: &Raw,
    writers: &[Writer],
    etcd_pid: Option<u32>,
    (n, conc): (usize, usize),
    round: usize,
) -> Result<Vec<(Writer, Sample)>> {
    let mut out = Vec::new();
    for k in 0..writers.len() {
        let w = writers[(k + round) % writers.len()];
        let p = prefix(w, conc, round);
        let sample = match w {
            Writer::Crate => measured(etcd_pid, n, crate_creates(storage, &p, n, conc)).await?,
            Writer::RawPut => measured(etcd_pid, n, raw_puts(&raw.client, &p, n, conc)).await?,
            Writer::RawTxn => {
                let one = Arc::new(vec![raw.client.clone()]);
                measured(etcd_pid, n, raw_txn_creates(one, &p, n, conc)).await?
            }
            Writer::RawTxnConnections => {
                let many = raw.connections.clone();
                measured(etcd_pid, n, raw_txn_creates(many, &p, n, conc)).await?
            }
        };
        out.push((w, sample));
    }
    Ok(out)
}

/// Median, smallest and largest of some figures.
pub fn spread(mut v: Vec<f64>) -> Option<(f64, f64, f64)> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let median = if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    };
    Some((median, v[0], v[v.len() - 1]))
}
