//! NodeRestriction (upstream's `plugin/pkg/admission/noderestriction/admission.go`, 1.33):
//! narrows what a kubelet (user `system:node:<name>` in `system:nodes`) may write to its own
//! things. The node authorizer lets every node write nodes, node status, pod status, evictions,
//! mirror pods, leases, CSINodes and tokens; this plugin, which sees the objects, refuses
//! those of other nodes, with upstream's words (`node "n1" is not allowed to modify node
//! "n2"`). Off by default, as upstream; kubeadm turns it on with
//! `--enable-admission-plugins=NodeRestriction`.

use super::util::handler;
use crate::objects::ObjectStore;
use crate::registry::{AdmissionError, Plugins};
use crate::{Attributes, MutationInterface, Operation};
use async_trait::async_trait;
use kapi_machinery::pod_refs::{
    pod_config_map_names, pod_secret_names, pod_uses_cluster_trust_bundles, pod_uses_pvcs,
    MIRROR_POD_ANNOTATION,
};
use kapi_machinery::{ApiError, GroupResource, Object};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

pub const PLUGIN_NAME: &str = "NodeRestriction";

const NODES_GROUP: &str = "system:nodes";
const NODE_USER_PREFIX: &str = "system:node:";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

pub fn register(plugins: &mut Plugins) -> Result<(), AdmissionError> {
    plugins.register(
        PLUGIN_NAME,
        Arc::new(|_, ctx| {
            Ok(Arc::new(NodeRestriction {
                objects: ctx.objects(PLUGIN_NAME)?,
            }))
        }),
    )
}

pub struct NodeRestriction {
    objects: Arc<dyn ObjectStore>,
}

handler!(NodeRestriction, [Create, Update, Delete], mutates);

/// Upstream's `NodeIdentity`: the node's name for `system:node:<name>` in `system:nodes`.
fn node_identity(a: &Attributes) -> Option<&str> {
    let name = a.user.name.strip_prefix(NODE_USER_PREFIX)?;
    a.user
        .groups
        .iter()
        .any(|g| g == NODES_GROUP)
        .then_some(name)
}

/// Upstream's `admission.NewForbidden`: the request's name, else the object's name or
/// generateName, else `Unknown`.
fn forbidden(a: &Attributes, why: impl std::fmt::Display) -> ApiError {
    let mut name = a.name.clone();
    if name.is_empty() {
        name = "Unknown".into();
        if let Some(o) = &a.object {
            if !o.name().is_empty() {
                name = o.name().into();
            } else if !o.generate_name().is_empty() {
                name = o.generate_name().into();
            }
        }
    }
    ApiError::forbidden(&a.group_resource(), &name, why)
}

fn str_at<'a>(v: Option<&'a Value>, path: &[&str]) -> &'a str {
    v.map(|v| kapi_machinery::pod_refs::s(v, path))
        .unwrap_or("")
}

fn op_name(op: Operation) -> &'static str {
    op.as_str()
}

#[async_trait]
impl MutationInterface for NodeRestriction {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let Some(node) = node_identity(a) else {
            return Ok(());
        };
        if node.is_empty() {
            return Err(forbidden(
                a,
                format!("could not determine node from user {:?}", a.user.name),
            ));
        }
        let node = node.to_string();
        let a = &*a;
        match (a.resource.group.as_str(), a.resource.resource.as_str()) {
            ("", "pods") => match a.subresource.as_str() {
                "" => self.admit_pod(&node, a).await,
                "status" => admit_pod_status(&node, a),
                "eviction" => self.admit_pod_eviction(&node, a).await,
                sub => Err(forbidden(
                    a,
                    format!("unexpected pod subresource {sub:?}, only 'status' and 'eviction' are allowed"),
                )),
            },
            ("", "nodes") => admit_node(&node, a),
            ("", "persistentvolumeclaims") => match a.subresource.as_str() {
                "status" => admit_pvc_status(&node, a),
                _ => Err(forbidden(a, "may only update PVC status")),
            },
            ("", "serviceaccounts") => self.admit_service_account(&node, a).await,
            ("coordination.k8s.io", "leases") => admit_named(
                &node,
                a,
                Some(NODE_LEASE_NAMESPACE),
                "can only access node lease with the same name as the requesting node",
            ),
            ("storage.k8s.io", "csinodes") => admit_named(
                &node,
                a,
                None,
                "can only access CSINode with the same name as the requesting node",
            ),
            _ => Ok(()),
        }
    }
}

