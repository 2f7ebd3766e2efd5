//! The server end to end through kube-rs: configmaps' lifecycle and watch, GET's
//! resourceVersion, `/version`, the health endpoints and `/metrics`.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::watcher;
use std::collections::BTreeMap;
use std::time::Duration;

fn configmap(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), value.to_string())])),
        ..Default::default()
    }
}

#[tokio::test]
async fn configmap_lifecycle_through_kube_rs() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;

    // Bootstrap made the default namespaces.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for want in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(
            names.iter().any(|n| n == want),
            "namespace {want} missing from {names:?}"
        );
    }

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &configmap("one", "1"))
        .await
        .unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("one"));
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.resource_version.is_some());

    let err = cms
        .create(&PostParams::default(), &configmap("one", "1"))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "AlreadyExists");
            assert_eq!(s.message, r#"configmaps "one" already exists"#);
        }
        other => panic!("want a 409, got {other:?}"),
    }

    let list = cms.list(&ListParams::default()).await.unwrap();
    // Every namespace also holds kube-root-ca.crt, as on any cluster.
    let ours = list
        .items
        .iter()
        .filter(|c| c.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .count();
    assert_eq!(ours, 1);

    let mut replaced = created.clone();
    replaced.data = Some(BTreeMap::from([("k".to_string(), "2".to_string())]));
    let replaced = cms
        .replace("one", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(replaced.data.unwrap()["k"], "2");
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );

    // A stale resourceVersion is a conflict.
    let err = cms
        .replace("one", &PostParams::default(), &created)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );

    cms.delete("one", &DeleteParams::default()).await.unwrap();
    let err = cms.get("one").await.unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.message, r#"configmaps "one" not found"#);
        }
        other => panic!("want a 404, got {other:?}"),
    }
    t.server.shutdown().await;
}

