//! The resource harness and focused cases for the API groups beyond core, apps, batch and the
//! small groups: rbac, scheduling, policy, networking, storage, node, autoscaling, and the core
//! additions (replicationcontrollers, podtemplates).
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::{create, get, obj, put, registry, registry_with};
use kapi_registry::testing::ResourceTest;
use serde_json::{json, Value};

fn set_label(o: &mut kapi_machinery::Object) {
    let labels = o
        .metadata_mut()
        .entry("labels")
        .or_insert_with(|| json!({}));
    labels["updated"] = json!("yes");
}

async fn run(group: &str, resource: &str, valid: Value, invalid: Value) {
    for cache in [false, true] {
        let r = registry_with(cache).await;
        let t = ResourceTest {
            storage: r.storage(group, resource, ""),
            namespace: "default".into(),
            valid: obj(valid.clone()),
            invalid: obj(invalid.clone()),
            update: set_label,
        };
        t.run().await;
    }
}

const RBAC: &str = "rbac.authorization.k8s.io";

#[tokio::test]
async fn roles() {
    run(
        RBAC,
        "roles",
        json!({"metadata": {"name": "pod-reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        json!({"metadata": {"name": "r2"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
    )
    .await;
}

#[tokio::test]
async fn clusterroles() {
    run(
        RBAC,
        "clusterroles",
        json!({"metadata": {"name": "system:health"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
        json!({"metadata": {"name": "c2"}, "rules": [{"verbs": [], "apiGroups": [""], "resources": ["pods"]}]}),
    )
    .await;
}

#[tokio::test]
async fn rolebindings() {
    run(
        RBAC,
        "rolebindings",
        json!({"metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "pod-reader"}, "subjects": [{"kind": "User", "name": "u"}]}),
        json!({"metadata": {"name": "b2"}, "roleRef": {"kind": "Thing", "name": "x"}}),
    )
    .await;
}

#[tokio::test]
async fn clusterrolebindings() {
    run(
        RBAC,
        "clusterrolebindings",
        json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]}),
        json!({"metadata": {"name": "b2"}, "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
    )
    .await;
}

#[tokio::test]
async fn role_ref_cannot_change() {
    let r = registry().await;
    let s = r.storage(RBAC, "rolebindings", "");
    let b = create(
        &s,
        "default",
        json!({"metadata": {"name": "b", "namespace": "default"}, "roleRef": {"kind": "Role", "name": "a"}}),
    )
    .await
    .unwrap();
    assert_eq!(b.get("roleRef").unwrap()["apiGroup"], json!(RBAC));
    let mut changed = b.clone();
    changed.insert(
        "roleRef",
        json!({"apiGroup": RBAC, "kind": "Role", "name": "other"}),
    );
    let err = put(&s, "default", changed).await.unwrap_err();
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(
            r#"roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: cannot change roleRef"#
        ),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn priorityclasses() {
    run(
        "scheduling.k8s.io",
        "priorityclasses",
        json!({"metadata": {"name": "high"}, "value": 1000}),
        json!({"metadata": {"name": "system-mine"}, "value": 1}),
    )
    .await;
}

#[tokio::test]
async fn system_priority_classes_are_bootstrapped_and_value_is_immutable() {
    let r = registry().await;
    let s = r.storage("scheduling.k8s.io", "priorityclasses", "");
    let node = get(&s, "", "system-node-critical").await.unwrap();
    assert_eq!(node.get("value"), Some(&json!(2000001000)));
    assert_eq!(
        node.get("preemptionPolicy"),
        Some(&json!("PreemptLowerPriority"))
    );
    let cluster = get(&s, "", "system-cluster-critical").await.unwrap();
    assert_eq!(cluster.get("value"), Some(&json!(2000000000)));
    // a second start leaves them alone
    kapi_resources::bootstrap(&r.groups, 6443).await.unwrap();
    let again = get(&s, "", "system-node-critical").await.unwrap();
    assert_eq!(again.resource_version(), node.resource_version());

    let p = create(&s, "", json!({"metadata": {"name": "p"}, "value": 10}))
        .await
        .unwrap();
    let mut changed = p.clone();
    changed.insert("value", json!(11));
    let err = put(&s, "", changed).await.unwrap_err();
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("value: Forbidden: may not be changed in an update."),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn poddisruptionbudgets() {
    run(
        "policy",
        "poddisruptionbudgets",
        json!({"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}}),
        json!({"metadata": {"name": "pdb2"}, "spec": {"minAvailable": "200%"}}),
    )
    .await;
}

#[tokio::test]
async fn pdb_status_is_zeroed_on_create() {
    let r = registry().await;
    let s = r.storage("policy", "poddisruptionbudgets", "");
    assert!(r
        .groups
        .iter()
        .flat_map(|g| g.versions.iter())
        .flat_map(|v| v.storages.iter())
        .any(|s| s.info().resource == "poddisruptionbudgets" && s.info().subresource == "status"));
    let p = create(
        &s,
        "default",
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"maxUnavailable": "10%"}, "status": {"expectedPods": 5}}),
    )
    .await
    .unwrap();
    assert_eq!(p.get("status").unwrap()["expectedPods"], json!(0));
    assert_eq!(p.get("metadata").unwrap()["generation"], json!(1));
}

#[tokio::test]
async fn ingresses() {
    run(
        "networking.k8s.io",
        "ingresses",
        json!({"metadata": {"name": "ing"}, "spec": {"rules": [{"host": "a.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}}),
        json!({"metadata": {"name": "ing2"}, "spec": {}}),
    )
    .await;
}

#[tokio::test]
async fn ingressclasses() {
    run(
        "networking.k8s.io",
        "ingressclasses",
        json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
        json!({"metadata": {"name": "bad"}, "spec": {"controller": "nginx"}}),
    )
    .await;
}

#[tokio::test]
async fn networkpolicies() {
    run(
        "networking.k8s.io",
        "networkpolicies",
        json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}}),
        json!({"metadata": {"name": "np2"}, "spec": {"podSelector": {}, "policyTypes": ["Sideways"]}}),
    )
    .await;
}

#[tokio::test]
async fn storageclasses() {
    run(
        "storage.k8s.io",
        "storageclasses",
        json!({"metadata": {"name": "standard"}, "provisioner": "example.com/disk"}),
        json!({"metadata": {"name": "none"}}),
    )
    .await;
}

#[tokio::test]
async fn csidrivers() {
    run(
        "storage.k8s.io",
        "csidrivers",
        json!({"metadata": {"name": "csi.example.com"}, "spec": {}}),
        json!({"metadata": {"name": "csi2.example.com"}, "spec": {"fsGroupPolicy": "Sometimes"}}),
    )
    .await;
}

#[tokio::test]
async fn csinodes() {
    run(
        "storage.k8s.io",
        "csinodes",
        json!({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1"}]}}),
        json!({"metadata": {"name": "n2"}, "spec": {"drivers": [{"name": "csi.example.com"}]}}),
    )
    .await;
}

#[tokio::test]
async fn volumeattachments() {
    run(
        "storage.k8s.io",
        "volumeattachments",
        json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv"}}}),
        json!({"metadata": {"name": "va2"}, "spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {}}}),
    )
    .await;
}

#[tokio::test]
async fn csistoragecapacities() {
    run(
        "storage.k8s.io",
        "csistoragecapacities",
        json!({"metadata": {"name": "cap1"}, "storageClassName": "standard", "capacity": "1Gi", "nodeTopology": {"matchLabels": {"topology.example.com/zone": "a"}}}),
        json!({"metadata": {"name": "cap2"}, "storageClassName": "Not_A_Class", "capacity": "-1"}),
    )
    .await;
}

#[tokio::test]
async fn runtimeclasses() {
    run(
        "node.k8s.io",
        "runtimeclasses",
        json!({"metadata": {"name": "gvisor"}, "handler": "runsc"}),
        json!({"metadata": {"name": "bad"}, "handler": "Not_A_Label"}),
    )
    .await;
}

#[tokio::test]
async fn storage_class_parameters_are_immutable() {
    let r = registry().await;
    let s = r.storage("storage.k8s.io", "storageclasses", "");
    let sc = create(
        &s,
        "",
        json!({"metadata": {"name": "fast"}, "provisioner": "example.com/ssd", "parameters": {"type": "ssd"}}),
    )
    .await
    .unwrap();
    assert_eq!(sc.get("reclaimPolicy"), Some(&json!("Delete")));
    assert_eq!(sc.get("volumeBindingMode"), Some(&json!("Immediate")));
    let mut changed = sc.clone();
    changed.insert("parameters", json!({"type": "hdd"}));
    let err = put(&s, "", changed).await.unwrap_err();
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("parameters: Forbidden: updates to parameters are forbidden."),
        "{}",
        err.message
    );
}

fn template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}})
}

#[tokio::test]
async fn replicationcontrollers() {
    run(
        "",
        "replicationcontrollers",
        json!({"metadata": {"name": "rc"}, "spec": {"replicas": 1, "template": template(json!({"app": "web"}))}}),
        json!({"metadata": {"name": "rc2"}, "spec": {"selector": {"app": "x"}, "template": template(json!({"app": "web"}))}}),
    )
    .await;
}

#[tokio::test]
async fn podtemplates() {
    run(
        "",
        "podtemplates",
        json!({"metadata": {"name": "pt"}, "template": template(json!({"a": "b"}))}),
        json!({"metadata": {"name": "pt2"}, "template": {"spec": {"containers": []}}}),
    )
    .await;
}

#[tokio::test]
async fn replication_controller_scale() {
    let r = registry().await;
    let s = r.storage("", "replicationcontrollers", "");
    create(
        &s,
        "default",
        json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 2, "template": template(json!({"app": "web"}))}}),
    )
    .await
    .unwrap();
    let scale = r.storage("", "replicationcontrollers", "scale");
    let mut sc = get(&scale, "default", "web").await.unwrap();
    assert_eq!(sc.get("spec").unwrap()["replicas"], json!(2));
    assert_eq!(sc.get("status").unwrap()["selector"], json!("app=web"));
    sc.insert("spec", json!({"replicas": 5}));
    put(&scale, "default", sc).await.unwrap();
    let rc = get(&s, "default", "web").await.unwrap();
    assert_eq!(rc.get("spec").unwrap()["replicas"], json!(5));
    assert_eq!(rc.get("status").unwrap()["replicas"], json!(0));
}

#[tokio::test]
async fn horizontalpodautoscalers() {
    for version_group in ["v2", "v1"] {
        let r = registry().await;
        let s = r
            .groups
            .iter()
            .filter(|g| g.group == "autoscaling")
            .flat_map(|g| g.versions.iter())
            .filter(|v| v.version == version_group)
            .flat_map(|v| v.storages.iter())
            .find(|s| s.info().subresource.is_empty())
            .cloned()
            .expect("hpa storage");
        ResourceTest {
            storage: s,
            namespace: "default".into(),
            valid: obj(json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}})),
            invalid: obj(json!({"metadata": {"name": "h2"}, "spec": {"maxReplicas": 0, "scaleTargetRef": {"kind": "Deployment", "name": "web"}}})),
            update: set_label,
        }
        .run()
        .await;
    }
}

#[tokio::test]
async fn hpa_written_as_v1_reads_as_v2() {
    let r = registry().await;
    let version = |v: &str| {
        r.groups
            .iter()
            .filter(|g| g.group == "autoscaling")
            .flat_map(|g| g.versions.iter())
            .filter(|x| x.version == v)
            .flat_map(|x| x.storages.iter())
            .find(|s| s.info().subresource.is_empty())
            .cloned()
            .unwrap()
    };
    let created = create(
        &version("v1"),
        "default",
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"maxReplicas": 4, "targetCPUUtilizationPercentage": 60, "scaleTargetRef": {"kind": "Deployment", "name": "web"}}}),
    )
    .await
    .unwrap();
    assert_eq!(created.api_version(), "autoscaling/v1");
    assert_eq!(
        created.get("spec").unwrap()["targetCPUUtilizationPercentage"],
        json!(60)
    );
    let v2 = get(&version("v2"), "default", "web").await.unwrap();
    assert_eq!(v2.api_version(), "autoscaling/v2");
    assert_eq!(
        v2.get("spec").unwrap()["metrics"][0]["resource"]["target"]["averageUtilization"],
        json!(60)
    );
}
