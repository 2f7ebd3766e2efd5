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
