//! Cases for watch, bookmarks, TTLs and compaction.

use super::{
    counter, eventually, key, next_change, next_event, no_validate, pod, rv, with_counter, PREFIX,
};
use crate::interface::{DynStorage, GetOptions, WatchOptions, WatchStream};
use crate::{Error, CONTINUE_EXPIRED_MESSAGE};
use kapi_machinery::{
    EventType, LabelSelector, ListOptions, Object, ResourceVersionMatch, StatusReason,
};
use std::time::Duration;

fn from(revision: i64, recursive: bool) -> WatchOptions {
    WatchOptions {
        from_revision: Some(revision),
        recursive,
        ..Default::default()
    }
}

async fn bump(s: &DynStorage, k: &str) -> Object {
    s.guaranteed_update(k, None, false, &mut |c| {
        let c = c.unwrap();
        let n = counter(&c);
        Box::pin(async move { Ok(with_counter(c, n + 1)) })
    })
    .await
    .unwrap()
}

async fn relabel(s: &DynStorage, k: &str, app: &str) -> Object {
    let app = app.to_string();
    s.guaranteed_update(k, None, false, &mut |c| {
        let mut c = c.unwrap();
        c.metadata_mut()
            .insert("labels".into(), serde_json::json!({ "app": app }));
        Box::pin(async move { Ok(c) })
    })
    .await
    .unwrap()
}

/// Collects `n` non-bookmark events.
async fn collect(w: &mut WatchStream, n: usize) -> Vec<crate::Event> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        out.push(next_change(w).await);
    }
    out
}

/// A watch from R delivers every later change under its prefix, in order, exactly once, with
/// concurrent writers — both when opened before the writes and when replaying after them.
pub async fn watch_from_revision_concurrent(s: DynStorage) {
    let start = s.current_revision().await.unwrap();
    let watched = format!("{PREFIX}w/");
    let mut early = s.watch(&watched, from(start, true)).await.unwrap();
    let mut writers = Vec::new();
    for w in 0..4 {
        let s = s.clone();
        writers.push(tokio::spawn(async move {
            let mut written = Vec::new();
            for i in 0..8 {
                for ns in ["w", "x"] {
                    let k = key(ns, &format!("k{w}-{i}"));
                    let c = s
                        .create(&k, pod(ns, &format!("k{w}-{i}"), &[]), None)
                        .await
                        .unwrap();
                    let u = bump(&s, &k).await;
                    if ns == "w" {
                        written.push((rv(&c), EventType::Added, k.clone()));
                        written.push((rv(&u), EventType::Modified, k.clone()));
                    }
                    if i % 2 == 0 {
                        let d = s.delete(&k, None, &no_validate).await.unwrap();
                        if ns == "w" {
                            written.push((rv(&d), EventType::Deleted, k.clone()));
                        }
                    }
                }
            }
            written
        }));
    }
    let mut expected = Vec::new();
    for w in writers {
        expected.extend(w.await.unwrap());
    }
    expected.sort_by_key(|(r, _, _)| *r);
    let mut late = s.watch(&watched, from(start, true)).await.unwrap();
    for w in [&mut early, &mut late] {
        let got = collect(w, expected.len()).await;
        let got: Vec<_> = got
            .iter()
            .map(|e| {
                assert_eq!(
                    rv(&e.object),
                    e.revision,
                    "events carry their revision as resourceVersion"
                );
                (
                    e.revision,
                    e.event_type,
                    key(e.object.namespace(), e.object.name()),
                )
            })
            .collect();
        assert_eq!(got, expected, "every change once, in revision order");
    }
    // Nothing more is pending: the next change is a new write.
    let marker = s
        .create(&key("w", "marker"), pod("w", "marker", &[]), None)
        .await
        .unwrap();
    for w in [&mut early, &mut late] {
        let ev = next_change(w).await;
        assert_eq!(
            (ev.event_type, ev.revision),
            (EventType::Added, rv(&marker))
        );
    }
}

