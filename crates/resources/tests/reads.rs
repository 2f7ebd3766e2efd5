//! Reads on the embedded store: field selectors per resource (upstream's field labels and
//! their errors), and a watch from revision 0 with its initial state and bookmarks.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use common::{create, ctx, get, registry};
use futures::StreamExt;
use kapi_machinery::{EventType, ListOptions};
use serde_json::json;

#[tokio::test]
async fn field_selectors() {
    let r = registry().await;
    let pods = r.storage("", "pods", "");
    for (name, node, host) in [("a", "n1", false), ("b", "n2", true)] {
        create(&pods, "default", json!({"metadata": {"name": name}, "spec": {"nodeName": node, "hostNetwork": host, "containers": [{"name": "c", "image": "i"}]}})).await.unwrap();
    }
    let lister = pods.as_lister().unwrap();
    let names = |q: &str| {
        let q = q.to_string();
        async move {
            lister
                .list(&ctx("default"), &ListOptions::from_query(&q).unwrap())
                .await
                .map(|l| {
                    l.items
                        .iter()
                        .map(|o| o.name().to_string())
                        .collect::<Vec<_>>()
                })
        }
    };
    assert_eq!(
        names("fieldSelector=spec.nodeName%3Dn1").await.unwrap(),
        vec!["a"]
    );
    assert_eq!(
        names("fieldSelector=spec.hostNetwork%3Dfalse")
            .await
            .unwrap(),
        vec!["a"]
    );
    assert_eq!(
        names("fieldSelector=spec.hostNetwork%21%3Dfalse")
            .await
            .unwrap(),
        vec!["b"]
    );
    assert_eq!(
        names("fieldSelector=status.phase%3DPending,metadata.name%3Db")
            .await
            .unwrap(),
        vec!["b"]
    );
    let e = names("fieldSelector=spec.foo%3Dx").await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "field label not supported: spec.foo")
    );

    // a pod's defaults and status
    let a = get(&pods, "default", "a").await.unwrap();
    assert_eq!(a.as_map()["spec"]["restartPolicy"], "Always");
    assert_eq!(a.as_map()["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(a.as_map()["spec"]["schedulerName"], "default-scheduler");
    assert_eq!(a.as_map()["spec"]["terminationGracePeriodSeconds"], 30);
    assert_eq!(
        a.as_map()["spec"]["containers"][0]["terminationMessagePath"],
        "/dev/termination-log"
    );
    assert_eq!(
        a.as_map()["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
    assert_eq!(a.as_map()["status"]["phase"], "Pending");
    assert_eq!(a.as_map()["status"]["qosClass"], "BestEffort");

    // secrets by type; events by source
    let secrets = r.storage("", "secrets", "");
    create(&secrets, "default", json!({"metadata": {"name": "s"}}))
        .await
        .unwrap();
    let l = secrets
        .as_lister()
        .unwrap()
        .list(
            &ctx("default"),
            &ListOptions::from_query("fieldSelector=type%3DOpaque").unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    let events = r.storage("", "events", "");
    create(&events, "default", json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "a"}, "source": {"component": "kubelet"}})).await.unwrap();
    let l = events
        .as_lister()
        .unwrap()
        .list(
            &ctx("default"),
            &ListOptions::from_query("fieldSelector=source%3Dkubelet,involvedObject.kind%3DPod")
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);

    // each kind answers as its upstream field-label conversion does
    let refused =
        |group: &'static str, resource: &'static str, ns: &'static str, q: &'static str| {
            let storage = r.storage(group, resource, "");
            async move {
                let e = storage
                    .as_lister()
                    .unwrap()
                    .list(&ctx(ns), &ListOptions::from_query(q).unwrap())
                    .await
                    .unwrap_err();
                (e.code, e.reason.as_str(), e.message)
            }
        };
    let default_wording = |label: &str| {
        format!(
            "\"{label}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        )
    };
    assert_eq!(
        refused("", "configmaps", "default", "fieldSelector=data.x%3Dy").await,
        (400, "BadRequest", default_wording("data.x"))
    );
    // apps/v1 registers no conversion: status.replicas is refused on replicasets upstream too
    assert_eq!(
        refused(
            "apps",
            "replicasets",
            "default",
            "fieldSelector=status.replicas%3D1"
        )
        .await,
        (400, "BadRequest", default_wording("status.replicas"))
    );
    assert_eq!(
        refused("", "nodes", "", "fieldSelector=metadata.namespace%3Dx").await,
        (
            400,
            "BadRequest",
            "field label not supported: metadata.namespace".to_string()
        )
    );
    assert_eq!(
        refused("batch", "jobs", "default", "fieldSelector=spec.x%3D1").await,
        (
            400,
            "BadRequest",
            "field label \"spec.x\" not supported for Job".to_string()
        )
    );
    assert_eq!(
        names("fieldSelector=spec.host%3Dn2").await.unwrap(),
        vec!["b"]
    );
}

#[tokio::test]
async fn watch_from_zero_sends_initial_state_and_bookmarks_have_kind() {
    let r = registry().await;
    let cms = r.storage("", "configmaps", "");
    create(&cms, "default", json!({"metadata": {"name": "one"}}))
        .await
        .unwrap();
    let w = cms.as_watcher().unwrap();
    let mut s = w
        .watch(
            &ctx("default"),
            &ListOptions {
                resource_version: Some("0".into()),
                watch: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let first = s.next().await.unwrap().unwrap();
    assert_eq!(first.event_type, EventType::Added);
    assert_eq!(first.object.name(), "one");
    assert_eq!(first.object.kind(), "ConfigMap");
    create(&cms, "default", json!({"metadata": {"name": "two"}}))
        .await
        .unwrap();
    let second = tokio::time::timeout(std::time::Duration::from_secs(10), s.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        (second.event_type, second.object.name()),
        (EventType::Added, "two")
    );

    // all-namespace list sees bootstrap namespaces' objects too
    let nss = r.storage("", "namespaces", "");
    let l = nss
        .as_lister()
        .unwrap()
        .list(&ctx(""), &ListOptions::default())
        .await
        .unwrap();
    let names: Vec<&str> = l.items.iter().map(|o| o.name()).collect();
    for n in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let table = nss.as_table_convertor().unwrap();
    assert!(!table.columns().is_empty());
}

/// An event written through events.k8s.io/v1 has no `source`; kube-apiserver 1.28.7 selects
/// it by `source` through its `reportingComponent`, and events.k8s.io/v1 takes its own field
/// names (`reportingController`, `regarding.*`) and refuses the core ones.
#[tokio::test]
async fn event_field_selectors_across_versions() {
    for watch_cache in [true, false] {
        let r = common::registry_with(watch_cache).await;
        let v1 = r.storage("events.k8s.io", "events", "");
        let core = r.storage("", "events", "");
        create(&v1, "default", json!({"metadata": {"name": "new"}, "eventTime": "2017-09-19T13:49:16.000000Z",
            "type": "Normal", "reportingController": "test-controller", "reportingInstance": "n",
            "action": "Do", "reason": "Test", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}))
        .await
        .unwrap();
        create(
            &core,
            "default",
            json!({"metadata": {"name": "old"}, "involvedObject": {"kind": "Node", "name": "n"},
            "source": {"component": "kubelet"}, "reportingComponent": "test-controller"}),
        )
        .await
        .unwrap();
        let names = |storage: &std::sync::Arc<dyn kapi_registry::rest::Storage>, q: &str| {
            let (storage, q) = (storage.clone(), q.to_string());
            async move {
                storage
                    .as_lister()
                    .unwrap()
                    .list(&ctx("default"), &ListOptions::from_query(&q).unwrap())
                    .await
                    .map(|l| {
                        l.items
                            .iter()
                            .map(|o| o.name().to_string())
                            .collect::<Vec<_>>()
                    })
                    .map_err(|e| (e.code, e.message))
            }
        };
        assert_eq!(
            names(&core, "fieldSelector=source%3Dtest-controller").await,
            Ok(vec!["new".into()])
        );
        assert_eq!(
            names(&core, "fieldSelector=source%3Dkubelet").await,
            Ok(vec!["old".into()])
        );
        assert_eq!(
            names(&core, "fieldSelector=source%21%3Dkubelet").await,
            Ok(vec!["new".into()])
        );
        assert_eq!(
            names(&core, "fieldSelector=reportingComponent%3Dtest-controller").await,
            Ok(vec!["new".into(), "old".into()])
        );
        assert_eq!(
            names(
                &v1,
                "fieldSelector=reportingController%3Dtest-controller,regarding.kind%3DPod"
            )
            .await,
            Ok(vec!["new".into()])
        );
        assert_eq!(
            names(&v1, "fieldSelector=regarding.name%3Dn").await,
            Ok(vec!["old".into()])
        );
        for label in ["source", "reportingComponent", "involvedObject.kind"] {
            assert_eq!(
                names(&v1, &format!("fieldSelector={label}%3Dx")).await,
                Err((400, format!("field label not supported: {label}")))
            );
        }
    }
}
