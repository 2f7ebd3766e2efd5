//! The embedded store's directory: private (0700, files 0600, as etcd keeps its data
//! directory) and written by one process at a time (an exclusive OS lock on `kapi.lock`, held
//! for the store's life and released by the kernel when the process dies, even by `kill -9`).

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions, Permissions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The lock file's name inside the store directory.
pub const LOCK_FILE: &str = "kapi.lock";

/// Creates `dir` (and missing parents) 0700, or tightens an existing one to 0700.
pub fn private_dir(dir: &Path) -> Result<()> {
    let err = |e: std::io::Error| Error::Unavailable(format!("creating {}: {e}", dir.display()));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    tighten(dir, 0o700)
}

/// Sets `path`'s mode to `mode` if it grants more, with a log line (what upstream's etcd
/// refuses to start with, kapi repairs).
pub fn tighten(path: &Path, mode: u32) -> Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::Unavailable(format!("{}: {e}", path.display()))),
    };
    let current = meta.permissions().mode() & 0o777;
    if current & !mode != 0 {
        std::fs::set_permissions(path, Permissions::from_mode(mode)).map_err(|e| {
            Error::Unavailable(format!("restricting {} to {mode:o}: {e}", path.display()))
        })?;
        tracing::warn!(path = %path.display(), from = format!("{current:o}"), to = format!("{mode:o}"), "tightened permissions: the store holds secrets");
    }
    Ok(())
}

/// Creates the database file 0600 before SQLite opens it (SQLite gives its WAL and shared
/// memory files the database's mode), and tightens the three files of an older store.
pub fn private_files(dir: &Path, db_file: &str) -> Result<()> {
    let db = dir.join(db_file);
    if !db.exists() {
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&db)
            .map_err(|e| Error::Unavailable(format!("creating {}: {e}", db.display())))?;
    }
    for suffix in ["", "-wal", "-shm"] {
        tighten(&dir.join(format!("{db_file}{suffix}")), 0o600)?;
    }
    Ok(())
}

/// An exclusive lock on a store directory; released when dropped or when the process ends.
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock, or fails at once naming the directory and the holder's pid.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        let path: PathBuf = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Error::Unavailable(format!("opening {}: {e}", path.display())))?;
        // The mode above applies only to a new file; an older store's is tightened like the rest.
        tighten(&path, 0o600)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::Unavailable(format!(
                    "the data directory {} is in use by another kapi process{} (it holds the lock {}); one process at a time may serve an embedded store",
                    dir.display(),
                    if holder.is_empty() { String::new() } else { format!(" (pid {holder})") },
                    path.display()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::Unavailable(format!(
                    "locking {}: {e}",
                    path.display()
                )))
            }
        }
        // The holder's pid, for the message another process shows.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = writeln!(file, "{}", std::process::id());
        let _ = file.sync_all();
        Ok(DirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_directory_is_refused_until_the_first_is_released() {
        let tmp = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(tmp.path()).unwrap();
        let err = DirLock::acquire(tmp.path()).err().unwrap().to_string();
        assert!(err.contains(&tmp.path().display().to_string()), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        DirLock::acquire(tmp.path()).unwrap();
    }

    #[test]
    fn directories_and_files_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/store");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("kapi.db-wal"), b"").unwrap();
        std::fs::set_permissions(dir.join("kapi.db-wal"), Permissions::from_mode(0o644)).unwrap();
        private_dir(&dir).unwrap();
        private_files(&dir, "kapi.db").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("kapi.db")), 0o600);
        assert_eq!(mode(&dir.join("kapi.db-wal")), 0o600);
    }
}
