//! The list-item form of an object: what a list response's item leaves out (`apiVersion`,
//! `kind`) and how to put it back. Both the storage interface (a list's encoded items) and
//! the watch cache (which keeps objects in this form) use it.

use crate::Result;
use kapi_machinery::Object;
use serde_json::{Map, Value};

/// The fields a list item leaves out.
pub(crate) const TYPE_FIELDS: [&str; 2] = ["apiVersion", "kind"];

/// An object's `apiVersion`/`kind` and where they stood among its fields, so that decoding a
/// list item gives back the object as it was. One is shared by every item that has the same.
#[derive(Debug, Default, PartialEq)]
pub struct TypeMeta {
    fields: Vec<(usize, &'static str, Value)>,
}

impl TypeMeta {
    pub(crate) fn of(obj: &Object) -> TypeMeta {
        let fields = obj
            .as_map()
            .iter()
            .enumerate()
            .filter_map(|(i, (k, v))| {
                TYPE_FIELDS
                    .iter()
                    .find(|t| **t == k.as_str())
                    .map(|t| (i, *t, v.clone()))
            })
            .collect();
        TypeMeta { fields }
    }

    /// The object whose list item is `json`.
    pub fn decode(&self, json: &[u8]) -> Result<Object> {
        let corrupt = |message: String| crate::Error::Corrupt {
            key: String::new(),
            message,
        };
        let map: Map<String, Value> =
            serde_json::from_slice(json).map_err(|e| corrupt(e.to_string()))?;
        if self.fields.is_empty() {
            return Ok(Object::from(map));
        }
        let mut out = Map::new();
        let mut missing = self.fields.iter().peekable();
        for (k, v) in map {
            while let Some((_, name, value)) = missing.next_if(|(i, ..)| *i <= out.len()) {
                out.insert((*name).to_string(), value.clone());
            }
            out.insert(k, v);
        }
        for (_, name, value) in missing {
            out.insert((*name).to_string(), value.clone());
        }
        Ok(Object::from(out))
    }
}
