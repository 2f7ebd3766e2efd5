//! Typed decoding of request bodies: a built-in resource's body is decoded into its
//! `k8s-openapi` type (dropping unknown fields, reporting them per `fieldValidation`) and
//! encoded back, so what is stored only carries fields the type knows.

use kapi_machinery::{ApiError, Object};
use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;

mod go_json;

/// `fieldValidation`: what to do with unknown or duplicate fields in a body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// `Ignore`: drop unknown fields and accept duplicate ones, without warnings.
    Ignore,
    /// `Warn`: drop unknown fields and report each, and each duplicate, as a warning.
    Warn,
    /// `Strict` (the default): fail the request with a 400 on an unknown or duplicate field.
    #[default]
    Strict,
}

/// A decoded request body and the warnings decoding gave (unknown fields under `Warn`).
pub type Decoded = Result<(Object, Vec<String>), ApiError>;

/// Prefix of every strict decoding error, as upstream words it.
pub const STRICT_PREFIX: &str = "strict decoding error: ";

/// Checks apiVersion/kind (filling them when absent), decodes `body` into `T` and encodes it
/// back. Unknown fields: Strict -> 400, Warn -> warnings, Ignore -> dropped silently.
pub fn decode<T>(body: Object, validation: FieldValidation) -> Decoded
where
    T: DeserializeOwned + Serialize + k8s_openapi::Resource,
{
    decode_as::<T>(body, validation, T::API_VERSION)
}

/// [`decode`] for a served version `api_version` whose schema is `T`'s, though `T` is
/// another version's type (flowcontrol v1beta3 bodies read as v1): checked, worded and
/// answered as `api_version`.
pub fn decode_as<T>(body: Object, validation: FieldValidation, api_version: &str) -> Decoded
where
    T: DeserializeOwned + Serialize + k8s_openapi::Resource,
{
    let mut body = body;
    check_type_meta(&mut body, api_version, T::KIND)?;
    body.set_api_version_kind(T::API_VERSION, T::KIND);
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let mut unknown: Vec<String> = Vec::new();
    let typed: T =
        serde_ignored::deserialize(body.into_value(), |path| unknown.push(format_path(&path)))
            .map_err(|e| cannot_handle(T::KIND, version, &go_decode_message(&e.to_string())))?;
    let warnings = unknown_fields(T::KIND, version, &unknown, validation)?;
    let value = serde_json::to_value(&typed).map_err(ApiError::internal)?;
    let mut obj = Object::from_value(value)?;
    obj.set_api_version_kind(api_version, T::KIND);
    Ok((obj, warnings))
}

/// A typed decoding error as Go's decoder words it where the two differ: a `[]byte` field that
/// is not base64 (`base64::CorruptInputError`).
fn go_decode_message(serde: &str) -> String {
    let offset = serde
        .strip_prefix("Invalid symbol ")
        .or_else(|| serde.strip_prefix("Invalid last symbol "))
        .and_then(|rest| rest.split_once(", offset "))
        .and_then(|(_, offset)| offset.trim_end_matches('.').parse::<usize>().ok());
    match offset {
        Some(offset) => format!("illegal base64 data at input byte {offset}"),
        None => serde.to_string(),
    }
}

/// What the unknown fields at `paths` come to under `validation`: Strict -> 400 (when there
/// are any), Warn -> one `unknown field "<path>"` warning each, Ignore -> nothing.
pub fn unknown_fields(
    kind: &str,
    version: &str,
    paths: &[String],
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let messages = || -> Vec<String> {
        paths
            .iter()
            .map(|p| format!("unknown field {p:?}"))
            .collect()
    };
    match validation {
        FieldValidation::Strict if !paths.is_empty() => {
            Err(strict_error(kind, version, &messages()))
        }
        FieldValidation::Warn => Ok(messages()),
        _ => Ok(Vec::new()),
    }
}

/// [`canonicalize`] of an object of `api_version`, served through `T` (another version's type
/// with the same schema): re-encoded as `T` and labelled back.
pub fn canonicalize_as<T>(obj: Object, api_version: &str) -> Object
where
    T: DeserializeOwned + Serialize + k8s_openapi::Resource,
{
    if api_version == T::API_VERSION {
        return canonicalize::<T>(obj);
    }
    let mut obj = obj;
    obj.set_api_version_kind(T::API_VERSION, T::KIND);
    let mut canonical = canonicalize::<T>(obj);
    canonical.set_api_version_kind(api_version, T::KIND);
    canonical
}

