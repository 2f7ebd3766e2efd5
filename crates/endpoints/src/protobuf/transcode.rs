//! JSON ⇄ protobuf by the schema table: one generic walk, with the handful of types whose
//! JSON form is not an object (`Time`, `Quantity`, `IntOrString`, raw JSON, ...) special-cased.

use super::schema::{self, Kind, Label, MessageDef, Special};
use super::wire::{self, Raw, Reader};
use super::ProtoError;
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
/// Go's zero `time.Time` as Unix seconds: what upstream writes for an unset `metav1.Time`.
const GO_ZERO_TIME: i64 = -62_135_596_800;

fn lookup(name: &'static str) -> Result<&'static MessageDef, ProtoError> {
    schema::message(name).ok_or(ProtoError::NoSchema(name.to_string()))
}

fn mismatch(m: &MessageDef, v: &Value) -> ProtoError {
    ProtoError::Mismatch(format!("{}: unexpected JSON {v}", m.name))
}

/// A special message whose schema lacks the fields its kind needs (a schema bug, not input).
fn special_shape(m: &MessageDef) -> ProtoError {
    ProtoError::NoSchema(format!("{} (fields of its special kind)", m.name))
}

/// Encodes a JSON value as message `m` (without the envelope).
pub fn encode_message(m: &MessageDef, v: &Value) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::new();
    let field = |i: usize| m.fields.get(i).ok_or_else(|| mismatch(m, v));
    match schema::special(m) {
        Special::Time | Special::MicroTime => {
            let s = v.as_str().ok_or_else(|| mismatch(m, v))?;
            let t = DateTime::parse_from_rfc3339(s)
                .map_err(|e| ProtoError::Mismatch(format!("time {s:?}: {e}")))?;
            wire::put_tag(&mut out, 1, wire::VARINT);
            wire::put_varint(&mut out, t.timestamp() as u64);
            wire::put_tag(&mut out, 2, wire::VARINT);
            wire::put_varint(&mut out, i64::from(t.timestamp_subsec_nanos()) as u64);
        }
        Special::Duration => {
            let s = v.as_str().ok_or_else(|| mismatch(m, v))?;
            let nanos = super::duration::parse(s)
                .ok_or_else(|| ProtoError::Mismatch(format!("duration {s:?}")))?;
            wire::put_tag(&mut out, 1, wire::VARINT);
            wire::put_varint(&mut out, nanos as u64);
        }
        Special::Quantity => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(mismatch(m, v)),
            };
            wire::put_len(&mut out, 1, s.as_bytes());
        }
        Special::IntOrString => {
            let (ty, int, text) = match v {
                Value::Number(n) => (0, n.as_i64().ok_or_else(|| mismatch(m, v))?, ""),
                Value::String(s) => (1, 0, s.as_str()),
                _ => return Err(mismatch(m, v)),
            };
            wire::put_tag(&mut out, 1, wire::VARINT);
            wire::put_varint(&mut out, ty);
            wire::put_tag(&mut out, 2, wire::VARINT);
            wire::put_varint(&mut out, int as u64);
            wire::put_len(&mut out, 3, text.as_bytes());
        }
        Special::RawJson => {
            let raw = serde_json::to_vec(v).map_err(|e| ProtoError::Mismatch(e.to_string()))?;
            wire::put_len(&mut out, field(0)?.number, &raw);
        }
        Special::Items => {
            let items = v.as_array().ok_or_else(|| mismatch(m, v))?;
            let f = field(0)?;
            for item in items {
                encode_field(&mut out, f, item)?;
            }
        }
        Special::OrArray | Special::OrStringArray => match v {
            Value::Array(items) => {
                let f = field(1)?;
                for item in items {
                    encode_field(&mut out, f, item)?;
                }
            }
            _ => encode_field(&mut out, field(0)?, v)?,
        },
        Special::OrBool => match v {
            Value::Bool(b) => encode_field(&mut out, field(0)?, &Value::Bool(*b))?,
            _ => {
                encode_field(&mut out, field(0)?, &Value::Bool(true))?;
                encode_field(&mut out, field(1)?, v)?;
            }
        },
        Special::None => {
            let obj = v.as_object().ok_or_else(|| mismatch(m, v))?;
            // The generated table lists fields in number order; sort (and allocate) only when
            // it does not, since this runs for every message of every object written.
            let mut encode_one = |f: &schema::FieldDef| -> Result<(), ProtoError> {
                if f.inline {
                    // Go writes an embedded struct even when empty; its fields come from `v`.
                    return encode_field(&mut out, f, v);
                }
                match obj.get(f.json) {
                    None | Some(Value::Null) => Ok(()),
                    Some(val) => encode_labeled(&mut out, f, val),
                }
            };
            if m.fields.is_sorted_by_key(|f| f.number) {
                m.fields.iter().try_for_each(&mut encode_one)?;
            } else {
                let mut fields: Vec<&schema::FieldDef> = m.fields.iter().collect();
                fields.sort_by_key(|f| f.number);
                fields.into_iter().try_for_each(encode_one)?;
            }
        }
    }
    Ok(out)
}

