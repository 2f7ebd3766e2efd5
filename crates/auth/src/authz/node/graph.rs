//! The node authorizer's graph (upstream's `plugin/pkg/auth/authorizer/node/graph.go`): one
//! vertex per API object a kubelet may need, edges pointing towards the Node the object is used
//! on.
//!
//! ```text
//! node <- pod
//! pod  <- secret, configmap, pvc, serviceaccount, resourceclaim
//! pvc  <- pv
//! pv   <- secret
//! node <- volumeattachment, resourceslice
//! ```
//!
//! An edge that leads to exactly one node carries that node (upstream's destination edge), so a
//! walk from a secret used by pods on many nodes follows only the edges to the node asked about.
//! A vertex left without edges is removed, as upstream's `deleteVertexLocked` does.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

/// What a vertex stands for (upstream's `vertexType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexType {
    ConfigMap,
    ResourceSlice,
    Node,
    Pod,
    Pvc,
    Pv,
    ResourceClaim,
    Secret,
    VolumeAttachment,
    ServiceAccount,
}

impl VertexType {
    /// Upstream's `vertexTypes` names (used in log lines).
    pub fn name(self) -> &'static str {
        match self {
            VertexType::ConfigMap => "configmap",
            VertexType::ResourceSlice => "resourceslice",
            VertexType::Node => "node",
            VertexType::Pod => "pod",
            VertexType::Pvc => "pvc",
            VertexType::Pv => "pv",
            VertexType::ResourceClaim => "resourceclaim",
            VertexType::Secret => "secret",
            VertexType::VolumeAttachment => "volumeattachment",
            VertexType::ServiceAccount => "serviceAccount",
        }
    }
}

type Key = (VertexType, String, String);
type Id = u64;

#[derive(Default)]
struct Vertex {
    /// Outgoing edges: target and, for a destination edge, the node it leads to.
    out: HashMap<Id, Option<Id>>,
    incoming: HashSet<Id>,
}

impl Vertex {
    fn degree(&self) -> usize {
        self.out.len().saturating_add(self.incoming.len())
    }
}

#[derive(Default)]
struct Inner {
    next: Id,
    ids: HashMap<Key, Id>,
    keys: HashMap<Id, Key>,
    vertices: HashMap<Id, Vertex>,
}

impl Inner {
    fn id(&self, t: VertexType, ns: &str, name: &str) -> Option<Id> {
        self.ids
            .get(&(t, ns.to_string(), name.to_string()))
            .copied()
    }

    fn get_or_create(&mut self, t: VertexType, ns: &str, name: &str) -> Id {
        if let Some(id) = self.id(t, ns, name) {
            return id;
        }
        self.next = self.next.wrapping_add(1);
        let id = self.next;
        let key = (t, ns.to_string(), name.to_string());
        self.ids.insert(key.clone(), id);
        self.keys.insert(id, key);
        self.vertices.insert(id, Vertex::default());
        id
    }

    fn add_edge(&mut self, from: Id, to: Id, destination: Option<Id>) {
        if from == to {
            return;
        }
        if let Some(v) = self.vertices.get_mut(&from) {
            v.out.insert(to, destination);
        }
        if let Some(v) = self.vertices.get_mut(&to) {
            v.incoming.insert(from);
        }
    }

    fn remove(&mut self, id: Id) {
        let Some(v) = self.vertices.remove(&id) else {
            return;
        };
        for to in v.out.keys() {
            if let Some(n) = self.vertices.get_mut(to) {
                n.incoming.remove(&id);
            }
        }
        for from in &v.incoming {
            if let Some(n) = self.vertices.get_mut(from) {
                n.out.remove(&id);
            }
        }
        if let Some(key) = self.keys.remove(&id) {
            self.ids.remove(&key);
        }
    }

    /// Removes a vertex and every neighbour it leaves without edges.
    fn delete_vertex(&mut self, t: VertexType, ns: &str, name: &str) {
        let Some(id) = self.id(t, ns, name) else {
            return;
        };
        let neighbours: Vec<Id> = self
            .vertices
            .get(&id)
            .map(|v| v.out.keys().chain(v.incoming.iter()).copied().collect())
            .unwrap_or_default();
        self.remove(id);
        for n in neighbours {
            if self.vertices.get(&n).is_some_and(|v| v.degree() == 0) {
                self.remove(n);
            }
        }
    }
}

/// The graph, shared by the authorizer (reads) and the feeds from storage (writes).
#[derive(Default)]
pub struct Graph {
    inner: RwLock<Inner>,
}

/// A pod as the graph needs it: where it runs and what it references.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodRefs {
    pub node: String,
    pub mirror: bool,
    pub service_account: String,
    pub secrets: Vec<String>,
    pub config_maps: Vec<String>,
    pub pvcs: Vec<String>,
    pub resource_claims: Vec<String>,
}

