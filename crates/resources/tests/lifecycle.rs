//! Focused lifecycle tests on the embedded store: finalizers, namespace termination, status
//! subresources, secrets, service allocation, strict decoding (reads are in `reads.rs`).
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use base64::Engine;
use common::{create, ctx, get, obj, put, registry};
use kapi_machinery::options::PropagationPolicy;
use kapi_machinery::{DeleteOptions, ListOptions, Preconditions, StatusReason};
use kapi_registry::rest::{self, FieldValidation, WriteOptions};
use serde_json::json;

fn del(opts: DeleteOptions) -> DeleteOptions {
    opts
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let r = registry().await;
    let cms = r.storage("", "configmaps", "");
    create(
        &cms,
        "default",
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .await
    .unwrap();
    let d = cms.as_graceful_deleter().unwrap();
    let res = d
        .delete(
            &ctx("default"),
            "held",
            rest::validate_nothing(),
            &DeleteOptions::default(),
        )
        .await
        .unwrap();
    assert!(!res.deleted);
    assert!(res.object.deletion_timestamp().is_some());
    assert_eq!(res.object.deletion_grace_period_seconds(), Some(0));
    let cur = get(&cms, "default", "held").await.unwrap();
    assert!(cur.deletion_timestamp().is_some());

    // no new finalizers on a deleting object
    let mut more = cur.clone();
    more.set_finalizers(&["example.com/hold".into(), "example.com/other".into()]);
    let e = put(&cms, "default", more).await.unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("no new finalizers can be added if the object is being deleted"),
        "{}",
        e.message
    );

    // removing the last finalizer deletes it
    let mut done = cur.clone();
    done.set_finalizers(&[]);
    put(&cms, "default", done).await.unwrap();
    let e = get(&cms, "default", "held").await.unwrap_err();
    assert_eq!(e.message, r#"configmaps "held" not found"#);
}

#[tokio::test]
async fn propagation_policy_and_preconditions() {
    let r = registry().await;
    let cms = r.storage("", "configmaps", "");
    let created = create(&cms, "default", json!({"metadata": {"name": "orphaned"}}))
        .await
        .unwrap();
    let d = cms.as_graceful_deleter().unwrap();
    let wrong = DeleteOptions {
        preconditions: Preconditions {
            uid: Some("nope".into()),
            resource_version: None,
        },
        ..Default::default()
    };
    let e = d
        .delete(
            &ctx("default"),
            "orphaned",
            rest::validate_nothing(),
            &wrong,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 409);
    // Upstream's BeforeDelete wording, on the kind.
    assert_eq!(
        e.message,
        format!(
            r#"Operation cannot be fulfilled on ConfigMap "orphaned": the UID in the precondition (nope) does not match the UID in record ({}). The object might have been deleted and then recreated"#,
            created.uid()
        )
    );
    assert_eq!(e.details.as_ref().unwrap().kind, "ConfigMap");
    let stale = DeleteOptions {
        preconditions: Preconditions {
            uid: None,
            resource_version: Some("1".into()),
        },
        ..Default::default()
    };
    let e = d
        .delete(
            &ctx("default"),
            "orphaned",
            rest::validate_nothing(),
            &stale,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 409);
    assert_eq!(
        e.message,
        format!(
            r#"Operation cannot be fulfilled on ConfigMap "orphaned": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({}). The object might have been modified"#,
            created.resource_version()
        )
    );

    let orphan = del(DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..Default::default()
    });
    let res = d
        .delete(
            &ctx("default"),
            "orphaned",
            rest::validate_nothing(),
            &orphan,
        )
        .await
        .unwrap();
    assert!(!res.deleted);
    assert_eq!(res.object.finalizers(), vec!["orphan".to_string()]);

    create(&cms, "default", json!({"metadata": {"name": "fg"}}))
        .await
        .unwrap();
    let fg = DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    let res = d
        .delete(&ctx("default"), "fg", rest::validate_nothing(), &fg)
        .await
        .unwrap();
    assert_eq!(
        res.object.finalizers(),
        vec!["foregroundDeletion".to_string()]
    );
}

