//! Structural defaulting, after upstream's `defaulting/algorithm.go` (`Default`): a property's
//! `default` fills the field when it is absent or a `null` the schema does not allow; items
//! and `additionalProperties` values that are such nulls take their schema's default. Inserted
//! defaults are defaulted in turn.

use super::node::Node;
use serde_json::Value;

/// Applies defaults below `x` according to `s`.
pub fn apply(x: &mut Value, s: &Node) {
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, prop),
                };
                if missing {
                    m.insert(k.clone(), default.clone());
                }
            }
            let ap = s.additional_schema();
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply(v, prop);
                } else if let Some(ap) = ap {
                    if is_non_nullable_null(v, ap) {
                        *v = ap.default.clone().unwrap_or(Value::Null);
                    }
                    apply(v, ap);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items.as_deref() else {
                return;
            };
            for v in items.iter_mut() {
                if is_non_nullable_null(v, item_schema) {
                    *v = item_schema.default.clone().unwrap_or(Value::Null);
                }
                apply(v, item_schema);
            }
        }
        _ => {}
    }
}

fn is_non_nullable_null(v: &Value, s: &Node) -> bool {
    v.is_null() && !s.nullable
}
