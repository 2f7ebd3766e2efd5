//! A list written from its items' pre-encoded bytes (the watch cache keeps each object's
//! list-item JSON, and its protobuf message once a protobuf list has made it): the envelope is
//! encoded, the items are concatenated as they are — no item is re-encoded, and no one big
//! value is built. JSON streams out in chunks. The bytes equal what the general path
//! ([`crate::transform::list_value`], then the encoder) writes.

use crate::transform::{api_version, list_meta_of, ListPayload};
use crate::{BoxError, ResponseBody};
use bytes::{Bytes, BytesMut};
use futures::stream;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use kapi_machinery::ApiError;
use kapi_registry::rest::{EncodedItem, ResourceInfo};
use serde_json::{json, Value};

/// Items are gathered into chunks of about this size (fewer, larger writes).
const CHUNK: usize = 64 * 1024;

/// The list without its items.
fn envelope(info: &ResourceInfo, list: &ListPayload) -> Value {
    let meta = list_meta_of(list);
    json!({"kind": info.list_kind, "apiVersion": api_version(info), "metadata": meta})
}

/// The protobuf list: each item's message is encoded once and kept beside the object.
pub fn protobuf(
    info: &ResourceInfo,
    list: ListPayload,
    encoded: &[EncodedItem],
) -> Result<ResponseBody, ApiError> {
    let envelope = envelope(info, &list);
    let items = list
        .items
        .into_iter()
        .zip(encoded)
        .map(|(o, e)| (o.into_value(), &*e.protobuf))
        .collect();
    let bytes = crate::protobuf::encode_list(&envelope, items).map_err(ApiError::internal)?;
    Ok(crate::responses::full_body(bytes))
}

/// The JSON list's body from `encoded` (one entry per item, in order).
pub fn json(info: &ResourceInfo, list: &ListPayload, encoded: &[EncodedItem]) -> ResponseBody {
    let mut head = envelope(info, list).to_string();
    // `{...}` → `{...,"items":[`: the items close the object.
    head.pop();
    head.push_str(r#","items":["#);
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut buf = BytesMut::with_capacity(CHUNK);
    buf.extend_from_slice(head.as_bytes());
    for (i, item) in encoded.iter().enumerate() {
        if i > 0 {
            buf.extend_from_slice(b",");
        }
        buf.extend_from_slice(&item.json);
        if buf.len() >= CHUNK {
            chunks.push(buf.split().freeze());
        }
    }
    buf.extend_from_slice(b"]}\n");
    chunks.push(buf.freeze());
    let frames = stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, BoxError>(Frame::data(c))),
    );
    StreamBody::new(frames).boxed_unsync()
}
