use super::*;
use crate::objects::memory::MemoryObjects;
use kapi_machinery::{GroupVersionKind, GroupVersionResource};

fn store() -> Arc<MemoryObjects> {
    let m = Arc::new(MemoryObjects::default());
    m.put(
        "namespaces",
        json!({"metadata": {"name": "default"}, "status": {"phase": "Active"}}),
    );
    m.put(
        "namespaces",
        json!({"metadata": {"name": "going"}, "status": {"phase": "Terminating"}}),
    );
    m
}

fn cm(op: Operation, ns: &str) -> Attributes {
    let mut a = Attributes::new(
        op,
        GroupVersionKind::new("", "v1", "ConfigMap"),
        GroupVersionResource::new("", "v1", "configmaps"),
        ns,
        "c",
    );
    a.object =
        Some(Object::from_value(json!({"metadata": {"name": "c", "namespace": ns}})).unwrap());
    a
}

#[tokio::test]
async fn lifecycle_refuses_missing_and_terminating_namespaces() {
    let p = NamespaceLifecycle::new(store());
    p.validate(&cm(Operation::Create, "default")).await.unwrap();
    let e = p.validate(&cm(Operation::Create, "x")).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, r#"namespaces "x" not found"#)
    );
    let e = p
        .validate(&cm(Operation::Create, "going"))
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"configmaps "c" is forbidden: unable to create new content in namespace going because it is being terminated"#
    );
    assert_eq!(
        e.details.as_ref().unwrap().causes[0].reason,
        "NamespaceTerminating"
    );
    // Updates in a terminating namespace and deletes anywhere are allowed.
    p.validate(&cm(Operation::Update, "going")).await.unwrap();
    p.validate(&cm(Operation::Delete, "x")).await.unwrap();
}

#[tokio::test]
async fn lifecycle_protects_immortal_namespaces() {
    let p = NamespaceLifecycle::new(store());
    for name in IMMORTAL {
        let a = Attributes::new(
            Operation::Delete,
            GroupVersionKind::new("", "v1", "Namespace"),
            GroupVersionResource::new("", "v1", "namespaces"),
            "",
            *name,
        );
        let e = p.validate(&a).await.unwrap_err();
        assert_eq!(
            e.message,
            format!(r#"namespaces "{name}" is forbidden: this namespace may not be deleted"#)
        );
    }
    let a = Attributes::new(
        Operation::Delete,
        GroupVersionKind::new("", "v1", "Namespace"),
        GroupVersionResource::new("", "v1", "namespaces"),
        "",
        "mine",
    );
    p.validate(&a).await.unwrap();
}

#[tokio::test]
async fn exists_and_auto_provision() {
    let objects = store();
    let exists = NamespaceExists {
        objects: objects.clone(),
    };
    let e = exists
        .validate(&cm(Operation::Update, "new"))
        .await
        .unwrap_err();
    assert_eq!(e.message, r#"namespaces "new" not found"#);

    let auto = NamespaceAutoProvision {
        objects: objects.clone(),
    };
    let mut dry = cm(Operation::Create, "new");
    dry.dry_run = true;
    auto.admit(&mut dry).await.unwrap();
    assert!(objects
        .get(&namespaces(), "", "new")
        .await
        .unwrap()
        .is_none());
    auto.admit(&mut cm(Operation::Create, "new")).await.unwrap();
    let ns = objects
        .get(&namespaces(), "", "new")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ns.get("status").unwrap()["phase"], "Active");
    assert_eq!(
        ns.labels()
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some("new")
    );
    exists
        .validate(&cm(Operation::Update, "new"))
        .await
        .unwrap();
    // A second create finds it and changes nothing.
    auto.admit(&mut cm(Operation::Create, "new")).await.unwrap();
}