impl Graph {
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Upstream's `AddPod`: replaces what the graph knew of the pod. `pod -> node`, and unless
    /// it is a mirror pod, its service account, secrets, config maps, claims `-> pod`.
    pub fn add_pod(&self, namespace: &str, name: &str, refs: &PodRefs) {
        let mut g = self.write();
        g.delete_vertex(VertexType::Pod, namespace, name);
        if refs.node.is_empty() {
            return;
        }
        let pod = g.get_or_create(VertexType::Pod, namespace, name);
        let node = g.get_or_create(VertexType::Node, "", &refs.node);
        g.add_edge(pod, node, Some(node));
        if refs.mirror {
            return;
        }
        let mut add = |t: VertexType, n: &str| {
            if n.is_empty() {
                return;
            }
            let v = g.get_or_create(t, namespace, n);
            g.add_edge(v, pod, Some(node));
        };
        add(VertexType::ServiceAccount, &refs.service_account);
        for s in &refs.secrets {
            add(VertexType::Secret, s);
        }
        for c in &refs.config_maps {
            add(VertexType::ConfigMap, c);
        }
        for c in &refs.pvcs {
            add(VertexType::Pvc, c);
        }
        for c in &refs.resource_claims {
            add(VertexType::ResourceClaim, c);
        }
    }

    pub fn delete_pod(&self, namespace: &str, name: &str) {
        self.write().delete_vertex(VertexType::Pod, namespace, name);
    }

    /// Upstream's `AddPV`: with a claim, `pv -> pvc` and the kubelet-visible secrets `-> pv`
    /// (`secrets` as namespace/name pairs).
    pub fn add_pv(&self, name: &str, claim: Option<(&str, &str)>, secrets: &[(String, String)]) {
        let mut g = self.write();
        g.delete_vertex(VertexType::Pv, "", name);
        let Some((claim_ns, claim_name)) = claim else {
            return;
        };
        let pv = g.get_or_create(VertexType::Pv, "", name);
        let pvc = g.get_or_create(VertexType::Pvc, claim_ns, claim_name);
        g.add_edge(pv, pvc, None);
        for (ns, secret) in secrets {
            if secret.is_empty() {
                continue;
            }
            let s = g.get_or_create(VertexType::Secret, ns, secret);
            g.add_edge(s, pv, None);
        }
    }

    pub fn delete_pv(&self, name: &str) {
        self.write().delete_vertex(VertexType::Pv, "", name);
    }

    /// `volumeattachment -> node` or `resourceslice -> node` (upstream's `AddVolumeAttachment`,
    /// `AddResourceSlice`): an object of `t` bound to `node` (none: no edge).
    pub fn add_node_object(&self, t: VertexType, name: &str, node: &str) {
        let mut g = self.write();
        g.delete_vertex(t, "", name);
        if node.is_empty() {
            return;
        }
        let v = g.get_or_create(t, "", name);
        let n = g.get_or_create(VertexType::Node, "", node);
        g.add_edge(v, n, Some(n));
    }

    pub fn delete_node_object(&self, t: VertexType, name: &str) {
        self.write().delete_vertex(t, "", name);
    }

    /// Forgets every vertex of `t` whose (namespace, name) `keep` refuses (after a relist).
    pub fn retain(&self, t: VertexType, keep: impl Fn(&str, &str) -> bool) {
        let mut g = self.write();
        let gone: Vec<(String, String)> = g
            .ids
            .keys()
            .filter(|(vt, ns, name)| *vt == t && !keep(ns, name))
            .map(|(_, ns, name)| (ns.clone(), name.clone()))
            .collect();
        for (ns, name) in gone {
            g.delete_vertex(t, &ns, &name);
        }
    }

    /// Upstream's `hasPathFrom`: whether the object leads to `node` (never through an edge
    /// leading to another node). `Err` says why not, as upstream logs it.
    pub fn has_path_from(
        &self,
        node: &str,
        t: VertexType,
        namespace: &str,
        name: &str,
    ) -> Result<(), String> {
        let g = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let Some(node_id) = g.id(VertexType::Node, "", node) else {
            return Err(format!(
                "unknown node '{node}' cannot get {} {namespace}/{name}",
                t.name()
            ));
        };
        let Some(start) = g.id(t, namespace, name) else {
            return Err(format!(
                "node '{node}' cannot get unknown {} {namespace}/{name}",
                t.name()
            ));
        };
        let mut seen = HashSet::from([start]);
        let mut stack = vec![start];
        while let Some(v) = stack.pop() {
            let Some(vertex) = g.vertices.get(&v) else {
                continue;
            };
            for (to, destination) in &vertex.out {
                match destination {
                    Some(d) if *d == node_id => return Ok(()),
                    Some(_) => continue,
                    None => {}
                }
                if *to == node_id {
                    return Ok(());
                }
                if seen.insert(*to) {
                    stack.push(*to);
                }
            }
        }
        Err(format!(
            "node '{node}' cannot get {} {namespace}/{name}, no relationship to this object was found in the node authorizer graph",
            t.name()
        ))
    }

    /// How many vertices the graph holds (tests, metrics).
    pub fn len(&self) -> usize {
        self.inner
            .read()
            .map(|g| g.vertices.len())
            .unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