/// Re-encodes `obj` through `T`, giving upstream's field order; unchanged if it does not fit.
pub fn canonicalize<T>(obj: Object) -> Object
where
    T: DeserializeOwned + Serialize,
{
    // Read through a borrow: the object is only given back when it does not fit.
    let typed: Result<T, _> = T::deserialize(obj.as_map());
    match typed.and_then(|t| serde_json::to_value(&t)) {
        Ok(Value::Object(m)) => Object::from(m),
        _ => obj,
    }
}

/// 400 `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: <m1>, <m2>`,
/// as upstream's handler wraps a strict decoding error (`transformDecodeError`).
pub fn strict_error(kind: &str, version: &str, messages: &[String]) -> ApiError {
    cannot_handle(
        kind,
        version,
        &format!("{STRICT_PREFIX}{}", messages.join(", ")),
    )
}

/// Upstream's message for a body that does not fit the type.
pub fn cannot_handle(kind: &str, version: &str, err: &str) -> ApiError {
    cannot_handle_as(kind, version, kind, err)
}

/// `<body kind> in version "<v>" cannot be handled as a <kind>: <why>`.
pub fn cannot_handle_as(body_kind: &str, version: &str, kind: &str, err: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{body_kind} in version {version:?} cannot be handled as a {kind}: {err}"
    ))
}

/// Fills a missing apiVersion/kind from the endpoint (as upstream defaults them) and refuses
/// ones that name another type.
pub fn check_type_meta(body: &mut Object, api_version: &str, kind: &str) -> Result<(), ApiError> {
    let (got_version, got_kind) = (body.api_version().to_string(), body.kind().to_string());
    if !got_version.is_empty() && got_version != api_version {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({got_version}) does not match the expected API version ({api_version})"
        )));
    }
    if !got_kind.is_empty() && got_kind != kind {
        // upstream's transformDecodeError around the failed conversion between the two types
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let group = api_version
            .split_once('/')
            .map(|(g, _)| g.split('.').next().unwrap_or(g))
            .unwrap_or("core");
        return Err(cannot_handle_as(
            &got_kind,
            version,
            kind,
            &format!("converting ({version}.{got_kind}) to ({group}.{kind}): unknown conversion"),
        ));
    }
    body.set_api_version_kind(api_version, kind);
    Ok(())
}

/// Parses JSON as Go's `encoding/json` reads it into a value of Go type `go_type` (`map[string]interface {}`,
/// `[]handlers.jsonPatchOp`, ...): a syntax error or a top-level value of another JSON type is
/// Go's message, for the callers to wrap as upstream does.
pub fn parse_json_as(
    bytes: &[u8],
    go_type: &str,
    want: fn(&Value) -> bool,
) -> Result<Value, String> {
    if let Some(e) = go_json::syntax_error(bytes) {
        return Err(e);
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if !want(&value) {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type {go_type}",
            go_json::go_type(&value)
        ));
    }
    Ok(value)
}

/// Upstream's JSON serializer's error when it cannot read apiVersion/kind from `bytes`
/// (`couldn't get version/kind; json parse error: <Go's encoding/json error>`).
pub fn find_kind(bytes: &[u8]) -> Result<(), String> {
    match go_json::find_kind_error(bytes) {
        Some(e) => Err(find_kind_message(&e)),
        None => Ok(()),
    }
}

fn find_kind_message(go_error: &str) -> String {
    format!("couldn't get version/kind; json parse error: {go_error}")
}

/// Parses a JSON body as upstream's serializer reads it, with its [`find_kind`] error when the
/// body cannot be read.
pub fn parse_json(bytes: &[u8]) -> Result<Value, String> {
    kind_checked(bytes, serde_json::from_slice(bytes))
}

