//! The fields a value sets (upstream's `ToFieldSet`) and what changed between two values
//! (upstream's `Compare`: added, modified and removed fields).

use super::schema::{effective, item_element, ListKind, Shape, Ty};
use super::set::{Path, PathElement, Set};
use serde_json::{Map, Value};

/// Why a value cannot be walked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WalkError {
    /// A map-list item without any of its key fields.
    #[error(
        ".{path}: associative list with keys has an element that omits all key fields {keys:?}"
    )]
    MissingKeys { path: String, keys: Vec<String> },
    /// Two items of a map or set list with the same key.
    #[error(".{path}: duplicate entries for key {key}")]
    Duplicate { path: String, key: String },
}

fn path_text(path: &[PathElement]) -> String {
    super::set::path_string(path)
        .trim_start_matches('.')
        .to_string()
}

/// The items of a keyed list by their path elements, in order.
pub fn keyed_items<'a>(
    kind: &ListKind,
    items: &'a [Value],
    path: &[PathElement],
) -> Result<Vec<(PathElement, &'a Value)>, WalkError> {
    let mut out: Vec<(PathElement, &Value)> = Vec::with_capacity(items.len());
    for item in items {
        let Some(pe) = item_element(kind, item) else {
            let keys = match kind {
                ListKind::Map(k) => k.clone(),
                _ => Vec::new(),
            };
            return Err(WalkError::MissingKeys {
                path: path_text(path),
                keys,
            });
        };
        if out.iter().any(|(p, _)| *p == pe) {
            return Err(WalkError::Duplicate {
                path: path_text(path),
                key: super::set::path_string(std::slice::from_ref(&pe)),
            });
        }
        out.push((pe, item));
    }
    Ok(out)
}

/// The fields `value` sets, as upstream's `ToFieldSet`: every scalar and atomic value, every
/// list item, every map key (struct fields only when their value is null or empty).
pub fn to_set(value: &Value, ty: &Ty) -> Result<Set, WalkError> {
    let mut set = Set::new();
    walk_set(value, ty, &mut Vec::new(), &mut set)?;
    Ok(set)
}

