//! Reading stored JSON the way upstream reads decoded Go structs: a missing or mistyped field
//! is the zero value.

use serde_json::{Map, Value};

/// The value at `path` (object keys), if present.
pub fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, key| cur.get(*key))
}

/// A string field; `""` when absent.
pub fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

/// An integer field; `None` when absent (for `*int32` fields).
pub fn opt_i64_at(v: &Value, path: &[&str]) -> Option<i64> {
    at(v, path).and_then(Value::as_i64)
}

/// An integer field; 0 when absent.
pub fn i64_at(v: &Value, path: &[&str]) -> i64 {
    opt_i64_at(v, path).unwrap_or(0)
}

/// A boolean field; `None` when absent (for `*bool` fields).
pub fn opt_bool_at(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

/// A boolean field; false when absent.
pub fn bool_at(v: &Value, path: &[&str]) -> bool {
    opt_bool_at(v, path).unwrap_or(false)
}

/// An array field; empty when absent.
pub fn arr_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();

/// An object field; empty when absent.
pub fn obj_at<'a>(v: &'a Value, path: &[&str]) -> &'a Map<String, Value> {
    at(v, path)
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// A `map[string]string` field, sorted by key as Go's `labels.Set.String()` prints it.
pub fn string_map_at(v: &Value, path: &[&str]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = obj_at(v, path)
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    pairs.sort();
    pairs
}

/// `labels.FormatLabels`/`labels.Set.String()`: `k=v,k2=v2` sorted by key; `<none>` when empty
/// (the caller decides which of the two it wants).
pub fn join_map(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}
