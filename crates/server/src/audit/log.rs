//! The log backend (`--audit-log-*`): event lines go through a bounded queue to one writer
//! thread, which appends them to the file (or stdout for `-`) and flushes whenever the queue
//! is empty. The file rotates as upstream's lumberjack does: past `--audit-log-maxsize` MB
//! it is renamed `<name>-<UTC time>.log` (`audit-2026-11-21T10-00-00.000.log`) and a new
//! one started; backups beyond `--audit-log-maxbackup` or older than `--audit-log-maxage` days
//! are removed.
//!
//! `--audit-log-mode`: `blocking` (the default, as upstream) never drops an event: a request
//! waits for room in the queue when the writer falls behind. `batch` never makes a request
//! wait: when the queue is full the event is dropped and counted. A write error is logged and
//! the event lost; it never fails a request or stops the server.

use super::event::Event;
use chrono::{DateTime, NaiveDateTime, Utc};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// lumberjack's backup time format.
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";
const MEGABYTE: u64 = 1024 * 1024;
/// lumberjack's size when none is given (kube-apiserver's `--audit-log-maxsize` defaults to 0).
const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// `--audit-log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Json,
    Legacy,
}

impl Format {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "json" => Some(Self::Json),
            "legacy" => Some(Self::Legacy),
            _ => None,
        }
    }
}

/// `--audit-log-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Blocking,
    Batch,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "blocking" | "blocking-strict" => Some(Self::Blocking),
            "batch" => Some(Self::Batch),
            _ => None,
        }
    }
}

/// The log backend's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// `-` is stdout.
    pub path: PathBuf,
    /// MB; 0 is lumberjack's 100.
    pub max_size_mb: u64,
    /// 0 keeps every backup.
    pub max_backups: usize,
    /// Days; 0 keeps backups of any age.
    pub max_age_days: u64,
    pub format: Format,
    pub mode: Mode,
    /// Events the queue holds (upstream's `--audit-log-batch-buffer-size` default).
    pub buffer_size: usize,
}

impl LogOptions {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_size_mb: 0,
            max_backups: 0,
            max_age_days: 0,
            format: Format::Json,
            mode: Mode::Blocking,
            buffer_size: 10_000,
        }
    }
}

/// A file that rotates as lumberjack's `Logger`.
pub struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    max_backups: usize,
    max_age: Option<Duration>,
    out: BufWriter<File>,
    size: u64,
}

impl RotatingFile {
    /// Opens (creating the directory and file) for appending.
    pub fn open(
        path: &Path,
        max_bytes: u64,
        max_backups: usize,
        max_age: Option<Duration>,
    ) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let (out, size) = open_append(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            max_bytes,
            max_backups,
            max_age,
            out,
            size,
        })
    }

    /// Appends one line, rotating first when it would not fit.
    pub fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let len = line.len() as u64;
        if len > self.max_bytes {
            return Err(io::Error::other(format!(
                "write length {len} exceeds maximum file size {}",
                self.max_bytes
            )));
        }
        if self.size.saturating_add(len) > self.max_bytes {
            self.rotate()?;
        }
        self.out.write_all(line)?;
        self.size = self.size.saturating_add(len);
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.out.flush()?;
        let backup = backup_name(&self.path, Utc::now());
        std::fs::rename(&self.path, &backup)?;
        let (out, size) = open_append(&self.path)?;
        self.out = out;
        self.size = size;
        self.remove_old_backups();
        Ok(())
    }

    /// lumberjack's `millRunOnce`: newest first, keep `max_backups`, drop those past `max_age`.
    fn remove_old_backups(&self) {
        if self.max_backups == 0 && self.max_age.is_none() {
            return;
        }
        let mut backups = list_backups(&self.path);
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let cutoff = self
            .max_age
            .and_then(|age| chrono::Duration::from_std(age).ok())
            .and_then(|age| Utc::now().checked_sub_signed(age));
        for (i, (time, path)) in backups.iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = cutoff.is_some_and(|c| *time < c);
            if too_many || too_old {
                if let Err(e) = std::fs::remove_file(path) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove an old audit log");
                }
            }
        }
    }
}

fn open_append(path: &Path) -> io::Result<(BufWriter<File>, u64)> {
    let mut opts = OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let file = opts.open(path)?;
    let size = file.metadata()?.len();
    Ok((BufWriter::new(file), size))
}