fn encode_labeled(out: &mut Vec<u8>, f: &schema::FieldDef, v: &Value) -> Result<(), ProtoError> {
    match f.label {
        Label::Optional => encode_field(out, f, v),
        Label::Repeated => {
            let items = v
                .as_array()
                .ok_or_else(|| ProtoError::Mismatch(format!("{}: expected an array", f.json)))?;
            for item in items {
                encode_field(out, f, item)?;
            }
            Ok(())
        }
        Label::Map => {
            let map = v
                .as_object()
                .ok_or_else(|| ProtoError::Mismatch(format!("{}: expected an object", f.json)))?;
            // Go's generated marshalers write map entries in key order.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                let mut entry = Vec::new();
                wire::put_len(&mut entry, 1, k.as_bytes());
                let value_def = schema::FieldDef {
                    json: "",
                    number: 2,
                    label: Label::Optional,
                    kind: f.kind,
                    inline: false,
                    presence: false,
                };
                if !map[k].is_null() {
                    encode_field(&mut entry, &value_def, &map[k])?;
                }
                wire::put_len(out, f.number, &entry);
            }
            Ok(())
        }
    }
}

fn encode_field(out: &mut Vec<u8>, f: &schema::FieldDef, v: &Value) -> Result<(), ProtoError> {
    let bad = || ProtoError::Mismatch(format!("{}: unexpected JSON {v}", f.json));
    let n = f.number;
    match f.kind {
        Kind::String => wire::put_len(out, n, v.as_str().ok_or_else(bad)?.as_bytes()),
        Kind::Int32 | Kind::Int64 => {
            let i = v
                .as_i64()
                .or_else(|| v.as_f64().filter(|x| x.fract() == 0.0).map(|x| x as i64))
                .ok_or_else(bad)?;
            wire::put_tag(out, n, wire::VARINT);
            wire::put_varint(out, i as u64);
        }
        Kind::Bool => {
            wire::put_tag(out, n, wire::VARINT);
            wire::put_varint(out, u64::from(v.as_bool().ok_or_else(bad)?));
        }
        Kind::Double => {
            wire::put_tag(out, n, wire::FIXED64);
            out.extend_from_slice(&v.as_f64().ok_or_else(bad)?.to_bits().to_le_bytes());
        }
        Kind::Bytes => {
            let raw = B64
                .decode(v.as_str().ok_or_else(bad)?)
                .map_err(|e| ProtoError::Mismatch(format!("{}: {e}", f.json)))?;
            wire::put_len(out, n, &raw);
        }
        Kind::Message(name) => {
            let body = encode_message(lookup(name)?, v)?;
            wire::put_len(out, n, &body);
        }
    }
    Ok(())
}

/// Decodes message `m` into its JSON form. Zero scalars of non-pointer Go fields (Go writes
/// every one, even unset) are left out so defaulting sees them as absent, as upstream's
/// decoded structs serialize them; a Go pointer field (`presence`) is on the wire only when
/// set, so its zero is kept (`replicas: 0`).
pub fn decode_message(m: &MessageDef, bytes: &[u8]) -> Result<Value, ProtoError> {
    let fields = read_fields(bytes)?;
    let first = |number: u32| {
        fields
            .iter()
            .rev()
            .find(|(n, _)| *n == number)
            .map(|(_, r)| r)
    };
    let int = |number: u32| match first(number) {
        Some(Raw::Varint(v)) => *v as i64,
        _ => 0,
    };
    let text = |number: u32| -> Result<String, ProtoError> {
        match first(number) {
            Some(Raw::Len(b)) => utf8(b),
            _ => Ok(String::new()),
        }
    };
    Ok(match schema::special(m) {
        Special::Time | Special::MicroTime => {
            let (secs, nanos) = (int(1), int(2));
            if secs == GO_ZERO_TIME && nanos == 0 || first(1).is_none() && first(2).is_none() {
                return Ok(Value::Null);
            }
            let t = DateTime::<Utc>::from_timestamp(secs, nanos as u32)
                .ok_or_else(|| ProtoError::Malformed(format!("time out of range: {secs}")))?;
            let fmt = if schema::special(m) == Special::Time {
                SecondsFormat::Secs
            } else {
                SecondsFormat::Micros
            };
            Value::String(t.to_rfc3339_opts(fmt, true))
        }
        Special::Duration => Value::String(super::duration::format(int(1))),
        Special::Quantity => Value::String(text(1)?),
        Special::IntOrString => {
            if int(1) == 1 {
                Value::String(text(3)?)
            } else {
                Value::from(int(2) as i32)
            }
        }
        Special::RawJson => match first(m.fields.first().map_or(1, |f| f.number)) {
            Some(Raw::Len(b)) if !b.is_empty() => serde_json::from_slice(b)
                .map_err(|e| ProtoError::Malformed(format!("embedded JSON: {e}")))?,
            _ => Value::Null,
        },
        Special::Items => {
            let f = m.fields.first().ok_or_else(|| special_shape(m))?;
            Value::Array(decode_repeated(f, &fields)?)
        }
        Special::OrArray | Special::OrStringArray => {
            let [single, repeated, ..] = m.fields else {
                return Err(special_shape(m));
            };
            let items = decode_repeated(repeated, &fields)?;
            if items.is_empty() {
                decode_single(single, &fields)?.unwrap_or(Value::Null)
            } else {
                Value::Array(items)
            }
        }
        Special::OrBool => {
            let [flag, schema, ..] = m.fields else {
                return Err(special_shape(m));
            };
            match decode_single(schema, &fields)? {
                Some(schema) => schema,
                None => Value::Bool(int(flag.number) != 0),
            }
        }
        Special::None => {
            let mut obj = Map::new();
            for f in m.fields {
                if f.inline {
                    if let Some(Value::Object(embedded)) = decode_single(f, &fields)? {
                        obj.extend(embedded);
                    }
                    continue;
                }
                let v = match f.label {
                    Label::Optional if f.presence => decode_single(f, &fields)?,
                    Label::Optional => decode_single(f, &fields)?.filter(|v| !is_unset(v)),
                    Label::Repeated => {
                        Some(Value::Array(decode_repeated(f, &fields)?)).filter(|v| !is_unset(v))
                    }
                    Label::Map => decode_map(f, &fields)?,
                };
                if let Some(v) = v {
                    obj.insert(f.json.to_string(), v);
                }
            }
            Value::Object(obj)
        }
    })
}

