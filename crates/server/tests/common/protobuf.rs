//! Request bodies in protobuf as client-go frames them, and the JSON helpers the protobuf
//! tests share.

use super::{Conn, Reply};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as metav1;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{json, Value};

pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A body as client-go's protobuf serializer writes it.
pub fn framed(api_version: &str, kind: &str, m: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(m.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// `ObjectMeta` as Go writes it: every non-pointer field present, empty unless given.
pub fn meta(name: &str) -> metav1::ObjectMeta {
    metav1::ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        ..Default::default()
    }
}

pub async fn send_pb(
    conn: &mut Conn,
    method: &str,
    path: &str,
    api_version: &str,
    kind: &str,
    m: &impl Message,
) -> Reply {
    conn.send_bytes(method, path, PROTOBUF, &[], framed(api_version, kind, m))
        .await
}

pub async fn post_json(conn: &mut Conn, path: &str, body: Value) -> Value {
    let r = conn.send("POST", path, Some(&body.to_string())).await;
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.json()
}

pub async fn put_json(conn: &mut Conn, path: &str, body: Value) -> Value {
    let r = conn.send("PUT", path, Some(&body.to_string())).await;
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.json()
}

pub async fn get(conn: &mut Conn, path: &str) -> Reply {
    conn.send("GET", path, None).await
}

/// The pod admission plugin names the namespace's `default` service account; it may not be
/// there yet on a server that has just started.
pub async fn ensure_default_service_account(conn: &mut Conn) {
    let r = conn
        .send(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            Some(&json!({"metadata": {"name": "default"}}).to_string()),
        )
        .await;
    assert!(r.status == 201 || r.status == 409, "{}", r.body);
}

pub async fn create_pod(conn: &mut Conn, name: &str, labels: Value, node: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    post_json(
        conn,
        "/api/v1/namespaces/default/pods",
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "labels": labels}, "spec": spec}),
    )
    .await
}

pub fn delete_options(f: impl FnOnce(&mut metav1::DeleteOptions)) -> metav1::DeleteOptions {
    let mut o = metav1::DeleteOptions::default();
    f(&mut o);
    o
}
