//! Value validation of a custom object against its schema: a port of kube-openapi's
//! `pkg/validation/validate` schema validator (type, schema props, string, format, number,
//! slice, enum and object checks, in that order, with its `errors` wording), and of
//! apiextensions' `pkg/apiserver/validation/validation.go` (`kubeOpenAPIResultToFieldErrs`),
//! which turns its results into field errors.

use super::formats;
use super::goval::{go_value, to_bad_value};
use super::node::{Additional, Node};
use kapi_machinery::{BadValue, FieldError, FieldErrorType};
use serde_json::Value;

/// The kube-openapi error codes the conversion to field errors distinguishes.
#[derive(Debug, Clone, PartialEq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    Enum(Vec<Value>),
    MaxItems,
    TooManyProperties,
    Other,
    /// Not a `*errors.Validation` (the anyOf/oneOf/allOf/not composites): upstream reports
    /// these at the nil path with an empty value.
    Composite,
}

/// One kube-openapi validation error.
#[derive(Debug, Clone)]
struct OErr {
    code: Code,
    name: String,
    value: Option<BadValue>,
    /// `Valid` (the limit) where the conversion reads it.
    valid: i64,
    message: String,
}

impl OErr {
    fn new(code: Code, name: &str, value: Option<BadValue>, message: String) -> Self {
        OErr {
            code,
            name: name.to_string(),
            value,
            valid: -1,
            message,
        }
    }
}

/// Validates `data` against `schema` as upstream's `ValidateCustomResource` does. With `old`
/// (an update), a value equal to its correlated old value is not judged again (upstream's
/// ratcheting validator, `CRDValidationRatcheting`): object fields and map values correlate
/// by key, list-type map items by their keys, other list items not at all.
pub fn validate(schema: &Node, data: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_node(schema, data, old, "", &mut errs);
    errs.into_iter().map(to_field_error).collect()
}

fn to_field_error(e: OErr) -> FieldError {
    if e.code == Code::Composite {
        return FieldError::invalid("<nil>", "", e.message);
    }
    let path = {
        let n = e.name.strip_prefix('.').unwrap_or(&e.name);
        if n.is_empty() {
            "<nil>".to_string()
        } else {
            n.to_string()
        }
    };
    let value = || {
        e.value
            .clone()
            .unwrap_or_else(|| BadValue::Str(String::new()))
    };
    match &e.code {
        Code::Required => FieldError::required(path, ""),
        Code::Enum(values) => {
            let values: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let refs: Vec<&str> = values.iter().map(String::as_str).collect();
            FieldError::not_supported(path, value(), &refs)
        }
        Code::TooLong => FieldError::new(
            FieldErrorType::TooLong,
            path,
            Some(value()),
            too_long_detail(e.valid),
        ),
        Code::MaxItems | Code::TooManyProperties => {
            let actual = match &e.value {
                Some(BadValue::Int(i)) => Some(BadValue::Int(*i)),
                _ => None,
            };
            FieldError::new(
                FieldErrorType::TooMany,
                path,
                actual,
                too_many_detail(e.valid),
            )
        }
        Code::InvalidType => {
            FieldError::new(FieldErrorType::TypeInvalid, path, Some(value()), e.message)
        }
        Code::Other | Code::Composite => FieldError::invalid(path, value(), e.message),
    }
}

/// `field.TooLong`'s detail.
pub fn too_long_detail(max: i64) -> String {
    if max < 0 {
        "value is too long".into()
    } else {
        let unit = if max == 1 { "byte" } else { "bytes" };
        format!("may not be more than {max} {unit}")
    }
}

/// `field.TooMany`'s detail.
pub fn too_many_detail(max: i64) -> String {
    if max < 0 {
        "has too many items".into()
    } else {
        let unit = if max == 1 { "item" } else { "items" };
        format!("must have at most {max} {unit}")
    }
}

/// Whether an error is of the kinds upstream treats as blocking CEL evaluation
/// (`hasBlockingErr`): unsupported, required, too long, too many, or a wrong type.
pub fn is_blocking(e: &FieldError) -> bool {
    matches!(
        e.error_type,
        FieldErrorType::NotSupported
            | FieldErrorType::Required
            | FieldErrorType::TooLong
            | FieldErrorType::TooMany
            | FieldErrorType::TypeInvalid
    )
}

fn types_of(s: &Node) -> Vec<&str> {
    if s.int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        Vec::new()
    } else {
        vec![s.type_.as_str()]
    }
}

/// The JSON type kube-openapi infers for a decoded value, and its format.
fn schema_info(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "double"),
    }
}