fn is_unset(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

fn read_fields(bytes: &[u8]) -> Result<Vec<(u32, Raw<'_>)>, ProtoError> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    while let Some(f) = r.next_field()? {
        out.push(f);
    }
    Ok(out)
}

fn utf8(b: &[u8]) -> Result<String, ProtoError> {
    String::from_utf8(b.to_vec())
        .map_err(|_| ProtoError::Malformed("invalid UTF-8 in string".into()))
}

fn decode_scalar(kind: Kind, raw: &Raw<'_>) -> Result<Value, ProtoError> {
    let wrong = || ProtoError::Malformed(format!("wrong wire type for {kind:?}"));
    Ok(match (kind, raw) {
        (Kind::String, Raw::Len(b)) => Value::String(utf8(b)?),
        (Kind::Bytes, Raw::Len(b)) => Value::String(B64.encode(b)),
        (Kind::Int32, Raw::Varint(v)) => Value::from(*v as i64 as i32),
        (Kind::Int64, Raw::Varint(v)) => Value::from(*v as i64),
        (Kind::Bool, Raw::Varint(v)) => Value::Bool(*v != 0),
        (Kind::Double, Raw::Fixed64(v)) => serde_json::Number::from_f64(f64::from_bits(*v))
            .map(Value::Number)
            .unwrap_or(Value::Null),
        (Kind::Message(name), Raw::Len(b)) => decode_message(lookup(name)?, b)?,
        _ => return Err(wrong()),
    })
}

fn decode_single(
    f: &schema::FieldDef,
    fields: &[(u32, Raw<'_>)],
) -> Result<Option<Value>, ProtoError> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| *n == f.number)
        .map(|(_, raw)| decode_scalar(f.kind, raw))
        .transpose()
}

fn decode_repeated(
    f: &schema::FieldDef,
    fields: &[(u32, Raw<'_>)],
) -> Result<Vec<Value>, ProtoError> {
    let mut out = Vec::new();
    for (n, raw) in fields {
        if *n != f.number {
            continue;
        }
        match (f.kind, raw) {
            (Kind::Int32 | Kind::Int64 | Kind::Bool, Raw::Len(b)) => {
                for v in wire::packed_varints(b)? {
                    out.push(decode_scalar(f.kind, &Raw::Varint(v))?);
                }
            }
            _ => out.push(decode_scalar(f.kind, raw)?),
        }
    }
    Ok(out)
}

fn decode_map(
    f: &schema::FieldDef,
    fields: &[(u32, Raw<'_>)],
) -> Result<Option<Value>, ProtoError> {
    let mut map = Map::new();
    for (n, raw) in fields {
        if *n != f.number {
            continue;
        }
        let Raw::Len(entry) = raw else {
            return Err(ProtoError::Malformed(format!("map {} entry", f.json)));
        };
        let mut key = String::new();
        let mut value = None;
        for (en, eraw) in read_fields(entry)? {
            match (en, &eraw) {
                (1, Raw::Len(b)) => key = utf8(b)?,
                (2, _) => value = Some(decode_scalar(f.kind, &eraw)?),
                _ => {}
            }
        }
        let value = value.unwrap_or_else(|| match f.kind {
            Kind::String | Kind::Bytes => Value::String(String::new()),
            Kind::Message(_) => Value::Object(Map::new()),
            Kind::Bool => Value::Bool(false),
            _ => Value::from(0),
        });
        map.insert(key, value);
    }
    Ok((!map.is_empty()).then_some(Value::Object(map)))
}
