use super::*;
use crate::objects::memory::MemoryObjects;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};
use serde_json::json;

fn ranger() -> LimitRanger {
    let m = Arc::new(MemoryObjects::default());
    m.put("limitranges", json!({"metadata": {"name": "lr", "namespace": "d"}, "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "250m"},
         "max": {"cpu": "1"}, "min": {"cpu": "100m"}}]}}));
    LimitRanger { objects: m }
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
