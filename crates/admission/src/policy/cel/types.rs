//! CEL types as the checker sees them, and the types of values described by an OpenAPI v3
//! (structural) schema, after upstream's `apiserver/pkg/cel` `DeclType` and
//! `SchemaDeclType`: objects with their declared fields, lists, maps, scalars with formats,
//! and `dyn` for int-or-string and preserved unknown fields. Lists, maps and strings carry
//! the largest size the schema (or, without a bound, the request size limit) allows: the cost
//! estimate grows with it.

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Upstream's `maxRequestSizeBytes`: what bounds sizes the schema leaves open.
pub const MAX_REQUEST_SIZE: u64 = 3 * 1024 * 1024;

/// The longest string a request can hold (without its quotes).
pub const UNBOUNDED_STRING: u64 = MAX_REQUEST_SIZE - 2;

#[derive(Clone, Debug)]
pub enum Ty {
    Dyn,
    /// The type of an expression that failed to check: accepted everywhere so one mistake is
    /// reported once.
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    /// With its largest length.
    Str(u64),
    Bytes(u64),
    Duration,
    Timestamp,
    /// Element type and the most elements.
    List(Box<Ty>, u64),
    /// Key, value and the most entries.
    Map(Box<Ty>, Box<Ty>, u64),
    Object(Arc<ObjectTy>),
    Opt(Box<Ty>),
    Type(Box<Ty>),
    /// A library type (`kubernetes.Quantity`, `net.IP`, ...).
    Opaque(&'static str),
    /// A type parameter of an overload (`A`, `B`).
    Param(u8),
}

/// An object with declared fields (a schema with `properties`).
#[derive(Debug)]
pub struct ObjectTy {
    pub name: String,
    pub fields: BTreeMap<String, Ty>,
}

impl Ty {
    pub fn string() -> Ty {
        Ty::Str(UNBOUNDED_STRING)
    }

    pub fn list(elem: Ty) -> Ty {
        Ty::List(Box::new(elem), max_items(2))
    }

    pub fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v), max_properties(2))
    }

    pub fn object(name: &str, fields: BTreeMap<String, Ty>) -> Ty {
        Ty::Object(Arc::new(ObjectTy {
            name: name.to_string(),
            fields,
        }))
    }

    pub fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Error)
    }

    /// The most elements (lists, maps) or bytes (strings) a value of this type has: what
    /// iterating or scanning it costs.
    pub fn size(&self) -> u64 {
        match self {
            Ty::Str(n) | Ty::Bytes(n) | Ty::List(_, n) | Ty::Map(_, _, n) => *n,
            Ty::Dyn | Ty::Error => max_items(1),
            _ => 1,
        }
    }

    /// cel-go's `FormatCELType`.
    pub fn name(&self) -> String {
        match self {
            Ty::Dyn => "dyn".into(),
            Ty::Error => "*error*".into(),
            Ty::Null => "null_type".into(),
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::Str(_) => "string".into(),
            Ty::Bytes(_) => "bytes".into(),
            Ty::Duration => "google.protobuf.Duration".into(),
            Ty::Timestamp => "google.protobuf.Timestamp".into(),
            Ty::List(e, _) => format!("list({})", e.name()),
            Ty::Map(k, v, _) => format!("map({}, {})", k.name(), v.name()),
            Ty::Object(o) => o.name.clone(),
            Ty::Opt(t) => format!("optional_type({})", t.name()),
            Ty::Type(t) => format!("type({})", t.name()),
            Ty::Opaque(n) => (*n).to_string(),
            Ty::Param(p) => char::from(b'A'.saturating_add(*p)).to_string(),
        }
    }
}

/// Upstream's `estimateMaxArrayItemsFromMinSize`: a list whose items serialize to at least
/// `min_size` bytes holds at most this many items in one request.
pub fn max_items(min_size: u64) -> u64 {
    MAX_REQUEST_SIZE
        .saturating_sub(2)
        .checked_div(min_size.saturating_add(1))
        .unwrap_or(0)
}

/// Upstream's `estimateMaxAdditionalPropertiesFromMinSize` (each entry is at least `"":`,
/// a comma and one more byte besides its value).
pub fn max_properties(min_size: u64) -> u64 {
    MAX_REQUEST_SIZE
        .saturating_sub(2)
        .checked_div(min_size.saturating_add(6))
        .unwrap_or(0)
}

