//! The watch cache keeps encoded items, not objects: selectors on the kept attributes (labels,
//! name, namespace, the resource's selectable fields) and on other fields (decoded) select as
//! the backend does, objects decoded
//! from the cache equal the backend's byte for byte, and a watcher whose selector sees an object
//! leave gets its old state stamped with the change's revision.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

use kapi_machinery::{EventType, FieldSelector, LabelSelector, ListOptions, Object};
use kapi_storage::cacher::{Cacher, CacherConfig};
use kapi_storage::embedded::{EmbeddedConfig, EmbeddedStorage};
use kapi_storage::testing::{eventually, key, next_change, pod, rv, PREFIX};
use kapi_storage::{DynStorage, GetOptions, ListResult, Storage, WatchOptions};
use std::sync::Arc;

fn setup(dir: &std::path::Path) -> (DynStorage, Arc<Cacher>) {
    setup_keeping(dir, &[])
}

/// [`setup`] with a cache that keeps the values of `fields` beside each item.
fn setup_keeping(
    dir: &std::path::Path,
    fields: &'static [&'static str],
) -> (DynStorage, Arc<Cacher>) {
    setup_indexed(dir, fields, None)
}

/// [`setup_keeping`] with watchers indexed by the values of `trigger`.
fn setup_indexed(
    dir: &std::path::Path,
    fields: &'static [&'static str],
    trigger: Option<&'static str>,
) -> (DynStorage, Arc<Cacher>) {
    let backend: DynStorage =
        Arc::new(EmbeddedStorage::open_with(dir, EmbeddedConfig::default()).unwrap());
    let config = CacherConfig {
        fields,
        trigger,
        ..Default::default()
    };
    (
        backend.clone(),
        Cacher::with_config(backend, PREFIX, config),
    )
}

fn from_cache(label: &str, field: &str) -> ListOptions {
    let mut opts = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    opts.predicate.label = LabelSelector::parse(label).unwrap();
    opts.predicate.field = FieldSelector::parse(field).unwrap();
    opts
}

fn names(list: &ListResult) -> Vec<String> {
    list.items
        .iter()
        .map(|o| format!("{}/{}", o.namespace(), o.name()))
        .collect()
}

/// `pod` with `spec.nodeName` set.
fn on_node(ns: &str, name: &str, app: &str, node: &str) -> Object {
    let mut o = pod(ns, name, &[("app", app)]);
    o.as_map_mut()
        .get_mut("spec")
        .and_then(|s| s.as_object_mut())
        .unwrap()
        .insert("nodeName".into(), node.into());
    o
}