fn invalid_type(path: &str, type_name: &str, value: Option<&str>) -> OErr {
    let message = match value {
        Some(v) => format!(
            "{path} in body must be of type {type_name}: {}",
            kapi_machinery::goformat::quote(v)
        ),
        None => format!("{path} in body must be of type {type_name}"),
    };
    OErr::new(
        Code::InvalidType,
        path,
        value.map(|v| BadValue::Str(v.to_string())),
        message,
    )
}

fn is_json_integer(f: f64) -> bool {
    f.is_finite() && f.trunc() == f && f.abs() < 9_007_199_254_740_992.0
}

/// The format upstream validates with: `StripUnsupportedFormatsPostProcess` empties formats
/// it does not support for the schema's type.
fn effective_format(s: &Node) -> &str {
    let f = s.format.as_str();
    let keep = match (s.int_or_string, s.type_.as_str()) {
        (true, _) | (false, "" | "string") => formats::is_supported(f),
        (false, "integer") => f == "int32" || f == "int64",
        (false, "number") => f == "float" || f == "double",
        _ => false,
    };
    if keep {
        f
    } else {
        ""
    }
}

fn type_check(s: &Node, data: &Value, path: &str) -> Option<OErr> {
    let types = types_of(s);
    let format_of_schema = effective_format(s);
    if data.is_null() {
        if !types.is_empty() && !types.contains(&"null") && !s.nullable {
            return Some(invalid_type(path, &types.join(","), Some("null")));
        }
        return None;
    }
    if types.is_empty() && format_of_schema.is_empty() {
        return None;
    }
    let (sch_type, format) = schema_info(data);
    let f = data.as_f64().unwrap_or_default();
    let is_float_int = sch_type == "number" && is_json_integer(f) && types.contains(&"integer");
    let is_int_float = sch_type == "integer" && types.contains(&"number");
    let is_lower_int = format_of_schema == "int64" && format == "int32";
    let is_lower_float = format_of_schema == "double" && format == "float";
    let stringish = matches!(data, Value::String(_) | Value::Array(_));
    if !stringish
        && !format_of_schema.is_empty()
        && !(types.contains(&sch_type)
            || format == format_of_schema
            || is_float_int
            || is_int_float
            || is_lower_int
            || is_lower_float)
    {
        return Some(invalid_type(path, format_of_schema, Some(format)));
    }
    if !types.contains(&"number")
        && !types.contains(&"integer")
        && !format_of_schema.is_empty()
        && stringish
    {
        return None;
    }
    if types.is_empty() {
        return None;
    }
    if !(types.contains(&sch_type) || is_float_int || is_int_float) {
        return Some(invalid_type(path, &types.join(","), Some(sch_type)));
    }
    None
}

fn enum_check(s: &Node, data: &Value, path: &str) -> Option<OErr> {
    let values = s.enum_.as_ref().filter(|e| !e.is_empty())?;
    if !data.is_null() && values.iter().any(|e| json_equal(e, data)) {
        return None;
    }
    let listed: Vec<String> = values.iter().map(go_value).collect();
    Some(OErr::new(
        Code::Enum(values.clone()),
        path,
        Some(to_bad_value(data)),
        format!("{path} in body should be one of [{}]", listed.join(" ")),
    ))
}

