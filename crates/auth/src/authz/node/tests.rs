use super::refs::{pod_refs, pv_claim, pv_kubelet_secrets};
use super::*;
use kapi_machinery::{Object, RequestInfo};
use serde_json::json;

fn node_user(name: &str) -> UserInfo {
    UserInfo {
        name: format!("system:node:{name}"),
        groups: vec![NODES_GROUP.into(), "system:authenticated".into()],
        ..Default::default()
    }
}

fn attrs(user: &UserInfo, method: &str, path: &str, query: &str) -> Attributes {
    let info = RequestInfo::resolve(method, path, query);
    let selector = query
        .split('&')
        .find_map(|p| p.strip_prefix("fieldSelector="))
        .map(|v| v.replace("%3D", "="));
    Attributes::from_request(user, &info).with_field_selector(selector.as_deref())
}

fn pod(ns: &str, name: &str, node: &str, spec: serde_json::Value) -> Object {
    let mut spec = spec;
    if let Some(m) = spec.as_object_mut() {
        m.insert("nodeName".into(), node.into());
    }
    Object::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "uid": "u1"},
        "spec": spec,
    }))
    .unwrap()
}

fn authorizer() -> (Arc<Graph>, NodeAuthorizer) {
    let g = Arc::new(Graph::new());
    (g.clone(), NodeAuthorizer::new(g, true))
}

fn add(g: &Graph, p: &Object) {
    g.add_pod(p.namespace(), p.name(), &pod_refs(p));
}

const NO_REL: &str = "no relationship found between node 'n1' and this object";

#[test]
fn a_kubelet_reads_the_secret_of_its_pod_only_while_the_pod_is_bound_to_it() {
    let (g, a) = authorizer();
    let n1 = node_user("n1");
    let get = attrs(&n1, "GET", "/api/v1/namespaces/d/secrets/s1", "");
    // Nothing known: no relationship.
    assert_eq!(a.decide(&get), Decision::NoOpinion(NO_REL.into()));
    add(
        &g,
        &pod(
            "d",
            "p1",
            "n1",
            json!({"volumes": [{"name": "v", "secret": {"secretName": "s1"}}]}),
        ),
    );
    assert_eq!(a.decide(&get), Decision::Allow);
    // A watch of that one secret (metadata.name selector) too.
    let watch = attrs(
        &n1,
        "GET",
        "/api/v1/namespaces/d/secrets",
        "watch=true&fieldSelector=metadata.name%3Ds1",
    );
    assert_eq!(watch.name, "s1");
    assert_eq!(a.decide(&watch), Decision::Allow);
    // Another node may not.
    let n2 = node_user("n2");
    assert_eq!(
        a.decide(&attrs(&n2, "GET", "/api/v1/namespaces/d/secrets/s1", "")),
        Decision::NoOpinion("no relationship found between node 'n2' and this object".into())
    );
    // Nor all secrets, nor a write.
    assert_eq!(
        a.decide(&attrs(&n1, "GET", "/api/v1/namespaces/d/secrets", "")),
        Decision::NoOpinion("No Object name found".into())
    );
    assert_eq!(
        a.decide(&attrs(&n1, "DELETE", "/api/v1/namespaces/d/secrets/s1", "")),
        Decision::NoOpinion("can only read resources of this type".into())
    );
    assert_eq!(
        a.decide(&attrs(&n1, "GET", "/api/v1/secrets", "")),
        Decision::NoOpinion("can only read namespaced object of this type".into())
    );
    // The pod is deleted: the secret is no longer the node's.
    g.delete_pod("d", "p1");
    assert_eq!(a.decide(&get), Decision::NoOpinion(NO_REL.into()));
    assert!(g.is_empty());
}

