//! The conformance suite against the embedded backend, directly and through the watch cache.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use kapi_storage::cacher::{Cacher, CacherConfig};
use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::testing::{run_suite, PREFIX};
use kapi_storage::DynStorage;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn open(dir: &Path) -> DynStorage {
    let config = EmbeddedConfig {
        bookmark_interval: Duration::from_millis(300),
        compaction_interval: None,
        ..Default::default()
    };
    Arc::new(EmbeddedStorage::open_with(dir, config).unwrap())
}

fn cached(backend: DynStorage) -> DynStorage {
    let config = CacherConfig {
        bookmark_interval: Duration::from_millis(300),
        ..Default::default()
    };
    Cacher::with_config(backend, PREFIX, config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_conformance() {
    let dirs = tempfile::tempdir().unwrap();
    run_suite("embedded", |name| {
        let storage = open(&dirs.path().join(name));
        async move { storage }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_cached_conformance() {
    let dirs = tempfile::tempdir().unwrap();
    run_suite("embedded+cache", |name| {
        let storage = cached(open(&dirs.path().join(name)));
        async move { storage }
    })
    .await;
}
