use super::*;
use crate::objects::memory::MemoryObjects;
use kapi_machinery::{GroupVersionKind, GroupVersionResource, UserInfo};
use serde_json::json;

fn store() -> Arc<MemoryObjects> {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "nodes",
        json!({"metadata": {"name": "n1", "uid": "node-uid"}}),
    );
    for (name, node) in [("mine", "n1"), ("theirs", "n2")] {
        m.put(
            "pods",
            json!({"metadata": {"namespace": "d", "name": name, "uid": format!("{name}-uid"),
                                "labels": {"app": "x"}},
                   "spec": {"nodeName": node}}),
        );
    }
    m
}

fn plugin() -> NodeRestriction {
    NodeRestriction { objects: store() }
}

fn node(name: &str) -> UserInfo {
    UserInfo {
        name: format!("system:node:{name}"),
        groups: vec!["system:nodes".into(), "system:authenticated".into()],
        ..Default::default()
    }
}

fn req(
    op: Operation,
    (group, resource, sub): (&str, &str, &str),
    (ns, name): (&str, &str),
    obj: Option<Value>,
    old: Option<Value>,
) -> Attributes {
    let mut a = Attributes::new(
        op,
        GroupVersionKind::new(group, "v1", "X"),
        GroupVersionResource::new(group, "v1", resource),
        ns,
        name,
    );
    a.subresource = sub.into();
    a.object = obj.map(|o| Object::from_value(o).unwrap());
    a.old_object = old.map(|o| Object::from_value(o).unwrap());
    a.user = node("n1");
    a
}

async fn refused(p: &NodeRestriction, mut a: Attributes) -> (u16, String) {
    let e = p.admit(&mut a).await.unwrap_err();
    (e.code, e.message)
}

async fn ok(p: &NodeRestriction, mut a: Attributes) {
    p.admit(&mut a).await.unwrap();
}

fn node_obj(name: &str, labels: Value, taints: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})
}

#[tokio::test]
async fn a_node_modifies_only_its_own_node() {
    let p = plugin();
    let nodes = ("", "nodes", "status");
    let n2 = node_obj("n2", json!({}), json!([]));
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                nodes,
                ("", "n2"),
                Some(n2.clone()),
                Some(n2)
            )
        )
        .await,
        (
            403,
            r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#.into()
        )
    );
    let mine = node_obj("n1", json!({"kubernetes.io/hostname": "n1"}), json!([]));
    ok(
        &p,
        req(
            Operation::Update,
            nodes,
            ("", "n1"),
            Some(mine.clone()),
            Some(mine.clone()),
        ),
    )
    .await;
    // Create with a restricted label; then an update touching labels and taints.
    let bad = node_obj(
        "n1",
        json!({"node-restriction.kubernetes.io/x": "1", "foo.k8s.io/y": "1", "node.kubernetes.io/z": "1", "mine": "1"}),
        json!([]),
    );
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Create,
                ("", "nodes", ""),
                ("", "n1"),
                Some(bad.clone()),
                None
            )
        )
        .await
        .1,
        r#"nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: foo.k8s.io/y, node-restriction.kubernetes.io/x"#
    );
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                ("", "nodes", ""),
                ("", "n1"),
                Some(bad),
                Some(mine.clone())
            )
        )
        .await
        .1,
        r#"nodes "n1" is forbidden: is not allowed to modify labels: foo.k8s.io/y, node-restriction.kubernetes.io/x"#
    );
    let tainted = node_obj(
        "n1",
        json!({"kubernetes.io/hostname": "n1"}),
        json!([{"key": "k", "effect": "NoSchedule"}]),
    );
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                ("", "nodes", ""),
                ("", "n1"),
                Some(mine),
                Some(tainted)
            )
        )
        .await
        .1,
        r#"nodes "n1" is forbidden: node "n1" is not allowed to modify taints"#
    );
    // Other users are not this plugin's business.
    let mut a = req(Operation::Delete, ("", "nodes", ""), ("", "n2"), None, None);
    a.user.groups.clear();
    ok(&p, a).await;
}

