//! Discovery and OpenAPI paths are routed to their documents through the same handler.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::*;
use http::StatusCode;

#[tokio::test]
async fn discovery_paths() {
    let s = server().await;
    let api = s.get("/api").await;
    assert_eq!(api.status, StatusCode::OK);
    assert_eq!(api.json()["kind"], "APIVersions");
    let v1 = s.get("/api/v1").await;
    assert_eq!(v1.json()["kind"], "APIResourceList");
    let cms = v1.json()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "configmaps")
        .cloned()
        .unwrap();
    let verbs: Vec<&str> = cms["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        verbs,
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ]
    );
    let aggregated = s
        .get_as(
            "/apis",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )
        .await;
    assert_eq!(aggregated.status, StatusCode::OK);
    assert_eq!(aggregated.json()["kind"], "APIGroupDiscoveryList");
    assert_eq!(
        s.get("/apis/nothere.example.com/v1").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn openapi_paths() {
    let s = server().await;
    let index = s.get("/openapi/v3").await;
    assert_eq!(index.status, StatusCode::OK);
    let url = index.json()["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
    let doc = s.get(&url).await;
    assert_eq!(doc.status, StatusCode::OK);
    assert!(doc.json()["components"]["schemas"]
        .get("io.k8s.api.core.v1.ConfigMap")
        .is_some());
}