impl NodeRestriction {
    /// A pod as the informer holds it, read from storage when the cache has none yet;
    /// `Err(404)` when it does not exist (upstream returns the lister's NotFound).
    async fn pod(&self, a: &Attributes, name: &str) -> Result<Arc<Object>, ApiError> {
        let gr = GroupResource::new("", "pods");
        let found = match self.objects.get_cached(&gr, &a.namespace, name).await {
            Ok(Some(p)) => Some(p),
            Ok(None) => self
                .objects
                .get(&gr, &a.namespace, name)
                .await
                .map_err(|e| forbidden(a, e.message))?
                .map(Arc::new),
            Err(e) => return Err(forbidden(a, e.message)),
        };
        found.ok_or_else(|| ApiError::not_found(&gr, name))
    }

    async fn admit_pod(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        match a.operation {
            Operation::Create => self.admit_pod_create(node, a).await,
            Operation::Delete => {
                let pod = self.pod(a, &a.name).await?;
                if str_at(pod.get("spec"), &["nodeName"]) != node {
                    return Err(forbidden(
                        a,
                        format!("node {node:?} can only delete pods with spec.nodeName set to itself"),
                    ));
                }
                Ok(())
            }
            op => Err(forbidden(
                a,
                format!(
                    "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
                    op_name(op)
                ),
            )),
        }
    }

    async fn admit_pod_create(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        let Some(pod) = &a.object else {
            return Err(forbidden(a, "unexpected type <nil>"));
        };
        if !pod.annotations().contains_key(MIRROR_POD_ANNOTATION) {
            return Err(forbidden(
                a,
                format!("pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"),
            ));
        }
        let spec = pod.get("spec");
        if str_at(spec, &["nodeName"]) != node {
            return Err(forbidden(
                a,
                format!("node {node:?} can only create pods with spec.nodeName set to itself"),
            ));
        }
        let owners: Vec<&Value> = pod
            .metadata()
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .map(|o| o.iter().collect())
            .unwrap_or_default();
        let owner = match owners.as_slice() {
            [] => {
                return Err(forbidden(
                    a,
                    format!("node {node:?} can only create pods with an owner reference set to itself"),
                ))
            }
            [one] => *one,
            _ => {
                return Err(forbidden(
                    a,
                    format!("node {node:?} can only create pods with a single owner reference set to itself"),
                ))
            }
        };
        let field = |k: &str| owner.get(k).and_then(Value::as_str).unwrap_or("");
        if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
            return Err(forbidden(
                a,
                format!("node {node:?} can only create pods with an owner reference set to itself"),
            ));
        }
        if owner.get("controller").and_then(Value::as_bool) != Some(true) {
            return Err(forbidden(
                a,
                format!("node {node:?} can only create pods with a controller owner reference set to itself"),
            ));
        }
        if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
            return Err(forbidden(
                a,
                format!("node {node:?} must not set blockOwnerDeletion on an owner reference"),
            ));
        }
        let nodes = GroupResource::new("", "nodes");
        let found = match self.objects.get_cached(&nodes, "", node).await {
            Ok(Some(n)) => Some(n),
            Ok(None) => self
                .objects
                .get(&nodes, "", node)
                .await
                .ok()
                .flatten()
                .map(Arc::new),
            Err(e) => {
                return Err(forbidden(
                    a,
                    format!("error looking up node {node} to verify uid: {}", e.message),
                ))
            }
        };
        let Some(found) = found else {
            return Err(ApiError::not_found(&nodes, node));
        };
        if field("uid") != found.uid() {
            return Err(forbidden(
                a,
                format!(
                    "node {node} UID mismatch: expected {} got {}",
                    field("uid"),
                    found.uid()
                ),
            ));
        }
        let null = Value::Null;
        let spec = spec.unwrap_or(&null);
        let refused = if !str_at(Some(spec), &["serviceAccountName"]).is_empty() {
            Some("can not create pods that reference a service account")
        } else if !pod_secret_names(spec).is_empty() {
            Some("can not create pods that reference secrets")
        } else if !pod_config_map_names(spec).is_empty() {
            Some("can not create pods that reference configmaps")
        } else if pod_uses_cluster_trust_bundles(spec) {
            Some("can not create pods that reference clustertrustbundles")
        } else if pod_uses_pvcs(spec) {
            Some("can not create pods that reference persistentvolumeclaims")
        } else {
            None
        };
        match refused {
            Some(why) => Err(forbidden(a, format!("node {node:?} {why}"))),
            None => Ok(()),
        }
    }

    async fn admit_pod_eviction(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        if a.operation != Operation::Create {
            return Err(forbidden(
                a,
                format!("unexpected operation {}", op_name(a.operation)),
            ));
        }
        let mut pod_name = a.name.clone();
        if pod_name.is_empty() {
            pod_name = a
                .object
                .as_ref()
                .map(|o| o.name().to_string())
                .unwrap_or_default();
            if pod_name.is_empty() {
                return Err(forbidden(a, "could not determine pod from request data"));
            }
        }
        let pod = self.pod(a, &pod_name).await?;
        if str_at(pod.get("spec"), &["nodeName"]) != node {
            return Err(forbidden(
                a,
                format!("node {node} can only evict pods with spec.nodeName set to itself"),
            ));
        }
        Ok(())
    }

    async fn admit_service_account(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        if a.operation != Operation::Create || a.subresource != "token" {
            return Ok(());
        }
        let r = a
            .object
            .as_ref()
            .and_then(|o| o.get("spec"))
            .and_then(|s| s.get("boundObjectRef"));
        let field = |k: &str| str_at(r, &[k]);
        if r.is_none()
            || field("apiVersion") != "v1"
            || field("kind") != "Pod"
            || field("name").is_empty()
        {
            return Err(forbidden(a, "node requested token not bound to a pod"));
        }
        if field("uid").is_empty() {
            return Err(forbidden(
                a,
                "node requested token with a pod binding without a uid",
            ));
        }
        let pod = self.pod(a, field("name")).await?;
        if field("uid") != pod.uid() {
            return Err(forbidden(
                a,
                format!("the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated", field("uid")),
            ));
        }
        if str_at(pod.get("spec"), &["nodeName"]) != node {
            return Err(forbidden(
                a,
                "node requested token bound to a pod scheduled on a different node",
            ));
        }
        Ok(())
    }
}

