//! Go's `fmt` rendering of values, for messages upstream builds with `%q`, `%v` and `%#v`
//! (field errors, field-label errors). Clients and people compare these strings with
//! kube-apiserver's, so they follow Go's rules, not Rust's `Debug`.

use serde_json::Value;
use std::fmt::Write;

/// Go's `strconv.Quote` (`%q` of a string): `"`-delimited, `\a \b \f \n \r \t \v \\ \"`
/// escaped, other non-printable runes as `\xNN`, `\uNNNN` or `\UNNNNNNNN`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len().saturating_add(2));
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint`, closely enough: no control characters and no space but U+0020.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{feff}'))
}

/// Go's `%v` of a float64 (`%g` with the shortest representation: `1.5`, `1e+21`).
pub fn float(f: f64) -> String {
    let abs = f.abs();
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        // Rust: `1e21`, `1.5e-5`; Go: `1e+21`, `1.5e-05`.
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    format!("{f}")
}

/// Go's `%#v` of a `[]string`; `[]string(nil)` when absent.
pub fn strings(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        Some(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|s| quote(s.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", items.join(", "))
        }
        None => "[]string(nil)".into(),
    }
}

/// Go's `%#v` of a `map[string]string` (keys sorted, as `fmt` prints maps);
/// `map[string]string(nil)` when absent.
pub fn string_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        Some(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let items: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v.as_str().unwrap_or_default())))
                .collect();
            format!("map[string]string{{{}}}", items.join(", "))
        }
        None => "map[string]string(nil)".into(),
    }
}

/// Go's `%#v` of a `metav1.LabelSelector` (what `ValidateImmutableField` prints for a
/// workload's `spec.selector`).
pub fn label_selector(v: Option<&Value>) -> String {
    let Some(sel) = v.filter(|v| !v.is_null()) else {
        return "(*v1.LabelSelector)(nil)".into();
    };
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        Some(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        quote(e.get("key").and_then(Value::as_str).unwrap_or_default()),
                        quote(
                            e.get("operator")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                        ),
                        strings(e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
        None => "[]v1.LabelSelectorRequirement(nil)".into(),
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{exprs}}}",
        string_map(sel.get("matchLabels"))
    )
}

/// Go's `%#v` of a value decoded into `interface{}` (what upstream holds for JSON it did not
/// type): `map[string]interface {}{...}`, `[]interface {}{...}`, `interface {}(nil)`.
fn interface(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(interface).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let items: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), interface(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", items.join(", "))
        }
    }
}

/// A `field.Error`'s bad value with the Go type that decides how upstream prints it
/// (`ErrorBody`: strings `%q`, integers, floats and bools `%v`, `fmt.Stringer`s their
/// `String()`, anything else `%#v`).
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// A Go `string`: `"x"`.
    Str(String),
    /// A Go integer: `5`.
    Int(i64),
    /// A Go float: `1.5`.
    Float(f64),
    /// A Go bool: `true`.
    Bool(bool),
    /// A nil value or pointer: upstream substitutes the string `"null"`.
    Null,
    /// A value already in its Go rendering (`%#v` of a struct, slice or map, or a
    /// `Stringer` such as a quantity): printed as is.
    Go(String),
}

impl BadValue {
    /// A `[]string` value (`[]string{"a", "b"}`).
    pub fn strings(v: Option<&Value>) -> Self {
        BadValue::Go(strings(v))
    }
    /// A `map[string]string` value such as labels or a selector's `matchLabels`.
    pub fn string_map(v: Option<&Value>) -> Self {
        BadValue::Go(string_map(v))
    }
    /// Upstream's rendering in `ErrorBody`.
    pub fn render(&self) -> String {
        match self {
            BadValue::Str(s) => quote(s),
            BadValue::Int(i) => i.to_string(),
            BadValue::Float(f) => float(*f),
            BadValue::Bool(b) => b.to_string(),
            BadValue::Null => quote("null"),
            BadValue::Go(s) => s.clone(),
        }
    }
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        BadValue::Str(s.to_string())
    }
}
impl From<String> for BadValue {
    fn from(s: String) -> Self {
        BadValue::Str(s)
    }
}
impl From<&String> for BadValue {
    fn from(s: &String) -> Self {
        BadValue::Str(s.clone())
    }
}
impl From<i64> for BadValue {
    fn from(i: i64) -> Self {
        BadValue::Int(i)
    }
}
impl From<i32> for BadValue {
    fn from(i: i32) -> Self {
        BadValue::Int(i.into())
    }
}
impl From<u32> for BadValue {
    fn from(i: u32) -> Self {
        BadValue::Int(i.into())
    }
}
impl From<usize> for BadValue {
    fn from(i: usize) -> Self {
        BadValue::Int(i as i64)
    }
}
impl From<f64> for BadValue {
    fn from(f: f64) -> Self {
        BadValue::Float(f)
    }
}
impl From<bool> for BadValue {
    fn from(b: bool) -> Self {
        BadValue::Bool(b)
    }
}