#[tokio::test]
async fn pod_status_eviction_and_delete_only_for_the_nodes_pods() {
    let p = plugin();
    let theirs = json!({"metadata": {"namespace": "d", "name": "theirs", "labels": {"app": "x"}}, "spec": {"nodeName": "n2"}});
    let mine = json!({"metadata": {"namespace": "d", "name": "mine", "labels": {"app": "x"}}, "spec": {"nodeName": "n1"}});
    let status = ("", "pods", "status");
    assert_eq!(
        refused(&p, req(Operation::Update, status, ("d", "theirs"), Some(theirs.clone()), Some(theirs))).await,
        (403, r#"pods "theirs" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself"#.into())
    );
    ok(
        &p,
        req(
            Operation::Update,
            status,
            ("d", "mine"),
            Some(mine.clone()),
            Some(mine.clone()),
        ),
    )
    .await;
    let relabelled = json!({"metadata": {"namespace": "d", "name": "mine", "labels": {"app": "y"}}, "spec": {"nodeName": "n1"}});
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                status,
                ("d", "mine"),
                Some(relabelled),
                Some(mine)
            )
        )
        .await
        .1,
        r#"pods "mine" is forbidden: node "n1" cannot update labels through pod status"#
    );
    let eviction = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "d"}});
    let evict = ("", "pods", "eviction");
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Create,
                evict,
                ("d", "theirs"),
                Some(eviction("theirs")),
                None
            )
        )
        .await
        .1,
        r#"pods "theirs" is forbidden: node n1 can only evict pods with spec.nodeName set to itself"#
    );
    ok(
        &p,
        req(
            Operation::Create,
            evict,
            ("d", "mine"),
            Some(eviction("mine")),
            None,
        ),
    )
    .await;
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Create,
                evict,
                ("d", "gone"),
                Some(eviction("gone")),
                None
            )
        )
        .await,
        (404, r#"pods "gone" not found"#.into())
    );
    let pods = ("", "pods", "");
    assert_eq!(
        refused(
            &p,
            req(Operation::Delete, pods, ("d", "theirs"), None, None)
        )
        .await
        .1,
        r#"pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself"#
    );
    ok(&p, req(Operation::Delete, pods, ("d", "mine"), None, None)).await;
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                pods,
                ("d", "mine"),
                Some(json!({"metadata": {"name": "mine"}})),
                None
            )
        )
        .await
        .1,
        r#"pods "mine" is forbidden: unexpected operation "UPDATE", node "n1" can only create and delete mirror pods"#
    );
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Create,
                ("", "pods", "binding"),
                ("d", "mine"),
                Some(json!({})),
                None
            )
        )
        .await
        .1,
        r#"pods "mine" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed"#
    );
}

#[tokio::test]
async fn mirror_pods() {
    let p = plugin();
    let pod = |ann: bool, node: &str, owner: Value, spec: Value| {
        let mut spec = spec;
        spec["nodeName"] = node.into();
        let mut meta = json!({"name": "m", "namespace": "d", "ownerReferences": owner});
        if ann {
            meta["annotations"] = json!({MIRROR_POD_ANNOTATION: "h"});
        }
        json!({"metadata": meta, "spec": spec})
    };
    let owner = json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid", "controller": true}]);
    let create = |o: Value| {
        req(
            Operation::Create,
            ("", "pods", ""),
            ("d", "m"),
            Some(o),
            None,
        )
    };
    ok(
        &p,
        create(pod(true, "n1", owner.clone(), json!({"containers": []}))),
    )
    .await;
    let cases = [
        (
            pod(false, "n1", owner.clone(), json!({})),
            r#"pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#,
        ),
        (
            pod(true, "n2", owner.clone(), json!({})),
            r#"node "n1" can only create pods with spec.nodeName set to itself"#,
        ),
        (
            pod(true, "n1", json!([]), json!({})),
            r#"node "n1" can only create pods with an owner reference set to itself"#,
        ),
        (
            pod(
                true,
                "n1",
                json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid"}]),
                json!({}),
            ),
            r#"node "n1" can only create pods with a controller owner reference set to itself"#,
        ),
        (
            pod(
                true,
                "n1",
                json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "other", "controller": true}]),
                json!({}),
            ),
            "node n1 UID mismatch: expected other got node-uid",
        ),
        (
            pod(
                true,
                "n1",
                owner.clone(),
                json!({"serviceAccountName": "sa"}),
            ),
            r#"node "n1" can not create pods that reference a service account"#,
        ),
        (
            pod(
                true,
                "n1",
                owner.clone(),
                json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
            ),
            r#"node "n1" can not create pods that reference secrets"#,
        ),
        (
            pod(
                true,
                "n1",
                owner.clone(),
                json!({"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "c"}}]}]}),
            ),
            r#"node "n1" can not create pods that reference configmaps"#,
        ),
        (
            pod(
                true,
                "n1",
                owner,
                json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}),
            ),
            r#"node "n1" can not create pods that reference persistentvolumeclaims"#,
        ),
    ];
    for (obj, why) in cases {
        assert_eq!(
            refused(&p, create(obj)).await.1,
            format!(r#"pods "m" is forbidden: {why}"#)
        );
    }
}