/// `parsed` (what serde made of `bytes`) checked as [`find_kind`] checks the bytes, without a
/// second parse of a body that reads: serde and Go's scanner accept the same grammar, so Go's
/// scanner runs only on bytes serde refused, for the message upstream gives. What serde refuses
/// and Go reads (invalid UTF-8, a lone surrogate escape, nesting deeper than 128) keeps
/// serde's message.
fn kind_checked<E: fmt::Display>(bytes: &[u8], parsed: Result<Value, E>) -> Result<Value, String> {
    let value = parsed.map_err(|e| {
        find_kind_message(&go_json::find_kind_error(bytes).unwrap_or_else(|| e.to_string()))
    })?;
    match go_json::kind_type_error(&value) {
        Some(e) => Err(find_kind_message(&e)),
        None => Ok(value),
    }
}

/// 400 for a body that could not be decoded and names no kind, as upstream's
/// `transformDecodeError` words it: `the object provided is unrecognized (must be of type
/// <kind>): <why> (<the body's first 30 bytes>)`.
pub fn unrecognized(kind: &str, err: &str, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): {err} ({})",
        summarize(body, 30)
    ))
}

/// Upstream's `summarizeData`: an object's first bytes as text, anything else in hex.
fn summarize(body: &[u8], max: usize) -> String {
    let head = body.get(..max).unwrap_or(body);
    let more = if body.len() > max { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// Renders a serde_ignored path as upstream's JSON paths (`spec.containers[0].foo`).
fn format_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", format_path(parent)),
        Path::Map { parent, key } => {
            let p = format_path(parent);
            if p.is_empty() {
                key.clone()
            } else {
                format!("{p}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => format_path(parent),
    }
}

/// Parses JSON bytes into an object of `kind`, also returning upstream-style messages for each
/// duplicated key (`duplicate field "metadata.name"`); the last value wins, as in Go. A body
/// that cannot be read is a 400 [`unrecognized`] with Go's parse error.
pub fn parse_json_with_duplicates(kind: &str, bytes: &[u8]) -> Decoded {
    let mut dups = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = TrackingSeed {
        path: &Pos::Root,
        dups: &mut dups,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|_| v));
    let value = kind_checked(bytes, parsed).map_err(|e| unrecognized(kind, &e, bytes))?;
    let messages = dups
        .into_iter()
        .map(|p| format!("duplicate field {p:?}"))
        .collect();
    Ok((Object::from_value(value)?, messages))
}

/// Parses `body` (an object of `kind`), runs `decode` on the object, and merges duplicate-key
/// findings into its result: Strict -> one 400 listing unknown and duplicate fields; Warn ->
/// warnings.
pub fn decode_bytes_with(
    kind: &str,
    body: &[u8],
    validation: FieldValidation,
    decode: impl FnOnce(Object, FieldValidation) -> Decoded,
) -> Decoded {
    let (obj, dups) = parse_json_with_duplicates(kind, body)?;
    match (validation, decode(obj, validation)) {
        (FieldValidation::Strict, Err(mut e))
            if !dups.is_empty() && e.message.contains(STRICT_PREFIX) =>
        {
            // One message lists unknown fields, then duplicates, as upstream's decoder does.
            e.message = format!("{}, {}", e.message, dups.join(", "));
            Err(e)
        }
        (FieldValidation::Strict, Ok((o, _))) if !dups.is_empty() => {
            let version = o
                .api_version()
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            Err(strict_error(o.kind(), &version, &dups))
        }
        (FieldValidation::Warn, Ok((o, mut w))) => {
            w.extend(dups);
            Ok((o, w))
        }
        (_, r) => r,
    }
}

/// Where a value sits, rendered (`metadata.name`, `items[0]`) only when a duplicate is found:
/// most bodies have none, so no path string is built per key.
#[derive(Clone, Copy)]
enum Pos<'a> {
    Root,
    Key(&'a Pos<'a>, &'a str),
    Index(&'a Pos<'a>, usize),
}

impl fmt::Display for Pos<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pos::Root => Ok(()),
            Pos::Key(Pos::Root, key) => f.write_str(key),
            Pos::Key(parent, key) => write!(f, "{parent}.{key}"),
            Pos::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

struct TrackingSeed<'a, 'p> {
    path: &'p Pos<'p>,
    dups: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for TrackingSeed<'_, '_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TrackingSeed<'_, '_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        let mut i = 0usize;
        loop {
            let pos = Pos::Index(self.path, i);
            let seed = TrackingSeed {
                path: &pos,
                dups: &mut *self.dups,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => out.push(v),
                None => break,
            }
            i = i.saturating_add(1);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = {
                let pos = Pos::Key(self.path, &key);
                if out.contains_key(&key) {
                    self.dups.push(pos.to_string());
                }
                map.next_value_seed(TrackingSeed {
                    path: &pos,
                    dups: &mut *self.dups,
                })?
            };
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;

    fn obj(v: Value) -> Object {
        Object::from_value(v).unwrap()
    }

    #[test]
    fn strict_reports_unknown_fields_with_paths() {
        let body = obj(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"foo": 1, "containers": [{"name": "c", "image": "i", "bar": true}]}}),
        );
        let err = decode::<Pod>(body.clone(), FieldValidation::Strict).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            r#"Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo", unknown field "spec.containers[0].bar""#
        );
        let (clean, warnings) = decode::<Pod>(body.clone(), FieldValidation::Warn).unwrap();
        assert_eq!(warnings.len(), 2);
        assert!(clean.get("spec").unwrap().get("foo").is_none());
        let (_, warnings) = decode::<Pod>(body, FieldValidation::Ignore).unwrap();
        assert!(warnings.is_empty());
    }

    #[test]
    fn type_meta_is_checked_and_filled() {
        let (o, _) = decode::<ConfigMap>(
            obj(json!({"metadata": {"name": "x"}})),
            FieldValidation::Strict,
        )
        .unwrap();
        assert_eq!(o.kind(), "ConfigMap");
        assert_eq!(o.api_version(), "v1");
        let e = decode::<ConfigMap>(
            obj(json!({"apiVersion": "apps/v1", "kind": "ConfigMap"})),
            FieldValidation::Strict,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "the API version in the data (apps/v1) does not match the expected API version (v1)"
        );
        let e = decode::<ConfigMap>(
            obj(json!({"kind": "ConfigMap", "data": {"a": 1}})),
            FieldValidation::Strict,
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with(r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: "#),
            "{}",
            e.message
        );
    }

    #[test]
    fn duplicates_are_found() {
        let (o, dups) = parse_json_with_duplicates(
            "ConfigMap",
            br#"{"metadata":{"name":"a","name":"b"},"data":{"k":"1"}}"#,
        )
        .unwrap();
        assert_eq!(o.name(), "b");
        assert_eq!(dups, vec![r#"duplicate field "metadata.name""#.to_string()]);
    }

    #[test]
    fn undecodable_bodies_are_unrecognized() {
        let e =
            parse_json_with_duplicates("ConfigMap", br#"{"metadata": {"name": "x"}, "data": {"#)
                .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
        assert_eq!(
            e.message,
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"metadata": {"name": "x"}, "d ...)"#
        );
        let e = parse_json_with_duplicates("Service", b"[1]").unwrap_err();
        assert_eq!(
            e.message,
            r#"the object provided is unrecognized (must be of type Service): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b315d)"#
        );
        let e = parse_json_with_duplicates("ConfigMap", b"").unwrap_err();
        assert_eq!(
            e.message,
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)"
        );
        // A body that reads, with a kind Go cannot put in its string field (matched without
        // regard to case).
        let e = parse_json_with_duplicates("ConfigMap", br#"{"Kind": 7}"#).unwrap_err();
        assert_eq!(
            e.message,
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string ({"Kind": 7})"#
        );
        // Go reads a lone surrogate escape; serde does not, and its message is kept.
        let e =
            parse_json_with_duplicates("ConfigMap", br#"{"data": {"k": "\ud800"}}"#).unwrap_err();
        assert!(
            e.message.starts_with(
                "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of hex escape"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn parse_json_gives_go_errors() {
        assert_eq!(
            parse_json(br#"{"kind": "ConfigMap", "data": {}}"#).unwrap()["kind"],
            "ConfigMap"
        );
        assert_eq!(
            parse_json(b"{not json").unwrap_err(),
            "couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string"
        );
        assert_eq!(
            parse_json(br#"{"apiVersion": true}"#).unwrap_err(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal bool into Go struct field .apiVersion of type string"
        );
    }
}