async fn caught_up(cache: &Cacher, backend: &DynStorage) {
    let current = backend.current_revision().await.unwrap();
    eventually("the cache to catch up", || async {
        cache.revision() >= current
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_on_cached_items_select_as_the_backend_does() {
    // Without kept fields every other field is read from the decoded object; with them,
    // `spec.nodeName` and `status.phase` (absent: empty) are read from the item.
    for fields in [
        &[][..],
        &["metadata.name", "spec.nodeName", "status.phase"][..],
    ] {
        selectors_select_as_the_backend_does(fields).await;
    }
}

async fn selectors_select_as_the_backend_does(fields: &'static [&'static str]) {
    let tmp = tempfile::tempdir().unwrap();
    let (backend, cache) = setup_keeping(tmp.path(), fields);
    for (ns, name, app, node) in [
        ("a", "web1", "web", "n1"),
        ("a", "db1", "db", "n2"),
        ("b", "web2", "web", "n2"),
        ("b", "plain", "", "n1"),
    ] {
        cache
            .create(&key(ns, name), on_node(ns, name, app, node), None)
            .await
            .unwrap();
    }
    caught_up(&cache, &backend).await;
    for (label, field, want) in [
        ("app=web", "", vec!["a/web1", "b/web2"]),
        ("app!=web", "", vec!["a/db1", "b/plain"]),
        ("app in (db,web),app!=db", "", vec!["a/web1", "b/web2"]),
        ("!app", "", vec![]),
        ("", "metadata.name=db1", vec!["a/db1"]),
        ("", "metadata.namespace=b", vec!["b/plain", "b/web2"]),
        ("app=web", "metadata.namespace!=a", vec!["b/web2"]),
        ("", "spec.nodeName=n2", vec!["a/db1", "b/web2"]),
        ("", "spec.nodeName!=n2", vec!["a/web1", "b/plain"]),
        (
            "app=web",
            "spec.nodeName=n1,metadata.name=web1",
            vec!["a/web1"],
        ),
        (
            "",
            "status.phase=",
            vec!["a/db1", "a/web1", "b/plain", "b/web2"],
        ),
        ("", "status.phase=Running", vec![]),
        // Never kept: read from the decoded object.
        ("", "spec.restartPolicy=Always,spec.nodeName=n1", vec![]),
    ] {
        let opts = from_cache(label, field);
        let cached = cache.list(PREFIX, &opts).await.unwrap();
        assert!(cached.encoded.is_some(), "served from memory");
        assert_eq!(names(&cached), want, "{label} {field} keeping {fields:?}");
        let direct = backend.list(PREFIX, &opts).await.unwrap();
        assert_eq!(names(&cached), names(&direct), "{label} {field}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_decoded_from_the_cache_equal_the_backends() {
    let tmp = tempfile::tempdir().unwrap();
    let (backend, cache) = setup(tmp.path());
    // Type fields in an unusual place must come back where they were.
    let mut odd = Object::new();
    odd.insert(
        "metadata",
        serde_json::json!({"name": "odd", "namespace": "a"}),
    );
    odd.insert("kind", "Pod".into());
    odd.insert("spec", serde_json::json!({"x": 1}));
    odd.insert("apiVersion", "v1".into());
    cache.create(&key("a", "odd"), odd, None).await.unwrap();
    cache
        .create(&key("a", "p"), on_node("a", "p", "web", "n1"), None)
        .await
        .unwrap();
    caught_up(&cache, &backend).await;

    let opts = from_cache("", "");
    let lazy = cache.list_encoded(PREFIX, &opts).await.unwrap();
    assert!(lazy.items.is_empty(), "a list of bytes decodes nothing");
    let cached = cache.list(PREFIX, &opts).await.unwrap();
    let direct = backend.list(PREFIX, &ListOptions::default()).await.unwrap();
    let bytes = |l: &ListResult| l.items.iter().map(|o| o.to_vec()).collect::<Vec<_>>();
    assert_eq!(bytes(&cached), bytes(&direct));
    // The list items are the objects without their type fields.
    for (item, object) in cached.encoded.unwrap().iter().zip(&direct.items) {
        assert_eq!(item.json, kapi_storage::encode_list_item(object));
    }

    let at = GetOptions {
        resource_version: Some(cached.revision),
        ..Default::default()
    };
    let got = cache.get(&key("a", "odd"), &at).await.unwrap().unwrap();
    let want = backend.get(&key("a", "odd"), &at).await.unwrap().unwrap();
    assert_eq!(got.to_vec(), want.to_vec());
    let keys: Vec<_> = got.as_map().keys().cloned().collect();
    assert_eq!(keys, ["metadata", "kind", "spec", "apiVersion"]);
}

/// `get_shared` hands out one decoded object per state while the cache holds that state, and
/// the new state (decoded again) once a change has reached the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_reads_decode_each_state_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (backend, cache) = setup(tmp.path());
    let k = key("a", "p");
    cache
        .create(&k, on_node("a", "p", "web", "n1"), None)
        .await
        .unwrap();
    caught_up(&cache, &backend).await;
    let any = GetOptions {
        resource_version: Some(0),
        ignore_not_found: true,
    };
    let first = cache.get_shared(&k, &any).await.unwrap().unwrap();
    let second = cache.get_shared(&k, &any).await.unwrap().unwrap();
    assert!(Arc::ptr_eq(&first, &second), "one decode per state");
    let plain = cache.get(&k, &any).await.unwrap().unwrap();
    assert_eq!(first.to_vec(), plain.to_vec());

    let moved = cache
        .guaranteed_update(&k, None, false, &mut |_| {
            Box::pin(async { Ok(on_node("a", "p", "db", "n2")) })
        })
        .await
        .unwrap();
    caught_up(&cache, &backend).await;
    let after = cache.get_shared(&k, &any).await.unwrap().unwrap();
    assert!(!Arc::ptr_eq(&first, &after));
    assert_eq!(rv(&after), rv(&moved));
    assert_eq!(after.labels()["app"], "db");
    assert_eq!(
        after.to_vec(),
        backend.get(&k, &any).await.unwrap().unwrap().to_vec()
    );

    assert!(cache
        .get_shared(&key("a", "missing"), &any)
        .await
        .unwrap()
        .is_none());
}

/// A watcher whose field selector stops matching gets DELETED with the old state at the
/// change's revision, whether the cache keeps the field's value or reads it from the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_leaving_a_field_selector_is_deleted_with_its_old_state() {
    for fields in [&[][..], &["spec.nodeName"][..]] {
        leaving_a_field_selector(fields).await;
    }
}

async fn leaving_a_field_selector(fields: &'static [&'static str]) {
    let tmp = tempfile::tempdir().unwrap();
    let (backend, cache) = setup_keeping(tmp.path(), fields);
    let k = key("a", "p");
    let created = cache
        .create(&k, on_node("a", "p", "web", "n1"), None)
        .await
        .unwrap();
    caught_up(&cache, &backend).await;
    let mut opts = WatchOptions {
        from_revision: Some(rv(&created)),
        recursive: true,
        ..Default::default()
    };
    opts.predicate.field = FieldSelector::parse("spec.nodeName=n1").unwrap();
    let mut by_node = cache.watch(PREFIX, opts.clone()).await.unwrap();
    opts.predicate.field = FieldSelector::everything();
    opts.predicate.label = LabelSelector::parse("app=web").unwrap();
    let mut by_label = cache.watch(PREFIX, opts).await.unwrap();

    let moved = cache
        .guaranteed_update(&k, None, false, &mut |_| {
            Box::pin(async { Ok(on_node("a", "p", "db", "n2")) })
        })
        .await
        .unwrap();
    for w in [&mut by_node, &mut by_label] {
        let ev = next_change(w).await;
        assert_eq!(ev.event_type, EventType::Deleted);
        assert_eq!(ev.revision, rv(&moved));
        assert_eq!(
            rv(&ev.object),
            rv(&moved),
            "stamped with the change's revision"
        );
        assert_eq!(ev.object.labels()["app"], "web", "the old state");
        assert_eq!(ev.object.field_value("spec.nodeName"), "n1");
        let mut old = created.clone();
        old.set_resource_version(&rv(&moved).to_string());
        assert_eq!(ev.object.to_vec(), old.to_vec());
    }
}

/// Watchers indexed by `spec.nodeName` (as upstream's pod trigger) get what unindexed ones
/// get: a pod scheduled, moved and deleted reaches each node's watch as it enters and leaves,
/// the scheduler's watch of unassigned pods, a negated selector and a watch of everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_indexed_by_node_get_what_unindexed_ones_get() {
    for trigger in [None, Some("spec.nodeName")] {
        watches_by_node(trigger).await;
    }
}