#[tokio::test]
async fn watcher_sees_changes() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &configmap("before", "0"))
        .await
        .unwrap();

    let mut events = watcher(cms.clone(), watcher::Config::default()).boxed();
    // The initial list delivers the existing object.
    let mut seen_initial = false;
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("watch event")
    {
        match ev.unwrap() {
            watcher::Event::InitApply(cm) if cm.metadata.name.as_deref() == Some("before") => {
                seen_initial = true
            }
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert!(seen_initial);

    cms.create(&PostParams::default(), &configmap("after", "1"))
        .await
        .unwrap();
    cms.delete("after", &DeleteParams::default()).await.unwrap();
    let (mut applied, mut deleted) = (false, false);
    while !(applied && deleted) {
        let ev = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .expect("watch event")
            .unwrap()
            .unwrap();
        match ev {
            watcher::Event::Apply(cm) if cm.metadata.name.as_deref() == Some("after") => {
                applied = true
            }
            watcher::Event::Delete(cm) if cm.metadata.name.as_deref() == Some("after") => {
                assert!(applied, "DELETED came before ADDED");
                deleted = true
            }
            _ => {}
        }
    }
    t.server.shutdown().await;
}

#[tokio::test]
async fn version_health_and_metrics() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
    assert_eq!(v.minor, "33");
    assert!(
        v.git_version.starts_with("v1.33.0-kapi."),
        "{}",
        v.git_version
    );
    assert!(!v.platform.is_empty());

    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let version = conn.send("GET", "/version", None).await;
    assert_eq!(version.status, 200);
    let json = version.json();
    for field in [
        "major",
        "minor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ] {
        assert!(json.get(field).is_some(), "/version lacks {field}");
    }

    for endpoint in ["/healthz", "/livez", "/readyz"] {
        let r = conn.send("GET", endpoint, None).await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"), "{endpoint}");
    }
    let r = conn.send("GET", "/readyz?verbose", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]shutdown ok\nreadyz check passed\n");
    let r = conn.send("GET", "/livez?verbose&exclude=etcd", None).await;
    assert_eq!(
        r.body,
        "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\nlivez check passed\n"
    );
    let r = conn.send("GET", "/readyz/etcd", None).await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    let r = conn.send("GET", "/readyz/nonsense", None).await;
    assert_eq!(r.status, 404);

    // A request through kube-rs, then its metrics.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.list(&ListParams::default()).await.unwrap();
    cms.create(&PostParams::default(), &configmap("m", "1"))
        .await
        .unwrap();
    // Kept where the key does not say the group-resource: nodes under /minions/, Leases under
    // /leases/ without their group.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "metered"}})).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "default");
    let lease =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "metered"}})).unwrap();
    leases.create(&PostParams::default(), &lease).await.unwrap();
    let m = conn.send("GET", "/metrics", None).await;
    assert_eq!(m.status, 200);
    assert!(m.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let has = |needle: &str| {
        m.body
            .lines()
            .any(|l| l.starts_with(needle) || (l.contains(needle) && needle.contains('{')))
    };
    let list_line = m
        .body
        .lines()
        .find(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains(r#"verb="LIST""#)
                && l.contains(r#"resource="configmaps""#)
        })
        .unwrap_or_else(|| panic!("no LIST configmaps counter in\n{}", m.body));
    for label in [
        r#"code="200""#,
        r#"scope="namespace""#,
        r#"version="v1""#,
        r#"component="apiserver""#,
        r#"group="""#,
    ] {
        assert!(list_line.contains(label), "{list_line} lacks {label}");
    }
    assert!(m
        .body
        .lines()
        .any(|l| l.starts_with("apiserver_request_total{")
            && l.contains(r#"verb="POST""#)
            && l.contains(r#"code="201""#)
            && l.contains(r#"scope="resource""#)));
    assert!(has("apiserver_request_duration_seconds_bucket{"));
    assert!(has(
        r#"apiserver_current_inflight_requests{request_kind="readOnly"}"#
    ));
    assert!(has(
        r#"apiserver_current_inflight_requests{request_kind="mutating"}"#
    ));
    assert!(
        m.body
            .lines()
            .any(|l| l.starts_with("etcd_request_duration_seconds_count{")
                && l.contains(r#"operation="create""#)
                && l.contains(r#"type="configmaps""#)),
        "no storage create timing in\n{}",
        m.body
    );
    // Each operation is labelled with its store's group-resource, as upstream's etcd3 store
    // labels it (the key's own first segment would say `minions`, `leases`, `priorityclasses`).
    for type_ in [
        "nodes",
        "leases.coordination.k8s.io",
        "priorityclasses.scheduling.k8s.io",
    ] {
        let label = format!(r#"type="{type_}""#);
        assert!(
            m.body
                .lines()
                .any(|l| l.starts_with("etcd_request_duration_seconds_count{")
                    && l.contains(r#"operation="create""#)
                    && l.contains(&label)),
            "no storage create timing of {type_} in\n{}",
            m.body
        );
    }
    assert!(
        !m.body.contains(r#"operation="watch""#),
        "watches are timed, which upstream's are not"
    );
    // The `kubernetes` Service's ClusterIP was allocated in the ranges no served store holds.
    assert!(
        m.body
            .lines()
            .any(|l| l.starts_with("etcd_request_duration_seconds_count{")
                && l.contains(r#"type="serviceipallocations""#)),
        "no storage timing of serviceipallocations in\n{}",
        m.body
    );
    for key_segment in ["minions", "leases", "priorityclasses"] {
        let label = format!(r#"type="{key_segment}""#);
        assert!(
            !m.body
                .lines()
                .any(|l| l.starts_with("etcd_request_duration_seconds") && l.contains(&label)),
            "a storage timing labelled {label}"
        );
    }
    // Stored objects per resource, counted as the server starts and every minute after, with
    // upstream's resource names (`configmaps`, `deployments.apps`) and help text.
    let counted = |resource: &'static str| {
        move |l: &str| {
            l.strip_prefix(&format!(
                r#"apiserver_storage_objects{{resource="{resource}"}} "#
            ))
            .and_then(|n| n.parse::<i64>().ok())
            .is_some_and(|n| n >= 0)
        }
    };
    common::wait_for_metric_line(&t.server, &admin, counted("configmaps")).await;
    common::wait_for_metric_line(&t.server, &admin, counted("deployments.apps")).await;
    let m = conn.send("GET", "/metrics", None).await;
    // On this (embedded) store a loaded watch cache counts from memory, so no count need be
    // timed here; on etcd the counts are timed as upstream's `Count` is (tests/etcd.rs).
    // events.k8s.io events are the core events' store: counted once, as `events`.
    assert!(m
        .body
        .contains(r#"apiserver_storage_objects{resource="events"} "#));
    assert!(!m.body.contains(r#"resource="events.events.k8s.io""#));
    assert!(m.body.contains(
        "# HELP apiserver_storage_objects [STABLE] Number of stored objects at the time of last check split by kind.\n# TYPE apiserver_storage_objects gauge\n"
    ));
    // A made-up resource is counted without its name.
    let r = conn
        .send("GET", "/api/v1/namespaces/default/madeupthings", None)
        .await;
    assert_eq!(r.status, 404);
    let m = conn.send("GET", "/metrics", None).await;
    assert!(!m.body.contains("madeupthings"));
    assert!(m
        .body
        .lines()
        .any(|l| l.starts_with("apiserver_request_total{")
            && l.contains(r#"code="404""#)
            && l.contains(r#"resource="""#)));
    // A watch is counted, with its duration, when it ends.
    let w = conn
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
            None,
        )
        .await;
    assert_eq!(w.status, 200);
    let m = conn.send("GET", "/metrics", None).await;
    assert!(
        m.body
            .lines()
            .any(|l| l.starts_with("apiserver_request_total{")
                && l.contains(r#"verb="WATCH""#)
                && l.contains(r#"code="200""#)
                && l.ends_with(" 1")),
        "no WATCH counter in\n{}",
        m.body
    );
    assert!(m
        .body
        .lines()
        .any(|l| l.starts_with("apiserver_longrunning_requests{")
            && l.contains(r#"verb="WATCH""#)
            && l.ends_with(" 0")));
    // The response carries an audit id.
    assert!(version.headers.contains_key("audit-id"));
    assert_eq!(version.headers["cache-control"], "no-cache, private");
    t.server.shutdown().await;
}

/// A GET takes its resourceVersion as upstream's: none reads storage, `0` whatever the
/// watch cache holds (a kubelet reads its Node so before each status update), a revision the
/// server has not reached is 504 `Too large resource version` once the wait for it ends.
#[tokio::test]
async fn gets_read_storage_or_the_watch_cache_by_resource_version() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &configmap("rv", "1"))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.unwrap();
    let admin = common::admin_identity(&t);
    let path = "/api/v1/namespaces/default/configmaps/rv";
    common::until_cached(&t.server, &admin, path).await;
    let mut conn = common::connect(&t.server, Some(&admin)).await;

    let reads = common::storage_reads(&mut conn, "get", "configmaps").await;
    for query in ["?resourceVersion=0", &format!("?resourceVersion={rv}")] {
        let got = conn.send("GET", &format!("{path}{query}"), None).await;
        assert_eq!(got.status, 200, "{query}: {}", got.body);
        assert_eq!(got.json()["metadata"]["resourceVersion"], rv.as_str());
    }
    assert_eq!(
        common::storage_reads(&mut conn, "get", "configmaps").await,
        reads,
        "GETs with a resourceVersion come from the watch cache"
    );
    let got = conn.send("GET", path, None).await;
    assert_eq!(got.status, 200);
    assert_eq!(
        common::storage_reads(&mut conn, "get", "configmaps").await,
        reads + 1,
        "a GET without one reads storage"
    );
    let missing = conn
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps/none?resourceVersion=0",
            None,
        )
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["reason"], "NotFound");

    let ahead: i64 = rv.parse::<i64>().unwrap() + 1_000_000;
    let got = conn
        .send("GET", &format!("{path}?resourceVersion={ahead}"), None)
        .await;
    assert_eq!(got.status, 504, "{}", got.body);
    let status = got.json();
    assert_eq!(status["reason"], "Timeout");
    assert!(
        status["message"].as_str().unwrap().starts_with(&format!(
            "Timeout: Too large resource version: {ahead}, current: "
        )),
        "{status}"
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test]
async fn large_responses_are_gzipped_small_ones_are_not() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let big = "x".repeat(60 * 1024);
    for name in ["big-1", "big-2", "big-3"] {
        cms.create(&PostParams::default(), &configmap(name, &big))
            .await
            .unwrap();
    }
    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let gzip = [("accept-encoding", "gzip")];

    let r = conn
        .send_with("GET", "/api/v1/namespaces/default/configmaps", &gzip, None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers
            .get("content-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("gzip")
    );
    assert!(
        r.body.len() < 100 * 1024,
        "a gzipped body of {} bytes",
        r.body.len()
    );

    let r = conn
        .send("GET", "/api/v1/namespaces/default/configmaps", None)
        .await;
    assert!(r.headers.get("content-encoding").is_none());
    let names: Vec<String> = r.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names.len(), 3);

    let r = conn
        .send_with(
            "GET",
            "/api/v1/namespaces/default/configmaps/big-1",
            &gzip,
            None,
        )
        .await;
    assert!(
        r.headers.get("content-encoding").is_none(),
        "a 60 KiB object was compressed"
    );
    assert_eq!(r.json()["metadata"]["name"], "big-1");
    t.server.shutdown().await;
}
