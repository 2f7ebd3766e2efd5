//! `--authorization-mode=Node`: the node authorizer ([`kapi_auth::authz::node`]) and what keeps
//! its graph current, as upstream's `graph_populator.go`: an informer over pods, persistent
//! volumes, volume attachments and (when served) resource slices, each event replacing what the
//! graph knew of that object; a relist forgets what it no longer lists.
//! [`NodeAuthorization::start`] returns once every informer has listed once, so the first
//! requests are judged on a whole graph.

use crate::controllers::framework::{inform, Event};
use kapi_auth::authz::node::refs::{pod_refs, pv_claim, pv_kubelet_secrets};
use kapi_auth::authz::node::{Graph, NodeAuthorizer, VertexType};
use kapi_machinery::Object;
use kapi_registry::rest::{self, find_storage, ApiGroupInfo};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// The feature gate that narrows node and pod reads (beta, on by default in 1.33).
pub const AUTHORIZE_NODE_WITH_SELECTORS: &str = "AuthorizeNodeWithSelectors";

/// Which objects a feed puts in the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Pod,
    Pv,
    VolumeAttachment,
    ResourceSlice,
}

impl Kind {
    fn vertex(self) -> VertexType {
        match self {
            Kind::Pod => VertexType::Pod,
            Kind::Pv => VertexType::Pv,
            Kind::VolumeAttachment => VertexType::VolumeAttachment,
            Kind::ResourceSlice => VertexType::ResourceSlice,
        }
    }
}

/// The node authorizer with its graph and the storages that feed it.
pub struct NodeAuthorization {
    pub authorizer: Arc<NodeAuthorizer>,
    pub graph: Arc<Graph>,
    feeds: Vec<(Kind, Arc<dyn rest::Storage>)>,
}

/// Builds the node authorizer over the served `groups`; `gates` are `--feature-gates`.
pub fn setup(groups: &[ApiGroupInfo], gates: &BTreeMap<String, bool>) -> NodeAuthorization {
    let graph = Arc::new(Graph::new());
    let with_selectors = gates
        .get(AUTHORIZE_NODE_WITH_SELECTORS)
        .copied()
        .unwrap_or(true);
    let feeds = [
        (Kind::Pod, "", "pods"),
        (Kind::Pv, "", "persistentvolumes"),
        (
            Kind::VolumeAttachment,
            "storage.k8s.io",
            "volumeattachments",
        ),
        (Kind::ResourceSlice, "resource.k8s.io", "resourceslices"),
    ]
    .into_iter()
    .filter_map(|(k, g, r)| find_storage(groups, g, r).map(|s| (k, s)))
    .collect();
    NodeAuthorization {
        authorizer: Arc::new(NodeAuthorizer::new(graph.clone(), with_selectors)),
        graph,
        feeds,
    }
}

/// Puts one object into the graph.
fn upsert(graph: &Graph, kind: Kind, obj: &Object) {
    match kind {
        Kind::Pod => graph.add_pod(obj.namespace(), obj.name(), &pod_refs(obj)),
        Kind::Pv => {
            let claim = pv_claim(obj);
            graph.add_pv(
                obj.name(),
                claim.as_ref().map(|(n, c)| (n.as_str(), c.as_str())),
                &pv_kubelet_secrets(obj),
            );
        }
        Kind::VolumeAttachment | Kind::ResourceSlice => {
            let node = obj
                .get("spec")
                .and_then(|s| s.get("nodeName"))
                .and_then(|n| n.as_str())
                .unwrap_or_default();
            graph.add_node_object(kind.vertex(), obj.name(), node);
        }
    }
}

fn remove(graph: &Graph, kind: Kind, obj: &Object) {
    match kind {
        Kind::Pod => graph.delete_pod(obj.namespace(), obj.name()),
        Kind::Pv => graph.delete_pv(obj.name()),
        Kind::VolumeAttachment | Kind::ResourceSlice => {
            graph.delete_node_object(kind.vertex(), obj.name())
        }
    }
}

/// One informer's effect on the graph; remembers what a relist has seen so far.
struct Feeder {
    graph: Arc<Graph>,
    kind: Kind,
    /// While relisting: the (namespace, name) listed so far.
    listed: Option<HashSet<(String, String)>>,
    /// A pod's last (node, uid, status.resourceClaimStatuses): an update that changes none
    /// leaves the graph alone, as upstream's `updatePod`.
    pods: std::collections::HashMap<(String, String), String>,
}

