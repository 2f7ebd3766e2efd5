//! Groups added, replaced and removed while serving: the router swaps snapshots.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::*;
use http::StatusCode;
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo};

#[tokio::test]
async fn groups_come_and_go_at_run_time() {
    let s = server().await;
    let path = "/apis/example.com/v1/namespaces/default/configmaps";
    assert_eq!(s.get(path).await.status, StatusCode::NOT_FOUND);

    // Serve the core configmaps storage under a new group, as a custom resource would be.
    let core = s
        .handler
        .groups()
        .iter()
        .find(|g| g.group.is_empty())
        .cloned()
        .unwrap();
    let cms = core.versions[0]
        .storages
        .iter()
        .find(|st| st.info().resource == "configmaps" && st.info().subresource.is_empty())
        .cloned()
        .unwrap();
    s.handler.install_group(ApiGroupInfo {
        group: "example.com".into(),
        preferred_version: "v1".into(),
        versions: vec![ApiVersionInfo {
            version: "v1".into(),
            storages: vec![cms],
        }],
    });
    let list = s.get(path).await;
    assert_eq!(
        list.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&list.bytes)
    );
    assert_eq!(list.json()["apiVersion"], "example.com/v1");
    let groups = s.get("/apis").await.json();
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "example.com"),
        "{groups}"
    );

    assert!(s.handler.remove_group("example.com"));
    assert_eq!(s.get(path).await.status, StatusCode::NOT_FOUND);
    assert!(!s.handler.remove_group("example.com"));
    // The core group is untouched.
    assert_eq!(
        s.get("/api/v1/namespaces/default/configmaps").await.status,
        StatusCode::OK
    );
}
