//! Strategic merge patch (`application/strategic-merge-patch+json`), as upstream's
//! `strategicpatch.StrategicMergePatch` with `MergeParallelList` and `IgnoreUnmatchedNulls`:
//! maps merge key by key (`null` deletes), lists whose field has `patchStrategy=merge` merge
//! element by element (maps by their `patchMergeKey`, scalars as a set), other lists and
//! scalars are replaced. Directives: `$patch: replace|delete` (on a map or as a list
//! element), `$retainKeys`, `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`.

use super::meta::PatchSchema;
use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Why a strategic merge patch cannot be applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// Answered 400, as upstream's `mergepatch.ErrBad*` errors.
    #[error("{0}")]
    BadRequest(String),
    /// Answered 422 (lists of lists, `$retainKeys` not matching the patch).
    #[error("{0}")]
    Unprocessable(String),
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadRequest(msg.into())
}

/// Applies `patch` to `original` (both JSON objects).
pub fn apply(
    original: Map<String, Value>,
    patch: Map<String, Value>,
    schema: &PatchSchema,
) -> Result<Map<String, Value>, Error> {
    merge_map(original, patch, schema)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: &PatchSchema,
) -> Result<Map<String, Value>, Error> {
    if let Some(directive) = patch.remove(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => Ok(strip_nulls(patch)),
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(&directive, &patch)),
        };
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_orders(&mut original, &mut patch, schema)?;

    for (key, value) in patch {
        let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(k) => (k.to_string(), true),
            None => (key, false),
        };
        if value.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(current) = original.remove(&key) else {
            if !delete_list {
                original.insert(key.clone(), fresh(value, &schema.lookup(&key).schema)?);
            }
            continue;
        };
        let merged = match (current, value) {
            (Value::Object(cur), Value::Object(p)) => {
                let lookup = schema.lookup(&key);
                if lookup.meta.strategy() == Some("replace") {
                    Value::Object(strip_nulls(p))
                } else {
                    Value::Object(merge_map(cur, p, &lookup.schema)?)
                }
            }
            (Value::Array(cur), Value::Array(p)) => {
                let lookup = schema.lookup(&key);
                if lookup.meta.strategy() == Some("merge") {
                    let key_name = lookup.meta.patch_merge_key.as_deref().unwrap_or("");
                    Value::Array(merge_list(cur, p, &lookup.schema, key_name, delete_list)?)
                } else {
                    Value::Array(p)
                }
            }
            (cur, p) => {
                if delete_list {
                    cur
                } else {
                    fresh(p, &schema.lookup(&key).schema)?
                }
            }
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// A patch value for a field the original lacks: taken as is, minus nulls and directives.
fn fresh(value: Value, schema: &PatchSchema) -> Result<Value, Error> {
    match value {
        Value::Object(p) => Ok(Value::Object(merge_map(Map::new(), p, schema)?)),
        other => Ok(other),
    }
}

fn strip_nulls(mut map: Map<String, Value>) -> Map<String, Value> {
    map.retain(|_, v| !v.is_null());
    map
}

fn bad_patch_type(directive: &Value, patch: &Map<String, Value>) -> Error {
    bad(format!(
        "Unknown patch type: {}, in map: {}",
        directive_text(directive),
        Value::Object(patch.clone())
    ))
}

fn directive_text(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

/// `$retainKeys`: drop every key of the original not listed.
fn retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), Error> {
    let Some(keys) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(keys) = keys else {
        return Err(bad(
            "invalid patch: $retainKeys must be a list of field names",
        ));
    };
    let mut keep = Vec::with_capacity(keys.len());
    for k in keys {
        match k {
            Value::String(s) => keep.push(s),
            _ => {
                return Err(bad(
                    "invalid patch: $retainKeys must be a list of field names",
                ))
            }
        }
    }
    // Every key the patch sets must be retained.
    for k in patch.keys() {
        if !k.starts_with('$') && !patch[k].is_null() && !keep.contains(k) {
            return Err(Error::Unprocessable(
                "The content of the patch doesn't match the retainKeys list".into(),
            ));
        }
    }
    original.retain(|k, _| keep.contains(k));
    Ok(())
}

/// `$setElementOrder/<field>`: merges the field's list now and orders the result as listed,
/// with elements only the server has kept at their relative places.
fn set_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: &PatchSchema,
) -> Result<(), Error> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive_key in keys {
        let field = directive_key[SET_ELEMENT_ORDER.len()..].to_string();
        let Some(Value::Array(order)) = patch.remove(&directive_key) else {
            return Err(bad("invalid patch: $setElementOrder must be a list"));
        };
        let lookup = schema.lookup(&field);
        let merge_key = lookup.meta.patch_merge_key.clone().unwrap_or_default();
        let patch_list = match patch.remove(&field) {
            Some(Value::Array(l)) => l,
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Err(bad("invalid patch: $setElementOrder applies to a list")),
        };
        let original_list = match original.remove(&field) {
            Some(Value::Array(l)) => l,
            _ => Vec::new(),
        };
        let merged = if lookup.meta.strategy() == Some("merge") {
            merge_list(
                original_list.clone(),
                patch_list,
                &lookup.schema,
                &merge_key,
                false,
            )?
        } else {
            patch_list
        };
        let (in_order, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| index_of(&order, v, &merge_key).is_some());
        let result = normalize_order(in_order, server_only, &order, &original_list, &merge_key);
        if !result.is_empty() {
            original.insert(field, Value::Array(result));
        }
    }
    Ok(())
}

