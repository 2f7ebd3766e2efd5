//! An update or a delete that starts from a watch cache's copy of the object
//! (`GuaranteedUpdate::cached`, `Storage::delete_from`) ends as one that read the key, on both
//! backends: a stale copy loses the compare-and-swap and the write runs again on the stored
//! state; a precondition, an error, a refused validation or "no change" decided on the copy
//! alone is decided again on a read; a current copy is written or deleted without a read (on
//! etcd: one range fewer, and an updated key keeps its lease).

use futures::future::BoxFuture;
use kapi_machinery::{Object, Preconditions};
use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::testing::{counter, key, pod, rv, with_counter};
use kapi_storage::{DynStorage, Error, GuaranteedUpdate};
use std::sync::{Arc, Mutex};

/// A fresh store of one backend, with what keeps it alive.
struct Fixture {
    store: DynStorage,
    #[cfg(feature = "etcd")]
    etcd: Option<kapi_storage::testing::EtcdProcess>,
    _tmp: tempfile::TempDir,
}

/// Every backend this build has, fresh.
async fn backends() -> Vec<Fixture> {
    let tmp = tempfile::tempdir().unwrap();
    let embedded =
        Arc::new(EmbeddedStorage::open_with(tmp.path(), EmbeddedConfig::default()).unwrap());
    #[allow(unused_mut, reason = "only the etcd build adds one")]
    let mut all = vec![Fixture {
        store: embedded,
        #[cfg(feature = "etcd")]
        etcd: None,
        _tmp: tmp,
    }];
    #[cfg(feature = "etcd")]
    all.push(etcd_fixture().await);
    all
}

#[cfg(feature = "etcd")]
async fn etcd_fixture() -> Fixture {
    use kapi_storage::etcd::{EtcdConfig, EtcdStorage};
    let tmp = tempfile::tempdir().unwrap();
    let etcd = kapi_storage::testing::EtcdProcess::start(&tmp.path().join("etcd"));
    let cfg = EtcdConfig {
        endpoints: vec![etcd.client_url()],
        request_timeout: std::time::Duration::from_secs(3),
        compaction_interval: None,
        ..Default::default()
    };
    let store = Arc::new(EtcdStorage::connect(cfg).await.unwrap());
    Fixture {
        store,
        etcd: Some(etcd),
        _tmp: tmp,
    }
}

/// One pod in `store` whose counter went 0 → 1; returns both states.
async fn stale_and_current(store: &DynStorage) -> (Object, Object) {
    let k = key("a", "p");
    let _ = store
        .delete(&k, None, &|_| Box::pin(async { Ok(()) }))
        .await;
    let first = store.create(&k, pod("a", "p", &[]), None).await.unwrap();
    let current = store
        .guaranteed_update(&k, None, false, &mut |cur| {
            Box::pin(async move { Ok(with_counter(cur.unwrap(), 1)) })
        })
        .await
        .unwrap();
    (first, current)
}

/// Runs `update` of the test's pod from `cached`, recording the counters it was handed.
async fn update_from(
    store: &DynStorage,
    cached: Object,
    preconditions: Option<&Preconditions>,
    update: impl Fn(Object) -> kapi_storage::Result<Object> + Send + Sync + 'static,
) -> (kapi_storage::Result<Object>, Vec<i64>) {
    update_with(store, &key("a", "p"), Some(cached), preconditions, update).await
}

