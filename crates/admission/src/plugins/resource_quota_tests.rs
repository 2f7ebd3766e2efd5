use super::super::quota_usage::counted_names;
use super::*;
use crate::objects::memory::MemoryObjects;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};
use serde_json::json;

fn create(name: &str) -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "ConfigMap"),
        GroupVersionResource::new("", "v1", "configmaps"),
        "d",
        name,
    );
    a.object =
        Some(Object::from_value(json!({"metadata": {"name": name, "namespace": "d"}})).unwrap());
    a
}

#[tokio::test]
async fn count_quota_charges_and_refuses_the_third() {
    let m = Arc::new(MemoryObjects::default());
    m.put("resourcequotas", json!({"metadata": {"name": "q", "namespace": "d"}, "spec": {"hard": {"count/configmaps": "2"}}}));
    let rq = ResourceQuota { objects: m.clone() };
    for name in ["a", "b"] {
        rq.validate(&create(name)).await.unwrap();
        m.put(
            "configmaps",
            json!({"metadata": {"name": name, "namespace": "d"}}),
        );
    }
    let q = m.get(&quotas_gr(), "d", "q").await.unwrap().unwrap();
    assert_eq!(q.get("status").unwrap()["used"]["count/configmaps"], "2");
    assert_eq!(q.get("status").unwrap()["hard"]["count/configmaps"], "2");
    let e = rq.validate(&create("c")).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"configmaps "c" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"#
    );
    // Other resources are not charged against it.
    let mut s = create("s");
    s.resource = GroupVersionResource::new("", "v1", "secrets");
    rq.validate(&s).await.unwrap();
}

#[test]
fn counted_names_cover_count_and_legacy_names() {
    assert_eq!(
        counted_names(&GroupResource::new("", "configmaps")),
        vec!["count/configmaps", "configmaps"]
    );
    assert_eq!(
        counted_names(&GroupResource::new("apps", "deployments")),
        vec!["count/deployments.apps"]
    );
}

fn pod(name: &str, containers: serde_json::Value) -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionResource::new("", "v1", "pods"),
        "d",
        name,
    );
    a.object = Some(
        Object::from_value(json!({"metadata": {"name": name, "namespace": "d"},
            "spec": {"containers": containers}}))
        .unwrap(),
    );
    a
}

fn sized(cpu: &str, mem: &str) -> serde_json::Value {
    json!([{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": {"cpu": cpu, "memory": mem}}}])
}

#[tokio::test]
async fn compute_quota_charges_requests_and_limits() {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "resourcequotas",
        json!({"metadata": {"name": "compute", "namespace": "d"},
        "spec": {"hard": {"requests.cpu": "1", "limits.memory": "1Gi", "pods": "10"}}}),
    );
    let rq = ResourceQuota { objects: m.clone() };
    let a = pod("p1", sized("600m", "512Mi"));
    rq.validate(&a).await.unwrap();
    m.put("pods", a.object.unwrap().into_value());
    let q = m.get(&quotas_gr(), "d", "compute").await.unwrap().unwrap();
    let used = &q.get("status").unwrap()["used"];
    assert_eq!(used["requests.cpu"], "600m");
    assert_eq!(used["limits.memory"], "512Mi");
    assert_eq!(used["pods"], "1");
    let e = rq
        .validate(&pod("p2", sized("500m", "256Mi")))
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"pods "p2" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"#
    );
    let e = rq
        .validate(&pod(
            "p3",
            json!([{"name": "web"}, {"name": "db", "resources": {"requests": {"cpu": "1m"}}}]),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        r#"pods "p3" is forbidden: failed quota: compute: must specify limits.memory for: db,web; requests.cpu for: web"#
    );
}

#[tokio::test]
async fn storage_and_service_quotas() {
    let m = Arc::new(MemoryObjects::default());
    m.put("resourcequotas", json!({"metadata": {"name": "q", "namespace": "d"},
        "spec": {"hard": {"requests.storage": "5Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "0",
            "services.nodeports": "1", "services.loadbalancers": "0"}}}));
    let rq = ResourceQuota { objects: m };
    let attrs = |resource: &str, obj: serde_json::Value| {
        let mut a = Attributes::new(
            Operation::Create,
            GroupVersionKind::new("", "v1", "X"),
            GroupVersionResource::new("", "v1", resource),
            "d",
            "x",
        );
        a.object = Some(Object::from_value(obj).unwrap());
        a
    };
    let claim = |size: &str, class: &str| {
        attrs(
            "persistentvolumeclaims",
            json!({"metadata": {"name": "x"},
            "spec": {"storageClassName": class, "resources": {"requests": {"storage": size}}}}),
        )
    };
    rq.validate(&claim("2Gi", "std")).await.unwrap();
    let e = rq.validate(&claim("6Gi", "std")).await.unwrap_err();
    assert!(e.message.ends_with("requested: requests.storage=6Gi, used: requests.storage=0, limited: requests.storage=5Gi"), "{}", e.message);
    let e = rq.validate(&claim("1Gi", "gold")).await.unwrap_err();
    assert!(
        e.message
            .contains("gold.storageclass.storage.k8s.io/persistentvolumeclaims=1"),
        "{}",
        e.message
    );
    let svc = |ty: &str, ports: usize| {
        let ports: Vec<_> = (0..ports).map(|i| json!({"port": 80 + i})).collect();
        attrs(
            "services",
            json!({"metadata": {"name": "x"}, "spec": {"type": ty, "ports": ports}}),
        )
    };
    rq.validate(&svc("ClusterIP", 3)).await.unwrap();
    rq.validate(&svc("NodePort", 1)).await.unwrap();
    let e = rq.validate(&svc("NodePort", 2)).await.unwrap_err();
    assert!(
        e.message.contains("requested: services.nodeports=2"),
        "{}",
        e.message
    );
    let e = rq.validate(&svc("LoadBalancer", 0)).await.unwrap_err();
    assert!(
        e.message.contains("services.loadbalancers=1"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn scoped_quotas_only_charge_matching_pods() {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "resourcequotas",
        json!({"metadata": {"name": "be", "namespace": "d"},
        "spec": {"hard": {"pods": "0"}, "scopes": ["BestEffort"]}}),
    );
    let rq = ResourceQuota { objects: m };
    rq.validate(&pod("sized", sized("1", "1Gi"))).await.unwrap();
    let e = rq
        .validate(&pod("be", json!([{"name": "c"}])))
        .await
        .unwrap_err();
    assert!(e.message.contains("exceeded quota: be"), "{}", e.message);
    // Other resources are outside a scoped quota.
    rq.validate(&create("cm")).await.unwrap();
}