/// Equality as kube-openapi's enum check sees it: numbers by value whatever their JSON form.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn validate_node(s: &Node, data: &Value, old: Option<&Value>, path: &str, out: &mut Vec<OErr>) {
    if old.is_some_and(|o| json_equal(o, data)) {
        return;
    }
    if data.is_null() {
        out.extend(type_check(s, data, path));
        out.extend(enum_check(s, data, path));
        return;
    }
    // Type validator.
    out.extend(type_check(s, data, path));
    // Schema props validator (allOf, oneOf, anyOf, not).
    schema_props(s, data, path, out);
    // String validator: the first failure only.
    if let Value::String(v) = data {
        string_check(s, v, path, out);
    }
    // Format validator.
    if let Value::String(v) = data {
        let f = effective_format(s);
        if !f.is_empty() && formats::is_supported(f) && !formats::validates(f, v) {
            out.push(invalid_type(path, f, Some(v)));
        }
    }
    // Number validator.
    if let Value::Number(_) = data {
        number_check(s, data, path, out);
    }
    // Slice validator.
    if let Value::Array(items) = data {
        if let Some(item_schema) = s.items.as_deref() {
            let old_items = old
                .and_then(Value::as_array)
                .filter(|_| s.list_type.as_deref() == Some("map") && !s.list_map_keys.is_empty());
            for (i, item) in items.iter().enumerate() {
                let o = old_items.and_then(|olds| {
                    olds.iter()
                        .find(|o| s.list_map_keys.iter().all(|k| o.get(k) == item.get(k)))
                });
                validate_node(item_schema, item, o, &format!("{path}[{i}]"), out);
            }
        }
        let size = items.len() as i64;
        if let Some(min) = s.min_items {
            if size < min {
                out.push(OErr::new(
                    Code::Other,
                    path,
                    Some(BadValue::Int(size)),
                    format!("{path} in body should have at least {min} items"),
                ));
            }
        }
        if let Some(max) = s.max_items {
            if size > max {
                let mut e = OErr::new(
                    Code::MaxItems,
                    path,
                    Some(BadValue::Int(size)),
                    format!("{path} in body should have at most {max} items"),
                );
                e.valid = max;
                out.push(e);
            }
        }
        if s.unique_items && has_duplicates(items) {
            out.push(OErr::new(
                Code::Other,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
    }
    // Common validator (enum).
    out.extend(enum_check(s, data, path));
    // Object validator.
    if let Value::Object(m) = data {
        object_check(s, m, old.and_then(Value::as_object), path, out);
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    items.iter().enumerate().any(|(i, a)| {
        items
            .iter()
            .skip(i.saturating_add(1))
            .any(|b| json_equal(a, b))
    })
}

fn string_check(s: &Node, v: &str, path: &str, out: &mut Vec<OErr>) {
    let len = v.chars().count() as i64;
    if let Some(max) = s.max_length {
        if len > max {
            let mut e = OErr::new(
                Code::TooLong,
                path,
                Some(BadValue::Str(v.to_string())),
                format!("{path} in body should be at most {max} chars long"),
            );
            e.valid = max;
            out.push(e);
            return;
        }
    }
    if let Some(min) = s.min_length {
        if len < min {
            out.push(OErr::new(
                Code::Other,
                path,
                Some(BadValue::Str(v.to_string())),
                format!("{path} in body should be at least {min} chars long"),
            ));
            return;
        }
    }
    if let Some((pattern, re)) = &s.pattern {
        // An uncompilable pattern fails every value, as Go's regexp would error.
        if !re.as_ref().is_some_and(|re| re.is_match(v)) {
            out.push(OErr::new(
                Code::Other,
                path,
                Some(BadValue::Str(v.to_string())),
                format!("{path} in body should match '{pattern}'"),
            ));
        }
    }
}

/// Go's `%v` of a bound: integers as such (the value was an integer and upstream converts the
/// bound with `int64()`), else as a float.
fn bound(b: f64, int_value: bool) -> String {
    if int_value {
        (b as i64).to_string()
    } else {
        kapi_machinery::goformat::float(b)
    }
}

fn number_check(s: &Node, data: &Value, path: &str, out: &mut Vec<OErr>) {
    let int_value = data.as_i64();
    let f = data.as_f64().unwrap_or_default();
    let value = Some(to_bad_value(data));
    if let Some(factor) = s.multiple_of {
        let failed = if factor <= 0.0 {
            out.push(OErr::new(
                Code::Other,
                path,
                Some(BadValue::Float(factor)),
                format!(
                    "factor MultipleOf declared for {path} must be positive: {}",
                    kapi_machinery::goformat::float(factor)
                ),
            ));
            false
        } else {
            match int_value {
                Some(i) if factor.trunc() == factor && factor >= 1.0 => {
                    i.checked_rem(factor as i64).is_some_and(|r| r != 0)
                }
                _ => {
                    let mult = if factor < 1.0 {
                        1.0 / factor * f
                    } else {
                        f / factor
                    };
                    !is_json_integer(mult)
                }
            }
        };
        if failed {
            out.push(OErr::new(
                Code::Other,
                path,
                value.clone(),
                format!(
                    "{path} in body should be a multiple of {}",
                    bound(factor, int_value.is_some() && factor.trunc() == factor)
                ),
            ));
        }
    }
    if let Some(min) = s.minimum {
        let (below, shown) = match int_value {
            Some(i) => {
                let m = min as i64;
                (
                    if s.exclusive_minimum { i <= m } else { i < m },
                    bound(min, true),
                )
            }
            None => (
                if s.exclusive_minimum {
                    f <= min
                } else {
                    f < min
                },
                bound(min, false),
            ),
        };
        if below {
            let rel = if s.exclusive_minimum {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(OErr::new(
                Code::Other,
                path,
                value.clone(),
                format!("{path} in body should be {rel} {shown}"),
            ));
        }
    }
    if let Some(max) = s.maximum {
        let (above, shown) = match int_value {
            Some(i) => {
                let m = max as i64;
                (
                    if s.exclusive_maximum { i >= m } else { i > m },
                    bound(max, true),
                )
            }
            None => (
                if s.exclusive_maximum {
                    f >= max
                } else {
                    f > max
                },
                bound(max, false),
            ),
        };
        if above {
            let rel = if s.exclusive_maximum {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(OErr::new(
                Code::Other,
                path,
                value,
                format!("{path} in body should be {rel} {shown}"),
            ));
        }
    }
}

fn object_check(
    s: &Node,
    m: &serde_json::Map<String, Value>,
    old: Option<&serde_json::Map<String, Value>>,
    path: &str,
    out: &mut Vec<OErr>,
) {
    let n = m.len() as i64;
    // Upstream stops at a property-count failure.
    if let Some(min) = s.min_properties {
        if n < min {
            out.push(OErr::new(
                Code::Other,
                path,
                Some(BadValue::Int(n)),
                format!("{path} in body should have at least {min} properties"),
            ));
            return;
        }
    }
    if let Some(max) = s.max_properties {
        if n > max {
            let mut e = OErr::new(
                Code::TooManyProperties,
                path,
                Some(BadValue::Int(n)),
                format!("{path} in body should have at most {max} properties"),
            );
            e.valid = max;
            out.push(e);
            return;
        }
    }
    match &s.additional_properties {
        Some(Additional::Bool(false)) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                if !s.properties.contains_key(k) {
                    let message = format!("{path}.{k} in body is a forbidden property");
                    out.push(OErr::new(
                        Code::Other,
                        path,
                        Some(BadValue::Str(k.clone())),
                        message,
                    ));
                }
            }
        }
        Some(Additional::Schema(ap)) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                if !s.properties.contains_key(k) {
                    let o = old.and_then(|o| o.get(k.as_str()));
                    validate_node(ap, &m[k], o, &format!("{path}.{k}"), out);
                }
            }
        }
        _ => {}
    }
    for (name, prop) in &s.properties {
        if let Some(v) = m.get(name) {
            let child = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            validate_node(prop, v, old.and_then(|o| o.get(name)), &child, out);
        }
    }
    for k in &s.required {
        if !m.contains_key(k) {
            let name = format!("{path}.{k}");
            out.push(OErr::new(
                Code::Required,
                &name,
                None,
                format!("{name} in body is required"),
            ));
        }
    }
}

fn errors_of(s: &Node, data: &Value, path: &str) -> Vec<OErr> {
    let mut out = Vec::new();
    // Upstream does not ratchet inside allOf/anyOf/oneOf/not.
    validate_node(s, data, None, path, &mut out);
    out
}

fn schema_props(s: &Node, data: &Value, path: &str, out: &mut Vec<OErr>) {
    let quoted = kapi_machinery::goformat::quote(path);
    if !s.any_of.is_empty() {
        let mut best: Option<Vec<OErr>> = None;
        let mut ok = false;
        for branch in &s.any_of {
            let r = errors_of(branch, data, path);
            if r.is_empty() {
                ok = true;
                best = None;
                break;
            }
            if best.as_ref().is_none_or(|b| r.len() < b.len()) {
                best = Some(r);
            }
        }
        if !ok {
            out.push(OErr::new(
                Code::Composite,
                path,
                None,
                format!("{quoted} must validate at least one schema (anyOf)"),
            ));
        }
        if let Some(b) = best {
            out.extend(b);
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Vec<OErr>> = None;
        let mut validated = 0usize;
        for branch in &s.one_of {
            let r = errors_of(branch, data, path);
            if r.is_empty() {
                validated = validated.saturating_add(1);
                best = None;
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.len() < b.len()) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let extra = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            out.push(OErr::new(
                Code::Composite,
                path,
                None,
                format!("{quoted} must validate one and only one schema (oneOf). {extra}"),
            ));
            if let Some(b) = best {
                out.extend(b);
            }
        }
    }
    if !s.all_of.is_empty() {
        let mut validated = 0usize;
        for branch in &s.all_of {
            let r = errors_of(branch, data, path);
            if r.is_empty() {
                validated = validated.saturating_add(1);
            }
            out.extend(r);
        }
        if validated != s.all_of.len() {
            let extra = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            out.push(OErr::new(
                Code::Composite,
                path,
                None,
                format!("{quoted} must validate all the schemas (allOf){extra}"),
            ));
        }
    }
    if let Some(not) = &s.not {
        if errors_of(not, data, path).is_empty() {
            out.push(OErr::new(
                Code::Composite,
                path,
                None,
                format!("{quoted} must not validate the schema (not)"),
            ));
        }
    }
}