#[tokio::test]
async fn tokens_leases_csinodes_and_pvcs() {
    let p = plugin();
    let token = |bound: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"boundObjectRef": bound}});
    let sa = ("", "serviceaccounts", "token");
    let t = |bound: Value| {
        req(
            Operation::Create,
            sa,
            ("d", "default"),
            Some(token(bound)),
            None,
        )
    };
    ok(
        &p,
        t(json!({"apiVersion": "v1", "kind": "Pod", "name": "mine", "uid": "mine-uid"})),
    )
    .await;
    for (bound, why) in [
        (Value::Null, "node requested token not bound to a pod".to_string()),
        (json!({"apiVersion": "v1", "kind": "Secret", "name": "s"}), "node requested token not bound to a pod".into()),
        (json!({"apiVersion": "v1", "kind": "Pod", "name": "mine"}), "node requested token with a pod binding without a uid".into()),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "name": "mine", "uid": "x"}),
            "the UID in the bound object reference (x) does not match the UID in record. The object might have been deleted and then recreated".into(),
        ),
        (
            json!({"apiVersion": "v1", "kind": "Pod", "name": "theirs", "uid": "theirs-uid"}),
            "node requested token bound to a pod scheduled on a different node".into(),
        ),
    ] {
        assert_eq!(
            refused(&p, t(bound)).await.1,
            format!(r#"serviceaccounts "default" is forbidden: {why}"#)
        );
    }
    let leases = ("coordination.k8s.io", "leases", "");
    let lease = |name: &str| json!({"metadata": {"name": name, "namespace": "kube-node-lease"}});
    ok(
        &p,
        req(
            Operation::Create,
            leases,
            ("kube-node-lease", "n1"),
            Some(lease("n1")),
            None,
        ),
    )
    .await;
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Create,
                leases,
                ("kube-node-lease", "n2"),
                Some(lease("n2")),
                None
            )
        )
        .await
        .1,
        r#"leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node"#
    );
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                leases,
                ("default", "n1"),
                Some(lease("n1")),
                Some(lease("n1"))
            )
        )
        .await
        .1,
        r#"leases.coordination.k8s.io "n1" is forbidden: can only access leases in the "kube-node-lease" system namespace"#
    );
    let csi = ("storage.k8s.io", "csinodes", "");
    assert_eq!(
        refused(&p, req(Operation::Delete, csi, ("", "n2"), None, None))
            .await
            .1,
        r#"csinodes.storage.k8s.io "n2" is forbidden: can only access CSINode with the same name as the requesting node"#
    );
    let pvc = |phase: &str, cap: &str, label: &str| {
        json!({"metadata": {"name": "c", "namespace": "d", "resourceVersion": "1", "labels": {"l": label}},
               "spec": {"resources": {"requests": {"storage": "1Gi"}}},
               "status": {"phase": phase, "capacity": {"storage": cap}}})
    };
    let status = ("", "persistentvolumeclaims", "status");
    ok(
        &p,
        req(
            Operation::Update,
            status,
            ("d", "c"),
            Some(pvc("Bound", "2Gi", "a")),
            Some(pvc("Bound", "1Gi", "a")),
        ),
    )
    .await;
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                status,
                ("d", "c"),
                Some(pvc("Bound", "1Gi", "b")),
                Some(pvc("Bound", "1Gi", "a"))
            )
        )
        .await
        .1,
        r#"persistentvolumeclaims "c" is forbidden: node "n1" is not allowed to update fields other than status.capacity and status.conditions: metadata"#
    );
    assert_eq!(
        refused(
            &p,
            req(
                Operation::Update,
                ("", "persistentvolumeclaims", ""),
                ("d", "c"),
                Some(pvc("Bound", "1Gi", "a")),
                None
            )
        )
        .await
        .1,
        r#"persistentvolumeclaims "c" is forbidden: may only update PVC status"#
    );
}

#[tokio::test]
async fn a_nameless_node_is_refused() {
    let p = plugin();
    let mut a = req(
        Operation::Create,
        ("", "configmaps", ""),
        ("d", ""),
        Some(json!({"metadata": {"generateName": "x-"}})),
        None,
    );
    a.user = node("");
    assert_eq!(
        refused(&p, a).await.1,
        r#"configmaps "x-" is forbidden: could not determine node from user "system:node:""#
    );
}
