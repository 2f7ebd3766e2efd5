//! A JSON list written from its items' pre-encoded bytes (the watch cache keeps each object's
//! list-item JSON): the envelope is encoded, the items are concatenated as they are, and the
//! body streams out in chunks — no item is decoded, re-encoded or copied into one big value.
//! The bytes equal what [`crate::transform::list_value`] would encode.

use crate::transform::{api_version, ListPayload};
use crate::{BoxError, ResponseBody};
use bytes::{Bytes, BytesMut};
use futures::stream;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use kapi_registry::rest::ResourceInfo;
use serde_json::{json, Map};

/// Items are gathered into chunks of about this size (fewer, larger writes).
const CHUNK: usize = 64 * 1024;

/// The list's body from `encoded` (one entry per item, in order).
pub fn body(info: &ResourceInfo, list: &ListPayload, encoded: Vec<Bytes>) -> ResponseBody {
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), json!(list.resource_version));
    if let Some(c) = list.continue_token.as_ref().filter(|c| !c.is_empty()) {
        meta.insert("continue".into(), json!(c));
    }
    if let Some(n) = list.remaining_item_count {
        meta.insert("remainingItemCount".into(), json!(n));
    }
    let envelope =
        json!({"kind": info.list_kind, "apiVersion": api_version(info), "metadata": meta});
    let mut head = envelope.to_string();
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
        buf.extend_from_slice(item);
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
