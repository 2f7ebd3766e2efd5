//! A list written from its items' pre-encoded bytes (the watch cache keeps each object's
//! list-item JSON, and its protobuf message once a protobuf list has made it): the envelope is
//! encoded, the items are concatenated as they are — no item is re-encoded, and no one big
//! value is built. JSON goes out in chunks, its length known (so large lists are gzipped). The bytes equal what the general path
//! ([`crate::transform::list_value`], then the encoder) writes.

use crate::transform::{api_version, list_meta_of, ListPayload};
use crate::{BoxError, ResponseBody};
use bytes::{Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt;
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

/// The protobuf list: each item's message is encoded once (from its JSON) and kept beside it.
pub fn protobuf(
    info: &ResourceInfo,
    list: &ListPayload,
    encoded: &[EncodedItem],
) -> Result<ResponseBody, ApiError> {
    let envelope = envelope(info, list);
    let bytes = crate::protobuf::encode_list(&envelope, encoded).map_err(ApiError::internal)?;
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
    Chunks {
        remaining: chunks.iter().map(|c| c.len() as u64).sum(),
        chunks: chunks.into(),
    }
    .boxed_unsync()
}

/// A body of ready chunks whose length is known, so compression (which waits for a size)
/// and `content-length` see it as a whole response.
struct Chunks {
    chunks: std::collections::VecDeque<Bytes>,
    remaining: u64,
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let next = self.chunks.pop_front();
        if let Some(c) = &next {
            self.remaining = self.remaining.saturating_sub(c.len() as u64);
        }
        std::task::Poll::Ready(next.map(|c| Ok(Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}