#[test]
fn pod_references_reach_the_node() {
    let (g, a) = authorizer();
    let n1 = node_user("n1");
    add(
        &g,
        &pod(
            "d",
            "p1",
            "n1",
            json!({
                "serviceAccountName": "sa",
                "imagePullSecrets": [{"name": "pull"}],
                "containers": [{"name": "c",
                    "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm-env", "key": "k"}}},
                            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s-env", "key": "k"}}}],
                    "envFrom": [{"configMapRef": {"name": "cm-from"}}]}],
                "volumes": [
                    {"name": "claim", "persistentVolumeClaim": {"claimName": "pvc1"}},
                    {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "proj", "projected": {"sources": [{"configMap": {"name": "cm-proj"}}, {"secret": {"name": "s-proj"}}]}},
                    {"name": "csi", "csi": {"driver": "x", "nodePublishSecretRef": {"name": "s-csi"}}}
                ]
            }),
        ),
    );
    for path in [
        "/api/v1/namespaces/d/secrets/pull",
        "/api/v1/namespaces/d/secrets/s-env",
        "/api/v1/namespaces/d/secrets/s-proj",
        "/api/v1/namespaces/d/secrets/s-csi",
        "/api/v1/namespaces/d/configmaps/cm-env",
        "/api/v1/namespaces/d/configmaps/cm-from",
        "/api/v1/namespaces/d/configmaps/cm-proj",
        "/api/v1/namespaces/d/persistentvolumeclaims/pvc1",
        "/api/v1/namespaces/d/persistentvolumeclaims/p1-eph",
        "/api/v1/namespaces/d/pods/p1",
    ] {
        assert_eq!(
            a.decide(&attrs(&n1, "GET", path, "")),
            Decision::Allow,
            "{path}"
        );
    }
    // A token for the pod's service account; not for another account.
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "POST",
            "/api/v1/namespaces/d/serviceaccounts/sa/token",
            ""
        )),
        Decision::Allow
    );
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "POST",
            "/api/v1/namespaces/d/serviceaccounts/other/token",
            ""
        )),
        Decision::NoOpinion(NO_REL.into())
    );
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "GET",
            "/api/v1/namespaces/d/serviceaccounts/sa",
            ""
        )),
        Decision::NoOpinion("can only create tokens for individual service accounts".into())
    );
    // A PV bound to the claim, and its secret.
    let pv = Object::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"claimRef": {"namespace": "d", "name": "pvc1"},
                 "csi": {"driver": "x", "volumeHandle": "h",
                         "nodeStageSecretRef": {"namespace": "sec", "name": "stage"},
                         "controllerPublishSecretRef": {"namespace": "sec", "name": "ctrl"}}}
    }))
    .unwrap();
    let claim = pv_claim(&pv);
    g.add_pv(
        pv.name(),
        claim.as_ref().map(|(n, c)| (n.as_str(), c.as_str())),
        &pv_kubelet_secrets(&pv),
    );
    assert_eq!(
        a.decide(&attrs(&n1, "GET", "/api/v1/persistentvolumes/pv1", "")),
        Decision::Allow
    );
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "GET",
            "/api/v1/namespaces/sec/secrets/stage",
            ""
        )),
        Decision::Allow
    );
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "GET",
            "/api/v1/namespaces/sec/secrets/ctrl",
            ""
        )),
        Decision::NoOpinion(NO_REL.into())
    );
    assert_eq!(
        a.decide(&attrs(&n1, "GET", "/api/v1/persistentvolumes", "")),
        Decision::NoOpinion("can only get individual resources of this type".into())
    );
    // PVC status is writable by the node, the PVC itself is not.
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "PATCH",
            "/api/v1/namespaces/d/persistentvolumeclaims/pvc1/status",
            ""
        )),
        Decision::Allow
    );
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "GET",
            "/api/v1/namespaces/d/persistentvolumeclaims/pvc1/status",
            ""
        )),
        Decision::NoOpinion("can only get/update/patch this type".into())
    );
}

#[test]
fn a_mirror_pod_grants_nothing_but_itself() {
    let (g, a) = authorizer();
    let n1 = node_user("n1");
    let mut p = pod(
        "d",
        "m",
        "n1",
        json!({"volumes": [{"name": "v", "secret": {"secretName": "s1"}}]}),
    );
    p.set_annotation(refs::MIRROR_POD_ANNOTATION, "x");
    add(&g, &p);
    assert_eq!(
        a.decide(&attrs(&n1, "GET", "/api/v1/namespaces/d/secrets/s1", "")),
        Decision::NoOpinion(NO_REL.into())
    );
    assert_eq!(
        a.decide(&attrs(&n1, "GET", "/api/v1/namespaces/d/pods/m", "")),
        Decision::Allow
    );
}