fn split_name(path: &Path) -> (String, String) {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match file.rfind('.') {
        Some(i) if i > 0 => (file[..i].to_string(), file[i..].to_string()),
        _ => (file, String::new()),
    }
}

/// `<dir>/<stem>-<time>.<ext>`.
pub fn backup_name(path: &Path, t: DateTime<Utc>) -> PathBuf {
    let (stem, ext) = split_name(path);
    let name = format!("{stem}-{}{ext}", t.format(BACKUP_TIME_FORMAT));
    path.with_file_name(name)
}

/// The backups of `path` with the times their names carry.
fn list_backups(path: &Path) -> Vec<(DateTime<Utc>, PathBuf)> {
    let (stem, ext) = split_name(path);
    let prefix = format!("{stem}-");
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let time = name.strip_prefix(&prefix)?.strip_suffix(ext.as_str())?;
            let t = NaiveDateTime::parse_from_str(time, BACKUP_TIME_FORMAT).ok()?;
            Some((t.and_utc(), e.path()))
        })
        .collect()
}

enum Sink {
    Stdout(io::Stdout),
    File(RotatingFile),
}

impl Sink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout(s) => s.write_all(line),
            Sink::File(f) => f.write_line(line),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(s) => s.flush(),
            Sink::File(f) => f.flush(),
        }
    }
}

/// Where audit events go.
pub struct LogBackend {
    tx: mpsc::Sender<Vec<u8>>,
    format: Format,
    mode: Mode,
    dropped: Arc<AtomicU64>,
}

impl LogBackend {
    /// Opens the log (so a bad path fails start-up) and starts the writer thread.
    pub fn open(opts: &LogOptions) -> io::Result<Self> {
        let mut sink = if opts.path.as_os_str() == "-" {
            Sink::Stdout(io::stdout())
        } else {
            let mb = if opts.max_size_mb == 0 {
                DEFAULT_MAX_SIZE_MB
            } else {
                opts.max_size_mb
            };
            let max_age = (opts.max_age_days > 0)
                .then(|| Duration::from_secs(opts.max_age_days.saturating_mul(24 * 3600)));
            Sink::File(RotatingFile::open(
                &opts.path,
                mb.saturating_mul(MEGABYTE),
                opts.max_backups,
                max_age,
            )?)
        };
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(opts.buffer_size.max(1));
        let path = opts.path.display().to_string();
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                let mut failures: u64 = 0;
                let mut report = |e: io::Error| {
                    failures = failures.saturating_add(1);
                    // The first failure and then every thousandth, so a full disk does not
                    // flood the server's own log.
                    if failures % 1000 == 1 {
                        tracing::error!(path, error = %e, failures, "cannot write the audit log");
                    }
                };
                while let Some(line) = rx.blocking_recv() {
                    if let Err(e) = sink.write_line(&line) {
                        report(e);
                    }
                    while let Ok(line) = rx.try_recv() {
                        if let Err(e) = sink.write_line(&line) {
                            report(e);
                        }
                    }
                    if let Err(e) = sink.flush() {
                        report(e);
                    }
                }
            })?;
        Ok(Self {
            tx,
            format: opts.format,
            mode: opts.mode,
            dropped: Arc::default(),
        })
    }

    fn line(&self, ev: &Event) -> Vec<u8> {
        match self.format {
            Format::Json => ev.json_line(),
            Format::Legacy => ev.legacy_line(),
        }
    }

    /// Queues an event; in `blocking` mode waits for room.
    pub async fn write(&self, ev: &Event) {
        let line = self.line(ev);
        match self.mode {
            Mode::Blocking => {
                if self.tx.send(line).await.is_err() {
                    self.count_drop();
                }
            }
            Mode::Batch => self.try_send(line),
        }
    }

    /// Queues an event without waiting (where no await is possible, e.g. when a response
    /// body ends); a full queue drops it.
    pub fn write_now(&self, ev: &Event) {
        let line = self.line(ev);
        self.try_send(line);
    }

    fn try_send(&self, line: Vec<u8>) {
        if self.tx.try_send(line).is_err() {
            self.count_drop();
        }
    }

    fn count_drop(&self) {
        let n = self.dropped.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        if n % 1000 == 1 {
            tracing::warn!(
                dropped = n,
                "audit events dropped: the audit log queue is full"
            );
        }
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
