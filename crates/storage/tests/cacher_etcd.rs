//! The watch cache over a real etcd whose progress notifications are not trusted (this
//! machine's 3.4.23): a consistent LIST is served from memory once one range read proves
//! nothing under the listed prefix changed since the cache's revision, at etcd's current
//! revision, and a watch from that revision misses nothing.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![cfg(feature = "etcd")]
#![allow(clippy::unwrap_used)]

use kapi_machinery::{EventType, ListOptions, Object};
use kapi_storage::cacher::{Cacher, CacherConfig};
use kapi_storage::etcd::{EtcdConfig, EtcdStorage};
use kapi_storage::testing::{
    eventually, key, next_change, pod, rv, with_counter, EtcdProcess, PREFIX,
};
use kapi_storage::{DynStorage, ListResult, Storage, WatchOptions};
use std::sync::Arc;
use std::time::Duration;

async fn setup(etcd: &EtcdProcess) -> (DynStorage, Arc<Cacher>) {
    let cfg = EtcdConfig {
        endpoints: vec![etcd.client_url()],
        request_timeout: Duration::from_secs(3),
        compaction_interval: None,
        ..Default::default()
    };
    let backend = Arc::new(EtcdStorage::connect(cfg).await.unwrap()) as DynStorage;
    let cache = Cacher::with_config(backend.clone(), PREFIX, CacherConfig::default());
    // Until its first list is loaded the cache proves nothing and the backend answers.
    eventually("the cache to load", || async { cache.revision() > 0 }).await;
    (backend, cache)
}

fn consistent() -> ListOptions {
    ListOptions::default()
}

fn names(list: &ListResult) -> Vec<(String, i64)> {
    list.items
        .iter()
        .map(|o: &Arc<Object>| (format!("{}/{}", o.namespace(), o.name()), rv(o)))
        .collect()
}

/// A list served from the cache carries the items' pre-encoded bytes; the backend's does not.
fn from_cache(list: &ListResult) -> bool {
    list.encoded.is_some()
}

