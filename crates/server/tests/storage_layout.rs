//! Storage as kube-apiserver 1.28 lays it out (CustomResourceDefinitions and APIServices under
//! `<group>/<resource>`, Ingresses under `ingress`, FlowSchemas stored as v1beta3), and what an
//! earlier kapi stored otherwise (under `customresourcedefinitions`, `apiservices`,
//! `ingresses`; FlowSchemas as v1) made so when the server starts: on etcd and on the
//! embedded store.

use crate::common;

use kapi_machinery::{ListOptions, Object};
use kapi_server::{EtcdOptions, StorageConfig};
use kapi_storage::embedded::EmbeddedStorage;
use kapi_storage::etcd::{EtcdConfig, EtcdStorage};
use kapi_storage::testing::EtcdProcess;
use kapi_storage::{DynStorage, GetOptions};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const PREFIX: &str = "/kapi-key-layout";

fn object(v: Value) -> Object {
    serde_json::from_value(v).unwrap()
}

/// What an earlier kapi left: one object of each moved resource under its old key, and a
/// FlowSchema stored as v1.
async fn seed_earlier_keys(storage: &DynStorage) {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "uid": "11111111-1111-1111-1111-111111111111",
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
            "conversion": {"strategy": "None"}},
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"], "conditions": []}});
    let apiservice = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.remote.example.com", "uid": "22222222-2222-2222-2222-222222222222",
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"group": "remote.example.com", "version": "v1beta1", "groupPriorityMinimum": 1000,
            "versionPriority": 15, "service": {"namespace": "default", "name": "remote", "port": 443},
            "insecureSkipTLSVerify": true}});
    let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "earlier", "namespace": "default", "uid": "33333333-3333-3333-3333-333333333333",
            "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
        "status": {"loadBalancer": {}}});
    let flow_schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "earlier", "uid": "44444444-4444-4444-4444-444444444444",
            "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1},
        "spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 5000,
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}});
    for (key, obj) in [
        ("/flowschemas/earlier", flow_schema),
        ("/customresourcedefinitions/widgets.example.com", crd),
        ("/apiservices/v1beta1.remote.example.com", apiservice),
        ("/ingresses/default/earlier", ingress),
    ] {
        storage.create(key, object(obj), None).await.unwrap();
    }
}

/// Through the API: the moved objects are served as they were (same uid), a custom object of
/// the moved CRD can be made, and a new Ingress is written.
async fn use_the_server(t: &kapi_testing::TestServer) {
    let admin = common::admin_identity(t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    for (path, uid) in [
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            "11111111-1111-1111-1111-111111111111",
        ),
        (
            "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.remote.example.com",
            "22222222-2222-2222-2222-222222222222",
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses/earlier",
            "33333333-3333-3333-3333-333333333333",
        ),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/earlier",
            "44444444-4444-4444-4444-444444444444",
        ),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1beta3/flowschemas/earlier",
            "44444444-4444-4444-4444-444444444444",
        ),
    ] {
        let r = conn.send("GET", path, None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        let got: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(got["metadata"]["uid"], uid, "{path}");
    }
    common::until("the moved CRD's widgets are served", || {
        let (t, admin) = (&t.server, &admin);
        async move {
            let mut conn = common::connect(t, Some(admin)).await;
            let body = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#;
            let r = conn
                .send(
                    "POST",
                    "/apis/example.com/v1/namespaces/default/widgets",
                    Some(body),
                )
                .await;
            r.status == 201
        }
    })
    .await;
    let body = r#"{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"later"},"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}}"#;
    let r = conn
        .send(
            "POST",
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            Some(body),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let list = conn
        .send("GET", "/apis/networking.k8s.io/v1/ingresses", None)
        .await
        .json();
    assert_eq!(common::item_names(&list), ["earlier", "later"]);
    // the APF bootstrap objects, written by a task of their own, are stored before the end
    for path in [
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt",
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/exempt",
    ] {
        common::until(path, || {
            let (t, admin) = (&t.server, &admin);
            async move {
                let mut conn = common::connect(t, Some(admin)).await;
                conn.send("GET", path, None).await.status == 200
            }
        })
        .await;
    }
}

/// The keys the store holds once the server has stopped: upstream's, and none of the earlier.
async fn check_keys(storage: &DynStorage) {
    for key in [
        "/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
        "/apiregistration.k8s.io/apiservices/v1beta1.remote.example.com",
        // the local APIService of the CRD's group/version, which autoregister wrote
        "/apiregistration.k8s.io/apiservices/v1.example.com",
        "/ingress/default/earlier",
        "/ingress/default/later",
        "/example.com/widgets/default/w",
    ] {
        let got = storage.get(key, &GetOptions::default()).await.unwrap();
        assert!(got.is_some(), "{key} is not stored");
    }
    // every FlowSchema and priority level in kube-apiserver 1.28's storage version
    for prefix in ["/flowschemas/", "/prioritylevelconfigurations/"] {
        let listed = storage.list(prefix, &ListOptions::default()).await.unwrap();
        assert!(listed.items.len() > 1, "{prefix}");
        for o in &listed.items {
            assert_eq!(
                o.api_version(),
                "flowcontrol.apiserver.k8s.io/v1beta3",
                "{prefix}{}",
                o.name()
            );
        }
    }
    for earlier in [
        "/customresourcedefinitions/",
        "/apiservices/",
        "/ingresses/",
    ] {
        let listed = storage
            .list(earlier, &ListOptions::default())
            .await
            .unwrap();
        let left: Vec<&str> = listed.items.iter().map(|o| o.name()).collect();
        assert!(left.is_empty(), "{earlier} still holds {left:?}");
    }
}

#[tokio::test]
async fn etcd_keys_as_upstream_and_earlier_ones_moved() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&dir.path().join("etcd"));
    let url = etcd.client_url();
    let direct: DynStorage = Arc::new(
        EtcdStorage::connect(EtcdConfig {
            endpoints: vec![url.clone()],
            prefix: PREFIX.into(),
            compaction_interval: None,
            ..Default::default()
        })
        .await
        .unwrap(),
    );
    seed_earlier_keys(&direct).await;
    let t = common::start_with(move |c| {
        c.storage = StorageConfig::Etcd(EtcdOptions {
            servers: vec![url],
            prefix: PREFIX.into(),
            compaction_interval: None,
            request_timeout: Duration::from_secs(5),
            ..Default::default()
        })
    })
    .await;
    use_the_server(&t).await;
    t.server.shutdown().await;
    check_keys(&direct).await;
}

#[tokio::test]
async fn embedded_keys_as_upstream_and_earlier_ones_moved() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let store = EmbeddedStorage::open(&store_dir).unwrap();
    seed_earlier_keys(&(Arc::new(store.clone()) as DynStorage)).await;
    store.close().await;
    drop(store);
    let server_dir = store_dir.clone();
    let t =
        common::start_with(move |c| c.storage = StorageConfig::Embedded { dir: server_dir }).await;
    use_the_server(&t).await;
    t.server.shutdown().await;
    let store = EmbeddedStorage::open(&store_dir).unwrap();
    check_keys(&(Arc::new(store.clone()) as DynStorage)).await;
    store.close().await;
}
