//! Reading request bodies: bounded (413 over the limit, checked while reading, as upstream's
//! `limitedReadBody`) and decoded from JSON or YAML.

use crate::negotiation::InputFormat;
use crate::RequestBody;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use kapi_machinery::{ApiError, Object};
use serde_json::Value;

/// Reads at most `limit` bytes; 413 `Request entity too large: limit is <n>` beyond.
pub async fn read_limited(mut body: RequestBody, limit: usize) -> Result<Bytes, ApiError> {
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if buf.len().saturating_add(data.len()) > limit {
                return Err(ApiError::request_entity_too_large(format!(
                    "limit is {limit}"
                )));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Parses a body into a JSON value in the given format.
pub fn decode_value(bytes: &[u8], format: InputFormat) -> Result<Value, ApiError> {
    match format {
        InputFormat::Json => kapi_registry::codec::parse_json(bytes).map_err(ApiError::bad_request),
        InputFormat::Protobuf => crate::protobuf::decode_object(bytes).map(Value::from),
        InputFormat::Yaml => {
            let text = std::str::from_utf8(bytes).map_err(|e| {
                ApiError::bad_request(format!("error converting YAML to JSON: {e}"))
            })?;
            serde_saphyr::from_str::<Value>(text)
                .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))
        }
    }
}

/// Parses a server-side apply configuration as upstream's apply patcher does (`yaml.Unmarshal`):
/// a repeated key keeps its last value ([`repeated_keys`] names the repeats).
pub fn decode_apply(bytes: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?;
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
    };
    serde_saphyr::from_str_with_options::<Value>(text, options)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))
}

/// What upstream's `yaml.UnmarshalStrict` says of the repeated keys of a YAML body, for
/// `fieldValidation`: `line <n>: key "<k>" already set in map` for each scalar key repeated in
/// its mapping, at the repeat's line, in document order.
pub fn repeated_keys(bytes: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    use granit_parser::{Event, Parser};
    use std::collections::HashSet;
    enum Frame {
        Mapping {
            seen: HashSet<String>,
            key_next: bool,
        },
        Sequence,
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut found = Vec::new();
    let mut parser = Parser::new_from_str(text);
    while let Some(Ok((event, span))) = parser.next_event() {
        let node = matches!(
            event,
            Event::Scalar(..)
                | Event::MappingStart(..)
                | Event::SequenceStart(..)
                | Event::Alias(_)
        );
        if node {
            if let Some(Frame::Mapping { seen, key_next }) = stack.last_mut() {
                if *key_next {
                    if let Event::Scalar(key, ..) = &event {
                        if !seen.insert(key.to_string()) {
                            found.push(format!(
                                "line {}: key {} already set in map",
                                span.start.line(),
                                kapi_machinery::goformat::quote(key)
                            ));
                        }
                    }
                }
                *key_next = !*key_next;
            }
        }
        match event {
            Event::MappingStart(..) => stack.push(Frame::Mapping {
                seen: HashSet::new(),
                key_next: true,
            }),
            Event::SequenceStart(..) => stack.push(Frame::Sequence),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    found
}

/// Parses a body that must be one object.
pub fn decode_object(bytes: &[u8], format: InputFormat) -> Result<Object, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    match decode_value(bytes, format)? {
        Value::Object(m) => Ok(Object::from(m)),
        // What upstream's JSON serializer says of the JSON the body converts to.
        other => Err(ApiError::bad_request(
            kapi_registry::codec::find_kind(&serde_json::to_vec(&other).unwrap_or_default())
                .err()
                .unwrap_or_else(|| "the body is not an object".to_string()),
        )),
    }
}

/// Decodes a write body for `storage`: JSON through `decode_bytes` (which also finds duplicate
/// keys), YAML parsed first and then decoded; both apply `fieldValidation`. A body that cannot
/// be read is upstream's 400 `the object provided is unrecognized (must be of type <Kind>)`.
pub fn decode_for(
    storage: &dyn kapi_registry::rest::Storage,
    bytes: &[u8],
    format: InputFormat,
    validation: kapi_registry::rest::FieldValidation,
) -> Result<(Object, Vec<String>), ApiError> {
    match format {
        InputFormat::Json => storage.decode_bytes(bytes, validation),
        InputFormat::Yaml => {
            let obj = decode_object(bytes, format).map_err(|e| {
                kapi_registry::codec::unrecognized(&storage.info().kind, &e.message, bytes)
            })?;
            storage.decode(obj, validation)
        }
        InputFormat::Protobuf => storage.decode(decode_object(bytes, format)?, validation),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_configurations_keep_the_last_of_repeated_keys_and_name_each_repeat() {
        let body = "\napiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1\"\n  b: \"2\"\n  a: \"3\"\nlist:\n- {k: 1, k: 2}\n- k: 3\nkind: Other\n";
        let value = decode_apply(body.as_bytes()).unwrap();
        let repeats = repeated_keys(body.as_bytes());
        assert_eq!(value["data"]["a"], "3");
        assert_eq!(value["kind"], "Other");
        assert_eq!(
            repeats,
            [
                r#"line 7: key "a" already set in map"#,
                r#"line 9: key "k" already set in map"#,
                r#"line 11: key "kind" already set in map"#,
            ]
        );
        assert!(repeated_keys(b"a: {b: 1}\nc: [1, 1]\n").is_empty());
    }
}
