use super::*;
use crate::objects::memory::MemoryObjects;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};
use serde_json::json;

fn ranger() -> LimitRanger {
    let m = Arc::new(MemoryObjects::default());
    m.put("limitranges", json!({"metadata": {"name": "lr", "namespace": "d"}, "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "250m"},
         "max": {"cpu": "1"}, "min": {"cpu": "100m"}}]}}));
    LimitRanger::new(m)
}

fn pod(containers: serde_json::Value) -> Attributes {
    let mut a = Attributes::new(
        Operation::Create,
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionResource::new("", "v1", "pods"),
        "d",
        "p",
    );
    a.object = Some(
        Object::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": containers}}))
            .unwrap(),
    );
    a
}

#[tokio::test]
async fn defaults_land_on_containers_and_are_noted() {
    let lr = ranger();
    let mut a =
        pod(json!([{"name": "web", "image": "nginx", "resources": {"limits": {"cpu": "800m"}}}]));
    lr.admit(&mut a).await.unwrap();
    let o = a.object.as_ref().unwrap();
    let r = &o.get("spec").unwrap()["containers"][0]["resources"];
    assert_eq!(r["limits"]["cpu"], "800m", "a given limit is kept");
    assert_eq!(r["limits"]["memory"], "128Mi");
    assert_eq!(r["requests"]["cpu"], "250m");
    assert_eq!(
        o.annotations()
            .get("kubernetes.io/limit-ranger")
            .map(String::as_str),
        Some(
            "LimitRanger plugin set: cpu request for container web; memory limit for container web"
        )
    );
    lr.validate(&a).await.unwrap();
}

#[tokio::test]
async fn min_and_max_are_enforced_with_upstream_wording() {
    let lr = ranger();
    let a = pod(
        json!([{"name": "big", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "50m"}}}]),
    );
    let e = lr.validate(&a).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"pods "p" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, maximum cpu usage per Container is 1, but limit is 2]"#
    );
    let a = pod(json!([{"name": "none"}]));
    let e = lr.validate(&a).await.unwrap_err();
    assert!(
        e.message.contains("No request is specified"),
        "{}",
        e.message
    );
}

fn ranged(limits: serde_json::Value) -> LimitRanger {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "limitranges",
        json!({"metadata": {"name": "lr", "namespace": "d"}, "spec": {"limits": limits}}),
    );
    LimitRanger::new(m)
}

#[tokio::test]
async fn ratio_is_enforced_with_upstream_wording() {
    let lr = ranged(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}]));
    let a = pod(
        json!([{"name": "c", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "250m"}}}]),
    );
    let e = lr.validate(&a).await.unwrap_err();
    assert_eq!(
        e.message,
        r#"pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"#
    );
    let a = pod(json!([{"name": "c", "resources": {"limits": {"cpu": "1"}}}]));
    let e = lr.validate(&a).await.unwrap_err();
    assert!(e.message.ends_with("cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"), "{}", e.message);
    let a = pod(
        json!([{"name": "c", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}}]),
    );
    lr.validate(&a).await.unwrap();
}

#[tokio::test]
async fn pod_limits_take_init_containers_into_account() {
    let lr = ranged(json!([{"type": "Pod", "max": {"memory": "1Gi"}}]));
    let mut a = pod(
        json!([{"name": "a", "resources": {"limits": {"memory": "512Mi"}}},
        {"name": "b", "resources": {"limits": {"memory": "256Mi"}}}]),
    );
    lr.validate(&a).await.unwrap();
    a.object.as_mut().unwrap().get_mut("spec").unwrap()["initContainers"] =
        json!([{"name": "i", "resources": {"limits": {"memory": "2Gi"}}}]);
    let e = lr.validate(&a).await.unwrap_err();
    assert!(
        e.message
            .contains("maximum memory usage per Pod is 1Gi, but limit is 2Gi"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn claims_are_held_to_storage_min_and_max() {
    let lr = ranged(
        json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]),
    );
    let claim = |size: &str| {
        let mut a = Attributes::new(
            Operation::Create,
            GroupVersionKind::new("", "v1", "PersistentVolumeClaim"),
            GroupVersionResource::new("", "v1", "persistentvolumeclaims"),
            "d",
            "c",
        );
        a.object = Some(
            Object::from_value(json!({"metadata": {"name": "c"},
            "spec": {"resources": {"requests": {"storage": size}}}}))
            .unwrap(),
        );
        a
    };
    lr.validate(&claim("5Gi")).await.unwrap();
    let e = lr.validate(&claim("20Gi")).await.unwrap_err();
    assert_eq!(
        e.message,
        r#"persistentvolumeclaims "c" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"#
    );
    let e = lr.validate(&claim("500Mi")).await.unwrap_err();
    assert!(e
        .message
        .ends_with("minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"));
}
