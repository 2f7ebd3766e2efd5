//! The dependency graph: every object the informers have seen that the collector may act on
//! (see [`Node::tracked`]), by uid, with its owner references, and the reverse index from an
//! owner's uid to the uids of its dependents.

use kapi_machinery::Object;
use kapi_registry::rest::Storage;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One `metadata.ownerReferences` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block_owner_deletion: bool,
}

pub fn owner_refs(obj: &Object) -> Vec<OwnerRef> {
    obj.metadata()
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| {
                    let s = |k: &str| {
                        r.get(k)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    OwnerRef {
                        api_version: s("apiVersion"),
                        kind: s("kind"),
                        name: s("name"),
                        uid: s("uid"),
                        block_owner_deletion: r
                            .get("blockOwnerDeletion")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What the collector knows of one object.
#[derive(Clone)]
pub struct Node {
    pub storage: Arc<dyn Storage>,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub owners: Vec<OwnerRef>,
    pub finalizers: Vec<String>,
    pub deleting: bool,
}

impl Node {
    pub fn from_object(storage: Arc<dyn Storage>, obj: &Object) -> Self {
        Self {
            storage,
            namespace: obj.namespace().to_string(),
            name: obj.name().to_string(),
            uid: obj.uid().to_string(),
            owners: owner_refs(obj),
            finalizers: obj.finalizers(),
            deleting: obj.deletion_timestamp().is_some(),
        }
    }

    /// Whether the collector has anything to do with the object: it names owners, or it is
    /// being deleted with its dependents (`orphan` or `foregroundDeletion`). Only these are
    /// kept in the graph: dependents are found by their own owner references and owners are
    /// read live, so a node for each of 100,000 ownerless objects (~350 bytes each) would be
    /// held for nothing.
    pub fn tracked(&self) -> bool {
        !self.owners.is_empty()
            || (self.deleting
                && (self.has_finalizer(super::collect::FOREGROUND)
                    || self.has_finalizer(super::collect::ORPHAN)))
    }

    pub fn has_finalizer(&self, f: &str) -> bool {
        self.finalizers.iter().any(|x| x == f)
    }

    pub fn resource(&self) -> String {
        let info = self.storage.info();
        format!("{}.{}/{}", info.resource, info.group, self.name)
    }
}

#[derive(Default)]
pub struct Graph {
    pub nodes: HashMap<String, Node>,
    dependents: HashMap<String, HashSet<String>>,
    /// Resources whose informer has not finished its first list.
    pub unsynced: HashSet<String>,
    /// The uids a list in progress has handed over, per resource.
    pub listing: HashMap<String, HashSet<String>>,
}

impl Graph {
    /// Records `node`; returns the node it replaced.
    pub fn upsert(&mut self, node: Node) -> Option<Node> {
        let old = self.remove(&node.uid);
        for o in &node.owners {
            self.dependents
                .entry(o.uid.clone())
                .or_default()
                .insert(node.uid.clone());
        }
        self.nodes.insert(node.uid.clone(), node);
        old
    }

    pub fn remove(&mut self, uid: &str) -> Option<Node> {
        let old = self.nodes.remove(uid)?;
        for o in &old.owners {
            if let Some(d) = self.dependents.get_mut(&o.uid) {
                d.remove(uid);
                if d.is_empty() {
                    self.dependents.remove(&o.uid);
                }
            }
        }
        Some(old)
    }

    /// The known dependents of `owner`.
    pub fn dependents(&self, owner: &str) -> Vec<Node> {
        self.dependents
            .get(owner)
            .map(|d| {
                d.iter()
                    .filter_map(|u| self.nodes.get(u))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn dependent_uids(&self, owner: &str) -> Vec<String> {
        self.dependents
            .get(owner)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }
}