/// The smallest serialization of a value of `schema` (upstream's `MinSerializedSize` of its
/// `SchemaDeclType`): scalars their shortest literal, lists and maps `[]` and `{}`, objects
/// `{}` plus, for every required property without a default, `"name":` and its own smallest
/// value and a comma.
pub fn min_size(schema: &Value) -> u64 {
    min_size_depth(schema, 0)
}

fn min_size_depth(s: &Value, depth: usize) -> u64 {
    if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return 1;
    }
    match s.get("type").and_then(Value::as_str) {
        Some("string") => match s.get("format").and_then(Value::as_str) {
            Some("duration") => 3,
            Some("date") => 12,
            Some("date-time") => 21,
            _ => 2,
        },
        Some("boolean") => 4,
        Some("integer") | Some("number") => 1,
        Some("object") if s.get("additionalProperties").is_some_and(Value::is_object) => 2,
        Some("object") if depth < 64 => {
            let props = s.get("properties").and_then(Value::as_object);
            let required = s.get("required").and_then(Value::as_array);
            let mut n = 2u64;
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                let Some(p) = props.and_then(|p| p.get(name)) else {
                    continue;
                };
                if p.get("default").is_some() || !converts(p) {
                    continue;
                }
                n = n
                    .saturating_add(name.len() as u64)
                    .saturating_add(min_size_depth(p, depth.saturating_add(1)))
                    .saturating_add(4);
            }
            n
        }
        _ => 2,
    }
}

/// Whether upstream's `SchemaDeclType` gives `s` a type (properties without one are left
/// out of their object).
fn converts(s: &Value) -> bool {
    if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return true;
    }
    match s.get("type").and_then(Value::as_str) {
        Some("string" | "boolean" | "integer" | "number") => true,
        Some("array") => s.get("items").is_some_and(converts),
        Some("object") => match s.get("additionalProperties") {
            Some(ap) if ap.is_object() => converts(ap),
            _ => true,
        },
        _ => false,
    }
}

/// A property name as CEL spells it (`my-field` is `my__dash__field`, reserved words are
/// `__word__`), or `None` when CEL cannot name it.
pub fn escape_field(name: &str, reserved: &[&str]) -> Option<String> {
    if reserved.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let first = name.chars().next()?;
    if !(first.is_ascii_alphabetic() || matches!(first, '_' | '.' | '-' | '/')) {
        return None;
    }
    let out = name
        .replace("__", "__underscores__")
        .replace('.', "__dot__")
        .replace('-', "__dash__")
        .replace('/', "__slash__");
    out.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(out)
}

/// CEL's reserved words (upstream's `celReservedSymbols`).
pub const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The type of values of `schema` (a structural schema as JSON). `root`: the schema of a
/// whole resource, whose `apiVersion`, `kind` and `metadata` (`name`, `generateName`) rules
/// may read without the schema declaring them, as for embedded resources. `name` names the
/// object types (upstream's are generated; the name only shows in messages).
pub fn from_schema(schema: &Value, root: bool, name: &str) -> Ty {
    from_schema_depth(schema, root, name, 0)
}

