//! The storage conformance suite: `pub async fn` cases that take a fresh storage and check the
//! semantics every backend (and the watch cache over it) must share. Backends run them from
//! their integration tests through [`run_suite`]. Cases panic on failure, like test code.
//!
//! Every case keeps its keys under [`PREFIX`], so a watch cache for that prefix can stand in
//! for the backend.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test support, never on a request path: a panic is a failed test"
)]
#![allow(clippy::unwrap_used)]

mod cases;
mod etcd_process;
mod watch_cases;

pub use cases::*;
pub use etcd_process::{free_port, EtcdProcess};
pub use watch_cases::*;

use crate::interface::{DynStorage, Event, WatchStream};
use futures::future::BoxFuture;
use futures::StreamExt;
use kapi_machinery::{EventType, Object};
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// The prefix every case writes under (a resource, as the registry lays keys out).
pub const PREFIX: &str = "/pods/";

/// How long a case waits for something that should happen promptly before failing.
pub const WAIT: Duration = Duration::from_secs(30);

/// The key of `name` in namespace `ns`.
pub fn key(ns: &str, name: &str) -> String {
    format!("{PREFIX}{ns}/{name}")
}

/// A delete's validation that lets every object go.
pub fn no_validate(_: &Object) -> BoxFuture<'static, crate::Result<()>> {
    Box::pin(async { Ok(()) })
}

/// A small pod-like object.
pub fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Object {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    Object::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}"), "labels": labels},
        "spec": {"counter": 0, "nodeName": ""},
    }))
    .unwrap()
}

/// The object's `spec.counter`.
pub fn counter(o: &Object) -> i64 {
    o.get("spec")
        .and_then(|s| s.get("counter"))
        .and_then(|c| c.as_i64())
        .unwrap_or(-1)
}

/// A copy with `spec.counter` set.
pub fn with_counter(mut o: Object, n: i64) -> Object {
    if let Some(spec) = o.get_mut("spec").and_then(|s| s.as_object_mut()) {
        spec.insert("counter".into(), json!(n));
    }
    o
}

/// The revision an object carries.
pub fn rv(o: &Object) -> i64 {
    o.resource_version()
        .parse()
        .unwrap_or_else(|_| panic!("object without a numeric resourceVersion: {o:?}"))
}

/// The next item of a watch stream, failing the case after [`WAIT`].
pub async fn next_event(w: &mut WatchStream) -> crate::Result<Event> {
    match tokio::time::timeout(WAIT, w.next()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("watch stream ended"),
        Err(_) => panic!("no watch event within {WAIT:?}"),
    }
}

/// The next non-bookmark event.
pub async fn next_change(w: &mut WatchStream) -> Event {
    loop {
        let ev = next_event(w).await.unwrap();
        if ev.event_type != EventType::Bookmark {
            return ev;
        }
    }
}

/// Polls `check` until it holds, failing the case after [`WAIT`].
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A case of the suite.
pub type Case = fn(DynStorage) -> BoxFuture<'static, ()>;

/// Every case, by name.
pub fn cases() -> Vec<(&'static str, Case)> {
    vec![
        ("create_get", |s| Box::pin(create_get(s))),
        ("guaranteed_update_conflicts", |s| {
            Box::pin(guaranteed_update_conflicts(s))
        }),
        ("concurrent_counter", |s| Box::pin(concurrent_counter(s))),
        ("delete_preconditions", |s| {
            Box::pin(delete_preconditions(s))
        }),
        ("list_resource_versions", |s| {
            Box::pin(list_resource_versions(s))
        }),
        ("paging_at_fixed_revision", |s| {
            Box::pin(paging_at_fixed_revision(s))
        }),
        ("selectors", |s| Box::pin(selectors(s))),
        ("paging_selectors_old_revisions", |s| {
            Box::pin(paging_selectors_old_revisions(s))
        }),
        ("large_list", |s| Box::pin(large_list(s))),
        ("watch_from_revision_concurrent", |s| {
            Box::pin(watch_from_revision_concurrent(s))
        }),
        ("watch_predicate_transitions", |s| {
            Box::pin(watch_predicate_transitions(s))
        }),
        ("watch_single_key_and_delete", |s| {
            Box::pin(watch_single_key_and_delete(s))
        }),
        ("bookmarks", |s| Box::pin(bookmarks(s))),
        ("ttl_expires", |s| Box::pin(ttl_expires(s))),
        ("compaction_gone", |s| Box::pin(compaction_gone(s))),
    ]
}

/// Runs every case, each against a fresh storage from `fresh`, printing each name.
pub async fn run_suite<F, Fut>(label: &str, mut fresh: F)
where
    F: FnMut(&'static str) -> Fut,
    Fut: Future<Output = DynStorage>,
{
    for (name, case) in cases() {
        eprintln!("[{label}] {name} ...");
        let storage = fresh(name).await;
        case(storage).await;
        eprintln!("[{label}] {name} ok");
    }
}