impl Feeder {
    fn handle(&mut self, ev: Event) -> bool {
        match ev {
            Event::Relisting => self.listed = Some(HashSet::new()),
            Event::Upsert(obj) => {
                let key = (obj.namespace().to_string(), obj.name().to_string());
                if let Some(l) = self.listed.as_mut() {
                    l.insert(key.clone());
                }
                if self.kind == Kind::Pod {
                    let spec_node = obj
                        .get("spec")
                        .and_then(|s| s.get("nodeName"))
                        .and_then(|n| n.as_str())
                        .unwrap_or_default();
                    if spec_node.is_empty() {
                        // Not bound yet: nothing to add (upstream skips it).
                        return false;
                    }
                    let claims = obj
                        .get("status")
                        .and_then(|s| s.get("resourceClaimStatuses"))
                        .map(|c| c.to_string())
                        .unwrap_or_default();
                    let print = format!("{spec_node}\n{}\n{claims}", obj.uid());
                    if self.pods.get(&key) == Some(&print) {
                        return false;
                    }
                    self.pods.insert(key, print);
                }
                upsert(&self.graph, self.kind, &obj);
            }
            Event::Deleted(obj) => {
                self.pods
                    .remove(&(obj.namespace().to_string(), obj.name().to_string()));
                remove(&self.graph, self.kind, &obj);
            }
            Event::Synced => {
                if let Some(listed) = self.listed.take() {
                    let seen = |ns: &str, name: &str| listed.contains(&(ns.into(), name.into()));
                    self.graph.retain(self.kind.vertex(), seen);
                    self.pods.retain(|k, _| listed.contains(k));
                }
                return true;
            }
        }
        false
    }
}

impl NodeAuthorization {
    /// Starts one informer per fed resource (they stop when `shutdown` turns true) and waits
    /// for each to list once.
    pub async fn start(&self, shutdown: watch::Receiver<bool>) {
        let (synced_tx, mut synced_rx) = mpsc::unbounded_channel::<()>();
        for (kind, storage) in &self.feeds {
            let mut feeder = Feeder {
                graph: self.graph.clone(),
                kind: *kind,
                listed: None,
                pods: Default::default(),
            };
            let synced = synced_tx.clone();
            let mut first = true;
            let informer = inform(storage.clone(), None, move |ev| {
                if feeder.handle(ev) && first {
                    first = false;
                    let _ = synced.send(());
                }
            });
            let mut stop = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = informer => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
            });
        }
        drop(synced_tx);
        for _ in &self.feeds {
            if synced_rx.recv().await.is_none() {
                break;
            }
        }
        tracing::debug!(vertices = self.graph.len(), "node authorizer graph synced");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, uid: &str) -> Arc<Object> {
        Arc::new(
            Object::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"namespace": "d", "name": name, "uid": uid},
                "spec": {"nodeName": node, "serviceAccountName": format!("sa-{name}")}
            }))
            .unwrap(),
        )
    }

    fn related(g: &Graph, node: &str, sa: &str) -> bool {
        g.has_path_from(node, VertexType::ServiceAccount, "d", sa)
            .is_ok()
    }

    #[test]
    fn events_and_relists_keep_the_graph() {
        let graph = Arc::new(Graph::new());
        let mut f = Feeder {
            graph: graph.clone(),
            kind: Kind::Pod,
            listed: None,
            pods: Default::default(),
        };
        assert!(!f.handle(Event::Relisting));
        f.handle(Event::Upsert(pod("p1", "n1", "u1")));
        f.handle(Event::Upsert(pod("p2", "n1", "u2")));
        f.handle(Event::Upsert(pod("pending", "", "u3")));
        assert!(f.handle(Event::Synced));
        assert!(related(&graph, "n1", "sa-p1") && related(&graph, "n1", "sa-p2"));
        assert!(!related(&graph, "n1", "sa-pending"));
        // A pod recreated on another node under the same name moves.
        f.handle(Event::Upsert(pod("p2", "n2", "u4")));
        assert!(!related(&graph, "n1", "sa-p2") && related(&graph, "n2", "sa-p2"));
        // A relist that no longer holds p1 forgets it.
        f.handle(Event::Relisting);
        f.handle(Event::Upsert(pod("p2", "n2", "u4")));
        f.handle(Event::Synced);
        assert!(!related(&graph, "n1", "sa-p1") && related(&graph, "n2", "sa-p2"));
        f.handle(Event::Deleted(pod("p2", "n2", "u4")));
        assert!(graph.is_empty());
    }

    #[test]
    fn volume_attachments_follow_their_node() {
        let graph = Arc::new(Graph::new());
        let va = |node: &str| {
            Object::from_value(json!({"metadata": {"name": "va"}, "spec": {"nodeName": node}}))
                .unwrap()
        };
        upsert(&graph, Kind::VolumeAttachment, &va("n1"));
        let ok = |n| {
            graph
                .has_path_from(n, VertexType::VolumeAttachment, "", "va")
                .is_ok()
        };
        assert!(ok("n1"));
        upsert(&graph, Kind::VolumeAttachment, &va("n2"));
        assert!(!ok("n1") && ok("n2"));
        remove(&graph, Kind::VolumeAttachment, &va("n2"));
        assert!(graph.is_empty());
    }
}
