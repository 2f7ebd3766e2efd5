//! The embedded store's directory as a store opens it: private modes (0700 directory, 0600
//! files, looser ones left by an older kapi tightened) and one writer at a time (a second open
//! of the same directory is refused, naming it and the holder, until the first is closed).
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::testing::{key, pod};
use kapi_storage::{GetOptions, Storage};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn set_mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// Every file and the directory, with their modes, for a readable failure.
fn modes(dir: &Path) -> Vec<(String, String)> {
    let mut out = vec![(".".to_string(), format!("{:o}", mode(dir)))];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, format!("{:o}", mode(&path))));
    }
    out.sort();
    out
}

fn all_private(dir: &Path) -> bool {
    modes(dir)
        .iter()
        .all(|(name, m)| m == if name == "." { "700" } else { "600" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_store_is_private_and_an_old_loose_one_is_tightened() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data/store");
    let s = EmbeddedStorage::open(&dir).unwrap();
    s.create(&key("ns", "a"), pod("ns", "a", &[]), None)
        .await
        .unwrap();
    let files = modes(&dir);
    for f in ["kapi.db", "kapi.db-wal", "kapi.lock"] {
        assert!(files.iter().any(|(n, _)| n == f), "{f} missing: {files:?}");
    }
    assert!(all_private(&dir), "a new store: {files:?}");
    s.close().await;

    // What an older kapi left: 0755 and 0644.
    set_mode(&dir, 0o755);
    for entry in std::fs::read_dir(&dir).unwrap() {
        set_mode(&entry.unwrap().path(), 0o644);
    }
    let s = EmbeddedStorage::open(&dir).unwrap();
    assert!(s
        .get(&key("ns", "a"), &GetOptions::default())
        .await
        .unwrap()
        .is_some());
    assert!(all_private(&dir), "reopened: {:?}", modes(&dir));
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_open_of_one_directory_is_refused_until_the_first_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let first = EmbeddedStorage::open(&dir).unwrap();
    first
        .create(&key("ns", "a"), pod("ns", "a", &[]), None)
        .await
        .unwrap();
    let err = EmbeddedStorage::open(&dir)
        .err()
        .expect("a second open of the same directory is refused")
        .to_string();
    assert!(
        err.contains(&format!(
            "the data directory {} is in use by another kapi process (pid {})",
            dir.display(),
            std::process::id()
        )),
        "{err}"
    );
    // The first still writes.
    first
        .create(&key("ns", "b"), pod("ns", "b", &[]), None)
        .await
        .unwrap();
    first.close().await;
    let second = EmbeddedStorage::open(&dir).unwrap();
    assert!(second
        .get(&key("ns", "b"), &GetOptions::default())
        .await
        .unwrap()
        .is_some());
    second.close().await;
}