fn from_schema_depth(s: &Value, root: bool, name: &str, depth: usize) -> Ty {
    if depth > 64 {
        return Ty::Dyn;
    }
    let flag = |k: &str| s.get(k).and_then(Value::as_bool) == Some(true);
    if flag("x-kubernetes-int-or-string") {
        return Ty::Dyn;
    }
    let embedded = root || flag("x-kubernetes-embedded-resource");
    match s.get("type").and_then(Value::as_str) {
        Some("boolean") => Ty::Bool,
        Some("integer") => Ty::Int,
        Some("number") => Ty::Double,
        Some("string") => {
            // Upstream's `estimateMaxElementsFromMaxLength` (four bytes a character) and
            // `estimateMaxStringEnumLength`.
            let max_length = s.get("maxLength").and_then(Value::as_u64);
            let longest_enum = s
                .get("enum")
                .and_then(Value::as_array)
                .filter(|e| !e.is_empty())
                .map(|e| {
                    e.iter()
                        .filter_map(Value::as_str)
                        .map(|v| v.len() as u64)
                        .max()
                        .unwrap_or(0)
                });
            let max = match (max_length, longest_enum) {
                (Some(n), _) => n.saturating_mul(4),
                (None, Some(n)) => n,
                (None, None) => UNBOUNDED_STRING,
            };
            match s.get("format").and_then(Value::as_str) {
                Some("byte") => Ty::Bytes(max_length.unwrap_or(UNBOUNDED_STRING)),
                Some("duration") => Ty::Duration,
                Some("date-time") | Some("date") => Ty::Timestamp,
                _ => Ty::Str(max),
            }
        }
        Some("array") => {
            let items = s.get("items").cloned().unwrap_or(Value::Null);
            let elem = from_schema_depth(
                &items,
                false,
                &format!("{name}@idx"),
                depth.saturating_add(1),
            );
            let max = s
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or_else(|| max_items(min_size(&items)));
            Ty::List(Box::new(elem), max)
        }
        Some("object") => {
            let max = || {
                s.get("maxProperties")
                    .and_then(Value::as_u64)
                    .unwrap_or_else(|| {
                        max_properties(s.get("additionalProperties").map(min_size).unwrap_or(2))
                    })
            };
            if let Some(ap) = s.get("additionalProperties").filter(|v| v.is_object()) {
                let v =
                    from_schema_depth(ap, false, &format!("{name}@elem"), depth.saturating_add(1));
                return Ty::Map(Box::new(Ty::string()), Box::new(v), max());
            }
            let props = s.get("properties").and_then(Value::as_object);
            if props.is_none() && !embedded {
                // Preserved unknown fields, or an object schema with nothing declared:
                // anything may be there.
                return Ty::Dyn;
            }
            if flag("x-kubernetes-preserve-unknown-fields") && !embedded {
                return Ty::Dyn;
            }
            let mut fields = BTreeMap::new();
            for (k, p) in props.into_iter().flatten() {
                let Some(field) = escape_field(k, &RESERVED) else {
                    continue;
                };
                let t = from_schema_depth(
                    p,
                    false,
                    &format!("{name}.{field}"),
                    depth.saturating_add(1),
                );
                fields.insert(field, t);
            }
            let declares_meta = ["apiVersion", "kind", "metadata"]
                .iter()
                .all(|k| props.is_some_and(|p| p.contains_key(*k)));
            if embedded && !declares_meta {
                // Upstream's `WithTypeAndObjectMeta`: unless the schema declares all three,
                // these replace what it declares.
                fields.insert("apiVersion".into(), Ty::string());
                fields.insert("kind".into(), Ty::string());
                let meta: BTreeMap<String, Ty> = [
                    ("name".to_string(), Ty::string()),
                    ("generateName".to_string(), Ty::string()),
                ]
                .into();
                fields.insert(
                    "metadata".into(),
                    Ty::object(&format!("{name}.metadata"), meta),
                );
            }
            if embedded && flag("x-kubernetes-preserve-unknown-fields") && props.is_none() {
                return Ty::Dyn;
            }
            Ty::object(name, fields)
        }
        _ => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_types() {
        let s = json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "my-name": {"type": "string", "maxLength": 10},
            "tags": {"type": "array", "maxItems": 5, "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "any": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "port": {"x-kubernetes-int-or-string": true},
            "at": {"type": "string", "format": "date-time"},
        }});
        let Ty::Object(o) = from_schema(&s, true, "selfType") else {
            panic!("an object")
        };
        assert_eq!(o.fields["replicas"].name(), "int");
        // Four bytes a character, as upstream sizes strings by `maxLength`.
        assert!(matches!(o.fields["my__dash__name"], Ty::Str(40)));
        assert!(matches!(o.fields["tags"], Ty::List(_, 5)));
        assert_eq!(o.fields["labels"].name(), "map(string, string)");
        assert!(o.fields["any"].is_dyn());
        assert!(o.fields["port"].is_dyn());
        assert_eq!(o.fields["at"].name(), "google.protobuf.Timestamp");
        assert!(o.fields.contains_key("metadata"));
    }
}