/// Runs `update` of `key`, from `cached` if given, recording the counters it was handed.
async fn update_with(
    store: &DynStorage,
    key: &str,
    cached: Option<Object>,
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
            key,
            GuaranteedUpdate {
                preconditions,
                ignore_not_found: false,
                try_update: &mut try_update,
                cached,
            },
        )
        .await;
    let seen = seen.lock().unwrap().clone();
    (result, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_copy_loses_the_swap_and_the_update_runs_on_the_stored_state() {
    for f in backends().await {
        let (stale, current) = stale_and_current(&f.store).await;
        let (result, seen) = update_from(&f.store, stale, None, |cur| {
            let n = counter(&cur);
            Ok(with_counter(cur, n + 10))
        })
        .await;
        let written = result.unwrap();
        assert_eq!(seen, [0, 1], "the copy first, then the stored state");
        assert_eq!(counter(&written), 11);
        assert!(rv(&written) > rv(&current));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_copy_is_written_without_another_attempt() {
    for f in backends().await {
        let (_, current) = stale_and_current(&f.store).await;
        let (result, seen) = update_from(&f.store, current.clone(), None, |cur| {
            Ok(with_counter(cur, 5))
        })
        .await;
        assert_eq!(seen, [1]);
        assert_eq!(counter(&result.unwrap()), 5);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_precondition_or_an_error_on_a_stale_copy_is_decided_again_on_a_read() {
    for f in backends().await {
        let (stale, current) = stale_and_current(&f.store).await;
        // The precondition names the stored revision: the copy fails it, the stored state
        // passes.
        let preconditions = Preconditions {
            uid: None,
            resource_version: Some(current.resource_version().to_string()),
        };
        let (result, seen) = update_from(&f.store, stale.clone(), Some(&preconditions), |cur| {
            Ok(with_counter(cur, 7))
        })
        .await;
        assert_eq!(seen, [1], "the update never ran on the copy");
        assert_eq!(counter(&result.unwrap()), 7);

        // An update that refuses what it sees in the copy succeeds on the stored state.
        let (stale, _) = stale_and_current(&f.store).await;
        let (result, seen) = update_from(&f.store, stale, None, |cur| {
            if counter(&cur) == 0 {
                return Err(Error::Internal("stale".into()));
            }
            Ok(with_counter(cur, 8))
        })
        .await;
        assert_eq!(seen, [0, 1]);
        assert_eq!(counter(&result.unwrap()), 8);

        // A precondition the stored state fails too is the caller's answer.
        let (stale, _) = stale_and_current(&f.store).await;
        let wrong = Preconditions {
            uid: Some("another".into()),
            resource_version: None,
        };
        let (result, seen) = update_from(&f.store, stale, Some(&wrong), Ok).await;
        assert!(matches!(result, Err(Error::Conflict { .. })), "{result:?}");
        assert!(seen.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_change_to_a_stale_copy_is_a_change_to_the_stored_state() {
    for f in backends().await {
        let (stale, current) = stale_and_current(&f.store).await;
        // Setting the counter to 0 changes nothing in the copy but undoes the stored 1.
        let (result, seen) =
            update_from(&f.store, stale, None, |cur| Ok(with_counter(cur, 0))).await;
        let written = result.unwrap();
        assert_eq!(seen, [0, 1]);
        assert_eq!(counter(&written), 0);
        assert!(rv(&written) > rv(&current), "written");

        // No change to a current copy writes nothing.
        let before = f.store.current_revision().await.unwrap();
        let (result, _) = update_from(&f.store, written.clone(), None, Ok).await;
        assert_eq!(rv(&result.unwrap()), rv(&written));
        assert_eq!(
            f.store.current_revision().await.unwrap(),
            before,
            "nothing written"
        );
    }
}

/// On etcd, an update from a current copy reads nothing before its transaction (one range
/// fewer than one without it), and the key keeps the lease its create attached (an Event's
/// TTL) though the copy does not carry it.
#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_etcd_a_current_copy_saves_the_read_and_keeps_the_lease() {
    let f = etcd_fixture().await;
    let etcd = f.etcd.as_ref().unwrap();
    let k = key("a", "ttl");
    let ttl = Some(std::time::Duration::from_secs(300));
    let created = f.store.create(&k, pod("a", "ttl", &[]), ttl).await.unwrap();
    let lease_of = || async {
        let mut client = etcd_client::Client::connect([etcd.client_url()], None)
            .await
            .unwrap();
        let resp = client
            .get(
                format!("{}{k}", kapi_storage::etcd::EtcdConfig::default().prefix),
                None,
            )
            .await
            .unwrap();
        resp.kvs().first().unwrap().lease()
    };
    let ranges = || etcd.metric("etcd_mvcc_range_total") as u64;
    let lease = lease_of().await;
    assert_ne!(lease, 0, "the create attached a lease");

    let before = ranges();
    let (result, _) = update_with(&f.store, &k, None, None, |cur| Ok(with_counter(cur, 1))).await;
    let read_first = result.unwrap();
    let read_ranges = ranges() - before;

    let before = ranges();
    let (result, seen) = update_with(&f.store, &k, Some(read_first), None, |cur| {
        Ok(with_counter(cur, 2))
    })
    .await;
    let from_copy = result.unwrap();
    let copy_ranges = ranges() - before;
    assert_eq!(seen, [1], "one attempt, on the copy");
    assert_eq!(
        copy_ranges + 1,
        read_ranges,
        "one range fewer than with a read first"
    );
    assert!(rv(&from_copy) > rv(&created));
    assert_eq!(lease_of().await, lease, "the key kept its lease");
}

/// Deletes the test's pod from `cached`, recording the counters `validate` was handed;
/// `refuse` is a counter validation turns down.
async fn delete_from(
    store: &DynStorage,
    cached: Option<Object>,
    preconditions: Option<&Preconditions>,
    refuse: Option<i64>,
) -> (kapi_storage::Result<Object>, Vec<i64>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let validate = {
        let seen = seen.clone();
        move |cur: &Object| -> BoxFuture<'static, kapi_storage::Result<()>> {
            let n = counter(cur);
            seen.lock().unwrap().push(n);
            Box::pin(async move {
                match refuse {
                    Some(r) if r == n => Err(Error::Internal("refused".into())),
                    _ => Ok(()),
                }
            })
        }
    };
    let result = store
        .delete_from(&key("a", "p"), preconditions, &validate, cached)
        .await;
    let seen = seen.lock().unwrap().clone();
    (result, seen)
}

/// Whether the test's pod is stored.
async fn stored(store: &DynStorage) -> bool {
    let opts = kapi_storage::GetOptions {
        ignore_not_found: true,
        ..Default::default()
    };
    store.get(&key("a", "p"), &opts).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_from_a_stale_copy_deletes_the_stored_state() {
    for f in backends().await {
        let (stale, current) = stale_and_current(&f.store).await;
        let (result, seen) = delete_from(&f.store, Some(stale), None, None).await;
        let deleted = result.unwrap();
        assert_eq!(seen, [0, 1], "the copy first, then the stored state");
        assert_eq!(counter(&deleted), 1, "the deleted object is the stored one");
        assert!(rv(&deleted) > rv(&current));
        assert!(!stored(&f.store).await);

        // A current copy: one check, the same answer as without a copy.
        let (_, current) = stale_and_current(&f.store).await;
        let (result, seen) = delete_from(&f.store, Some(current), None, None).await;
        assert_eq!(seen, [1]);
        assert_eq!(counter(&result.unwrap()), 1);

        // The copy of a key no longer stored: NotFound, as without a copy.
        let (stale, _) = stale_and_current(&f.store).await;
        f.store
            .delete(&key("a", "p"), None, &|_| Box::pin(async { Ok(()) }))
            .await
            .unwrap();
        let (result, _) = delete_from(&f.store, Some(stale), None, None).await;
        assert!(matches!(result, Err(Error::NotFound { .. })), "{result:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_precondition_or_a_validation_refusing_a_stale_copy_is_decided_again_on_a_read() {
    for f in backends().await {
        // The precondition names the stored revision: the copy fails it, the stored state
        // passes.
        let (stale, current) = stale_and_current(&f.store).await;
        let preconditions = Preconditions {
            uid: None,
            resource_version: Some(current.resource_version().to_string()),
        };
        let (result, seen) = delete_from(&f.store, Some(stale), Some(&preconditions), None).await;
        assert_eq!(seen, [1], "validation never ran on the copy");
        assert_eq!(counter(&result.unwrap()), 1);

        // A validation that refuses what it sees in the copy passes the stored state.
        let (stale, _) = stale_and_current(&f.store).await;
        let (result, seen) = delete_from(&f.store, Some(stale), None, Some(0)).await;
        assert_eq!(seen, [0, 1]);
        assert_eq!(counter(&result.unwrap()), 1);

        // A precondition or a validation the stored state fails too is the caller's answer,
        // and the key stays.
        let (stale, _) = stale_and_current(&f.store).await;
        let wrong = Preconditions {
            uid: Some("another".into()),
            resource_version: None,
        };
        let (result, seen) = delete_from(&f.store, Some(stale.clone()), Some(&wrong), None).await;
        assert!(matches!(result, Err(Error::Conflict { .. })), "{result:?}");
        assert!(seen.is_empty());
        let (result, seen) = delete_from(&f.store, Some(stale), None, Some(1)).await;
        assert!(matches!(result, Err(Error::Internal(_))), "{result:?}");
        assert_eq!(seen, [0, 1]);
        assert!(stored(&f.store).await);
    }
}

/// On etcd, a delete from a current copy reads nothing before its transaction: one range
/// fewer than a delete without it.
#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_etcd_a_delete_from_a_current_copy_saves_the_read() {
    let f = etcd_fixture().await;
    let etcd = f.etcd.as_ref().unwrap();
    let ranges = || etcd.metric("etcd_mvcc_range_total") as u64;

    stale_and_current(&f.store).await;
    let before = ranges();
    let (result, _) = delete_from(&f.store, None, None, None).await;
    result.unwrap();
    let read_ranges = ranges() - before;

    let (_, current) = stale_and_current(&f.store).await;
    let before = ranges();
    let (result, seen) = delete_from(&f.store, Some(current), None, None).await;
    let copy_ranges = ranges() - before;
    assert_eq!(seen, [1], "one check, on the copy");
    assert_eq!(counter(&result.unwrap()), 1);
    assert_eq!(
        copy_ranges + 1,
        read_ranges,
        "one range fewer than with a read first"
    );
}