fn walk_set(value: &Value, ty: &Ty, path: &mut Path, set: &mut Set) -> Result<(), WalkError> {
    match (effective(ty, value), value) {
        (Shape::Struct { atomic: true } | Shape::Map { atomic: true }, _)
        | (Shape::List(ListKind::Atomic), _)
        | (Shape::Scalar | Shape::Deduced, _) => set.insert(path),
        (shape @ (Shape::Struct { .. } | Shape::Map { .. }), Value::Object(map)) => {
            let is_struct = matches!(shape, Shape::Struct { .. });
            for (k, v) in map {
                let child = ty.field(k);
                path.push(PathElement::Field(k.clone()));
                walk_set(v, &child, path, set)?;
                let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                if empty || !is_struct || !ty.declares(k) {
                    set.insert(path);
                }
                path.pop();
            }
        }
        (Shape::List(kind), Value::Array(items)) => {
            let item_ty = ty.item();
            for (pe, item) in keyed_items(&kind, items, path)? {
                path.push(pe);
                walk_set(item, &item_ty, path, set)?;
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
    Ok(())
}

/// What changed from `old` to `new`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl Comparison {
    /// Added and modified fields.
    pub fn changed(&self) -> Set {
        self.added.union(&self.modified)
    }
}

/// Compares two objects of type `ty`. `metadata.managedFields` is never compared: nobody
/// owns it.
pub fn compare(old: &Value, new: &Value, ty: &Ty) -> Result<Comparison, WalkError> {
    let mut c = Comparison::default();
    walk_compare(Some(old), Some(new), ty, &mut Vec::new(), &mut c)?;
    Ok(c)
}

/// [`compare`] of two objects given as their top-level maps (no copy into a value).
pub fn compare_maps(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    ty: &Ty,
) -> Result<Comparison, WalkError> {
    let mut c = Comparison::default();
    walk_fields(Some(old), Some(new), ty, &mut Vec::new(), &mut c)?;
    Ok(c)
}

/// Whether `path` + `key` is `metadata.managedFields`.
fn is_managed_fields(path: &[PathElement], key: &str) -> bool {
    key == "managedFields" && matches!(path, [PathElement::Field(f)] if f == "metadata")
}

/// The fields of two maps (or structs) of type `ty` at `path`, `None` where that side has
/// none. A field whose value did not change is skipped whole: nothing under it was added,
/// modified or removed (so, as upstream's update comparison allows duplicates, an unchanged
/// list is not checked again).
///
/// Upstream compares typed objects: in a struct that is there, a field Go's encoding always
/// writes (a struct held by value, a field without `omitempty`) is there too, as `{}` or null.
/// Where one side's JSON leaves such a field out, it stands in as that zero value.
fn walk_fields(
    om: Option<&Map<String, Value>>,
    nm: Option<&Map<String, Value>>,
    ty: &Ty,
    path: &mut Path,
    c: &mut Comparison,
) -> Result<(), WalkError> {
    let zero = |present: bool, k: &str| {
        if present {
            ty.zero_field(k)
        } else {
            None
        }
    };
    for (k, ov) in om.into_iter().flatten() {
        let nv = match nm.and_then(|m| m.get(k)) {
            Some(v) => Some(v),
            None => zero(nm.is_some(), k),
        };
        if nv == Some(ov) || is_managed_fields(path, k) {
            continue;
        }
        path.push(PathElement::Field(k.clone()));
        walk_compare(Some(ov), nv, &ty.field(k), path, c)?;
        path.pop();
    }
    for (k, nv) in nm.into_iter().flatten() {
        if om.is_some_and(|m| m.contains_key(k)) || is_managed_fields(path, k) {
            continue;
        }
        let ov = zero(om.is_some(), k);
        if ov == Some(nv) {
            continue;
        }
        path.push(PathElement::Field(k.clone()));
        walk_compare(ov, Some(nv), &ty.field(k), path, c)?;
        path.pop();
    }
    // A struct on one side only: the zero-valued fields its JSON leaves out appear (or
    // disappear) with it.
    let (one, added) = match (om, nm) {
        (None, Some(m)) => (m, true),
        (Some(m), None) => (m, false),
        _ => return Ok(()),
    };
    for (k, zero) in ty.zero_fields() {
        if one.contains_key(k) || is_managed_fields(path, k) {
            continue;
        }
        path.push(PathElement::Field(k.to_string()));
        let field = ty.field(k);
        if added {
            walk_compare(None, Some(zero), &field, path, c)?;
        } else {
            walk_compare(Some(zero), None, &field, path, c)?;
        }
        path.pop();
    }
    Ok(())
}

fn is_leaf(shape: &Shape) -> bool {
    matches!(
        shape,
        Shape::Struct { atomic: true }
            | Shape::Map { atomic: true }
            | Shape::List(ListKind::Atomic)
            | Shape::Scalar
            | Shape::Deduced
    )
}

/// Whether a side holds nothing: absent, null, `{}` or `[]`. Two such sides are compared as
/// one field (upstream keeps the difference between empty and null that way).
fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn walk_compare(
    old: Option<&Value>,
    new: Option<&Value>,
    ty: &Ty,
    path: &mut Path,
    c: &mut Comparison,
) -> Result<(), WalkError> {
    let (old_shape, new_shape) = (old.map(|v| effective(ty, v)), new.map(|v| effective(ty, v)));
    let shape = match (&old_shape, &new_shape) {
        // A null on one side takes the other side's shape.
        (Some(a), Some(b)) if a != b => match (old, new) {
            (Some(Value::Null), _) => Some(b.clone()),
            (_, Some(Value::Null)) => Some(a.clone()),
            _ => None,
        },
        (Some(a), _) => Some(a.clone()),
        (None, Some(b)) => Some(b.clone()),
        (None, None) => return Ok(()),
    };
    let leaf = match &shape {
        None => true,
        Some(s) => is_leaf(s) || (is_empty(old) && is_empty(new)),
    };
    if leaf {
        match (old, new) {
            (None, Some(_)) => c.added.insert(path),
            (Some(_), None) => c.removed.insert(path),
            (Some(a), Some(b)) if a != b => c.modified.insert(path),
            _ => {}
        }
        return Ok(());
    }
    let shape = shape.unwrap_or(Shape::Scalar);
    match &shape {
        Shape::Struct { .. } | Shape::Map { .. } => {
            // A null struct or map holds no fields, zero-valued or not.
            walk_fields(
                old.and_then(Value::as_object),
                new.and_then(Value::as_object),
                ty,
                path,
                c,
            )?;
        }
        Shape::List(kind) => {
            let none: Vec<Value> = Vec::new();
            let ol = old.and_then(Value::as_array).unwrap_or(&none);
            let nl = new.and_then(Value::as_array).unwrap_or(&none);
            let oi = keyed_items(kind, ol, path)?;
            let ni = keyed_items(kind, nl, path)?;
            let item_ty = ty.item();
            for (pe, ov) in &oi {
                let nv = ni.iter().find(|(p, _)| p == pe).map(|(_, v)| *v);
                if nv == Some(*ov) {
                    continue;
                }
                path.push(pe.clone());
                walk_compare(Some(ov), nv, &item_ty, path, c)?;
                path.pop();
            }
            for (pe, nv) in &ni {
                if oi.iter().any(|(p, _)| p == pe) {
                    continue;
                }
                path.push(pe.clone());
                walk_compare(None, Some(nv), &item_ty, path, c)?;
                path.pop();
            }
        }
        _ => {}
    }
    // A struct, map, list or item that appears or disappears as a whole is a field itself.
    match (old, new) {
        (None, Some(_)) => c.added.insert(path),
        (Some(_), None) => c.removed.insert(path),
        _ => {}
    }
    Ok(())
}
