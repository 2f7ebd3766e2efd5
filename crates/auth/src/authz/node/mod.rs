//! `--authorization-mode=Node`: upstream's node authorizer
//! (`plugin/pkg/auth/authorizer/node/node_authorizer.go`, as kube-apiserver 1.33 runs it).
//!
//! A kubelet (user `system:node:<name>` in group `system:nodes`) may read a secret, config map,
//! PVC, PV, resource claim or volume attachment, and create a service-account token, only when
//! the [`Graph`] links the object to its node (a pod bound to the node uses it); its Lease and
//! CSINode only by its own name; with `AuthorizeNodeWithSelectors` (on by default in 1.33) it
//! reads only its own Node and lists/watches only its pods (`spec.nodeName=<name>` field
//! selector). Everything else is decided by upstream's static node rules
//! ([`node_rules`], the rules of the `system:node` ClusterRole). A request it does not allow is
//! NoOpinion with upstream's reason (`no relationship found between node 'n1' and this object`),
//! so later authorizers (RBAC) may still allow it. Writes it allows are narrowed to the node's
//! own objects by the NodeRestriction admission plugin.

pub mod graph;
pub mod refs;

pub use graph::{Graph, VertexType};

use super::rbac::rule::PolicyRule;
use super::{Attributes, Authorizer, Decision, RulesResult};
use async_trait::async_trait;
use kapi_machinery::UserInfo;
use std::sync::Arc;

/// The group every kubelet is in.
pub const NODES_GROUP: &str = "system:nodes";
/// A kubelet's user name is this prefix and its node's name.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The namespace of node leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Upstream's `NodeIdentity`: `Some(node name)` for a user named `system:node:<name>` in
/// `system:nodes` (the name may be empty), `None` for anyone else.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

