//! Protobuf bodies and responses through the handler: kubectl's typed create, Status errors,
//! lists, and the 415 for kinds without a protobuf form.

mod common;

use common::*;
use http::{Method, StatusCode};
use kapi_endpoints::protobuf;
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const KUBECTL_ACCEPT: &str = "application/vnd.kubernetes.protobuf,application/json";
const PB: &str = "application/vnd.kubernetes.protobuf";

#[tokio::test]
async fn protobuf_create_get_and_list() {
    let s = server().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "pb", "namespace": "default", "labels": {"x": "y"}},
        "data": {"k": "v"}});
    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[("content-type", PB), ("accept", KUBECTL_ACCEPT)],
            protobuf::encode(&cm).unwrap(),
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.header("content-type"), PB);
    let created = protobuf::decode(&r.bytes).unwrap();
    assert_eq!(created["data"], json!({"k": "v"}));
    assert_eq!(created["metadata"]["labels"], json!({"x": "y"}));
    assert!(created["metadata"]["uid"].is_string());

    // The object reads back identically as JSON.
    let got = s.get(&format!("{CMS}/pb")).await.json();
    assert_eq!(got["data"], json!({"k": "v"}));
    assert_eq!(
        got["metadata"]["creationTimestamp"],
        created["metadata"]["creationTimestamp"]
    );

    let list = s.get_as(CMS, PB).await;
    assert_eq!(list.header("content-type"), PB);
    let list = protobuf::decode(&list.bytes).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"][0]["metadata"]["name"], "pb");
}

#[tokio::test]
async fn garbage_is_a_bad_request_status_in_protobuf() {
    let s = server().await;
    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[("content-type", PB), ("accept", KUBECTL_ACCEPT)],
            b"k8s\0\x0a\xff".to_vec(),
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.header("content-type"), PB);
    let status = protobuf::decode(&r.bytes).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(status["code"], 400);

    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[("content-type", PB), ("accept", "application/json")],
            b"{\"not\":\"protobuf\"}".to_vec(),
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["reason"], "BadRequest");
}
