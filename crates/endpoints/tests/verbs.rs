//! create/get/list/update/patch/delete of configmaps through the real handler and registry.
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
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn configmap_lifecycle() {
    let s = server().await;
    let created = s.post_json(CMS, &configmap("app", &[("a", "1")])).await;
    assert_eq!(
        created.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&created.bytes)
    );
    assert_eq!(created.header("content-type"), "application/json");
    let obj = created.json();
    assert_eq!(obj["metadata"]["namespace"], "default");
    assert!(!obj["metadata"]["uid"].as_str().unwrap_or("").is_empty());
    let rv = obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    let got = s.get(&format!("{CMS}/app")).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.json()["data"]["a"], "1");

    let list = s.get(CMS).await;
    assert_eq!(list.status, StatusCode::OK);
    let l = list.json();
    assert_eq!(l["kind"], "ConfigMapList");
    assert_eq!(l["apiVersion"], "v1");
    assert_eq!(l["items"].as_array().unwrap().len(), 1);
    assert!(l["metadata"]["resourceVersion"].as_str().is_some());

    // All namespaces.
    let all = s.get("/api/v1/configmaps").await;
    assert_eq!(all.status, StatusCode::OK);
    assert!(all.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["metadata"]["name"] == "app"));

    // Update with the current resourceVersion, then a stale one: 409.
    let mut next = obj.clone();
    next["data"]["a"] = json!("2");
    let updated = s.put_json(&format!("{CMS}/app"), &next).await;
    assert_eq!(
        updated.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&updated.bytes)
    );
    assert_eq!(updated.json()["data"]["a"], "2");
    let stale = s.put_json(&format!("{CMS}/app"), &next).await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    let st = stale.json();
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(
        st["message"],
        r#"Operation cannot be fulfilled on configmaps "app": the object has been modified; please apply your changes to the latest version and try again"#
    );
    assert_ne!(rv, updated.json()["metadata"]["resourceVersion"]);

    // Unconditional update: no resourceVersion.
    let unconditional = s
        .put_json(&format!("{CMS}/app"), &configmap("app", &[("a", "3")]))
        .await;
    assert_eq!(
        unconditional.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&unconditional.bytes)
    );
    assert_eq!(unconditional.json()["data"]["a"], "3");

    // Delete: a Success Status, then 404 with upstream's wording.
    let deleted = s.delete(&format!("{CMS}/app")).await;
    assert_eq!(deleted.status, StatusCode::OK);
    let d = deleted.json();
    assert_eq!(d["kind"], "Status");
    assert_eq!(d["status"], "Success");
    assert_eq!(d["details"]["name"], "app");
    assert_eq!(d["details"]["kind"], "configmaps");
    let gone = s.get(&format!("{CMS}/app")).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let g = gone.json();
    assert_eq!(g["reason"], "NotFound");
    assert_eq!(g["message"], r#"configmaps "app" not found"#);
    assert_eq!(g["details"]["name"], "app");
}

