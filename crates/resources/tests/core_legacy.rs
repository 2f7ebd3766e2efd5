//! The core group's two odd resources: `bindings` (the legacy binding endpoint, the same bind
//! as `pods/binding` with the pod named by the body) and `componentstatuses` (read-only,
//! probed on every read, nothing stored).
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::{create, ctx, get, registry};
use kapi_machinery::{ListOptions, StatusReason};
use serde_json::{json, Value};

fn v(o: &kapi_machinery::Object) -> Value {
    o.clone().into_value()
}

#[tokio::test]
async fn legacy_bindings_bind_the_pod_the_body_names() {
    let r = registry().await;
    let pods = r.storage("", "pods", "");
    let bindings = r.storage("", "bindings", "");
    let info = bindings.info();
    assert_eq!((info.kind.as_str(), info.namespaced), ("Binding", true));
    assert!(bindings.as_getter().is_none() && bindings.as_lister().is_none());
    create(
        &pods,
        "default",
        json!({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .await
    .unwrap();
    let bind = |pod: &str, node: &str| json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": {"name": node}});
    let status = create(&bindings, "default", bind("p1", "n1"))
        .await
        .unwrap();
    assert_eq!(v(&status)["status"], "Success");
    let pod = v(&get(&pods, "default", "p1").await.unwrap());
    assert_eq!(pod["spec"]["nodeName"], "n1");
    assert_eq!(pod["status"]["conditions"][0]["type"], "PodScheduled");

    // Upstream's answers (kube-apiserver v1.28.7).
    let e = create(&bindings, "default", bind("p1", "n2"))
        .await
        .unwrap_err();
    assert_eq!(e.code, 409);
    assert_eq!(
        e.message,
        "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 is already assigned to node \"n1\""
    );
    let e = create(&bindings, "default", bind("ghost", "n1"))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, "pods \"ghost\" not found")
    );
    let e = create(&bindings, "default", bind("", "n1"))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "Name parameter required.")
    );
    let e = create(&bindings, "default", bind("p1", ""))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (500, "target.name: Required value")
    );
}

#[tokio::test]
async fn componentstatuses_probe_on_every_read() {
    let r = registry().await;
    let cs = r.storage("", "componentstatuses", "");
    let info = cs.info();
    assert_eq!(info.short_names, ["cs"]);
    assert!(!info.namespaced);
    assert!(cs.as_creater().is_none() && cs.as_watcher().is_none());
    assert_eq!(
        cs.request_warnings(),
        ["v1 ComponentStatus is deprecated in v1.19+"]
    );
    let list = cs
        .as_lister()
        .expect("lister")
        .list(&ctx(""), &ListOptions::default())
        .await
        .unwrap();
    let names: Vec<&str> = list.items.iter().map(|o| o.name()).collect();
    assert_eq!(names, ["controller-manager", "scheduler", "etcd-0"]);
    assert_eq!(list.resource_version, "");
    for o in &list.items {
        let o = v(o);
        let c = &o["conditions"][0];
        assert_eq!(c["type"], "Healthy");
        // Whatever runs on this host's default ports: a verdict, never an error field.
        assert!(c["status"] == "True" || c["status"] == "False", "{c}");
    }
    // The storage stands as etcd-0.
    let etcd_obj = get(&cs, "", "etcd-0").await.unwrap();
    let etcd = v(&etcd_obj);
    assert_eq!(
        etcd["conditions"],
        json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    assert_eq!(
        etcd["metadata"],
        json!({"name": "etcd-0", "creationTimestamp": null})
    );
    let e = get(&cs, "", "nope").await.unwrap_err();
    assert_eq!(e.code, 500);
    assert_eq!(e.reason, StatusReason::Unknown);
    assert_eq!(e.message, "Component not found: nope");

    // Selection: metadata.name only among fields, labels (there are none).
    let opts = |q: &str| ListOptions::from_query(q).unwrap();
    let lister = cs.as_lister().expect("lister");
    let one = lister
        .list(&ctx(""), &opts("fieldSelector=metadata.name%3Detcd-0"))
        .await
        .unwrap();
    assert_eq!(one.items.len(), 1);
    let none = lister
        .list(&ctx(""), &opts("labelSelector=a%3Db"))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    let e = lister
        .list(&ctx(""), &opts("fieldSelector=spec.x%3Dy"))
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    // The printer: upstream's columns, no AGE.
    let printer = cs.as_table_convertor().expect("printer");
    let names: Vec<String> = printer
        .columns()
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["Name", "Status", "Message", "Error"]);
    assert_eq!(
        printer.cells(&etcd_obj),
        [json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
    );
}
