//! Merging an applied configuration into the live object (upstream's `TypedValue.Merge`) and
//! removing fields by path (upstream's `RemoveItems`).

use super::fieldset::{keyed_items, WalkError};
use super::schema::{effective, item_element, ListKind, Shape, Ty};
use super::set::{Path, PathElement, Set};
use serde_json::Value;

/// `config` merged over `live`: granular maps and structs merge key by key, keyed and set
/// lists item by item (live order, new items appended), everything else is replaced.
pub fn merge(live: &Value, config: &Value, ty: &Ty) -> Result<Value, WalkError> {
    merge_at(live, config, ty, &mut Vec::new())
}

fn merge_at(live: &Value, config: &Value, ty: &Ty, path: &mut Path) -> Result<Value, WalkError> {
    let (ls, cs) = (effective(ty, live), effective(ty, config));
    if ls != cs {
        return Ok(config.clone());
    }
    match (cs, live, config) {
        (
            Shape::Struct { atomic: false } | Shape::Map { atomic: false },
            Value::Object(lm),
            Value::Object(cm),
        ) => {
            let mut out = lm.clone();
            for (k, cv) in cm {
                let merged = match lm.get(k) {
                    Some(lv) => {
                        path.push(PathElement::Field(k.clone()));
                        let m = merge_at(lv, cv, &ty.field(k), path)?;
                        path.pop();
                        m
                    }
                    None => cv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        (
            Shape::List(kind @ (ListKind::Set | ListKind::Map(_))),
            Value::Array(ll),
            Value::Array(cl),
        ) => {
            let li = keyed_items(&kind, ll, path)?;
            let ci = keyed_items(&kind, cl, path)?;
            let item_ty = ty.item();
            let mut out = Vec::with_capacity(ll.len().saturating_add(cl.len()));
            for (pe, lv) in &li {
                match ci.iter().find(|(p, _)| p == pe) {
                    Some((_, cv)) => {
                        path.push(pe.clone());
                        out.push(merge_at(lv, cv, &item_ty, path)?);
                        path.pop();
                    }
                    None => out.push((*lv).clone()),
                }
            }
            for (pe, cv) in &ci {
                if !li.iter().any(|(p, _)| p == pe) {
                    out.push((*cv).clone());
                }
            }
            Ok(Value::Array(out))
        }
        _ => Ok(config.clone()),
    }
}

/// Removes from `value` every path of `set` (a member's whole subtree goes with it).
pub fn remove(value: &mut Value, set: &Set, ty: &Ty) {
    if set.is_empty() {
        return;
    }
    match (effective(ty, value), value) {
        (Shape::Struct { atomic: false } | Shape::Map { atomic: false }, Value::Object(map)) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    map.shift_remove(&k);
                } else if let (Some(child), Some(v)) = (set.child(&pe), map.get_mut(&k)) {
                    remove(v, child, &ty.field(&k));
                }
            }
        }
        (Shape::List(kind @ (ListKind::Set | ListKind::Map(_))), Value::Array(items)) => {
            let item_ty = ty.item();
            let mut kept = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                match item_element(&kind, &item) {
                    Some(pe) if set.has_member(&pe) => {}
                    Some(pe) => {
                        if let Some(child) = set.child(&pe) {
                            remove(&mut item, child, &item_ty);
                        }
                        kept.push(item);
                    }
                    None => kept.push(item),
                }
            }
            *items = kept;
        }
        _ => {}
    }
}
