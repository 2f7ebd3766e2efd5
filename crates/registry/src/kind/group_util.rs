//! Helpers the API-group modules share: decoding bodies that omit fields the typed structs
//! require (upstream decodes those as zero values), Go-formatted invalid values, immutability.

use crate::kind::at;
use kapi_machinery::{BadValue, FieldError, Object};
use serde_json::{Map, Value};

/// Fills `path` with `zero` when absent, so a body that leaves out a field Go would decode as
/// its zero value still decodes into the `k8s-openapi` type (which requires it).
pub fn fill_zero(obj: &mut Object, path: &[&str], zero: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur: &mut Map<String, Value> = obj.as_map_mut();
    for k in parents {
        match cur.get_mut(*k) {
            Some(Value::Object(m)) => cur = m,
            _ => return,
        }
    }
    if cur.get(*last).is_none_or(Value::is_null) {
        cur.insert((*last).into(), zero);
    }
}

/// [`fill_zero`] of each `(path, zero)`.
pub fn fill_zeros(body: &mut Object, zeros: &[(&[&str], Value)]) {
    for (path, zero) in zeros {
        fill_zero(body, path, zero.clone());
    }
}

/// `Invalid value: <go>: <detail>` where `<go>` is Go's `%#v` of a value that is neither a
/// string nor a number (upstream prints structs and slices that way, unquoted).
pub fn go_invalid(field: impl Into<String>, go: &str, detail: &str) -> FieldError {
    FieldError::invalid(field, BadValue::Go(go.to_string()), detail)
}

/// Go's `%#v` of a `[]string`.
pub fn go_strings(v: Option<&Value>) -> String {
    kapi_machinery::goformat::strings(v)
}

/// Whether the array at `path` is absent or empty.
pub fn empty_list(v: &Value, key: &str) -> bool {
    v.get(key)
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

/// `field is immutable` on `field` when the values at `path` differ (`ValidateImmutableField`).
pub fn immutable(
    errs: &mut Vec<FieldError>,
    new: &Object,
    old: &Object,
    path: &[&str],
    field: &str,
) {
    let n = at(new, path).cloned().unwrap_or(Value::Null);
    if n != at(old, path).cloned().unwrap_or(Value::Null) {
        errs.push(FieldError::invalid(field, n, "field is immutable"));
    }
}

/// `ValidateNonnegativeField` for each `status.<field>`.
pub fn non_negative_status(errs: &mut Vec<FieldError>, obj: &Object, fields: &[&str]) {
    for f in fields {
        crate::kind::non_negative(errs, obj, &["status", f], &format!("status.{f}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_values() {
        assert_eq!(
            go_strings(Some(&json!(["/a", "/b"]))),
            r#"[]string{"/a", "/b"}"#
        );
        assert_eq!(go_strings(None), "[]string(nil)");
        let e = go_invalid("roleRef", "rbac.RoleRef{}", "cannot change roleRef");
        assert_eq!(
            e.to_string(),
            "roleRef: Invalid value: rbac.RoleRef{}: cannot change roleRef"
        );
    }

    #[test]
    fn zero_fill_only_where_absent() {
        let mut o = Object::from_value(json!({"a": {"b": 1}})).unwrap();
        fill_zero(&mut o, &["a", "c"], json!(0));
        fill_zero(&mut o, &["a", "b"], json!(0));
        fill_zero(&mut o, &["x", "y"], json!(0));
        assert_eq!(o.into_value(), json!({"a": {"b": 1, "c": 0}}));
    }
}