#[test]
fn nodes_leases_and_pods_with_selectors() {
    let (_, a) = authorizer();
    let n1 = node_user("n1");
    let d = |m, p, q| a.decide(&attrs(&n1, m, p, q));
    assert_eq!(d("GET", "/api/v1/nodes/n1", ""), Decision::Allow);
    assert_eq!(
        d("GET", "/api/v1/nodes/n2", ""),
        Decision::NoOpinion("node 'n1' cannot read 'n2', only its own Node object".into())
    );
    assert_eq!(
        d("GET", "/api/v1/nodes", ""),
        Decision::NoOpinion("node 'n1' cannot read all nodes, only its own Node object".into())
    );
    assert_eq!(
        d(
            "GET",
            "/api/v1/nodes",
            "fieldSelector=metadata.name%3Dn1&watch=true"
        ),
        Decision::Allow
    );
    // Writes to any node pass here; NodeRestriction narrows them.
    assert_eq!(d("PUT", "/api/v1/nodes/n2/status", ""), Decision::Allow);
    assert_eq!(
        d("DELETE", "/api/v1/nodes/n1", ""),
        Decision::NoOpinion("".into())
    );
    assert_eq!(
        d("GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn1"),
        Decision::Allow
    );
    assert_eq!(
        d("GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn2"),
        Decision::NoOpinion("can only list/watch pods with spec.nodeName field selector".into())
    );
    assert_eq!(
        d("PUT", "/api/v1/namespaces/d/pods/p/status", ""),
        Decision::Allow
    );
    assert_eq!(
        d("POST", "/api/v1/namespaces/d/pods/p/eviction", ""),
        Decision::Allow
    );
    assert_eq!(
        d("PUT", "/api/v1/namespaces/d/pods/p", ""),
        Decision::NoOpinion("".into())
    );
    assert_eq!(
        d("GET", "/api/v1/namespaces/d/pods/p", ""),
        Decision::NoOpinion(NO_REL.into())
    );
    assert_eq!(
        d(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
            ""
        ),
        Decision::Allow
    );
    assert_eq!(
        d(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2",
            ""
        ),
        Decision::NoOpinion(
            "can only access node lease with the same name as the requesting node".into()
        )
    );
    assert_eq!(
        d(
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/n1",
            ""
        ),
        Decision::NoOpinion(
            "can only access leases in the \"kube-node-lease\" system namespace".into()
        )
    );
    assert_eq!(
        d(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            ""
        ),
        Decision::Allow
    );
    // Static rules.
    assert_eq!(d("GET", "/api/v1/services", ""), Decision::Allow);
    assert_eq!(
        d("POST", "/api/v1/namespaces/d/events", ""),
        Decision::Allow
    );
    assert_eq!(
        d("GET", "/api/v1/namespaces", ""),
        Decision::NoOpinion("".into())
    );
    // Without AuthorizeNodeWithSelectors, nodes and pods follow the static rules (as 1.28).
    let old = NodeAuthorizer::new(Arc::new(Graph::new()), false);
    assert_eq!(
        old.decide(&attrs(&n1, "GET", "/api/v1/nodes/n2", "")),
        Decision::Allow
    );
    assert_eq!(
        old.decide(&attrs(&n1, "GET", "/api/v1/pods", "")),
        Decision::Allow
    );
}

#[test]
fn only_nodes_are_judged() {
    let (_, a) = authorizer();
    let u = UserInfo {
        name: "system:node:n1".into(),
        ..Default::default()
    };
    assert_eq!(
        a.decide(&attrs(&u, "GET", "/api/v1/services", "")),
        Decision::NoOpinion("".into())
    );
    let nameless = node_user("");
    assert_eq!(
        a.decide(&attrs(&nameless, "GET", "/api/v1/services", "")),
        Decision::NoOpinion("unknown node for user \"system:node:\"".into())
    );
    assert!(a.rules_for(&node_user("n1"), "d").incomplete);
    assert!(!a.rules_for(&u, "d").incomplete);
}

#[test]
fn volume_attachments_and_relists() {
    let (g, a) = authorizer();
    let n1 = node_user("n1");
    g.add_node_object(VertexType::VolumeAttachment, "va1", "n1");
    let get = attrs(
        &n1,
        "GET",
        "/apis/storage.k8s.io/v1/volumeattachments/va1",
        "",
    );
    assert_eq!(a.decide(&get), Decision::Allow);
    g.add_node_object(VertexType::VolumeAttachment, "va1", "n2");
    assert_eq!(a.decide(&get), Decision::NoOpinion(NO_REL.into()));
    add(
        &g,
        &pod("d", "p1", "n1", json!({"serviceAccountName": "sa"})),
    );
    add(
        &g,
        &pod("d", "p2", "n1", json!({"serviceAccountName": "sa"})),
    );
    g.retain(VertexType::Pod, |_, name| name == "p2");
    assert_eq!(
        a.decide(&attrs(&n1, "GET", "/api/v1/namespaces/d/pods/p1", "")),
        Decision::NoOpinion(NO_REL.into())
    );
    assert_eq!(
        a.decide(&attrs(
            &n1,
            "POST",
            "/api/v1/namespaces/d/serviceaccounts/sa/token",
            ""
        )),
        Decision::Allow
    );
}