fn admit_pod_status(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.operation != Operation::Update {
        return Err(forbidden(
            a,
            format!("unexpected operation {:?}", op_name(a.operation)),
        ));
    }
    let (Some(old), Some(new)) = (&a.old_object, &a.object) else {
        return Err(forbidden(a, "unexpected type <nil>"));
    };
    if str_at(old.get("spec"), &["nodeName"]) != node {
        return Err(forbidden(
            a,
            format!("node {node:?} can only update pod status for pods with spec.nodeName set to itself"),
        ));
    }
    if old.labels() != new.labels() {
        return Err(forbidden(
            a,
            format!("node {node:?} cannot update labels through pod status"),
        ));
    }
    let claims = |o: &Object| {
        o.get("status")
            .and_then(|s| s.get("resourceClaimStatuses"))
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .map(|s| (s.get("name").cloned(), s.get("resourceClaimName").cloned()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    if claims(old) != claims(new) {
        return Err(forbidden(
            a,
            format!("node {node:?} cannot update resource claim statues"),
        ));
    }
    Ok(())
}

/// A PVC without what a node may change in its status, nor the fields a write may leave out.
fn pvc_without_node_fields(pvc: &Object) -> Value {
    let mut v = pvc.clone().into_value();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    if let Some(st) = v.get_mut("status").and_then(Value::as_object_mut) {
        // RecoverVolumeExpansionFailure (beta, on in 1.33) lets nodes write the allocated
        // resources too.
        for k in [
            "capacity",
            "conditions",
            "allocatedResources",
            "allocatedResourceStatuses",
        ] {
            st.remove(k);
        }
    }
    v
}

fn admit_pvc_status(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.operation != Operation::Update {
        return Err(forbidden(
            a,
            format!("unexpected operation {:?}", op_name(a.operation)),
        ));
    }
    let (Some(old), Some(new)) = (&a.old_object, &a.object) else {
        return Err(forbidden(a, "unexpected type <nil>"));
    };
    let (old, new) = (pvc_without_node_fields(old), pvc_without_node_fields(new));
    if old != new {
        let changed: Vec<&str> = ["metadata", "spec", "status"]
            .into_iter()
            .filter(|k| old.get(*k) != new.get(*k))
            .collect();
        return Err(forbidden(
            a,
            format!(
                "node {node:?} is not allowed to update fields other than status.capacity and status.conditions: {}",
                changed.join(", ")
            ),
        ));
    }
    Ok(())
}

/// The namespace part of a label key (`a.b/c` → `a.b`).
fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(ns, _)| ns).unwrap_or("")
}

fn in_domain(ns: &str, domain: &str) -> bool {
    ns == domain || ns.strip_suffix(domain).is_some_and(|p| p.ends_with('.'))
}

/// `k8s.io/kubelet/pkg/apis.IsKubeletLabel`: the labels a kubelet may set on its Node.
fn is_kubelet_label(key: &str) -> bool {
    const KUBELET_LABELS: &[&str] = &[
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "node.kubernetes.io/windows-build",
    ];
    let ns = label_namespace(key);
    KUBELET_LABELS.contains(&key)
        || in_domain(ns, "kubelet.kubernetes.io")
        || in_domain(ns, "node.kubernetes.io")
}

/// Labels added, removed or changed that a node may not touch, sorted.
fn forbidden_labels(
    new: &std::collections::BTreeMap<String, String>,
    old: &std::collections::BTreeMap<String, String>,
) -> Vec<String> {
    let modified: BTreeSet<&String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(v))
        .map(|(k, _)| k)
        .chain(
            old.iter()
                .filter(|(k, v)| new.get(*k) != Some(v))
                .map(|(k, _)| k),
        )
        .collect();
    modified
        .into_iter()
        .filter(|k| {
            let ns = label_namespace(k);
            let restricted = in_domain(ns, "node-restriction.kubernetes.io");
            let kubernetes = in_domain(ns, "kubernetes.io") || in_domain(ns, "k8s.io");
            restricted || (kubernetes && !is_kubelet_label(k))
        })
        .cloned()
        .collect()
}

