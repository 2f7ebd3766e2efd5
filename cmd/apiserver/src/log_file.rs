//! `KAPI_LOG=FILE`: everything kapi logs, and the reason a start was refused, appended to a file
//! as well as stderr. Harnesses that discard the server's output (controller-runtime's envtest
//! does unless `KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true`) leave it readable there;
//! `hack/envtest-assets.sh`'s wrapper sets it. Each start writes a header line with its pid and
//! arguments, since several servers may share the file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process has written its header line yet.
static HEADER_WRITTEN: AtomicBool = AtomicBool::new(false);

/// A file past this size is emptied when a server opens it, so that it stays bounded however
/// many test runs append to it.
const MAX_BYTES: u64 = 16 << 20;

/// The file `KAPI_LOG` names, opened for appending (0600, as logs may name users) with this
/// start's header written; `None` when unset or unwritable (said once on stderr).
pub fn open() -> Option<File> {
    let path = std::env::var_os("KAPI_LOG").filter(|p| !p.is_empty())?;
    let too_big = std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_BYTES);
    let opened = OpenOptions::new()
        .create(true)
        .append(!too_big)
        .write(true)
        .truncate(too_big)
        .mode(0o600)
        .open(&path);
    match opened {
        Ok(mut file) => {
            if HEADER_WRITTEN.swap(true, Ordering::Relaxed) {
                return Some(file);
            }
            let args: Vec<String> = std::env::args().skip(1).collect();
            // Best effort: a log that cannot be written must not stop the server.
            let _ = writeln!(
                file,
                "--- kapi-apiserver pid {} started with: {}",
                std::process::id(),
                args.join(" ")
            );
            Some(file)
        }
        Err(e) => {
            eprintln!("warning: KAPI_LOG {}: {e}", path.to_string_lossy());
            None
        }
    }
}

/// Appends the reason a start was refused (the lines printed on stderr) to `KAPI_LOG`.
pub fn record_refusal(lines: &str) {
    if let Some(mut file) = open() {
        let _ = writeln!(
            file,
            "kapi-apiserver pid {} refused to start:\n{}",
            std::process::id(),
            lines.trim_end()
        );
    }
}