async fn watches_by_node(trigger: Option<&'static str>) {
    use futures::{FutureExt, StreamExt};
    let tmp = tempfile::tempdir().unwrap();
    let (backend, cache) = setup_indexed(tmp.path(), &["spec.nodeName"], trigger);
    let start = cache
        .create(&key("a", "start"), on_node("a", "start", "web", "n9"), None)
        .await
        .unwrap();
    caught_up(&cache, &backend).await;
    let selectors = [
        "spec.nodeName=n1",
        "spec.nodeName=n2",
        "spec.nodeName=",
        "spec.nodeName!=n1",
        "",
        "spec.nodeName=n3,metadata.name=q",
    ];
    let mut watches = Vec::new();
    for selector in selectors {
        let mut opts = WatchOptions {
            from_revision: Some(rv(&start)),
            recursive: true,
            ..Default::default()
        };
        opts.predicate.field = FieldSelector::parse(selector).unwrap();
        watches.push(cache.watch(PREFIX, opts).await.unwrap());
    }
    let k = key("a", "p");
    let mut revs = vec![];
    let created = cache.create(&k, pod("a", "p", &[]), None).await.unwrap();
    revs.push(rv(&created));
    for node in ["n1", "n2"] {
        let moved = cache
            .guaranteed_update(&k, None, false, &mut |_| {
                Box::pin(async move { Ok(on_node("a", "p", "web", node)) })
            })
            .await
            .unwrap();
        revs.push(rv(&moved));
    }
    let no_check = |_: &Object| -> futures::future::BoxFuture<'static, kapi_storage::Result<()>> {
        Box::pin(async { Ok(()) })
    };
    cache.delete(&k, None, &no_check).await.unwrap();
    revs.push(backend.current_revision().await.unwrap());
    let q = cache
        .create(&key("a", "q"), on_node("a", "q", "web", "n3"), None)
        .await
        .unwrap();
    revs.push(rv(&q));
    caught_up(&cache, &backend).await;

    use EventType::{Added as A, Deleted as D, Modified as M};
    let expected: [&[(EventType, usize)]; 6] = [
        &[(A, 1), (D, 2)],
        &[(A, 2), (D, 3)],
        &[(A, 0), (D, 1)],
        &[(A, 0), (D, 1), (A, 2), (D, 3), (A, 4)],
        &[(A, 0), (M, 1), (M, 2), (D, 3), (A, 4)],
        &[(A, 4)],
    ];
    for ((selector, watch), want) in selectors.iter().zip(&mut watches).zip(expected) {
        // The cache has applied every change, so each watcher's events are queued.
        let mut got = vec![];
        while let Some(Some(Ok(ev))) = watch.next().now_or_never() {
            if ev.event_type != EventType::Bookmark {
                got.push((ev.event_type, ev.revision));
            }
        }
        let want: Vec<_> = want.iter().map(|(t, i)| (*t, revs[*i])).collect();
        assert_eq!(got, want, "{selector:?} (trigger {trigger:?})");
    }

    // The same watches started after the changes, from the same revision, replay them from
    // the window: the same events, each object's node and name as the event says (a change
    // is decoded for a watcher only when the selector concerns it, old state or new).
    for (selector, want) in selectors.iter().zip(expected) {
        let mut opts = WatchOptions {
            from_revision: Some(rv(&start)),
            recursive: true,
            ..Default::default()
        };
        opts.predicate.field = FieldSelector::parse(selector).unwrap();
        let mut replayed = cache.watch(PREFIX, opts).await.unwrap();
        let mut got = vec![];
        while let Some(Some(Ok(ev))) = replayed.next().now_or_never() {
            if ev.event_type != EventType::Bookmark {
                got.push((
                    ev.event_type,
                    ev.revision,
                    ev.object.resource_version().to_string(),
                ));
            }
        }
        let want: Vec<_> = want
            .iter()
            .map(|(t, i)| (*t, revs[*i], revs[*i].to_string()))
            .collect();
        assert_eq!(got, want, "replayed {selector:?} (trigger {trigger:?})");
    }
}