/// A JSON value whose Go type is not known at the call site: scalars as their Go
/// counterparts, lists of strings as `[]string`, objects of strings as `map[string]string`,
/// anything else as upstream's untyped `interface{}` values.
impl From<Value> for BadValue {
    fn from(v: Value) -> Self {
        BadValue::from(&v)
    }
}
impl From<&Value> for BadValue {
    fn from(v: &Value) -> Self {
        match v {
            Value::Null => BadValue::Null,
            Value::Bool(b) => BadValue::Bool(*b),
            Value::String(s) => BadValue::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => BadValue::Int(i),
                None => BadValue::Float(n.as_f64().unwrap_or_default()),
            },
            Value::Array(items) if items.iter().all(Value::is_string) => BadValue::strings(Some(v)),
            Value::Object(m) if m.values().all(Value::is_string) => BadValue::string_map(Some(v)),
            other => BadValue::Go(interface(other)),
        }
    }
}

/// `time.Duration.String()` for a non-negative duration: `0s`, `1.5ms`, `2m3.5s`, `1h0m0s`.
pub fn duration(d: std::time::Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        let (unit, scale) = if nanos < 1_000 {
            ("ns", 1u128)
        } else if nanos < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", fraction(nanos, scale));
    }
    let hours = nanos / 3_600_000_000_000;
    let rest = nanos % 3_600_000_000_000;
    let minutes = rest / 60_000_000_000;
    let secs = fraction(rest % 60_000_000_000, 1_000_000_000);
    if hours > 0 {
        format!("{hours}h{minutes}m{secs}s")
    } else if minutes > 0 {
        format!("{minutes}m{secs}s")
    } else {
        format!("{secs}s")
    }
}

/// `value / scale` with the fraction's trailing zeros dropped.
fn fraction(value: u128, scale: u128) -> String {
    let whole = value.checked_div(scale).unwrap_or(0);
    let rest = value.checked_rem(scale).unwrap_or(0);
    if rest == 0 {
        return whole.to_string();
    }
    let width = scale.to_string().len().saturating_sub(1);
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_like_strconv() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(quote("\u{1}\u{0}"), r#""\x01\x00""#);
        assert_eq!(quote("\u{a0}é"), r#""\u00a0é""#);
    }

    #[test]
    fn renders_like_error_body() {
        assert_eq!(BadValue::from("x").render(), r#""x""#);
        assert_eq!(BadValue::from(-3i64).render(), "-3");
        assert_eq!(BadValue::from(1.5).render(), "1.5");
        assert_eq!(BadValue::from(1e21).render(), "1e+21");
        assert_eq!(BadValue::from(true).render(), "true");
        assert_eq!(BadValue::Null.render(), r#""null""#);
        assert_eq!(
            BadValue::from(json!({"tier": "db", "app": "web-y"})).render(),
            r#"map[string]string{"app":"web-y", "tier":"db"}"#
        );
        assert_eq!(
            BadValue::from(json!(["a", "b"])).render(),
            r#"[]string{"a", "b"}"#
        );
        assert_eq!(BadValue::strings(None).render(), "[]string(nil)");
        assert_eq!(
            label_selector(Some(&json!({"matchLabels": {"app": "web"}}))),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
        assert_eq!(
            BadValue::from(json!({"a": 1, "b": [true, null]})).render(),
            r#"map[string]interface {}{"a":1, "b":[]interface {}{true, interface {}(nil)}}"#
        );
    }

    #[test]
    fn durations_print_as_go() {
        assert_eq!(duration(std::time::Duration::ZERO), "0s");
        assert_eq!(duration(std::time::Duration::from_millis(5)), "5ms");
        assert_eq!(duration(std::time::Duration::from_micros(1500)), "1.5ms");
        assert_eq!(duration(std::time::Duration::from_nanos(250)), "250ns");
        assert_eq!(duration(std::time::Duration::from_millis(2500)), "2.5s");
        assert_eq!(duration(std::time::Duration::from_secs(60)), "1m0s");
        assert_eq!(duration(std::time::Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(duration(std::time::Duration::from_secs(3601)), "1h0m1s");
    }
}