/// Merges two lists of a `patchStrategy=merge` field.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &PatchSchema,
    merge_key: &str,
    delete_list: bool,
) -> Result<Vec<Value>, Error> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let maps = original
        .iter()
        .chain(patch.iter())
        .find(|v| !v.is_null())
        .map(Value::is_object)
        .unwrap_or(false);
    if original.iter().chain(patch.iter()).any(|v| v.is_array()) {
        return Err(Error::Unprocessable(
            "lists of lists are not supported".into(),
        ));
    }
    let (merged, order_by) = if !maps {
        if delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut all = original.clone();
        for v in patch.iter() {
            if !all.contains(v) {
                all.push(v.clone());
            }
        }
        (all, patch)
    } else {
        if merge_key.is_empty() {
            return Err(bad(format!(
                "cannot merge lists without merge key for {}",
                schema.name()
            )));
        }
        let (base, items) = special_elements(original.clone(), patch, merge_key)?;
        let order_by = items.clone();
        (merge_by_key(base, items, schema, merge_key)?, order_by)
    };
    let (in_patch, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| index_of(&order_by, v, merge_key).is_some());
    Ok(normalize_order(
        in_patch,
        server_only,
        &order_by,
        &original,
        merge_key,
    ))
}

/// Handles `{"$patch": "delete", <key>: v}` and `{"$patch": "replace"}` list elements.
fn special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), Error> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(key) = item.get(merge_key) else {
                    return Err(bad(format!(
                        "map: {} does not contain declared merge key: {}",
                        item, merge_key
                    )));
                };
                original.retain(|o| o.get(merge_key) != Some(key));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(bad("merging lists cannot yet be specified in the patch"));
            }
            _ => {
                let map = item.as_object().cloned().unwrap_or_default();
                return Err(bad_patch_type(directive, &map));
            }
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    Ok((original, plain))
}

fn merge_by_key(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    schema: &PatchSchema,
    merge_key: &str,
) -> Result<Vec<Value>, Error> {
    for item in patch {
        let Value::Object(map) = item else {
            return Err(bad(format!(
                "map: {} does not contain declared merge key: {}",
                item, merge_key
            )));
        };
        let Some(key) = map.get(merge_key).cloned() else {
            return Err(bad(format!(
                "map: {} does not contain declared merge key: {}",
                Value::Object(map),
                merge_key
            )));
        };
        match original.iter_mut().find(|o| o.get(merge_key) == Some(&key)) {
            Some(slot) => {
                let current = match std::mem::take(slot) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                *slot = Value::Object(merge_map(current, map, schema)?);
            }
            None => original.push(Value::Object(strip_nulls(map))),
        }
    }
    Ok(original)
}

/// Where `item` sits in `list`, comparing maps by their merge key and scalars by value.
fn index_of(list: &[Value], item: &Value, merge_key: &str) -> Option<usize> {
    match item {
        Value::Object(m) if !merge_key.is_empty() => {
            let key = m.get(merge_key)?;
            list.iter().position(|v| v.get(merge_key) == Some(key))
        }
        other => list.iter().position(|v| v == other),
    }
}

/// Orders `patch_items` as `patch_order` and `server_only` as `server_order`, then interleaves
/// them: a server-only element goes before a patch element that follows it on the server.
fn normalize_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
) -> Vec<Value> {
    patch_items.sort_by_key(|v| index_of(patch_order, v, merge_key).unwrap_or(usize::MAX));
    server_only.sort_by_key(|v| index_of(server_order, v, merge_key).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(patch_items.len().saturating_add(server_only.len()));
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => out.extend(left.next()),
            (None, Some(_)) => out.extend(right.next()),
            (Some(l), Some(r)) => {
                let li = index_of(server_order, l, merge_key);
                let ri = index_of(server_order, r, merge_key);
                match (li, ri) {
                    (Some(a), Some(b)) if a < b => out.extend(left.next()),
                    _ => out.extend(right.next()),
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "strategic_tests.rs"]
mod tests;
