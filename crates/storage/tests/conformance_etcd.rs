//! The conformance suite against a real etcd (started on free loopback ports by the test),
//! directly and through the watch cache, and etcd going away and coming back.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![cfg(feature = "etcd")]
#![allow(clippy::unwrap_used)]

use kapi_machinery::EventType;
use kapi_storage::cacher::{Cacher, CacherConfig};
use kapi_storage::etcd::{EtcdConfig, EtcdStorage};
use kapi_storage::testing::{
    eventually, key, next_change, pod, run_suite, rv, EtcdProcess, PREFIX,
};
use kapi_storage::{DynStorage, GetOptions, Storage, WatchOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn config(etcd: &EtcdProcess, prefix: &str) -> EtcdConfig {
    EtcdConfig {
        endpoints: vec![etcd.client_url()],
        prefix: prefix.to_string(),
        request_timeout: Duration::from_secs(3),
        compaction_interval: None,
        bookmark_interval: Duration::from_millis(300),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_conformance() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    run_suite("etcd", |name| {
        let cfg = config(&etcd, &format!("/registry-{name}"));
        async move { Arc::new(EtcdStorage::connect(cfg).await.unwrap()) as DynStorage }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_cached_conformance() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    run_suite("etcd+cache", |name| {
        let cfg = config(&etcd, &format!("/registry-{name}"));
        async move {
            let backend = Arc::new(EtcdStorage::connect(cfg).await.unwrap()) as DynStorage;
            let config = CacherConfig {
                bookmark_interval: Duration::from_millis(300),
                ..Default::default()
            };
            Cacher::with_config(backend, PREFIX, config) as DynStorage
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_restart_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    let s = EtcdStorage::connect(config(&etcd, "/registry"))
        .await
        .unwrap();
    let a = s
        .create(&key("ns", "a"), pod("ns", "a", &[]), None)
        .await
        .unwrap();
    let mut w = s
        .watch(
            PREFIX,
            WatchOptions {
                from_revision: Some(rv(&a)),
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();

    etcd.kill();
    let started = Instant::now();
    let err = s
        .get(&key("ns", "a"), &GetOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.is_unavailable(),
        "a dead etcd is Unavailable or Timeout, got {err:?}"
    );
    let err = s
        .create(&key("ns", "b"), pod("ns", "b", &[]), None)
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "got {err:?}");
    assert!(s.health().await.unwrap_err().is_unavailable());
    eprintln!("dead etcd answered in {:?}", started.elapsed());

    etcd.restart();
    eventually("the backend to reach etcd again", || async {
        s.get(&key("ns", "a"), &GetOptions::default()).await.is_ok()
    })
    .await;
    let b = s
        .create(&key("ns", "b"), pod("ns", "b", &[]), None)
        .await
        .unwrap();
    let ev = next_change(&mut w).await;
    assert_eq!(
        (ev.event_type, ev.revision),
        (EventType::Added, rv(&b)),
        "the watch resumed by itself"
    );
}

/// On an etcd whose progress notifications cannot be trusted, a quiet resource's cache can
/// never prove it is current; list-then-watch must still work (answered by etcd), not time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_cached_quiet_prefix_list_then_watch() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    let backend = Arc::new(
        EtcdStorage::connect(config(&etcd, "/registry"))
            .await
            .unwrap(),
    ) as DynStorage;
    let cache = Cacher::new(backend.clone(), PREFIX);
    let first = cache
        .create(&key("ns", "quiet"), pod("ns", "quiet", &[]), None)
        .await
        .unwrap();
    // Writes elsewhere move the global revision past anything this prefix's watch sees.
    for i in 0..5 {
        backend
            .create(
                &format!("/other/ns/o{i}"),
                pod("ns", &format!("o{i}"), &[]),
                None,
            )
            .await
            .unwrap();
    }
    let list = cache
        .list(PREFIX, &kapi_machinery::ListOptions::default())
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(list.revision > rv(&first));
    let mut w = cache
        .watch(
            PREFIX,
            WatchOptions {
                from_revision: Some(list.revision),
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let next = cache
        .create(&key("ns", "next"), pod("ns", "next", &[]), None)
        .await
        .unwrap();
    let ev = next_change(&mut w).await;
    assert_eq!((ev.event_type, ev.revision), (EventType::Added, rv(&next)));
}
