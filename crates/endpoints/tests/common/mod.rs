//! A real API handler over the real registry and the embedded store in a temporary
//! directory, driven with real `http::Request`s.

#![allow(dead_code)]

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use kapi_admission::Chain;
use kapi_endpoints::{ApiServerHandler, BoxError, HandlerConfig, RequestBody, ResponseBody};
use kapi_resources::RegistryConfig;
use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::DynStorage;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub struct Server {
    pub handler: ApiServerHandler,
    pub storage: DynStorage,
    _dir: tempfile::TempDir,
}

pub async fn server() -> Server {
    server_with(|c| c).await
}

pub async fn server_with(tune: impl FnOnce(RegistryConfig) -> RegistryConfig) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: DynStorage =
        Arc::new(EmbeddedStorage::open(dir.path()).expect("open embedded store"));
    let groups = kapi_resources::build(tune(RegistryConfig::new(storage.clone())))
        .await
        .expect("build registry");
    kapi_resources::bootstrap(&groups, 6443)
        .await
        .expect("bootstrap");
    let handler =
        ApiServerHandler::new(groups, Arc::new(Chain::default()), HandlerConfig::default());
    Server {
        handler,
        storage,
        _dir: dir,
    }
}

pub fn body(bytes: impl Into<Bytes>) -> RequestBody {
    Full::new(bytes.into())
        .map_err(|never| -> BoxError { match never {} })
        .boxed_unsync()
}

pub fn request(
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    payload: impl Into<Bytes>,
) -> Request<RequestBody> {
    let mut b = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(body(payload)).expect("request")
}

/// A response read whole.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub bytes: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.bytes)))
    }
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

pub async fn read(resp: http::Response<ResponseBody>) -> Reply {
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.expect("body").to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        bytes,
    }
}

impl Server {
    pub async fn send(&self, req: Request<RequestBody>) -> Reply {
        read(self.handler.handle(req).await).await
    }
    pub async fn get(&self, uri: &str) -> Reply {
        self.send(request(Method::GET, uri, &[], Bytes::new()))
            .await
    }
    pub async fn get_as(&self, uri: &str, accept: &str) -> Reply {
        self.send(request(
            Method::GET,
            uri,
            &[("accept", accept)],
            Bytes::new(),
        ))
        .await
    }
    pub async fn post_json(&self, uri: &str, v: &Value) -> Reply {
        self.send(request(
            Method::POST,
            uri,
            &[("content-type", "application/json")],
            v.to_string(),
        ))
        .await
    }
    pub async fn put_json(&self, uri: &str, v: &Value) -> Reply {
        self.send(request(
            Method::PUT,
            uri,
            &[("content-type", "application/json")],
            v.to_string(),
        ))
        .await
    }
    pub async fn delete(&self, uri: &str) -> Reply {
        self.send(request(Method::DELETE, uri, &[], Bytes::new()))
            .await
    }
}

pub fn configmap(name: &str, data: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// Reads watch lines until `n` complete lines arrived or the stream ended. The per-frame
/// guard only keeps a broken stream from hanging the test.
pub async fn watch_lines(body: &mut ResponseBody, n: usize) -> Vec<Value> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let frame = match tokio::time::timeout(Duration::from_secs(30), body.frame()).await {
            Ok(Some(Ok(f))) => f,
            Ok(_) => break,
            Err(_) => panic!("watch stream stalled after {} lines", out.len()),
        };
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            out.push(serde_json::from_slice(&line).expect("watch line is JSON"));
        }
    }
    out
}
