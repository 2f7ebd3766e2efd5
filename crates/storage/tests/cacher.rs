//! Watch-cache behaviour beyond the shared suite: slow watchers are closed without holding
//! anyone up, objects are shared between watchers and items' bytes between lists, the window is bounded, and `limit` with
//! `resourceVersion=0` is ignored when served from memory, and bookmarks come before a
//! watch's timeout.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use futures::{FutureExt, StreamExt};
use kapi_machinery::EventType;
use kapi_machinery::ListOptions;
use kapi_storage::cacher::{Cacher, CacherConfig};
use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::testing::{eventually, key, next_change, next_event, pod, rv, PREFIX};
use kapi_storage::{DynStorage, Error, Storage, WatchOptions};
use std::sync::Arc;

fn setup(dir: &std::path::Path, config: CacherConfig) -> (DynStorage, Arc<Cacher>) {
    let backend: DynStorage =
        Arc::new(EmbeddedStorage::open_with(dir, EmbeddedConfig::default()).unwrap());
    (
        backend.clone(),
        Cacher::with_config(backend, PREFIX, config),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_is_closed_without_blocking_others() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, cache) = setup(
        tmp.path(),
        CacherConfig {
            watcher_buffer: 10,
            ..Default::default()
        },
    );
    let all = WatchOptions {
        recursive: true,
        ..Default::default()
    };
    let mut slow = cache.watch(PREFIX, all.clone()).await.unwrap();
    let mut fast = cache.watch(PREFIX, all).await.unwrap();
    assert_eq!(cache.watcher_count(), 2);
    let mut last = 0;
    for i in 0..50 {
        last = rv(&cache
            .create(
                &key("ns", &format!("o{i}")),
                pod("ns", &format!("o{i}"), &[]),
                None,
            )
            .await
            .unwrap());
        // The fast watcher keeps up.
        let ev = next_change(&mut fast).await;
        assert_eq!(ev.revision, last);
    }
    eventually("the slow watcher to be dropped", || async {
        cache.watcher_count() == 1
    })
    .await;
    let mut received = 0;
    while let Some(item) = slow.next().await {
        item.unwrap();
        received += 1;
    }
    assert!(
        received <= 10,
        "a closed watcher gets at most its buffer, got {received}"
    );
    assert!(cache.revision() >= last);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_share_one_copy_and_window_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, cache) = setup(
        tmp.path(),
        CacherConfig {
            window: 5,
            ..Default::default()
        },
    );
    let first = cache
        .create(&key("ns", "a"), pod("ns", "a", &[]), None)
        .await
        .unwrap();
    let opts = WatchOptions {
        from_revision: Some(rv(&first)),
        recursive: true,
        ..Default::default()
    };
    let mut w1 = cache.watch(PREFIX, opts.clone()).await.unwrap();
    let mut w2 = cache.watch(PREFIX, opts.clone()).await.unwrap();
    cache
        .create(&key("ns", "b"), pod("ns", "b", &[]), None)
        .await
        .unwrap();
    let (e1, e2) = (next_change(&mut w1).await, next_change(&mut w2).await);
    assert!(
        Arc::ptr_eq(&e1.object, &e2.object),
        "every watcher gets the same object, not a copy"
    );

    for i in 0..10 {
        cache
            .create(
                &key("ns", &format!("c{i}")),
                pod("ns", &format!("c{i}"), &[]),
                None,
            )
            .await
            .unwrap();
    }
    let current = cache.current_revision().await.unwrap();
    eventually("the cache to catch up", || async {
        cache.revision() >= current
    })
    .await;
    match cache.watch(PREFIX, opts).await {
        Err(Error::ResourceExpired {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, rv(&first));
            assert_eq!(
                compacted,
                current - 5,
                "the window keeps the last 5 changes"
            );
        }
        Err(e) => panic!("expected ResourceExpired, got {e:?}"),
        Ok(_) => panic!("a watch older than the window must be refused"),
    }

    // Served from memory, `limit` is ignored for resourceVersion=0, as upstream does.
    let opts = ListOptions {
        resource_version: Some("0".into()),
        limit: Some(2),
        ..Default::default()
    };
    let list = cache.list(PREFIX, &opts).await.unwrap();
    assert_eq!(list.items.len(), 12);
    assert!(list.continue_token.is_none());
    // A limited consistent list pages through the backend.
    let paged = cache
        .list(
            PREFIX,
            &ListOptions {
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (paged.items.len(), paged.remaining_item_count),
        (2, Some(10))
    );
    // Lists from memory hand out the cache's encoded items, not copies: two lists share the
    // bytes of each one.
    let (one, two) = (
        cache.list_encoded(PREFIX, &opts).await.unwrap(),
        cache.list_encoded(PREFIX, &opts).await.unwrap(),
    );
    let (one, two) = (one.encoded.unwrap(), two.encoded.unwrap());
    assert_eq!(one.len(), 12);
    assert!(
        one.iter()
            .zip(&two)
            .all(|(a, b)| a.json.as_ptr() == b.json.as_ptr()),
        "lists from the cache share its bytes"
    );
}

