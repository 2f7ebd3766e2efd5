//! Field paths into a schema (`cel.ValidFieldPath`) and
//! `ValidateCustomResourceSelectableFields`.

use super::schema::{Opts, MAX_SELECTABLE_FIELDS};
use kapi_machinery::{FieldError, FieldErrorType};
use serde_json::{Map, Value};

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// Splits a JSON path into `.`, `[`, `]` and the text between them (single-quoted strings
/// whole), as upstream's scanner.
fn path_tokens(p: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = p;
    while let Some(c) = rest.chars().next() {
        let len = if c == '\'' {
            // Up to the next quote not escaped by a backslash, or the end.
            let mut prev = c;
            rest.char_indices()
                .skip(1)
                .find(|&(_, ch)| {
                    let close = ch == '\'' && prev != '\\';
                    prev = ch;
                    close
                })
                .map_or(rest.len(), |(k, _)| k.saturating_add(1))
        } else if matches!(c, '.' | '[' | ']') {
            1
        } else {
            rest.find(['.', '[', ']']).unwrap_or(rest.len())
        };
        let (token, tail) = rest.split_at_checked(len).unwrap_or((rest, ""));
        out.push(token);
        rest = tail;
    }
    out
}

/// Upstream's `cel.ValidFieldPath` over a schema as JSON: the path (as a `field.Path`
/// string, its root) and the schema it points to.
pub fn valid_field_path<'a>(
    json_path: &str,
    schema: &'a Map<String, Value>,
    allow_array_notation: bool,
) -> Result<(String, String, &'a Map<String, Value>), String> {
    let mut cur = schema;
    let mut out = String::new();
    let mut root = String::new();
    let toks = path_tokens(json_path);
    let mut it = toks.into_iter();
    let end = || "unexpected end of JSON path".to_string();
    let invalid = || "does not refer to a valid field".to_string();
    while let Some(tok) = it.next() {
        let name = match tok {
            "[" => {
                if !allow_array_notation {
                    return Err("array notation is not allowed".into());
                }
                let t = it.next().ok_or_else(end)?;
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {t}"));
                }
                let name = t
                    .get(1..t.len().saturating_sub(1))
                    .unwrap_or_default()
                    .replace("\\'", "'")
                    .replace("\\\\", "\\");
                let close = it.next().ok_or_else(end)?;
                if close != "]" {
                    return Err(format!("expected ] but got {close}"));
                }
                name
            }
            "." => it.next().ok_or_else(end)?.to_string(),
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        // a named field where the schema has properties, a key where it is a map
        if let Some(props) = cur.get("properties").and_then(Value::as_object) {
            cur = props
                .get(&name)
                .and_then(Value::as_object)
                .ok_or_else(invalid)?;
            if out.is_empty() {
                root = name.clone();
            } else {
                out.push('.');
            }
            out.push_str(&name);
        } else if let Some(ap) = cur.get("additionalProperties").filter(|v| !v.is_null()) {
            if out.is_empty() {
                root = format!("[{name}]");
            }
            out.push_str(&format!("[{name}]"));
            cur = ap.as_object().ok_or_else(invalid)?;
        } else {
            return Err(invalid());
        }
    }
    Ok((out, root, cur))
}

/// `ValidateCustomResourceSelectableFields`.
pub fn validate_selectable_fields(
    fields: Option<&Value>,
    schema: &Value,
    path: &str,
    opts: &Opts,
    version: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Map::new();
    let schema = schema.as_object().unwrap_or(&empty);
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in fields
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}[{i}].jsonPath");
        let jp = f
            .get("jsonPath")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if jp.is_empty() {
            errs.push(FieldError::required(p, ""));
            continue;
        }
        let (fp, root, found) = match valid_field_path(jp, schema, false) {
            Ok(r) => r,
            Err(e) => {
                errs.push(FieldError::invalid(
                    p,
                    jp,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if root == "metadata" {
            errs.push(FieldError::invalid(
                p.as_str(),
                jp,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(s(found, "type"), "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                p.as_str(),
                jp,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&fp) {
            errs.push(FieldError::duplicate(p, jp));
        } else {
            unique.push(fp);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS
        && !opts
            .allow_too_many_selectable_fields
            .iter()
            .any(|v| v == version)
    {
        errs.push(FieldError::new(
            FieldErrorType::TooMany,
            path,
            Some(unique.len().into()),
            format!("must have at most {MAX_SELECTABLE_FIELDS} items"),
        ));
    }
    errs
}
