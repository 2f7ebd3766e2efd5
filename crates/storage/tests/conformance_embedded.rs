//! The conformance suite against the embedded backend, directly and through the watch cache.

use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::testing::run_suite;
use kapi_storage::DynStorage;
use std::sync::Arc;
use std::time::Duration;

fn config() -> EmbeddedConfig {
    EmbeddedConfig {
        bookmark_interval: Duration::from_millis(300),
        compaction_interval: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_conformance() {
    let dirs = tempfile::tempdir().unwrap();
    let mut n = 0;
    run_suite("embedded", |_| {
        n += 1;
        let dir = dirs.path().join(format!("case-{n}"));
        async move { Arc::new(EmbeddedStorage::open_with(&dir, config()).unwrap()) as DynStorage }
    })
    .await;
}