/// Upstream's `bootstrappolicy.NodeRules()` with 1.33's default feature gates
/// (DynamicResourceAllocation and ClusterTrustBundle off): the `system:node` ClusterRole's
/// rules, which the node authorizer applies to every request it does not subdivide.
pub fn node_rules() -> Vec<PolicyRule> {
    let r = PolicyRule::resource;
    let read: &[&str] = &["get", "list", "watch"];
    vec![
        r(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
        r(
            &["create"],
            &["authorization.k8s.io"],
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        r(read, &[""], &["services"]),
        r(&["create", "get", "list", "watch"], &[""], &["nodes"]),
        r(&["update", "patch"], &[""], &["nodes/status"]),
        r(&["update", "patch"], &[""], &["nodes"]),
        r(&["create", "update", "patch"], &[""], &["events"]),
        r(read, &[""], &["pods"]),
        r(&["create", "delete"], &[""], &["pods"]),
        r(&["update", "patch"], &[""], &["pods/status"]),
        r(&["create"], &[""], &["pods/eviction"]),
        r(read, &[""], &["secrets", "configmaps"]),
        r(
            &["get"],
            &[""],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        r(&["get"], &[""], &["endpoints"]),
        r(
            &["create", "get", "list", "watch"],
            &["certificates.k8s.io"],
            &["certificatesigningrequests"],
        ),
        r(
            &["get", "create", "update", "patch", "delete"],
            &["coordination.k8s.io"],
            &["leases"],
        ),
        r(&["get"], &["storage.k8s.io"], &["volumeattachments"]),
        r(&["create"], &[""], &["serviceaccounts/token"]),
        r(
            &["get", "update", "patch"],
            &[""],
            &["persistentvolumeclaims/status"],
        ),
        r(read, &["storage.k8s.io"], &["csidrivers"]),
        r(
            &["get", "create", "update", "patch", "delete"],
            &["storage.k8s.io"],
            &["csinodes"],
        ),
        r(read, &["node.k8s.io"], &["runtimeclasses"]),
    ]
}

/// The node authorizer over a graph the server keeps current.
pub struct NodeAuthorizer {
    graph: Arc<Graph>,
    rules: Vec<PolicyRule>,
    /// `AuthorizeNodeWithSelectors` (beta, on by default in 1.33).
    with_selectors: bool,
}

fn no(reason: impl Into<String>) -> Decision {
    Decision::NoOpinion(reason.into())
}

fn no_relationship(node: &str) -> Decision {
    no(format!(
        "no relationship found between node '{node}' and this object"
    ))
}

impl NodeAuthorizer {
    pub fn new(graph: Arc<Graph>, with_selectors: bool) -> Self {
        Self {
            graph,
            rules: node_rules(),
            with_selectors,
        }
    }

    /// The decision for `a` (synchronous: the graph is in memory).
    pub fn decide(&self, a: &Attributes) -> Decision {
        let Some(node) = node_identity(&a.user) else {
            return no("");
        };
        if node.is_empty() {
            return no(format!("unknown node for user {:?}", a.user.name));
        }
        if a.resource_request {
            let decided = match (a.api_group.as_str(), a.resource.as_str()) {
                ("", "secrets") => Some(self.read_namespaced(node, VertexType::Secret, a)),
                ("", "configmaps") => Some(self.read_namespaced(node, VertexType::ConfigMap, a)),
                ("", "persistentvolumeclaims") if a.subresource == "status" => {
                    Some(self.status_update(node, VertexType::Pvc, a))
                }
                ("", "persistentvolumeclaims") => Some(self.get(node, VertexType::Pvc, a)),
                ("", "persistentvolumes") => Some(self.get(node, VertexType::Pv, a)),
                ("resource.k8s.io", "resourceclaims") => {
                    Some(self.get(node, VertexType::ResourceClaim, a))
                }
                ("storage.k8s.io", "volumeattachments") => {
                    Some(self.get(node, VertexType::VolumeAttachment, a))
                }
                ("", "serviceaccounts") => Some(self.create_token(node, a)),
                ("coordination.k8s.io", "leases") => Some(lease(node, a)),
                ("storage.k8s.io", "csinodes") => Some(csi_node(node, a)),
                ("resource.k8s.io", "resourceslices") => Some(self.resource_slice(node, a)),
                ("", "nodes") if self.with_selectors => Some(node_object(node, a)),
                ("", "pods") if self.with_selectors => Some(self.pod(node, a)),
                _ => None,
            };
            if let Some(d) = decided {
                return d;
            }
        }
        if self.rules.iter().any(|r| r.allows(a)) {
            Decision::Allow
        } else {
            no("")
        }
    }

    fn status_update(&self, node: &str, t: VertexType, a: &Attributes) -> Decision {
        if !matches!(a.verb.as_str(), "update" | "patch") {
            return no("can only get/update/patch this type");
        }
        if a.subresource != "status" {
            return no("can only update status subresource");
        }
        self.related(node, t, a)
    }

    fn get(&self, node: &str, t: VertexType, a: &Attributes) -> Decision {
        if a.verb != "get" {
            return no("can only get individual resources of this type");
        }
        if !a.subresource.is_empty() {
            return no("cannot get subresource");
        }
        self.related(node, t, a)
    }

    fn read_namespaced(&self, node: &str, t: VertexType, a: &Attributes) -> Decision {
        if !matches!(a.verb.as_str(), "get" | "list" | "watch") {
            return no("can only read resources of this type");
        }
        if !a.subresource.is_empty() {
            return no("cannot read subresource");
        }
        if a.namespace.is_empty() {
            return no("can only read namespaced object of this type");
        }
        self.related(node, t, a)
    }

    /// Upstream's `authorize`: allowed when the graph links the named object to the node.
    fn related(&self, node: &str, t: VertexType, a: &Attributes) -> Decision {
        if a.name.is_empty() {
            return no("No Object name found");
        }
        self.path(node, t, a)
    }

    fn path(&self, node: &str, t: VertexType, a: &Attributes) -> Decision {
        match self.graph.has_path_from(node, t, &a.namespace, &a.name) {
            Ok(()) => Decision::Allow,
            Err(why) => {
                tracing::debug!(node, why, "NODE DENY");
                no_relationship(node)
            }
        }
    }

    fn create_token(&self, node: &str, a: &Attributes) -> Decision {
        if a.verb != "create" || a.name.is_empty() {
            return no("can only create tokens for individual service accounts");
        }
        if a.subresource != "token" {
            return no("can only create token subresource of serviceaccount");
        }
        self.path(node, VertexType::ServiceAccount, a)
    }

    fn resource_slice(&self, node: &str, a: &Attributes) -> Decision {
        if !a.subresource.is_empty() {
            return no("cannot authorize ResourceSlice subresources");
        }
        match a.verb.as_str() {
            "create" => Decision::Allow,
            "get" | "update" | "patch" | "delete" => {
                self.related(node, VertexType::ResourceSlice, a)
            }
            "watch" | "list" | "deletecollection" => {
                if !self.with_selectors || selects(a, "nodeName", node) {
                    Decision::Allow
                } else {
                    no("can only list/watch/deletecollection resourceslices with nodeName field selector")
                }
            }
            _ => no("only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection"),
        }
    }

    fn pod(&self, node: &str, a: &Attributes) -> Decision {
        match (a.subresource.as_str(), a.verb.as_str()) {
            ("", "get") => self.get(node, VertexType::Pod, a),
            ("", "list" | "watch") => {
                if selects(a, "spec.nodeName", node) {
                    Decision::Allow
                } else if !a.name.is_empty() {
                    self.path(node, VertexType::Pod, a)
                } else {
                    no("can only list/watch pods with spec.nodeName field selector")
                }
            }
            ("", "create" | "delete") => Decision::Allow,
            ("status", "update" | "patch") => Decision::Allow,
            ("eviction", "create") => Decision::Allow,
            _ => no(""),
        }
    }
}

/// Whether the request's field selector requires `field=value`.
fn selects(a: &Attributes, field: &str, value: &str) -> bool {
    a.field_selector
        .iter()
        .any(|r| r.field == field && !r.negated && r.value == value)
}

fn lease(node: &str, a: &Attributes) -> Decision {
    if !matches!(
        a.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no("can only get, create, update, patch, or delete a node lease");
    }
    if a.namespace != NODE_LEASE_NAMESPACE {
        return no(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    // The name is not known on create; NodeRestriction checks it there.
    if a.verb != "create" && a.name != node {
        return no("can only access node lease with the same name as the requesting node");
    }
    Decision::Allow
}

fn csi_node(node: &str, a: &Attributes) -> Decision {
    if !matches!(
        a.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no("can only get, create, update, patch, or delete a CSINode");
    }
    if !a.subresource.is_empty() {
        return no("cannot authorize CSINode subresources");
    }
    if a.verb != "create" && a.name != node {
        return no("can only access CSINode with the same name as the requesting node");
    }
    Decision::Allow
}

/// Upstream's `authorizeNode` (with `AuthorizeNodeWithSelectors`).
fn node_object(node: &str, a: &Attributes) -> Decision {
    match (a.subresource.as_str(), a.verb.as_str()) {
        // NodeRestriction limits writes to the node's own object.
        ("", "create" | "update" | "patch") => Decision::Allow,
        ("", "get" | "list" | "watch") => {
            if a.name == node {
                Decision::Allow
            } else if a.name.is_empty() {
                no(format!(
                    "node '{node}' cannot read all nodes, only its own Node object"
                ))
            } else {
                no(format!(
                    "node '{node}' cannot read '{}', only its own Node object",
                    a.name
                ))
            }
        }
        ("status", "update" | "patch") => Decision::Allow,
        _ => no(""),
    }
}

#[async_trait]
impl Authorizer for NodeAuthorizer {
    async fn authorize(&self, a: &Attributes) -> Decision {
        self.decide(a)
    }

    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> RulesResult {
        if node_identity(user).is_some() {
            return RulesResult {
                incomplete: true,
                evaluation_error: "node authorizer does not support user rule resolution".into(),
                ..Default::default()
            };
        }
        RulesResult::default()
    }
}

#[cfg(test)]
mod tests;
