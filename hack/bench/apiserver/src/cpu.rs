//! Where the machine's CPU went during a phase: the server's, this benchmark's and the rest
//! (etcd and anything else on the machine), from `/proc/<pid>/stat` and `/proc/stat`. A rate
//! whose phase kept every core busy is bounded by CPU, and the CPU per request of each process
//! says which one bounds it.

use anyhow::{Context, Result};
use std::time::Duration;

/// CPU time (user + system) of a process from `/proc/<pid>/stat` (`self` for this one).
pub(crate) fn process(pid: &str) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| -> u64 { fields.get(i).and_then(|f| f.parse().ok()).unwrap_or(0) };
    // utime and stime (fields 14 and 15 of stat(5)); USER_HZ is 100.
    Ok(ticks((tick(11) + tick(12)) as f64))
}

fn ticks(n: f64) -> Duration {
    Duration::from_secs_f64(n / 100.0)
}

/// The machine's busy and total CPU time over all cores, from the `cpu` line of `/proc/stat`
/// (idle and iowait count as not busy).
pub(crate) fn machine() -> Result<(Duration, Duration)> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .context("no cpu line in /proc/stat")?;
    let fields: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: f64 = fields.iter().sum();
    let not_busy = fields.get(3).copied().unwrap_or(0.0) + fields.get(4).copied().unwrap_or(0.0);
    Ok((ticks(total - not_busy), ticks(total)))
}

/// The pid of the etcd serving `url` when it runs on this machine: a process named `etcd`
/// whose command line holds the URL's `host:port`.
pub fn etcd_pid(url: &str) -> Option<String> {
    let host_port = url.split("://").nth(1).unwrap_or(url).trim_end_matches('/');
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .find(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let mut args = cmdline.split(|b| *b == 0);
            let is_etcd = args
                .next()
                .is_some_and(|a| a == b"etcd" || a.ends_with(b"/etcd"));
            is_etcd
                && args.any(|a| {
                    String::from_utf8_lossy(a)
                        .split(',')
                        .any(|u| u.trim_end_matches('/').ends_with(host_port))
                })
        })
}

/// A reading at the start of a phase.
pub struct Mark {
    server_pid: String,
    /// etcd's pid and CPU time, when its process was found.
    etcd: Option<(String, Duration)>,
    server: Duration,
    bench: Duration,
    busy: Duration,
    total: Duration,
}

/// CPU used during a phase.
pub struct Used {
    pub server: Duration,
    pub bench: Duration,
    /// etcd's, when its process was found on this machine.
    pub etcd: Option<Duration>,
    /// Busy CPU of every other process (the kernel's own threads, other work; etcd when its
    /// process was not found).
    pub rest: Duration,
    /// Busy share of all cores over the phase (1.0: every core busy throughout).
    pub busy: f64,
}

impl Mark {
    pub fn now(server_pid: &str, etcd_pid: Option<&str>) -> Result<Mark> {
        let server_pid = server_pid.to_string();
        let (busy, total) = machine()?;
        Ok(Mark {
            etcd: match etcd_pid {
                Some(p) => Some((p.to_string(), process(p)?)),
                None => None,
            },
            server: process(&server_pid)?,
            bench: process("self")?,
            busy,
            total,
            server_pid,
        })
    }

    pub fn used(&self) -> Result<Used> {
        let (busy, total) = machine()?;
        let server = process(&self.server_pid)?.saturating_sub(self.server);
        let bench = process("self")?.saturating_sub(self.bench);
        let etcd = match &self.etcd {
            Some((p, before)) => Some(process(p)?.saturating_sub(*before)),
            None => None,
        };
        let busy = busy.saturating_sub(self.busy);
        let total = total.saturating_sub(self.total);
        Ok(Used {
            server,
            bench,
            etcd,
            rest: busy.saturating_sub(server + bench + etcd.unwrap_or_default()),
            busy: busy.as_secs_f64() / total.as_secs_f64().max(1e-9),
        })
    }
}

impl Used {
    /// `machine busy 98%; µs per request: server 412, benchmark 120, etcd 300, rest 20`, per
    /// one of `n` requests.
    pub fn per(&self, n: usize) -> String {
        let us = |d: Duration| d.as_secs_f64() * 1e6 / n.max(1) as f64;
        let etcd = match self.etcd {
            Some(e) => format!("etcd {:.0}, rest", us(e)),
            None => "rest (etcd, other)".to_string(),
        };
        format!(
            "machine busy {:.0}%; µs per request: server {:.0}, benchmark {:.0}, {etcd} {:.0}",
            self.busy * 100.0,
            us(self.server),
            us(self.bench),
            us(self.rest)
        )
    }
}