/// Writes a key of another resource: etcd's revision moves, this cache's prefix does not.
async fn write_elsewhere(backend: &DynStorage, name: &str) -> i64 {
    rv(&backend
        .create(
            &format!("/configmaps/ns/{name}"),
            pod("ns", name, &[]),
            None,
        )
        .await
        .unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_list_is_served_from_the_cache_at_etcds_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    let (backend, cache) = setup(&etcd).await;

    // An empty prefix: no newest key, zero keys on both sides.
    let empty = cache.list(PREFIX, &consistent()).await.unwrap();
    assert!(from_cache(&empty), "an empty prefix is proven current too");
    assert!(empty.items.is_empty());

    for i in 0..3 {
        cache
            .create(
                &key("a", &format!("p{i}")),
                pod("a", &format!("p{i}"), &[]),
                None,
            )
            .await
            .unwrap();
    }
    cache
        .create(&key("b", "q"), pod("b", "q", &[]), None)
        .await
        .unwrap();
    let elsewhere = write_elsewhere(&backend, "x").await;

    let list = cache.list(PREFIX, &consistent()).await.unwrap();
    let current = backend.current_revision().await.unwrap();
    assert_eq!(current, elsewhere);
    assert!(
        from_cache(&list),
        "the consistent list came from the backend"
    );
    assert_eq!(list.revision, current, "served at etcd's current revision");
    assert_eq!(
        cache.revision(),
        current,
        "the cache is now at that revision"
    );
    let direct = backend.list(PREFIX, &consistent()).await.unwrap();
    assert_eq!(names(&list), names(&direct));
    assert_eq!(list.revision, direct.revision);

    // A namespace holding most of the cache is proven with the whole prefix: the cache moves
    // to the current revision, so the next page of a paged list comes from memory too.
    let elsewhere = write_elsewhere(&backend, "y").await;
    let ns_a = format!("{PREFIX}a/");
    let paged = ListOptions {
        limit: Some(2),
        ..Default::default()
    };
    let first = cache.list(&ns_a, &paged).await.unwrap();
    assert!(from_cache(&first));
    assert_eq!(first.revision, elsewhere);
    assert_eq!(cache.revision(), elsewhere);
    let next = ListOptions {
        limit: Some(2),
        continue_token: first.continue_token.clone(),
        ..Default::default()
    };
    let second = cache.list(&ns_a, &next).await.unwrap();
    assert!(from_cache(&second), "the second page came from the backend");
    let mut walked = names(&first);
    walked.extend(names(&second));
    assert_eq!(
        walked,
        names(&backend.list(&ns_a, &consistent()).await.unwrap())
    );
    assert_eq!(walked.len(), 3);

    // A small namespace is proven on its own range, at the current revision, without
    // moving the cache.
    let elsewhere = write_elsewhere(&backend, "z").await;
    let ns_b = format!("{PREFIX}b/");
    let ns = cache.list(&ns_b, &consistent()).await.unwrap();
    assert!(from_cache(&ns));
    assert_eq!(ns.revision, elsewhere);
    assert!(cache.revision() < elsewhere);
    assert_eq!(
        names(&ns),
        names(&backend.list(&ns_b, &consistent()).await.unwrap())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_list_reflects_every_write_under_the_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    let (backend, cache) = setup(&etcd).await;
    let first = cache
        .create(&key("a", "p"), pod("a", "p", &[]), None)
        .await
        .unwrap();
    cache
        .create(&key("a", "gone"), pod("a", "gone", &[]), None)
        .await
        .unwrap();

    // Written straight to etcd, not through the cache: each consistent list right after
    // must show it, whether or not the cache's watch has delivered it yet.
    let created = rv(&backend
        .create(&key("a", "new"), pod("a", "new", &[]), None)
        .await
        .unwrap());
    let list = cache.list(PREFIX, &consistent()).await.unwrap();
    assert!(list.revision >= created);
    assert_eq!(
        names(&list),
        names(&backend.list(PREFIX, &consistent()).await.unwrap())
    );
    assert!(names(&list).contains(&("a/new".into(), created)));

    let updated = rv(&backend
        .guaranteed_update(&key("a", "p"), None, false, &mut |cur| {
            Box::pin(async move { Ok(with_counter(cur.unwrap(), 1)) })
        })
        .await
        .unwrap());
    assert!(updated > rv(&first));
    let list = cache.list(PREFIX, &consistent()).await.unwrap();
    assert!(names(&list).contains(&("a/p".into(), updated)));

    let no_check = |_: &Object| -> futures::future::BoxFuture<'static, kapi_storage::Result<()>> {
        Box::pin(async { Ok(()) })
    };
    let deleted = rv(&backend
        .delete(&key("a", "gone"), None, &no_check)
        .await
        .unwrap());
    let list = cache.list(PREFIX, &consistent()).await.unwrap();
    assert!(list.revision >= deleted);
    assert!(!names(&list).iter().any(|(n, _)| n == "a/gone"));
    assert_eq!(
        names(&list),
        names(&backend.list(PREFIX, &consistent()).await.unwrap())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_the_lists_revision_sees_the_next_change() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    let (backend, cache) = setup(&etcd).await;
    cache
        .create(&key("a", "p"), pod("a", "p", &[]), None)
        .await
        .unwrap();
    write_elsewhere(&backend, "x").await;
    let list = cache.list(PREFIX, &consistent()).await.unwrap();
    assert!(from_cache(&list));

    let opts = WatchOptions {
        from_revision: Some(list.revision),
        recursive: true,
        ..Default::default()
    };
    let mut from_list = cache.watch(PREFIX, opts).await.unwrap();
    // "From now" is served by the cache as well, from the revision it proved.
    let now = WatchOptions {
        recursive: true,
        ..Default::default()
    };
    let mut from_now = cache.watch(PREFIX, now).await.unwrap();
    assert_eq!(cache.watcher_count(), 2, "both watches are the cache's");

    let next = rv(&backend
        .create(&key("a", "q"), pod("a", "q", &[]), None)
        .await
        .unwrap());
    for w in [&mut from_list, &mut from_now] {
        let ev = next_change(w).await;
        assert_eq!(ev.event_type, EventType::Added);
        assert_eq!(ev.object.name(), "q");
        assert_eq!(ev.revision, next);
    }
    eventually("the cache to apply the change", || async {
        cache.revision() >= next
    })
    .await;
}

/// How many ranges etcd has served.
fn etcd_ranges(etcd: &EtcdProcess) -> u64 {
    etcd.metric("etcd_mvcc_range_total") as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_proof_serves_consistent_lists_until_a_revision_moves() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    let (backend, cache) = setup(&etcd).await;
    for i in 0..2 {
        let name = format!("p{i}");
        cache
            .create(&key("a", &name), pod("a", &name, &[]), None)
            .await
            .unwrap();
    }
    for i in 0..5 {
        let name = format!("q{i}");
        cache
            .create(&key("b", &name), pod("b", &name, &[]), None)
            .await
            .unwrap();
    }
    eventually("the cache to see the writes", || async {
        cache
            .list(
                PREFIX,
                &ListOptions {
                    resource_version: Some("0".into()),
                    ..Default::default()
                },
            )
            .await
            .is_ok_and(|l| l.items.len() == 7)
    })
    .await;
    // etcd's revision moves past the cache's: a consistent list of namespace `a` (a small
    // range of the cache) needs its range proven.
    let elsewhere = write_elsewhere(&backend, "x").await;
    let ns_a = format!("{PREFIX}a/");
    let direct = names(&backend.list(&ns_a, &consistent()).await.unwrap());

    let before = etcd_ranges(&etcd);
    let first = cache.list(&ns_a, &consistent()).await.unwrap();
    assert!(from_cache(&first));
    assert_eq!(first.revision, elsewhere);
    assert_eq!(names(&first), direct);
    // Its current revision, then its proof.
    assert_eq!(etcd_ranges(&etcd) - before, 2);

    // Nothing moved: each later list reads etcd's current revision and reuses the proof,
    // also when several ask at once.
    let before = etcd_ranges(&etcd);
    let opts = consistent();
    let lists = futures::future::join_all((0..8).map(|_| cache.list(&ns_a, &opts))).await;
    for list in lists {
        let list = list.unwrap();
        assert!(from_cache(&list));
        assert_eq!(list.revision, elsewhere);
        assert_eq!(names(&list), direct);
    }
    assert_eq!(etcd_ranges(&etcd) - before, 8);

    // etcd's revision moves: proven again, at the new revision.
    let moved = write_elsewhere(&backend, "y").await;
    let before = etcd_ranges(&etcd);
    let list = cache.list(&ns_a, &consistent()).await.unwrap();
    assert_eq!(list.revision, moved);
    assert_eq!(names(&list), direct);
    assert_eq!(etcd_ranges(&etcd) - before, 2);

    // A change reaches the cache (in the other namespace): the proof no longer holds for
    // the cache's new revision, so the range is proven again.
    let changed = rv(&cache
        .create(&key("b", "q9"), pod("b", "q9", &[]), None)
        .await
        .unwrap());
    eventually("the cache to see the change", || async {
        cache.revision() >= changed
    })
    .await;
    let list = cache.list(&ns_a, &consistent()).await.unwrap();
    assert!(from_cache(&list));
    assert_eq!(list.revision, changed);
    assert_eq!(names(&list), direct);
    let before = etcd_ranges(&etcd);
    let again = cache.list(&ns_a, &consistent()).await.unwrap();
    assert_eq!(again.revision, changed);
    assert_eq!(
        etcd_ranges(&etcd) - before,
        1,
        "the cache is at etcd's revision"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_lists_of_a_busy_prefix_hold_every_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&tmp.path().join("etcd"));
    let (backend, cache) = setup(&etcd).await;
    // A writer changing the prefix without pause, straight to etcd, recording each write's
    // revision once acknowledged.
    let acked = Arc::new(std::sync::Mutex::new(Vec::<(String, i64)>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (backend, acked, stop) = (backend.clone(), acked.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let name = format!("w{i}");
                let created = backend
                    .create(&key("a", &name), pod("a", &name, &[]), None)
                    .await
                    .unwrap();
                acked
                    .lock()
                    .unwrap()
                    .push((format!("a/{name}"), rv(&created)));
                i += 1;
            }
        })
    };
    eventually("the writer to start", || async {
        acked.lock().unwrap().len() > 5
    })
    .await;
    let mut served_from_cache = 0;
    for _ in 0..10 {
        let before: Vec<(String, i64)> = acked.lock().unwrap().clone();
        let list = cache.list(PREFIX, &consistent()).await.unwrap();
        let listed = names(&list);
        for write in &before {
            assert!(
                list.revision >= write.1,
                "listed at {} before {write:?}",
                list.revision
            );
            assert!(
                listed.contains(write),
                "{write:?} acknowledged before the list, not in it"
            );
        }
        served_from_cache += usize::from(from_cache(&list));
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();
    // The prefix's next change carries the cache past each list's revision, so the lists
    // come from memory instead of etcd (no count: a stalled machine may send one to etcd).
    assert!(
        served_from_cache > 0,
        "every list of the busy prefix came from etcd"
    );
}
