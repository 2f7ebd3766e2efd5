//! An update that starts from a watch cache's copy of the object (`GuaranteedUpdate::cached`)
//! ends as one that read the key: a stale copy loses the compare-and-swap and the update runs
//! again on the stored state; a precondition, an error or "no change" decided on the copy
//! alone is decided again on a read; a current copy is written without a read.

use futures::future::BoxFuture;
use kapi_machinery::{Object, Preconditions};
use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::testing::{counter, key, pod, rv, with_counter};
use kapi_storage::{Error, GuaranteedUpdate, Storage};
use std::sync::{Arc, Mutex};

/// A store holding one pod whose counter went 0 → 1; returns the store and both states.
async fn stale_and_current() -> (tempfile::TempDir, Arc<EmbeddedStorage>, Object, Object) {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        Arc::new(EmbeddedStorage::open_with(tmp.path(), EmbeddedConfig::default()).unwrap());
    let k = key("a", "p");
    let first = store.create(&k, pod("a", "p", &[]), None).await.unwrap();
    let current = store
        .guaranteed_update(&k, None, false, &mut |cur| {
            Box::pin(async move { Ok(with_counter(cur.unwrap(), 1)) })
        })
        .await
        .unwrap();
    (tmp, store, first, current)
}

/// Runs `update` from `cached`, recording the counters it was handed.
async fn update_from(
    store: &EmbeddedStorage,
    cached: Object,
    preconditions: Option<&Preconditions>,
    update: impl Fn(Object) -> kapi_storage::Result<Object> + Send + Sync + 'static,
) -> (kapi_storage::Result<Object>, Vec<i64>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let update = Arc::new(update);
    let mut try_update = {
        let seen = seen.clone();
        move |cur: Option<Object>| -> BoxFuture<'static, kapi_storage::Result<Object>> {
            let cur = cur.unwrap();
            seen.lock().unwrap().push(counter(&cur));
            let update = update.clone();
            Box::pin(async move { update(cur) })
        }
    };
    let result = store
        .update(
            &key("a", "p"),
            GuaranteedUpdate {
                preconditions,
                ignore_not_found: false,
                try_update: &mut try_update,
                cached: Some(cached),
            },
        )
        .await;
    let seen = seen.lock().unwrap().clone();
    (result, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_copy_loses_the_swap_and_the_update_runs_on_the_stored_state() {
    let (_tmp, store, stale, current) = stale_and_current().await;
    let (result, seen) = update_from(&store, stale, None, |cur| {
        let n = counter(&cur);
        Ok(with_counter(cur, n + 10))
    })
    .await;
    let written = result.unwrap();
    assert_eq!(seen, [0, 1], "the copy first, then the stored state");
    assert_eq!(counter(&written), 11);
    assert!(rv(&written) > rv(&current));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_copy_is_written_without_another_attempt() {
    let (_tmp, store, _, current) = stale_and_current().await;
    let (result, seen) = update_from(&store, current.clone(), None, |cur| {
        Ok(with_counter(cur, 5))
    })
    .await;
    assert_eq!(seen, [1]);
    assert_eq!(counter(&result.unwrap()), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_precondition_or_an_error_on_a_stale_copy_is_decided_again_on_a_read() {
    let (_tmp, store, stale, current) = stale_and_current().await;
    // The precondition names the stored revision: the copy fails it, the stored state passes.
    let preconditions = Preconditions {
        uid: None,
        resource_version: Some(current.resource_version().to_string()),
    };
    let (result, seen) = update_from(&store, stale.clone(), Some(&preconditions), |cur| {
        Ok(with_counter(cur, 7))
    })
    .await;
    assert_eq!(seen, [1], "the update never ran on the copy");
    assert_eq!(counter(&result.unwrap()), 7);

    // An update that refuses what it sees in the copy succeeds on the stored state.
    let (_tmp, store, stale, _) = stale_and_current().await;
    let (result, seen) = update_from(&store, stale, None, |cur| {
        if counter(&cur) == 0 {
            return Err(Error::Internal("stale".into()));
        }
        Ok(with_counter(cur, 8))
    })
    .await;
    assert_eq!(seen, [0, 1]);
    assert_eq!(counter(&result.unwrap()), 8);

    // A precondition the stored state fails too is the caller's answer.
    let (_tmp, store, stale, _) = stale_and_current().await;
    let wrong = Preconditions {
        uid: Some("another".into()),
        resource_version: None,
    };
    let (result, seen) = update_from(&store, stale, Some(&wrong), Ok).await;
    assert!(matches!(result, Err(Error::Conflict { .. })), "{result:?}");
    assert!(seen.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_change_to_a_stale_copy_is_a_change_to_the_stored_state() {
    let (_tmp, store, stale, current) = stale_and_current().await;
    // Setting the counter to 0 changes nothing in the copy but undoes the stored 1.
    let (result, seen) = update_from(&store, stale, None, |cur| Ok(with_counter(cur, 0))).await;
    let written = result.unwrap();
    assert_eq!(seen, [0, 1]);
    assert_eq!(counter(&written), 0);
    assert!(rv(&written) > rv(&current), "written");

    // No change to a current copy writes nothing.
    let before = store.current_revision().await.unwrap();
    let (result, _) = update_from(&store, written.clone(), None, Ok).await;
    assert_eq!(rv(&result.unwrap()), rv(&written));
    assert_eq!(
        store.current_revision().await.unwrap(),
        before,
        "nothing written"
    );
}
