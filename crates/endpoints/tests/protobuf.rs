//! Protobuf bodies and responses through the handler: kubectl's typed create, Status errors,
//! lists, and the 415 for kinds without a protobuf form.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::*;
use http::{Method, StatusCode};
use kapi_endpoints::protobuf;
use serde_json::{json, Value};

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

/// Reads protobuf watch frames (4-byte big-endian length, bare `metav1.WatchEvent`) until `n`
/// arrived or the stream ended; each is (type, decoded object). The per-frame guard only keeps
/// a broken stream from hanging the test.
async fn watch_frames(body: &mut kapi_endpoints::ResponseBody, n: usize) -> Vec<(String, Value)> {
    use http_body_util::BodyExt;
    use prost::Message;
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let frame =
            match tokio::time::timeout(std::time::Duration::from_secs(30), body.frame()).await {
                Ok(Some(Ok(f))) => f,
                Ok(_) => break,
                Err(_) => panic!("watch stream stalled after {} frames", out.len()),
            };
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
        while buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if buf.len() < 4 + len {
                break;
            }
            let msg: Vec<u8> = buf.drain(..4 + len).skip(4).collect();
            let ev = k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(msg.as_slice())
                .expect("frame is a WatchEvent");
            let raw = ev
                .object
                .and_then(|o| o.raw)
                .expect("event carries an object");
            out.push((
                ev.r#type.unwrap_or_default(),
                protobuf::decode(&raw).expect("object is enveloped protobuf"),
            ));
        }
    }
    out
}

#[tokio::test]
async fn protobuf_watch_streams_frames() {
    let s = server().await;
    s.post_json(CMS, &configmap("w-1", &[])).await;
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&timeoutSeconds=30"),
            &[("accept", KUBECTL_ACCEPT)],
            bytes::Bytes::new(),
        ))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = resp.into_body();
    let first = watch_frames(&mut body, 1).await;
    assert_eq!(first[0].0, "ADDED");
    assert_eq!(first[0].1["kind"], "ConfigMap");
    assert_eq!(first[0].1["metadata"]["name"], "w-1");
    let mut changed = configmap("w-1", &[("k", "v")]);
    changed["metadata"]["namespace"] = json!("default");
    s.put_json(&format!("{CMS}/w-1"), &changed).await;
    s.delete(&format!("{CMS}/w-1")).await;
    let more = watch_frames(&mut body, 2).await;
    assert_eq!(more[0].0, "MODIFIED");
    assert_eq!(more[0].1["data"], json!({"k": "v"}));
    assert_eq!(more[1].0, "DELETED");
    assert_eq!(more[1].1["metadata"]["name"], "w-1");
}

/// Frames ready together are written in one data frame (see the watch handler's `batch`): each
/// keeps its own length prefix and decodes on its own, in order.
#[tokio::test]
async fn protobuf_watch_frames_written_together_decode_one_by_one() {
    use http_body_util::BodyExt;
    let s = server().await;
    for i in 0..5 {
        s.post_json(CMS, &configmap(&format!("pb-{i}"), &[])).await;
    }
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&timeoutSeconds=30"),
            &[("accept", KUBECTL_ACCEPT)],
            bytes::Bytes::new(),
        ))
        .await;
    let mut body = resp.into_body();
    // How many whole length-prefixed frames `data` holds, if it ends at a frame's end.
    let whole = |data: &[u8]| -> Option<usize> {
        let (mut at, mut count) = (0, 0);
        while at + 4 <= data.len() {
            let len = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            at += 4 + len as usize;
            count += 1;
        }
        (at == data.len()).then_some(count)
    };
    let mut all = Vec::new();
    let mut widest = 0;
    while whole(&all).unwrap_or(0) < 5 {
        let data = body
            .frame()
            .await
            .expect("a frame")
            .expect("data")
            .into_data()
            .expect("data");
        widest = widest.max(whole(&data).expect("a write holds whole frames"));
        all.extend_from_slice(&data);
    }
    assert!(widest > 1, "no data frame carried more than one event");
    let frames = watch_frames(
        &mut kapi_endpoints::responses::full_body(bytes::Bytes::from(all)),
        5,
    )
    .await;
    let names: Vec<&str> = frames
        .iter()
        .map(|(t, o)| {
            assert_eq!(t, "ADDED");
            o["metadata"]["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(names, vec!["pb-0", "pb-1", "pb-2", "pb-3", "pb-4"]);
}

#[tokio::test]
async fn protobuf_watch_bookmark_and_error_events() {
    let s = server_with(|mut c| {
        c.watch_cache = false;
        c
    })
    .await;
    s.post_json(CMS, &configmap("b-1", &[])).await;
    let uri = format!(
        "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=30"
    );
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &uri,
            &[("accept", KUBECTL_ACCEPT)],
            bytes::Bytes::new(),
        ))
        .await;
    let mut body = resp.into_body();
    let frames = watch_frames(&mut body, 2).await;
    assert_eq!(frames[0].0, "ADDED");
    assert_eq!(frames[1].0, "BOOKMARK");
    assert_eq!(frames[1].1["kind"], "ConfigMap");
    assert_eq!(
        frames[1].1["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    drop(body);

    let current = s.storage.current_revision().await.unwrap();
    s.post_json(CMS, &configmap("b-2", &[])).await;
    s.storage.compact(current + 1).await.unwrap();
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&resourceVersion=1"),
            &[("accept", KUBECTL_ACCEPT)],
            bytes::Bytes::new(),
        ))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let frames = watch_frames(&mut body, 2).await;
    assert_eq!(frames.len(), 1, "the stream ends after the error");
    assert_eq!(frames[0].0, "ERROR");
    let st = &frames[0].1;
    assert_eq!(
        (st["kind"].as_str(), st["apiVersion"].as_str()),
        (Some("Status"), Some("v1"))
    );
    assert_eq!(st["code"], 410);
    assert_eq!(st["reason"], "Expired");
}