/// Under a predicate, an object that starts matching is ADDED and one that stops is DELETED.
pub async fn watch_predicate_transitions(s: DynStorage) {
    let start = s.current_revision().await.unwrap();
    let mut opts = from(start, true);
    opts.predicate.label = LabelSelector::parse("app=web").unwrap();
    let mut w = s.watch(PREFIX, opts).await.unwrap();
    let k = key("ns", "x");
    let created = s
        .create(&k, pod("ns", "x", &[("app", "web")]), None)
        .await
        .unwrap();
    let to_db = relabel(&s, &k, "db").await;
    s.create(&key("ns", "y"), pod("ns", "y", &[("app", "db")]), None)
        .await
        .unwrap();
    bump(&s, &k).await;
    let back = relabel(&s, &k, "web").await;
    let bumped = bump(&s, &k).await;
    let deleted = s.delete(&k, None, &no_validate).await.unwrap();
    let z = s
        .create(&key("ns", "z"), pod("ns", "z", &[("app", "web")]), None)
        .await
        .unwrap();

    let evs = collect(&mut w, 6).await;
    let seen: Vec<_> = evs
        .iter()
        .map(|e| (e.event_type, e.object.name().to_string(), e.revision))
        .collect();
    assert_eq!(
        seen,
        vec![
            (EventType::Added, "x".into(), rv(&created)),
            (EventType::Deleted, "x".into(), rv(&to_db)),
            (EventType::Added, "x".into(), rv(&back)),
            (EventType::Modified, "x".into(), rv(&bumped)),
            (EventType::Deleted, "x".into(), rv(&deleted)),
            (EventType::Added, "z".into(), rv(&z)),
        ]
    );
    // The DELETED of an object leaving the selection is its last matching state at the
    // revision it left.
    assert_eq!(evs[1].object.labels()["app"], "web");
    assert_eq!(rv(&evs[1].object), rv(&to_db));
}

