//! `--profile <dir>`: a CPU profile of the server per phase of a scenario, taken with
//! `perf record -F 999 -g -p <server pid>` while that phase runs (perf needs the rights to
//! attach: root, or `perf_event_paranoid` ≤ 1). `perf report -i <dir>/<phase>.perf.data
//! --no-children --sort symbol --stdio` reads one.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A `perf record` attached to the server, stopped (and its data written) by [`Recording::stop`].
pub struct Recording {
    child: Child,
    out: PathBuf,
}

/// Starts recording `pid` into `<dir>/<phase>.perf.data`.
pub fn start(dir: &Path, phase: &str, pid: u32) -> Result<Recording> {
    std::fs::create_dir_all(dir)?;
    let out = dir.join(format!("{phase}.perf.data"));
    let child = Command::new("perf")
        .args(["record", "-F", "999", "-g", "-p", &pid.to_string(), "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting perf record")?;
    // perf attaches asynchronously; give it a moment so the phase's start is in the profile.
    std::thread::sleep(std::time::Duration::from_millis(300));
    Ok(Recording { child, out })
}

impl Recording {
    /// Stops perf with SIGINT (it writes its data on that signal) and waits for it.
    pub fn stop(mut self) -> Result<PathBuf> {
        Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .context("signalling perf")?;
        self.child.wait()?;
        Ok(self.out)
    }
}

/// Runs `phase` recorded into `dir` when profiling is asked for.
pub async fn around<T, F>(dir: Option<&Path>, name: &str, pid: u32, phase: F) -> Result<T>
where
    F: std::future::Future<Output = Result<T>>,
{
    let recording = dir.map(|d| start(d, name, pid)).transpose()?;
    let result = phase.await;
    if let Some(r) = recording {
        let out = r.stop()?;
        eprintln!("profile of {name}: {}", out.display());
    }
    result
}