/// Upstream's cacher sends a watcher that asked for bookmarks one 2s before its timeout, at
/// the newest revision the cache has seen; a watcher that did not ask gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bookmark_comes_before_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, cache) = setup(tmp.path(), CacherConfig::default());
    // Loaded before the first write, so its window holds that write.
    eventually("the cache to load", || async { cache.revision() > 0 }).await;
    let first = cache
        .create(&key("ns", "a"), pod("ns", "a", &[]), None)
        .await
        .unwrap();
    let opts = |bookmarks| WatchOptions {
        from_revision: Some(rv(&first)),
        recursive: true,
        bookmarks,
        timeout: Some(std::time::Duration::from_secs(3)),
        ..Default::default()
    };
    let last = rv(&cache
        .create(&key("ns", "b"), pod("ns", "b", &[]), None)
        .await
        .unwrap());
    eventually("the cache to see the last write", || async {
        cache.revision() >= last
    })
    .await;
    // From the first write: the second is replayed from the window, then the bookmark.
    let mut with = cache.watch(PREFIX, opts(true)).await.unwrap();
    let mut without = cache.watch(PREFIX, opts(false)).await.unwrap();
    let change = next_event(&mut with).await.unwrap();
    assert_eq!(
        (change.event_type, change.revision),
        (EventType::Added, last)
    );
    let bookmark = next_event(&mut with).await.unwrap();
    assert_eq!(bookmark.event_type, EventType::Bookmark);
    assert!(
        bookmark.revision >= last,
        "the bookmark carries the newest revision: {} < {last}",
        bookmark.revision
    );
    // Both watchers are served by the same bookmark pass: the other one has only the change.
    assert_eq!(next_event(&mut without).await.unwrap().revision, last);
    assert!(without.next().now_or_never().is_none());
}

/// A ready cache counts from memory (the object-count metric's read), the same numbers the
/// backend gives, for its whole prefix and a namespace below it, deletions included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_from_memory_matches_the_backend() {
    let tmp = tempfile::tempdir().unwrap();
    let (backend, cache) = setup(tmp.path(), CacherConfig::default());
    for (ns, name) in [
        ("a", "p1"),
        ("a", "p2"),
        ("b", "p1"),
        ("b", "p2"),
        ("b", "p3"),
    ] {
        cache
            .create(&key(ns, name), pod(ns, name, &[]), None)
            .await
            .unwrap();
    }
    cache
        .delete(&key("b", "p2"), None, &kapi_storage::testing::no_validate)
        .await
        .unwrap();
    let last = backend.current_revision().await.unwrap();
    eventually("the cache to reach the last write", || async {
        cache.revision() >= last
    })
    .await;
    for (prefix, want) in [(PREFIX.to_string(), 4), (format!("{PREFIX}b/"), 2)] {
        assert_eq!(cache.count(&prefix).await.unwrap(), want, "{prefix}");
        assert_eq!(backend.count(&prefix).await.unwrap(), want, "{prefix}");
    }
}