/// A single-key watch sees only that key; DELETED carries the last state at the deletion's
/// revision; a watch without a revision starts now.
pub async fn watch_single_key_and_delete(s: DynStorage) {
    let k = key("ns", "one");
    s.create(&key("ns", "before"), pod("ns", "before", &[]), None)
        .await
        .unwrap();
    let mut w = s.watch(&k, WatchOptions::default()).await.unwrap();
    let mut all = s
        .watch(
            PREFIX,
            WatchOptions {
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let created = s.create(&k, pod("ns", "one", &[]), None).await.unwrap();
    s.create(&key("ns", "one-other"), pod("ns", "one-other", &[]), None)
        .await
        .unwrap();
    let updated = bump(&s, &k).await;
    let deleted = s.delete(&k, None, &no_validate).await.unwrap();
    let evs = collect(&mut w, 3).await;
    assert_eq!(
        evs.iter().map(|e| e.event_type).collect::<Vec<_>>(),
        [EventType::Added, EventType::Modified, EventType::Deleted]
    );
    assert_eq!(evs[0].revision, rv(&created));
    assert_eq!(*evs[1].object, updated);
    assert_eq!(evs[2].revision, rv(&deleted));
    assert_eq!(rv(&evs[2].object), rv(&deleted));
    assert_eq!(counter(&evs[2].object), 1);
    let first = next_change(&mut all).await;
    assert_eq!(
        (first.event_type, first.object.name()),
        (EventType::Added, "one"),
        "a watch from now skips earlier writes"
    );
}

/// Bookmarks carry only the revision, never one the watcher has not caught up with.
pub async fn bookmarks(s: DynStorage) {
    let a = s
        .create(&key("ns", "bm"), pod("ns", "bm", &[]), None)
        .await
        .unwrap();
    let mut w = s
        .watch(
            PREFIX,
            WatchOptions {
                from_revision: Some(rv(&a)),
                recursive: true,
                bookmarks: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let b = bump(&s, &key("ns", "bm")).await;
    // Progress is best effort (old etcd cannot vouch for it); periodic bookmarks come anyway.
    let _ = s.request_progress().await;
    let mut saw_change = false;
    loop {
        let ev = next_event(&mut w).await.unwrap();
        match ev.event_type {
            EventType::Modified => {
                assert_eq!(ev.revision, rv(&b));
                saw_change = true;
            }
            EventType::Bookmark => {
                let meta = ev.object.metadata().unwrap();
                assert_eq!(
                    meta.len(),
                    1,
                    "a bookmark carries only resourceVersion: {:?}",
                    ev.object
                );
                assert_eq!(rv(&ev.object), ev.revision);
                assert!(ev.revision >= rv(&a));
                if saw_change {
                    assert!(
                        ev.revision >= rv(&b),
                        "a bookmark after an event is not older than it"
                    );
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// A key created with a TTL goes away by itself, with a DELETED event.
pub async fn ttl_expires(s: DynStorage) {
    let k = key("ns", "ttl");
    let created = s
        .create(&k, pod("ns", "ttl", &[]), Some(Duration::from_secs(1)))
        .await
        .unwrap();
    let mut w = s.watch(&k, from(rv(&created), false)).await.unwrap();
    let ev = next_change(&mut w).await;
    assert_eq!(ev.event_type, EventType::Deleted);
    assert_eq!(ev.object.name(), "ttl");
    eventually("the expired key to be gone", || async {
        s.get(
            &k,
            &GetOptions {
                ignore_not_found: true,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .is_none()
    })
    .await;
}

/// After compaction, watches and exact reads below it are Gone with upstream's wording, and a
/// continue token from before it is 410 Expired.
pub async fn compaction_gone(s: DynStorage) {
    let k = key("ns", "c");
    let first = s.create(&k, pod("ns", "c", &[]), None).await.unwrap();
    s.create(&key("ns", "c2"), pod("ns", "c2", &[]), None)
        .await
        .unwrap();
    let page = s
        .list(
            PREFIX,
            &ListOptions {
                limit: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let token = page.continue_token.expect("a continue token");
    for _ in 0..3 {
        bump(&s, &k).await;
    }
    let current = s.current_revision().await.unwrap();
    s.compact(current).await.unwrap();

    let expired = match s.watch(PREFIX, from(rv(&first), true)).await {
        Err(e) => e,
        Ok(mut w) => next_event(&mut w).await.unwrap_err(),
    };
    match expired {
        Error::ResourceExpired {
            requested,
            compacted,
        } => {
            assert_eq!(requested, rv(&first));
            assert!(
                compacted >= current - 1 && compacted <= current,
                "compacted at {compacted}, expected {current}"
            );
            let api = Error::ResourceExpired {
                requested,
                compacted,
            }
            .into_api_error(&Default::default(), "");
            assert_eq!(api.code, 410);
            assert_eq!(api.reason, StatusReason::Expired);
            assert_eq!(
                api.message,
                format!("too old resource version: {requested} ({compacted})")
            );
        }
        other => panic!("expected ResourceExpired, got {other:?}"),
    }

    let exact = ListOptions {
        resource_version: Some(rv(&first).to_string()),
        resource_version_match: Some(ResourceVersionMatch::Exact),
        ..Default::default()
    };
    assert!(matches!(
        s.list(PREFIX, &exact).await.unwrap_err(),
        Error::ResourceExpired { .. }
    ));

    let cont = ListOptions {
        limit: Some(1),
        continue_token: Some(token),
        ..Default::default()
    };
    match s.list(PREFIX, &cont).await.unwrap_err() {
        Error::Api(e) => {
            assert_eq!((e.code, e.reason), (410, StatusReason::Expired));
            assert_eq!(e.message, CONTINUE_EXPIRED_MESSAGE);
        }
        other => panic!("expected 410 Expired, got {other:?}"),
    }

    // Latest reads and watches from the compacted revision still work.
    let mut w = s.watch(PREFIX, from(current, true)).await.unwrap();
    let after = bump(&s, &k).await;
    let ev = next_change(&mut w).await;
    assert_eq!(
        (ev.event_type, ev.revision),
        (EventType::Modified, rv(&after))
    );
    assert_eq!(
        s.list(PREFIX, &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}