fn admit_node(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.name != node {
        return Err(forbidden(
            a,
            format!("node {node:?} is not allowed to modify node {:?}", a.name),
        ));
    }
    let config_source = |o: &Object| o.get("spec").and_then(|s| s.get("configSource")).cloned();
    match (a.operation, &a.object, &a.old_object) {
        (Operation::Create, Some(new), _) => {
            if config_source(new).is_some_and(|c| !c.is_null()) {
                return Err(forbidden(
                    a,
                    format!(
                        "node {node:?} is not allowed to create pods with a non-nil configSource"
                    ),
                ));
            }
            let bad = forbidden_labels(&new.labels(), &Default::default());
            if !bad.is_empty() {
                return Err(forbidden(
                    a,
                    format!(
                        "node {node:?} is not allowed to set the following labels: {}",
                        bad.join(", ")
                    ),
                ));
            }
        }
        (Operation::Update, Some(new), Some(old)) => {
            let source = config_source(new).filter(|c| !c.is_null());
            if source.is_some() && source != config_source(old).filter(|c| !c.is_null()) {
                return Err(forbidden(
                    a,
                    format!("node {node:?} is not allowed to update configSource to a new non-nil configSource"),
                ));
            }
            let taints = |o: &Object| {
                o.get("spec")
                    .and_then(|s| s.get("taints"))
                    .filter(|t| t.as_array().is_some_and(|t| !t.is_empty()))
                    .cloned()
            };
            if taints(new) != taints(old) {
                return Err(forbidden(
                    a,
                    format!("node {node:?} is not allowed to modify taints"),
                ));
            }
            let bad = forbidden_labels(&new.labels(), &old.labels());
            if !bad.is_empty() {
                return Err(forbidden(
                    a,
                    format!("is not allowed to modify labels: {}", bad.join(", ")),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Leases (in `namespace`) and CSINodes: only the node's own name; on create the object's.
fn admit_named(
    node: &str,
    a: &Attributes,
    namespace: Option<&str>,
    why: &str,
) -> Result<(), ApiError> {
    if let Some(ns) = namespace {
        if a.namespace != ns {
            return Err(forbidden(
                a,
                format!("can only access leases in the {ns:?} system namespace"),
            ));
        }
    }
    let name = match (a.operation, &a.object) {
        (Operation::Create, Some(o)) => o.name(),
        _ => a.name.as_str(),
    };
    if name != node {
        return Err(forbidden(a, why));
    }
    Ok(())
}

#[cfg(test)]
#[path = "node_restriction_tests.rs"]
mod tests;