/// The window keeps its changes encoded: a watch from an earlier revision, replayed from it,
/// gets what the backend's own watch from that revision gives, object for object, with and
/// without a selector that sees an object leave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_replayed_from_the_window_equals_the_backends() {
    let tmp = tempfile::tempdir().unwrap();
    let (backend, cache) = setup(tmp.path());
    let start = cache
        .create(&key("a", "first"), pod("a", "first", &[]), None)
        .await
        .unwrap();
    caught_up(&cache, &backend).await;
    let k = key("a", "p");
    cache
        .create(&k, on_node("a", "p", "web", "n1"), None)
        .await
        .unwrap();
    cache
        .guaranteed_update(&k, None, false, &mut |_| {
            Box::pin(async { Ok(on_node("a", "p", "db", "n2")) })
        })
        .await
        .unwrap();
    let no_check = |_: &Object| -> futures::future::BoxFuture<'static, kapi_storage::Result<()>> {
        Box::pin(async { Ok(()) })
    };
    cache.delete(&k, None, &no_check).await.unwrap();
    cache
        .create(&key("b", "q"), on_node("b", "q", "web", "n1"), None)
        .await
        .unwrap();
    caught_up(&cache, &backend).await;

    for label in ["", "app=web"] {
        let mut opts = WatchOptions {
            from_revision: Some(rv(&start)),
            recursive: true,
            ..Default::default()
        };
        opts.predicate.label = LabelSelector::parse(label).unwrap();
        let mut replayed = cache.watch(PREFIX, opts.clone()).await.unwrap();
        let mut direct = backend.watch(PREFIX, opts).await.unwrap();
        let want = if label.is_empty() {
            vec![
                EventType::Added,
                EventType::Modified,
                EventType::Deleted,
                EventType::Added,
            ]
        } else {
            // p leaves the selector (DELETED with its old state); q enters it.
            vec![EventType::Added, EventType::Deleted, EventType::Added]
        };
        for t in want {
            let (ours, theirs) = (
                next_change(&mut replayed).await,
                next_change(&mut direct).await,
            );
            assert_eq!((ours.event_type, theirs.event_type), (t, t), "{label:?}");
            assert_eq!(ours.revision, theirs.revision, "{label:?}");
            assert_eq!(
                ours.object.to_vec(),
                theirs.object.to_vec(),
                "{label:?}: {t:?} at {}",
                ours.revision
            );
        }
    }
}
