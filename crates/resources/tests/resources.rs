//! The resource harness run for every built-in resource against the embedded store.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::{obj, registry_with};
use kapi_registry::testing::ResourceTest;
use serde_json::{json, Value};

fn set_label(o: &mut kapi_machinery::Object) {
    let labels = o
        .metadata_mut()
        .entry("labels")
        .or_insert_with(|| json!({}));
    labels["updated"] = json!("yes");
}

async fn run(
    group: &str,
    resource: &str,
    valid: Value,
    invalid: Value,
    update: fn(&mut kapi_machinery::Object),
) {
    // straight on the store, then through the watch cache
    for cache in [false, true] {
        let r = registry_with(cache).await;
        let t = ResourceTest {
            storage: r.storage(group, resource, ""),
            namespace: "default".into(),
            valid: obj(valid.clone()),
            invalid: obj(invalid.clone()),
            update,
        };
        t.run().await;
    }
}

fn pod_template(labels: Value, restart: &str) -> Value {
    json!({"metadata": {"labels": labels}, "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "nginx:1.25"}]}})
}

#[tokio::test]
async fn configmaps() {
    run(
        "",
        "configmaps",
        json!({"metadata": {"name": "cm"}, "data": {"a": "1"}}),
        json!({"metadata": {"name": "Bad_Name"}}),
        |o| {
            o.insert("data", json!({"a": "2"}));
        },
    )
    .await;
}

#[tokio::test]
async fn secrets() {
    run(
        "",
        "secrets",
        json!({"metadata": {"name": "s"}, "stringData": {"a": "x"}}),
        json!({"metadata": {"name": "t"}, "type": "kubernetes.io/tls"}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn serviceaccounts() {
    run(
        "",
        "serviceaccounts",
        json!({"metadata": {"name": "sa"}}),
        json!({"metadata": {"name": "-bad"}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn services() {
    run(
        "",
        "services",
        json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
        json!({"metadata": {"name": "bad"}, "spec": {"ports": [{"port": 0}]}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn endpoints() {
    run(
        "",
        "endpoints",
        json!({"metadata": {"name": "ep"}, "subsets": [{"addresses": [{"ip": "10.1.1.1"}], "ports": [{"port": 80}]}]}),
        json!({"metadata": {"name": "ep2"}, "subsets": [{"addresses": [{"ip": "10.1.1.1"}], "ports": [{"port": 0}]}]}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn pods() {
    run("", "pods", json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}), json!({"metadata": {"name": "p2"}, "spec": {"containers": []}}), |o| {
        o.as_map_mut()["spec"]["containers"][0]["image"] = json!("nginx:2");
    })
    .await;
}

#[tokio::test]
async fn events() {
    run(
        "",
        "events",
        json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Started", "type": "Normal"}),
        json!({"metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "elsewhere"}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn limitranges() {
    run(
        "",
        "limitranges",
        json!({"metadata": {"name": "l"}, "spec": {"limits": [{"type": "Container"}]}}),
        json!({"metadata": {"name": "L"}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn resourcequotas() {
    run(
        "",
        "resourcequotas",
        json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}}}),
        json!({"metadata": {"name": "Q"}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn persistentvolumeclaims() {
    run(
        "",
        "persistentvolumeclaims",
        json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
        json!({"metadata": {"name": "c2"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn persistentvolumes() {
    run(
        "",
        "persistentvolumes",
        json!({"metadata": {"name": "pv"}, "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/tmp"}}}),
        json!({"metadata": {"name": "pv2"}, "spec": {"accessModes": ["ReadWriteOnce"]}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn nodes() {
    run("", "nodes", json!({"metadata": {"name": "n1"}}), json!({"metadata": {"name": "n2"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}}), set_label).await;
}

fn workload(name: &str, labels: Value, selector: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"selector": {"matchLabels": selector}, "template": pod_template(labels, "Always")}})
}

#[tokio::test]
async fn deployments() {
    run(
        "apps",
        "deployments",
        workload("d", json!({"app": "a"}), json!({"app": "a"})),
        workload("d2", json!({"app": "a"}), json!({"app": "b"})),
        |o| {
            o.as_map_mut()["spec"]["replicas"] = json!(3);
        },
    )
    .await;
}

#[tokio::test]
async fn replicasets() {
    run(
        "apps",
        "replicasets",
        workload("r", json!({"app": "a"}), json!({"app": "a"})),
        workload("r2", json!({"app": "a"}), json!({"app": "b"})),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn statefulsets() {
    run(
        "apps",
        "statefulsets",
        workload("s", json!({"app": "a"}), json!({"app": "a"})),
        workload("s2", json!({"app": "a"}), json!({"app": "b"})),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn daemonsets() {
    run(
        "apps",
        "daemonsets",
        workload("ds", json!({"app": "a"}), json!({"app": "a"})),
        workload("ds2", json!({"app": "a"}), json!({"app": "b"})),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn jobs() {
    run(
        "batch",
        "jobs",
        json!({"metadata": {"name": "j"}, "spec": {"template": pod_template(json!({}), "Never")}}),
        json!({"metadata": {"name": "j2"}, "spec": {"template": pod_template(json!({}), "Always")}}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn cronjobs() {
    run(
        "batch",
        "cronjobs",
        json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": pod_template(json!({}), "OnFailure")}}}}),
        json!({"metadata": {"name": "cj2"}, "spec": {"jobTemplate": {"spec": {"template": pod_template(json!({}), "OnFailure")}}}}),
        |o| {
            o.as_map_mut()["spec"]["schedule"] = json!("@hourly");
        },
    )
    .await;
}

#[tokio::test]
async fn leases() {
    run(
        "coordination.k8s.io",
        "leases",
        json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
        json!({"metadata": {"name": "l2"}, "spec": {"leaseDurationSeconds": -1}}),
        |o| {
            o.as_map_mut()["spec"]["holderIdentity"] = json!("b");
        },
    )
    .await;
}

#[tokio::test]
async fn events_v1() {
    run(
        "events.k8s.io",
        "events",
        json!({"metadata": {"name": "e"}, "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal", "reportingController": "c", "reportingInstance": "i", "action": "Start", "reason": "Started", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
        json!({"metadata": {"name": "e2"}, "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Odd", "reportingController": "c", "reportingInstance": "i", "action": "a", "reason": "r"}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn endpointslices() {
    run(
        "discovery.k8s.io",
        "endpointslices",
        json!({"metadata": {"name": "es"}, "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.1.1"]}]}),
        json!({"metadata": {"name": "es2"}, "endpoints": [{"addresses": ["10.1.1.1"]}]}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn controllerrevisions() {
    run(
        "apps",
        "controllerrevisions",
        json!({"metadata": {"name": "web-1"}, "data": {"spec": {"replicas": 1}}, "revision": 1}),
        json!({"metadata": {"name": "web-2"}, "revision": -1}),
        set_label,
    )
    .await;
}

#[tokio::test]
async fn certificatesigningrequests() {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().unwrap();
    let request = rcgen::CertificateParams::new(vec!["example.com".to_string()])
        .unwrap()
        .serialize_request(&key)
        .unwrap()
        .pem()
        .unwrap();
    let request = base64::engine::general_purpose::STANDARD.encode(request);
    run(
        "certificates.k8s.io",
        "certificatesigningrequests",
        json!({"metadata": {"name": "csr-1"}, "spec": {"request": request, "signerName": "example.com/signer", "usages": ["client auth"]}}),
        json!({"metadata": {"name": "csr-2"}, "spec": {"request": "aGVsbG8=", "signerName": "example.com/signer", "usages": ["client auth"]}}),
        set_label,
    )
    .await;
}