#[tokio::test]
async fn create_conflict_and_invalid() {
    let s = server().await;
    assert_eq!(
        s.post_json(CMS, &configmap("dup", &[])).await.status,
        StatusCode::CREATED
    );
    let again = s.post_json(CMS, &configmap("dup", &[])).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.json()["reason"], "AlreadyExists");
    assert_eq!(
        again.json()["message"],
        r#"configmaps "dup" already exists"#
    );

    let bad = s.post_json(CMS, &configmap("Not_Valid", &[])).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let b = bad.json();
    assert_eq!(b["reason"], "Invalid");
    assert!(
        b["message"].as_str().unwrap().starts_with(
            r#"ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid""#
        ),
        "{b}"
    );
    assert_eq!(b["details"]["causes"][0]["field"], "metadata.name");
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let s = server().await;
    let r = s
        .post_json(
            &format!("{CMS}?dryRun=All"),
            &configmap("dry", &[("k", "v")]),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.json()["data"]["k"], "v");
    assert_eq!(
        s.get(&format!("{CMS}/dry")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn field_validation_strict_and_warn() {
    let s = server().await;
    let mut obj = configmap("strict", &[]);
    obj["foo"] = json!("bar");
    let strict = s
        .post_json(&format!("{CMS}?fieldValidation=Strict"), &obj)
        .await;
    assert_eq!(strict.status, StatusCode::BAD_REQUEST);
    assert_eq!(strict.json()["reason"], "BadRequest");
    assert_eq!(
        strict.json()["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo""#
    );

    let warn = s
        .post_json(&format!("{CMS}?fieldValidation=Warn"), &obj)
        .await;
    assert_eq!(warn.status, StatusCode::CREATED);
    assert_eq!(warn.header("warning"), r#"299 - "unknown field \"foo\"""#);
    assert!(warn.json().get("foo").is_none());

    // The API default (no parameter) is Warn.
    let mut other = obj.clone();
    other["metadata"]["name"] = json!("default-warn");
    let default = s.post_json(CMS, &other).await;
    assert_eq!(default.status, StatusCode::CREATED);
    assert!(default.header("warning").contains("unknown field"));
}

#[tokio::test]
async fn merge_and_json_patch() {
    let s = server().await;
    assert_eq!(
        s.post_json(CMS, &configmap("p", &[("a", "1")]))
            .await
            .status,
        StatusCode::CREATED
    );
    let merge = s
        .send(request(
            Method::PATCH,
            &format!("{CMS}/p"),
            &[("content-type", "application/merge-patch+json")],
            r#"{"data":{"b":"2"}}"#,
        ))
        .await;
    assert_eq!(
        merge.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&merge.bytes)
    );
    assert_eq!(merge.json()["data"], json!({"a": "1", "b": "2"}));

    let jp = s
        .send(request(
            Method::PATCH,
            &format!("{CMS}/p"),
            &[("content-type", "application/json-patch+json")],
            r#"[{"op":"remove","path":"/data/a"},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]"#,
        ))
        .await;
    assert_eq!(
        jp.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&jp.bytes)
    );
    assert_eq!(jp.json()["data"], json!({"b": "2"}));
    assert_eq!(jp.json()["metadata"]["labels"]["x"], "y");

    let failed = s
        .send(request(
            Method::PATCH,
            &format!("{CMS}/p"),
            &[("content-type", "application/json-patch+json")],
            r#"[{"op":"test","path":"/data/b","value":"9"}]"#,
        ))
        .await;
    assert_eq!(failed.status, StatusCode::UNPROCESSABLE_ENTITY);

    let missing = s
        .send(request(
            Method::PATCH,
            &format!("{CMS}/nope"),
            &[("content-type", "application/merge-patch+json")],
            "{}",
        ))
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["message"], r#"configmaps "nope" not found"#);

    // Server-side apply needs a field manager (upstream's PatchOptions validation).
    let apply = s
        .send(request(
            Method::PATCH,
            &format!("{CMS}/p"),
            &[("content-type", "application/apply-patch+yaml")],
            "{}",
        ))
        .await;
    assert_eq!(apply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        apply.json()["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
    );
    // A PATCH has no default type: without a Content-Type, or with an unknown one, it is a
    // 415 listing the patch types in upstream's order.
    for headers in [&[("content-type", "application/x-unknown")][..], &[][..]] {
        let unknown = s
            .send(request(Method::PATCH, &format!("{CMS}/p"), headers, "{}"))
            .await;
        assert_eq!(unknown.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(unknown.json()["reason"], "UnsupportedMediaType");
        assert_eq!(
            unknown.json()["message"],
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        );
    }
}

/// Typed clients (the official Python client) send create and update bodies without a
/// Content-Type and may leave out apiVersion/kind: upstream reads them as JSON of the
/// endpoint's kind.
#[tokio::test]
async fn bodies_without_content_type_are_json() {
    let s = server().await;
    let created = s
        .send(request(
            Method::POST,
            CMS,
            &[],
            r#"{"metadata":{"name":"bare"},"data":{"a":"1"}}"#,
        ))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(created.json()["kind"], "ConfigMap");
    assert_eq!(created.json()["apiVersion"], "v1");
    assert_eq!(created.json()["data"]["a"], "1");
    let updated = s
        .send(request(
            Method::PUT,
            &format!("{CMS}/bare"),
            &[],
            r#"{"metadata":{"name":"bare"},"data":{"a":"2"}}"#,
        ))
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    assert_eq!(updated.json()["data"]["a"], "2");
    let other = s
        .send(request(
            Method::POST,
            CMS,
            &[],
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#,
        ))
        .await;
    assert_eq!(other.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        other.json()["message"],
        r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#
    );
}

#[tokio::test]
async fn paging_with_limit_and_continue() {
    let s = server().await;
    for i in 0..5 {
        assert_eq!(
            s.post_json(CMS, &configmap(&format!("page-{i}"), &[]))
                .await
                .status,
            StatusCode::CREATED
        );
    }
    let mut names = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let uri = if token.is_empty() {
            format!("{CMS}?limit=2")
        } else {
            format!("{CMS}?limit=2&continue={token}")
        };
        let page = s.get(&uri).await;
        assert_eq!(
            page.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&page.bytes)
        );
        let p = page.json();
        let items = p["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        names.extend(
            items
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_string()),
        );
        pages += 1;
        if pages == 1 {
            assert_eq!(p["metadata"]["remainingItemCount"], 3);
        }
        match p["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = t.to_string(),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(
        names,
        (0..5).map(|i| format!("page-{i}")).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn delete_collection_returns_the_deleted_list() {
    let s = server().await;
    for i in 0..3 {
        let mut cm = configmap(&format!("dc-{i}"), &[]);
        cm["metadata"]["labels"] = json!({"del": if i < 2 { "yes" } else { "no" }});
        assert_eq!(s.post_json(CMS, &cm).await.status, StatusCode::CREATED);
    }
    let r = s
        .send(request(
            Method::DELETE,
            &format!("{CMS}?labelSelector=del%3Dyes"),
            &[],
            Bytes::new(),
        ))
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.json()["kind"], "ConfigMapList");
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 2);
    let left = s.get(CMS).await.json();
    let names: Vec<&str> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["dc-2"]);
}

#[tokio::test]
async fn duplicate_fields_follow_field_validation() {
    let s = server().await;
    let body =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dupkey","name":"dupkey"}}"#;
    let strict = s
        .send(request(
            Method::POST,
            &format!("{CMS}?fieldValidation=Strict"),
            &[("content-type", "application/json")],
            body,
        ))
        .await;
    assert_eq!(strict.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        strict.json()["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name""#
    );
    let warn = s
        .send(request(
            Method::POST,
            CMS,
            &[("content-type", "application/json")],
            body,
        ))
        .await;
    assert_eq!(warn.status, StatusCode::CREATED);
    assert_eq!(
        warn.header("warning"),
        r#"299 - "duplicate field \"metadata.name\"""#
    );
}

/// Upstream's `ReturnDeletedObject`: services (like pods, namespaces, serviceaccounts and
/// storageclasses) answer a delete with the deleted object; other resources with a Status.
#[tokio::test]
async fn deletes_return_the_object_where_upstream_does() {
    let s = server().await;
    let svc = serde_json::json!({"metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}});
    let created = s
        .post_json("/api/v1/namespaces/default/services", &svc)
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let deleted = s.delete("/api/v1/namespaces/default/services/web").await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(deleted.json()["kind"], "Service");
    assert_eq!(deleted.json()["metadata"]["name"], "web");
    assert_eq!(
        deleted.json()["metadata"]["uid"],
        created.json()["metadata"]["uid"]
    );
    assert_eq!(deleted.json()["spec"]["ports"][0]["port"], 80);

    let sa = serde_json::json!({"metadata": {"name": "robot"}});
    s.post_json("/api/v1/namespaces/default/serviceaccounts", &sa)
        .await;
    let deleted = s
        .delete("/api/v1/namespaces/default/serviceaccounts/robot")
        .await;
    assert_eq!(deleted.json()["kind"], "ServiceAccount");

    s.post_json(CMS, &configmap("plain", &[])).await;
    let deleted = s.delete(&format!("{CMS}/plain")).await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(deleted.json()["kind"], "Status");
    assert_eq!(deleted.json()["status"], "Success");
    assert_eq!(deleted.json()["details"]["name"], "plain");
}

/// A PUT whose body names a uid is conditional on it (upstream's `UpdatedObjectInfo`
/// preconditions), failing with the storage's wording inside a 409.
#[tokio::test]
async fn an_update_naming_another_uid_is_a_conflict() {
    let s = server().await;
    let created = s.post_json(CMS, &configmap("owned", &[("a", "1")])).await;
    let uid = created.json()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let mut body = created.json();
    body["metadata"]["uid"] = "someone-else".into();
    let r = s.put_json(&format!("{CMS}/owned"), &body).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(r.json()["reason"], "Conflict");
    assert_eq!(
        r.json()["message"],
        format!(
            r#"Operation cannot be fulfilled on configmaps "owned": StorageError: invalid object, Code: 4, Key: /configmaps/default/owned, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: someone-else, UID in object meta: {uid}"#
        )
    );
    // Its own uid is fine.
    body["metadata"]["uid"] = uid.into();
    assert_eq!(
        s.put_json(&format!("{CMS}/owned"), &body).await.status,
        StatusCode::OK
    );
}

/// Patch bodies that do not parse get upstream's 400s, worded as Go's JSON decoder.
#[tokio::test]
async fn undecodable_patches_are_bad_requests() {
    let s = server().await;
    s.post_json(CMS, &configmap("p", &[("a", "1")])).await;
    let cases: &[(&str, &str, &str)] = &[
        (
            "application/merge-patch+json",
            "{\"data\": ",
            "error decoding patch: unexpected end of JSON input",
        ),
        (
            "application/merge-patch+json",
            "[1]",
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            "application/json-patch+json",
            "{\"op\": \"add\"}",
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        (
            "application/json-patch+json",
            "[{\"op\": 'add'}]",
            "error decoding patch: invalid character '\\'' looking for beginning of value",
        ),
        (
            "application/strategic-merge-patch+json",
            "{\"data\" {}}",
            "invalid character '{' after object key",
        ),
    ];
    for (content_type, body, message) in cases {
        let r = s
            .send(request(
                Method::PATCH,
                &format!("{CMS}/p"),
                &[("content-type", content_type)],
                *body,
            ))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{content_type} {body}");
        assert_eq!(r.json()["reason"], "BadRequest");
        assert_eq!(r.json()["message"], *message, "{content_type} {body}");
    }
}
