//! The documents of one set of installed groups with other servers' added, for the
//! aggregation layer: the v2 document with each extension server's merged in
//! ([`super::merge::merge_v2`], in the order the caller gives), and the v3 index with the
//! extension servers' entries (their documents are served by the servers themselves; the
//! caller proxies `/openapi/v3/<key>` of those keys).

use super::{OpenApi, Served, V2, V3};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

impl OpenApi {
    /// Whether `/openapi/v3/<key>` is one of these documents.
    pub fn has_v3(&self, key: &str) -> bool {
        self.v3().docs.contains_key(key)
    }

    /// The v2 document as JSON.
    pub fn v2_document(&self) -> Option<Value> {
        serde_json::from_slice(&self.v2().json.body.plain()).ok()
    }

    /// These documents with `v2` as the v2 document (the merge the caller made) and the v3
    /// index with `v3_paths` (`key` -> `{"serverRelativeURL": ...}`) added for keys not served
    /// here: a key served both here and elsewhere is answered here, where upstream's pick
    /// between the two depends on map order.
    pub fn with_remote(&self, v2: Option<&Value>, v3_paths: &BTreeMap<String, Value>) -> OpenApi {
        let local = self.v3();
        let mut index: Map<String, Value> = section(&local.index_document(), "paths");
        for (key, entry) in v3_paths {
            index.entry(key.clone()).or_insert_with(|| entry.clone());
        }
        let v3 = V3 {
            index: Served::new(&json!({ "paths": index })),
            docs: local.docs.clone(),
        };
        let v2 = match v2 {
            Some(doc) => V2::new(doc),
            None => self.v2().clone(),
        };
        OpenApi {
            groups: self.groups.clone(),
            server_version: self.server_version.clone(),
            v3: OnceLock::from(v3),
            v2: OnceLock::from(v2),
            created: chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp(), 0)
                .unwrap_or_default(),
        }
    }
}

fn section(doc: &Value, key: &str) -> Map<String, Value> {
    doc.get(key)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

impl V3 {
    fn index_document(&self) -> Value {
        serde_json::from_slice(&self.index.body.plain()).unwrap_or(Value::Null)
    }
}
