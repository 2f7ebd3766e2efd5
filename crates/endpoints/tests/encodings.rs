//! Encodings: YAML in and out, `?pretty`, `as=Table` and `as=PartialObjectMetadata[List]`.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::*;
use http::{Method, StatusCode};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const KUBECTL_TABLE: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn yaml_round_trip() {
    let s = server().await;
    let yaml =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  key: value\n";
    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[
                ("content-type", "application/yaml"),
                ("accept", "application/yaml"),
            ],
            yaml,
        ))
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.header("content-type"), "application/yaml");
    let back: Value = serde_saphyr::from_str(std::str::from_utf8(&r.bytes).unwrap()).unwrap();
    assert_eq!(back["metadata"]["name"], "from-yaml");
    assert_eq!(back["data"]["key"], "value");
    let got = s.get(&format!("{CMS}/from-yaml")).await;
    assert_eq!(got.json()["data"]["key"], "value");
}

#[tokio::test]
async fn pretty_indents() {
    let s = server().await;
    s.post_json(CMS, &configmap("pretty", &[])).await;
    let r = s.get(&format!("{CMS}/pretty?pretty=true")).await;
    let text = std::str::from_utf8(&r.bytes).unwrap();
    assert!(text.starts_with("{\n  \""), "{text}");
    let r = s.get(&format!("{CMS}/pretty")).await;
    let compact = std::str::from_utf8(&r.bytes).unwrap();
    assert!(
        compact.ends_with("}\n") && compact.matches('\n').count() == 1,
        "{compact}"
    );
}

#[tokio::test]
async fn table_of_a_list_and_an_object() {
    let s = server().await;
    s.post_json(CMS, &configmap("t1", &[("a", "1"), ("b", "2")]))
        .await;
    let r = s.get_as(&format!("{CMS}?limit=500"), KUBECTL_TABLE).await;
    assert_eq!(r.status, StatusCode::OK);
    let t = r.json();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert!(t["metadata"]["resourceVersion"].as_str().is_some());
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols[0], "Name");
    assert_eq!(t["columnDefinitions"][0]["type"], "string");
    let row = &t["rows"][0];
    assert_eq!(row["cells"][0], "t1");
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(row["object"]["metadata"]["name"], "t1");

    let one = s
        .get_as(
            &format!("{CMS}/t1?includeObject=Object"),
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        )
        .await;
    let t = one.json();
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"].as_array().unwrap().len(), 1);
    assert_eq!(t["rows"][0]["object"]["kind"], "ConfigMap");
    assert_eq!(t["rows"][0]["object"]["data"]["b"], "2");

    let none = s
        .get_as(&format!("{CMS}/t1?includeObject=None"), KUBECTL_TABLE)
        .await
        .json();
    assert!(none["rows"][0].get("object").is_none());

    let bad = s
        .get_as(&format!("{CMS}/t1?includeObject=Everything"), KUBECTL_TABLE)
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn partial_object_metadata() {
    let s = server().await;
    let mut cm = configmap("pom", &[("secret", "x")]);
    cm["metadata"]["labels"] = json!({"l": "v"});
    s.post_json(CMS, &cm).await;
    let one = s
        .get_as(
            &format!("{CMS}/pom"),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .await
        .json();
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["labels"]["l"], "v");
    assert!(one.get("data").is_none());
    let list = s
        .get_as(
            CMS,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        )
        .await
        .json();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    // PartialObjectMetadata (not List) for a list is refused, as upstream.
    let r = s
        .get_as(
            CMS,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
}

#[tokio::test]
async fn protobuf_accept_answers_protobuf_for_built_ins() {
    let s = server().await;
    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[
                ("content-type", "application/json"),
                (
                    "accept",
                    "application/vnd.kubernetes.protobuf,application/json",
                ),
            ],
            configmap("pb", &[]).to_string(),
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(
        r.header("content-type"),
        "application/vnd.kubernetes.protobuf"
    );
    let obj = kapi_endpoints::protobuf::decode(&r.bytes).unwrap();
    assert_eq!(obj["metadata"]["name"], "pb");
}