#[tokio::test]
async fn namespace_termination_and_finalize() {
    let r = registry().await;
    let nss = r.storage("", "namespaces", "");
    let cms = r.storage("", "configmaps", "");
    let ns = create(&nss, "", json!({"metadata": {"name": "term"}}))
        .await
        .unwrap();
    assert_eq!(ns.as_map()["status"]["phase"], "Active");
    assert_eq!(ns.as_map()["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        ns.labels()
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some("term")
    );
    create(&cms, "term", json!({"metadata": {"name": "x"}}))
        .await
        .unwrap();

    assert!(nss.as_collection_deleter().is_none());
    let d = nss.as_graceful_deleter().unwrap();
    let res = d
        .delete(
            &ctx(""),
            "term",
            rest::validate_nothing(),
            &DeleteOptions::default(),
        )
        .await
        .unwrap();
    assert!(!res.deleted);
    assert_eq!(res.object.as_map()["status"]["phase"], "Terminating");
    assert!(res.object.deletion_timestamp().is_some());

    let e = create(&cms, "term", json!({"metadata": {"name": "y"}}))
        .await
        .unwrap_err();
    assert_eq!((e.code, e.reason), (403, StatusReason::Forbidden));
    assert_eq!(
        e.message,
        r#"configmaps "y" is forbidden: unable to create new content in namespace term because it is being terminated"#
    );

    let e = d
        .delete(
            &ctx(""),
            "term",
            rest::validate_nothing(),
            &DeleteOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 409);
    assert!(e.message.ends_with("The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system."), "{}", e.message);

    // /finalize empties spec.finalizers: the namespace goes
    let fin = r.storage("", "namespaces", "finalize");
    let mut cur = get(&nss, "", "term").await.unwrap();
    cur.as_map_mut()["spec"]["finalizers"] = json!([]);
    put(&fin, "", cur).await.unwrap();
    assert!(get(&nss, "", "term").await.unwrap_err().is_not_found());

    let e = create(&cms, "term", json!({"metadata": {"name": "z"}}))
        .await
        .unwrap_err();
    assert_eq!(e.code, 404);
    assert_eq!(e.message, r#"namespaces "term" not found"#);

    let e = d
        .delete(
            &ctx(""),
            "default",
            rest::validate_nothing(),
            &DeleteOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        r#"namespaces "default" is forbidden: this namespace may not be deleted"#
    );
}

#[tokio::test]
async fn status_subresource_and_generation() {
    let r = registry().await;
    let deps = r.storage("apps", "deployments", "");
    let status = r.storage("apps", "deployments", "status");
    assert!(
        status.as_creater().is_none()
            && status.as_lister().is_none()
            && status.as_updater().is_some()
    );
    let body = json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let d = create(&deps, "default", body).await.unwrap();
    assert_eq!(d.generation(), 1);
    assert_eq!(d.as_map()["spec"]["replicas"], 1);
    assert_eq!(d.as_map()["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d.as_map()["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(
        d.as_map()["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        "25%"
    );
    assert_eq!(
        d.as_map()["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );

    // main update: spec change bumps generation, status change is dropped
    let mut m = d.clone();
    m.as_map_mut()["spec"]["replicas"] = json!(3);
    m.insert("status", json!({"replicas": 99}));
    let u = put(&deps, "default", m).await.unwrap().object;
    assert_eq!(u.generation(), 2);
    assert_eq!(u.as_map()["status"], json!({}));

    // status update: status changes, spec change is dropped, generation stays
    let mut s = u.clone();
    s.as_map_mut()["spec"]["replicas"] = json!(7);
    s.insert("status", json!({"replicas": 3, "observedGeneration": 2}));
    let su = put(&status, "default", s).await.unwrap().object;
    assert_eq!(su.as_map()["status"]["replicas"], 3);
    assert_eq!(su.as_map()["spec"]["replicas"], 3);
    assert_eq!(su.generation(), 2);

    // status update with metadata changes: deployments keep their stored labels (upstream's
    // deploymentStatusStrategy), annotations from the request are kept
    let mut sm = su.clone();
    sm.metadata_mut()
        .insert("labels".into(), json!({"changed": "by-status"}));
    sm.metadata_mut()
        .insert("annotations".into(), json!({"note": "by-status"}));
    let smu = put(&status, "default", sm).await.unwrap().object;
    assert!(smu.as_map()["metadata"].get("labels").is_none(), "{smu:?}");
    assert_eq!(
        smu.as_map()["metadata"]["annotations"],
        json!({"note": "by-status"})
    );
    let su = smu;

    // metadata-only change does not bump generation
    let mut l = su.clone();
    l.metadata_mut().insert("labels".into(), json!({"x": "y"}));
    assert_eq!(
        put(&deps, "default", l).await.unwrap().object.generation(),
        2
    );

    // the selector must match the template
    let bad = json!({"metadata": {"name": "bad"}, "spec": {"selector": {"matchLabels": {"app": "x"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let e = create(&deps, "default", bad).await.unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("`selector` does not match template `labels`"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn secret_string_data_and_type() {
    let r = registry().await;
    let secrets = r.storage("", "secrets", "");
    let s = create(&secrets, "default", json!({"metadata": {"name": "s"}, "stringData": {"password": "hello"}, "data": {"user": "YWRtaW4="}})).await.unwrap();
    assert_eq!(s.as_map()["type"], "Opaque");
    assert!(s.get("stringData").is_none());
    assert_eq!(
        s.as_map()["data"]["password"],
        base64::engine::general_purpose::STANDARD.encode("hello")
    );
    assert_eq!(s.as_map()["data"]["user"], "YWRtaW4=");
    let e = create(
        &secrets,
        "default",
        json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": ""}}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        e.message,
        r#"Secret "tls" is invalid: data[tls.key]: Required value"#
    );
    let mut changed = s.clone();
    changed.insert("type", json!("kubernetes.io/basic-auth"));
    let e = put(&secrets, "default", changed).await.unwrap_err();
    assert!(
        e.message
            .contains(r#"type: Invalid value: "kubernetes.io/basic-auth": field is immutable"#),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn service_ip_and_node_port_allocation() {
    let r = registry().await;
    let svcs = r.storage("", "services", "");
    let k = get(&svcs, "default", "kubernetes").await.unwrap();
    assert_eq!(k.as_map()["spec"]["clusterIP"], "10.0.0.1");
    assert_eq!(k.as_map()["spec"]["ports"][0]["port"], 443);

    let a = create(
        &svcs,
        "default",
        json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await
    .unwrap();
    let ip = a.as_map()["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ip.starts_with("10.0.0.") && ip != "10.0.0.1", "{ip}");
    assert_eq!(a.as_map()["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(a.as_map()["spec"]["type"], "ClusterIP");
    assert_eq!(a.as_map()["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(a.as_map()["spec"]["ports"][0]["protocol"], "TCP");

    let e = create(
        &svcs,
        "default",
        json!({"metadata": {"name": "b"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains("provided IP is already allocated"),
        "{}",
        e.message
    );

    let np = create(
        &svcs,
        "default",
        json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}),
    )
    .await
    .unwrap();
    let port = np.as_map()["spec"]["ports"][0]["nodePort"]
        .as_u64()
        .unwrap();
    assert!((30000..=32767).contains(&port));
    let e = create(&svcs, "default", json!({"metadata": {"name": "np2"}, "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": port}]}})).await.unwrap_err();
    assert!(
        e.message.contains("provided port is already allocated"),
        "{}",
        e.message
    );

    // headless services get no address
    let h = create(
        &svcs,
        "default",
        json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
    )
    .await
    .unwrap();
    assert_eq!(h.as_map()["spec"]["clusterIP"], "None");

    // delete gives the address back; dry-run never takes it
    let d = svcs.as_graceful_deleter().unwrap();
    d.delete(
        &ctx("default"),
        "a",
        rest::validate_nothing(),
        &DeleteOptions::default(),
    )
    .await
    .unwrap();
    let (o, _) = svcs.decode(obj(json!({"metadata": {"name": "dry"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}})), FieldValidation::Strict).unwrap();
    svcs.as_creater()
        .unwrap()
        .create(
            &ctx("default"),
            o,
            rest::validate_nothing(),
            &WriteOptions {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let again = create(
        &svcs,
        "default",
        json!({"metadata": {"name": "c"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}),
    )
    .await
    .unwrap();
    assert_eq!(again.as_map()["spec"]["clusterIP"], ip.as_str());
}

#[tokio::test]
async fn pod_graceful_delete_on_a_node() {
    let r = registry().await;
    let pods = r.storage("", "pods", "");
    create(&pods, "default", json!({"metadata": {"name": "bound"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})).await.unwrap();
    let d = pods.as_graceful_deleter().unwrap();
    let res = d
        .delete(
            &ctx("default"),
            "bound",
            rest::validate_nothing(),
            &DeleteOptions::default(),
        )
        .await
        .unwrap();
    assert!(!res.deleted);
    assert_eq!(res.object.deletion_grace_period_seconds(), Some(30));
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    assert!(
        d.delete(&ctx("default"), "bound", rest::validate_nothing(), &now)
            .await
            .unwrap()
            .deleted
    );
    assert!(get(&pods, "default", "bound")
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn strict_decoding_errors() {
    let r = registry().await;
    let cms = r.storage("", "configmaps", "");
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "foo": 1}, "bar": true});
    let e = cms
        .decode(obj(body.clone()), FieldValidation::Strict)
        .unwrap_err();
    assert_eq!((e.code, e.reason), (400, StatusReason::BadRequest));
    assert_eq!(
        e.message,
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "metadata.foo", unknown field "bar""#
    );
    let (o, w) = cms
        .decode(obj(body.clone()), FieldValidation::Warn)
        .unwrap();
    assert_eq!(
        w,
        vec![
            r#"unknown field "metadata.foo""#.to_string(),
            r#"unknown field "bar""#.to_string()
        ]
    );
    assert!(o.get("bar").is_none());
    let (_, w) = cms.decode(obj(body), FieldValidation::Ignore).unwrap();
    assert!(w.is_empty());

    let raw =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","name":"y"},"bar":1}"#;
    let e = cms.decode_bytes(raw, FieldValidation::Strict).unwrap_err();
    assert_eq!(
        e.message,
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bar", duplicate field "metadata.name""#
    );
    let e = cms
        .decode(
            obj(json!({"apiVersion": "v1", "kind": "Secret"})),
            FieldValidation::Strict,
        )
        .unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#
    );
}

#[tokio::test]
async fn delete_collection_by_label_and_node_port_release_on_update() {
    let r = registry().await;
    let cms = r.storage("", "configmaps", "");
    for (name, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
        create(
            &cms,
            "default",
            json!({"metadata": {"name": name, "labels": {"app": app}}}),
        )
        .await
        .unwrap();
    }
    let dc = cms.as_collection_deleter().unwrap();
    let gone = dc
        .delete_collection(
            &ctx("default"),
            rest::validate_nothing(),
            &DeleteOptions::default(),
            &ListOptions::from_query("labelSelector=app%3Dx").unwrap(),
        )
        .await
        .unwrap();
    let mut names: Vec<&str> = gone.items.iter().map(|o| o.name()).collect();
    names.sort();
    assert_eq!(names, vec!["a", "b"]);
    assert!(get(&cms, "default", "c").await.is_ok());
    assert!(get(&cms, "default", "a").await.unwrap_err().is_not_found());

    // switching a NodePort service back to ClusterIP gives its port back
    let svcs = r.storage("", "services", "");
    let np = create(&svcs, "default", json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}})).await.unwrap();
    let mut back = np.clone();
    back.as_map_mut()["spec"]["type"] = json!("ClusterIP");
    back.as_map_mut()["spec"]["ports"][0]
        .as_object_mut()
        .unwrap()
        .remove("nodePort");
    back.as_map_mut()["spec"]
        .as_object_mut()
        .unwrap()
        .remove("externalTrafficPolicy");
    put(&svcs, "default", back).await.unwrap();
    create(&svcs, "default", json!({"metadata": {"name": "np2"}, "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}})).await.unwrap();
}

#[tokio::test]
async fn events_share_storage_across_versions() {
    let r = registry().await;
    let v1 = r.storage("events.k8s.io", "events", "");
    let core = r.storage("", "events", "");
    create(
        &v1,
        "default",
        json!({"metadata": {"name": "e"}, "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal", "reportingController": "ctl",
            "reportingInstance": "i", "action": "Start", "reason": "Started", "note": "hello", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}}),
    )
    .await
    .unwrap();
    let c = get(&core, "default", "e").await.unwrap();
    assert_eq!(c.api_version(), "v1");
    assert_eq!(c.as_map()["message"], "hello");
    assert_eq!(c.as_map()["involvedObject"]["name"], "p");
    assert_eq!(c.as_map()["reportingComponent"], "ctl");
    let back = get(&v1, "default", "e").await.unwrap();
    assert_eq!(back.api_version(), "events.k8s.io/v1");
    assert_eq!(back.as_map()["note"], "hello");
    assert!(back.get("message").is_none());
    let l = v1
        .as_lister()
        .unwrap()
        .list(&ctx("default"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(l.items[0].as_map()["regarding"]["kind"], "Pod");
}

#[tokio::test]
async fn a_no_op_update_writes_nothing() {
    let r = registry().await;
    let cms = r.storage("", "configmaps", "");
    let c = create(
        &cms,
        "default",
        json!({"metadata": {"name": "same"}, "data": {"a": "1"}}),
    )
    .await
    .unwrap();
    let again = put(&cms, "default", c.clone()).await.unwrap().object;
    assert_eq!(again.resource_version(), c.resource_version());
    let deps = r.storage("apps", "deployments", "");
    let d = create(
        &deps,
        "default",
        json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    )
    .await
    .unwrap();
    let (decoded, _) = deps.decode(d.clone(), FieldValidation::Strict).unwrap();
    let again = put(&deps, "default", decoded).await.unwrap().object;
    assert_eq!(
        (again.resource_version(), again.generation()),
        (d.resource_version(), 1)
    );
}

#[tokio::test]
async fn scale_subresource() {
    let r = registry().await;
    let deps = r.storage("apps", "deployments", "");
    let scale = r.storage("apps", "deployments", "scale");
    create(
        &deps,
        "default",
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    )
    .await
    .unwrap();
    let s = get(&scale, "default", "web").await.unwrap();
    assert_eq!((s.api_version(), s.kind()), ("autoscaling/v1", "Scale"));
    assert_eq!(s.as_map()["spec"]["replicas"], 2);
    assert_eq!(s.as_map()["status"]["selector"], "app=web");
    let mut bigger = s.clone();
    bigger.as_map_mut()["spec"]["replicas"] = json!(5);
    let (bigger, _) = scale.decode(bigger, FieldValidation::Strict).unwrap();
    let out = put(&scale, "default", bigger.clone()).await.unwrap().object;
    assert_eq!(out.as_map()["spec"]["replicas"], 5);
    let d = get(&deps, "default", "web").await.unwrap();
    assert_eq!(
        (d.as_map()["spec"]["replicas"].as_i64(), d.generation()),
        (Some(5), 2)
    );
    // the old resourceVersion is stale now
    let e = put(&scale, "default", bigger).await.unwrap_err();
    assert_eq!(e.code, 409);
    assert!(get(&scale, "default", "nope")
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn namespace_status_update_keeps_metadata_changes() {
    let r = registry().await;
    let namespaces = r.storage("", "namespaces", "");
    let status = r.storage("", "namespaces", "status");
    let ns = create(&namespaces, "", json!({"metadata": {"name": "team-a"}}))
        .await
        .unwrap();
    let mut s = ns.clone();
    s.metadata_mut()
        .insert("labels".into(), json!({"team": "a"}));
    s.as_map_mut()["spec"] = json!({"finalizers": []});
    s.insert("status", json!({"phase": "Active", "conditions": []}));
    let updated = put(&status, "", s).await.unwrap().object;
    // upstream's namespaceStatusStrategy copies only the spec back
    assert_eq!(updated.as_map()["metadata"]["labels"]["team"], "a");
    assert_eq!(
        updated.as_map()["spec"]["finalizers"],
        json!(["kubernetes"])
    );
}
