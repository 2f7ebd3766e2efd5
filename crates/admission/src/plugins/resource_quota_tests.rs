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
