//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) as a codec at the edge: request
//! bodies are decoded into JSON `Object`s and JSON responses are encoded to protobuf, so the
//! rest of kapi only ever sees JSON.
//!
//! The wire form is upstream's: the magic `k8s\0`, then a `runtime.Unknown` whose `raw` holds
//! the object encoded as its `generated.proto` message. Field numbers and kinds come from the
//! `k8s-pb` crate and JSON names from `k8s-openapi`, both read at build time (see `build.rs`);
//! nothing here knows a field number by hand.

mod duration;
pub mod schema;
mod transcode;
mod wire;

#[cfg(test)]
mod gen;
#[cfg(test)]
mod review_tests;
#[cfg(test)]
mod roundtrip_tests;
#[cfg(test)]
mod tests;

use k8s_pb::apimachinery::pkg::apis::meta::v1 as metav1;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use kapi_machinery::{ApiError, Object};
use prost::Message;
use serde_json::{Map, Value};

/// The media type of protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The Content-Type of protobuf watch streams.
pub const STREAM_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The prefix of every enveloped protobuf object.
pub const MAGIC: &[u8; 4] = b"k8s\0";

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NoMagic,
    #[error("unexpected EOF")]
    Truncated,
    #[error("{0}")]
    Malformed(String),
    #[error("no protobuf schema for {0}")]
    NoSchema(String),
    #[error("{0}")]
    Mismatch(String),
    #[error("object has no apiVersion/kind")]
    NoKind,
}

impl From<prost::DecodeError> for ProtoError {
    fn from(e: prost::DecodeError) -> Self {
        ProtoError::Malformed(e.to_string())
    }
}

/// Whether `apiVersion`/`kind` has a protobuf form (built-in types; custom resources do not).
pub fn has_form(api_version: &str, kind: &str) -> bool {
    schema::message_for(api_version, kind).is_some()
}

/// Whether the resource of a request reads and writes protobuf (its kind has a protobuf form).
/// A subresource's kind may live in another group than its parent (`serviceaccounts/token`
/// is `authentication.k8s.io/v1 TokenRequest`, `deployments/scale` is `autoscaling/v1 Scale`).
pub fn serves(scope: &crate::scope::RequestScope) -> bool {
    serves_resource(&scope.resource)
}

/// [`serves`] for a routed resource.
pub fn serves_resource(info: &kapi_registry::rest::ResourceInfo) -> bool {
    let (group, version, kind) = crate::discovery::response_gvk(info);
    has_form(&api_version(&group, &version), &kind)
}

/// `group/version` as `apiVersion` writes it.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Encodes a JSON object carrying `apiVersion` and `kind` as an enveloped protobuf message.
pub fn encode(value: &Value) -> Result<Vec<u8>, ProtoError> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(ProtoError::NoKind);
    }
    let m = schema::message_for(api_version, kind)
        .ok_or_else(|| ProtoError::NoSchema(format!("{api_version}, Kind={kind}")))?;
    let raw = transcode::encode_message(m, value)?;
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = Vec::with_capacity(unknown.encoded_len() + MAGIC.len());
    out.extend_from_slice(MAGIC);
    unknown
        .encode(&mut out)
        .map_err(|e| ProtoError::Malformed(e.to_string()))?;
    Ok(out)
}

/// Decodes an enveloped protobuf object into its JSON form, `apiVersion` and `kind` first.
pub fn decode(bytes: &[u8]) -> Result<Value, ProtoError> {
    let body = bytes.strip_prefix(MAGIC).ok_or(ProtoError::NoMagic)?;
    let unknown = Unknown::decode(body)?;
    let tm = unknown.type_meta.unwrap_or_default();
    let api_version = tm.api_version.unwrap_or_default();
    let kind = tm.kind.unwrap_or_default();
    if kind.is_empty() {
        return Err(ProtoError::NoKind);
    }
    let m = schema::message_for(&api_version, &kind)
        .ok_or_else(|| ProtoError::NoSchema(format!("{api_version}, Kind={kind}")))?;
    let decoded = transcode::decode_message(m, unknown.raw.as_deref().unwrap_or_default())?;
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    if let Value::Object(fields) = decoded {
        obj.extend(fields);
    }
    Ok(Value::Object(obj))
}

/// Decodes a protobuf request body; what cannot be read is a 400 as upstream.
pub fn decode_object(bytes: &[u8]) -> Result<Object, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    match decode(bytes) {
        Ok(Value::Object(m)) => Ok(Object::from(m)),
        Ok(_) => Err(ApiError::bad_request(
            "the body of the request was not an object",
        )),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// One protobuf watch frame: a 4-byte big-endian length, then a bare `metav1.WatchEvent`
/// (no envelope, as upstream's raw stream serializer) whose object is an enveloped object.
pub fn encode_watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtoError> {
    let event = metav1::WatchEvent {
        r#type: Some(event_type.to_string()),
        object: Some(RawExtension {
            raw: Some(encode(object)?),
        }),
    };
    let body = event.encode_to_vec();
    let len =
        u32::try_from(body.len()).map_err(|_| ProtoError::Malformed("frame too large".into()))?;
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}
