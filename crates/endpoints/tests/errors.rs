//! Error bodies: each failure is a `metav1.Status` with kube-apiserver's code, reason and message.
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

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn unknown_resource_is_a_not_found_status() {
    let s = server().await;
    let r = s.get("/api/v1/namespaces/default/widgets").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        std::str::from_utf8(&r.bytes).unwrap().trim_end(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#
    );
    // A named object of a namespaced resource needs a namespace.
    assert_eq!(
        s.get("/api/v1/configmaps/x").await.status,
        StatusCode::NOT_FOUND
    );
    // Outside the API: plain text.
    let r = s.get("/nothing-here").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(&r.bytes[..], b"404 page not found\n");
}

#[tokio::test]
async fn unsupported_verb_is_405() {
    let s = server().await;
    let r = s
        .send(request(
            Method::POST,
            "/api/v1/configmaps",
            &[("content-type", "application/json")],
            "{}",
        ))
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.json()["reason"], "MethodNotAllowed");
    assert_eq!(
        r.json()["message"],
        r#"create is not supported on resources of kind "configmaps""#
    );
}

#[tokio::test]
async fn unacceptable_accept_is_406() {
    let s = server().await;
    let r = s.get_as(CMS, "application/xml").await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(r.json()["reason"], "NotAcceptable");
    assert_eq!(
        r.json()["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

#[tokio::test]
async fn oversized_body_is_413() {
    let s = server().await;
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024)
    );
    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[("content-type", "application/json")],
            big,
        ))
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(r.json()["reason"], "RequestEntityTooLarge");
    assert_eq!(
        r.json()["message"],
        "Request entity too large: limit is 3145728"
    );
}

#[tokio::test]
async fn unreadable_body_is_415_or_400() {
    let s = server().await;
    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[("content-type", "application/cbor")],
            Bytes::from_static(b"\xa0"),
        ))
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(r.json()["reason"], "UnsupportedMediaType");
    assert_eq!(
        r.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let r = s
        .send(request(
            Method::POST,
            CMS,
            &[("content-type", "application/json")],
            "{not json",
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["reason"], "BadRequest");
    assert_eq!(
        r.json()["message"],
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({not json)"
    );
}

#[tokio::test]
async fn bad_write_parameters_are_refused() {
    let s = server().await;
    let long = "m".repeat(129);
    let r = s
        .post_json(&format!("{CMS}?fieldManager={long}"), &configmap("fm", &[]))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.json()["message"],
        r#"CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes"#
    );
    let r = s
        .post_json(&format!("{CMS}?dryRun=Maybe"), &configmap("dr", &[]))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.json()["message"],
        r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Maybe"}: supported values: "All""#
    );
}

#[tokio::test]
async fn namespace_mismatch_is_400() {
    let s = server().await;
    let mut cm = configmap("ns", &[]);
    cm["metadata"]["namespace"] = serde_json::json!("kube-system");
    let r = s.post_json(CMS, &cm).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.json()["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}
