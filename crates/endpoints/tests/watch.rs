//! Watch streams: synthetic ADDED events, changes, Table events, bookmarks, timeouts and the
//! ERROR event for a compacted resourceVersion.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use bytes::Bytes;
use common::*;
use http::{Method, StatusCode};
use http_body_util::BodyExt;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn watch_from_a_list_revision_sees_changes() {
    let s = server().await;
    s.post_json(CMS, &configmap("before", &[])).await;
    let rv = s.get(CMS).await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&resourceVersion={rv}&timeoutSeconds=30"),
            &[],
            Bytes::new(),
        ))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let mut body = resp.into_body();
    s.post_json(CMS, &configmap("after", &[("k", "v")])).await;
    s.delete(&format!("{CMS}/after")).await;
    let lines = watch_lines(&mut body, 2).await;
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[0]["object"]["metadata"]["name"], "after");
    assert_eq!(lines[0]["object"]["kind"], "ConfigMap");
    assert_eq!(lines[1]["type"], "DELETED");
}

#[tokio::test]
async fn watch_without_resource_version_starts_with_existing_objects() {
    let s = server().await;
    s.post_json(CMS, &configmap("one", &[])).await;
    s.post_json(CMS, &configmap("two", &[])).await;
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            "/api/v1/watch/namespaces/default/configmaps?timeoutSeconds=30",
            &[],
            Bytes::new(),
        ))
        .await;
    let mut body = resp.into_body();
    let lines = watch_lines(&mut body, 2).await;
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l["object"]["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["one", "two"]);
    assert!(lines.iter().all(|l| l["type"] == "ADDED"));
    s.post_json(CMS, &configmap("three", &[])).await;
    let more = watch_lines(&mut body, 1).await;
    assert_eq!(more[0]["type"], "ADDED");
    assert_eq!(more[0]["object"]["metadata"]["name"], "three");
}

#[tokio::test]
async fn table_watch_carries_columns_only_first() {
    let s = server().await;
    s.post_json(CMS, &configmap("t-a", &[])).await;
    s.post_json(CMS, &configmap("t-b", &[])).await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&timeoutSeconds=30"),
            &[("accept", accept)],
            Bytes::new(),
        ))
        .await;
    let mut body = resp.into_body();
    let lines = watch_lines(&mut body, 2).await;
    assert_eq!(lines[0]["object"]["kind"], "Table");
    assert!(lines[0]["object"]["columnDefinitions"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
    assert_eq!(lines[0]["object"]["rows"][0]["cells"][0], "t-a");
    assert!(lines[1]["object"]["columnDefinitions"].is_null());
    assert_eq!(lines[1]["object"]["rows"][0]["cells"][0], "t-b");
}

#[tokio::test]
async fn watch_ends_after_timeout_seconds() {
    let s = server().await;
    let rv = s.get(CMS).await.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
            &[],
            Bytes::new(),
        ))
        .await;
    let collected = resp
        .into_body()
        .collect()
        .await
        .expect("stream ends cleanly")
        .to_bytes();
    assert!(collected.is_empty());
}

#[tokio::test]
async fn compacted_resource_version_is_an_error_event() {
    let s = server_with(|mut c| {
        c.watch_cache = false;
        c
    })
    .await;
    for i in 0..3 {
        s.post_json(CMS, &configmap(&format!("c-{i}"), &[])).await;
    }
    let current = s.storage.current_revision().await.unwrap();
    s.storage.compact(current).await.unwrap();
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&resourceVersion=1"),
            &[],
            Bytes::new(),
        ))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let lines = watch_lines(&mut body, 2).await;
    assert_eq!(lines.len(), 1, "the stream ends after the error");
    assert_eq!(lines[0]["type"], "ERROR");
    let st = &lines[0]["object"];
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["code"], 410);
    assert_eq!(st["reason"], "Expired");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version: 1 ("),
        "{st}"
    );
}

#[tokio::test]
async fn initial_events_end_with_a_bookmark_when_asked() {
    let s = server().await;
    s.post_json(CMS, &configmap("ie", &[])).await;
    let uri = format!(
        "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30"
    );
    let resp = s
        .handler
        .handle(request(Method::GET, &uri, &[], Bytes::new()))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let lines = watch_lines(&mut body, 2).await;
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[1]["type"], "BOOKMARK");
    assert_eq!(lines[1]["object"]["kind"], "ConfigMap");
    assert_eq!(
        lines[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert!(lines[1]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|rv| !rv.is_empty()));
}

/// Events ready together are written in one data frame (see the watch handler's `batch`): each
/// still parses as its own line, in order.
#[tokio::test]
async fn events_written_together_are_each_one_line() {
    let s = server().await;
    for i in 0..5 {
        s.post_json(CMS, &configmap(&format!("b-{i}"), &[])).await;
    }
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&timeoutSeconds=30"),
            &[],
            Bytes::new(),
        ))
        .await;
    let mut body = resp.into_body();
    let mut names = Vec::new();
    let mut widest = 0;
    let mut buf = Vec::new();
    while names.len() < 5 {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(30), body.frame())
            .await
            .expect("watch stream stalled")
            .expect("stream ended early")
            .expect("frame");
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        let mut lines = 0;
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let ev: serde_json::Value = serde_json::from_slice(&line).expect("one JSON event");
            assert_eq!(ev["type"], "ADDED");
            names.push(
                ev["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
            lines += 1;
        }
        widest = widest.max(lines);
    }
    assert_eq!(names, (0..5).map(|i| format!("b-{i}")).collect::<Vec<_>>());
    assert!(widest > 1, "no data frame carried more than one event");
}
