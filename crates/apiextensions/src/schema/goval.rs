//! Go's printing of values decoded into `interface{}` (what upstream holds for a custom
//! object's fields): `%v` for messages that list values, and `%#v` for field errors' bad values
//! of maps and lists, so messages match kube-apiserver's byte for byte.

use kapi_machinery::goformat::{float, quote};
use kapi_machinery::BadValue;
use serde_json::Value;

fn number(n: &serde_json::Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => float(n.as_f64().unwrap_or_default()),
    }
}

fn sorted(m: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Go's `%v` of an `interface{}` value: `a`, `1`, `[a b]`, `map[k:v]`, `<nil>`.
pub fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_value).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(m) => {
            let items: Vec<String> = sorted(m)
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", go_value(v)))
                .collect();
            format!("map[{}]", items.join(" "))
        }
    }
}

/// Go's `%#v` of an `interface{}` value.
pub fn go_syntax(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_syntax).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(m) => {
            let items: Vec<String> = sorted(m)
                .into_iter()
                .map(|(k, v)| format!("{}:{}", quote(k), go_syntax(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", items.join(", "))
        }
    }
}

/// A decoded JSON value as a field error's bad value, with the Go type upstream holds
/// (`string`, `int64`, `float64`, `bool`, `map[string]interface{}`, `[]interface{}`).
pub fn to_bad_value(v: &Value) -> BadValue {
    match v {
        // as `interface{}`s: `[]interface {}{...}`, `map[string]interface {}{...}`
        Value::Array(_) | Value::Object(_) => BadValue::Go(go_syntax(v)),
        scalar => BadValue::from(scalar),
    }
}