#[tokio::test]
async fn protobuf_watch_of_a_table_stays_json() {
    let s = server().await;
    s.post_json(CMS, &configmap("t-1", &[])).await;
    let accept = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{CMS}?watch=true&timeoutSeconds=30"),
            &[("accept", accept)],
            bytes::Bytes::new(),
        ))
        .await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let mut body = resp.into_body();
    let lines = watch_lines(&mut body, 1).await;
    assert_eq!(lines[0]["object"]["kind"], "Table");
}

/// A resource of a kind without a protobuf form, served by the configmaps storage under
/// another group and kind (what a custom resource looks like to the handler).
struct Widgets {
    info: kapi_registry::rest::ResourceInfo,
    inner: std::sync::Arc<dyn kapi_registry::rest::Storage>,
}

impl kapi_registry::rest::Storage for Widgets {
    fn info(&self) -> &kapi_registry::rest::ResourceInfo {
        &self.info
    }
    fn decode(
        &self,
        body: kapi_machinery::Object,
        validation: kapi_registry::rest::FieldValidation,
    ) -> Result<(kapi_machinery::Object, Vec<String>), kapi_machinery::ApiError> {
        self.inner.decode(body, validation)
    }
    fn as_creater(&self) -> Option<&dyn kapi_registry::rest::Creater> {
        self.inner.as_creater()
    }
    fn as_lister(&self) -> Option<&dyn kapi_registry::rest::Lister> {
        self.inner.as_lister()
    }
    fn as_watcher(&self) -> Option<&dyn kapi_registry::rest::Watcher> {
        self.inner.as_watcher()
    }
}

#[tokio::test]
async fn custom_kinds_refuse_protobuf_bodies_and_answer_json() {
    let s = server().await;
    let groups = kapi_resources::build(kapi_resources::RegistryConfig::new(s.storage.clone()))
        .await
        .unwrap();
    let configmaps = groups
        .iter()
        .filter(|g| g.group.is_empty())
        .flat_map(|g| g.versions.iter().flat_map(|v| v.storages.iter()))
        .find(|st| st.info().resource == "configmaps")
        .unwrap()
        .clone();
    let mut info = configmaps.info().clone();
    info.group = "example.com".into();
    info.resource = "widgets".into();
    info.kind = "Widget".into();
    info.list_kind = "WidgetList".into();
    s.handler.install_group(kapi_registry::rest::ApiGroupInfo {
        group: "example.com".into(),
        preferred_version: "v1".into(),
        versions: vec![kapi_registry::rest::ApiVersionInfo {
            version: "v1".into(),
            storages: vec![std::sync::Arc::new(Widgets {
                info,
                inner: configmaps,
            })],
        }],
    });
    const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}});
    let r = s
        .send(request(
            Method::POST,
            WIDGETS,
            &[("content-type", PB), ("accept", "application/json")],
            protobuf::encode(&cm).unwrap(),
        ))
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(r.json()["reason"], "UnsupportedMediaType");
    assert_eq!(
        r.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );

    let list = s.get_as(WIDGETS, KUBECTL_ACCEPT).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.header("content-type"), "application/json");
    let resp = s
        .handler
        .handle(request(
            Method::GET,
            &format!("{WIDGETS}?watch=true&timeoutSeconds=1"),
            &[("accept", KUBECTL_ACCEPT)],
            bytes::Bytes::new(),
        ))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
}
