//! The in-process controllers and the default-on ServiceAccount admission against a real
//! server: a new namespace gets its `default` ServiceAccount and `kube-root-ca.crt` (holding the
//! server's CA), and a pod created there gets the account and the projected token volume.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common::{self, until};

use k8s_openapi::api::core::v1::{ConfigMap, LimitRange, Namespace, Pod, ServiceAccount};
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::Duration;

/// Polls `get` until it returns an object, for up to 30 seconds.
async fn eventually<T>(api: &Api<T>, name: &str) -> T
where
    T: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    for _ in 0..300 {
        if let Ok(Some(o)) = api.get_opt(name).await {
            return o;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never appeared");
}

#[tokio::test]
async fn namespaces_get_their_account_and_ca_and_pods_the_token() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "ctl"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();

    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "ctl");
    eventually(&accounts, "default").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "ctl");
    let ca = eventually(&configmaps, "kube-root-ca.crt").await;
    let data = ca.data.unwrap_or_default();
    assert_eq!(
        data.get("ca.crt").map(String::as_str),
        Some(t.server.ca_pem.as_str())
    );
    // The system namespaces have theirs too.
    let system: Api<ServiceAccount> = Api::namespaced(client.clone(), "kube-system");
    eventually(&system, "default").await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "ctl");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    let volume = &spec.volumes.unwrap()[0];
    assert!(
        volume.name.starts_with("kube-api-access-"),
        "{}",
        volume.name
    );
    let mount = &spec.containers[0].volume_mounts.as_ref().unwrap()[0];
    assert_eq!(
        mount.mount_path,
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    assert_eq!(mount.read_only, Some(true));

    let ghost: Pod = serde_json::from_value(json!({"metadata": {"name": "g"},
        "spec": {"serviceAccountName": "ghost", "containers": [{"name": "c", "image": "nginx"}]}}))
    .unwrap();
    match pods.create(&PostParams::default(), &ghost).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403);
            assert_eq!(
                e.message,
                r#"pods "g" is forbidden: error looking up service account ctl/ghost: serviceaccount "ghost" not found"#
            );
        }
        other => panic!("expected 403, got {other:?}"),
    }
}

/// A pod create reads its service account, the namespace's LimitRanges and the priority
/// classes from their watch caches, as upstream's admission reads its informers: storage is
/// not read for them once the caches hold them, and the pod still gets what they say.
#[tokio::test]
async fn pod_admission_reads_its_objects_from_the_watch_caches() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "cached"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "cached");
    eventually(&accounts, "default").await;
    let ranges: Api<LimitRange> = Api::namespaced(client.clone(), "cached");
    let range: LimitRange = serde_json::from_value(json!({"metadata": {"name": "lr"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "250m"}}]}}))
    .unwrap();
    ranges.create(&PostParams::default(), &range).await.unwrap();
    let admin = common::admin_identity(&t);
    for path in [
        "/api/v1/namespaces/cached/serviceaccounts/default",
        "/api/v1/namespaces/cached/limitranges/lr",
    ] {
        common::until_cached(&t.server, &admin, path).await;
    }
    let mut conn = common::connect(&t.server, Some(&admin)).await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "cached");
    let before = [
        common::storage_reads(&mut conn, "get", "serviceaccounts").await,
        common::storage_reads(&mut conn, "list", "limitranges").await,
        common::storage_reads(&mut conn, "list", "priorityclasses.scheduling.k8s.io").await,
    ];
    for i in 0..5 {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": format!("p{i}")},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        .unwrap();
        let created = pods.create(&PostParams::default(), &pod).await.unwrap();
        let spec = created.spec.unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("default"));
        assert_eq!(spec.priority, Some(0));
        let requests = spec.containers[0]
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref();
        assert_eq!(requests.unwrap()["cpu"].0, "250m");
    }
    let after = [
        common::storage_reads(&mut conn, "get", "serviceaccounts").await,
        common::storage_reads(&mut conn, "list", "limitranges").await,
        common::storage_reads(&mut conn, "list", "priorityclasses.scheduling.k8s.io").await,
    ];
    assert_eq!(
        after, before,
        "storage reads of serviceaccounts, limitranges and priorityclasses while creating pods"
    );
}

async fn gone<T>(api: &Api<T>, name: &str) -> bool
where
    T: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    matches!(api.get_opt(name).await, Ok(None))
}

fn configmap(name: &str, owners: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": owners}})).unwrap()
}

#[tokio::test]
async fn a_deleted_namespace_loses_its_content_and_goes() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let pp = PostParams::default();
    for i in 0..3 {
        configmaps
            .create(&pp, &configmap(&format!("c{i}"), json!([])))
            .await
            .unwrap();
    }
    // One held by a finalizer: the namespace waits for it and says so.
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .unwrap();
    configmaps.create(&pp, &held).await.unwrap();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), "doomed");
    let secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"a": "b"}}))
            .unwrap();
    secrets.create(&pp, &secret).await.unwrap();
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), "doomed");
    let d = serde_json::from_value(json!({"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}))
    .unwrap();
    deployments.create(&pp, &d).await.unwrap();

    namespaces
        .delete("doomed", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    until("the finalizer reported", || async {
        let Ok(ns) = namespaces.get("doomed").await else {
            return false;
        };
        let conditions = ns.status.and_then(|s| s.conditions).unwrap_or_default();
        conditions.iter().any(|c| {
            c.type_ == "NamespaceFinalizersRemaining"
                && c.status == "True"
                && c.reason.as_deref() == Some("SomeFinalizersRemain")
                && c.message.as_deref()
                    == Some("Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances")
        }) && conditions.iter().any(|c| {
            c.type_ == "NamespaceContentRemaining"
                && c.message.as_deref()
                    == Some("Some resources are remaining: configmaps. has 1 resource instances")
        })
    })
    .await;
    assert!(gone(&secrets, "s").await);
    assert!(gone(&deployments, "d").await);
    assert!(gone(&configmaps, "c0").await);

    let patch = json!({"metadata": {"finalizers": null}});
    configmaps
        .patch(
            "held",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    until("the namespace gone", || gone(&namespaces, "doomed")).await;
}

#[tokio::test]
async fn no_controllers_leave_a_namespace_terminating() {
    let t =
        common::start_with(|c| c.controllers = kapi_server::controllers::Selection::none()).await;
    let client = common::kube_client(&t.server).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "stays"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    namespaces
        .delete("stays", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ns = namespaces.get("stays").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    assert!(gone(&accounts, "default").await);
}

/// An owner reference to the ConfigMap `owner`.
fn owned_by(owner: &ConfigMap, block: bool) -> serde_json::Value {
    json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
        "uid": owner.metadata.uid, "blockOwnerDeletion": block}])
}

fn delete_with(policy: kube::api::PropagationPolicy) -> kube::api::DeleteParams {
    kube::api::DeleteParams {
        propagation_policy: Some(policy),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_garbage_collector_follows_owner_references() {
    use kube::api::PropagationPolicy::{Background, Foreground, Orphan};
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();

    // Background: the dependents go after the owner.
    let owner = cms.create(&pp, &configmap("bg", json!([]))).await.unwrap();
    for d in ["bg-1", "bg-2"] {
        cms.create(&pp, &configmap(d, owned_by(&owner, false)))
            .await
            .unwrap();
    }
    cms.delete("bg", &delete_with(Background)).await.unwrap();
    until("background dependents collected", || async {
        gone(&cms, "bg-1").await && gone(&cms, "bg-2").await
    })
    .await;

    // Orphan: the dependent stays, without its reference.
    let owner = cms.create(&pp, &configmap("or", json!([]))).await.unwrap();
    cms.create(&pp, &configmap("or-1", owned_by(&owner, true)))
        .await
        .unwrap();
    cms.delete("or", &delete_with(Orphan)).await.unwrap();
    until("orphaned owner gone", || gone(&cms, "or")).await;
    let kept = cms.get("or-1").await.unwrap();
    assert!(kept
        .metadata
        .owner_references
        .unwrap_or_default()
        .is_empty());

    // Dangling: an owner that never existed.
    let ghost = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
        "uid": "00000000-0000-0000-0000-000000000000"}]);
    cms.create(&pp, &configmap("ghost-1", ghost)).await.unwrap();
    until("dangling dependent collected", || gone(&cms, "ghost-1")).await;

    // Foreground: a finalizer on a blocking dependent holds the owner.
    let owner = cms.create(&pp, &configmap("fg", json!([]))).await.unwrap();
    let held: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "fg-1",
        "finalizers": ["example.com/hold"], "ownerReferences": owned_by(&owner, true)}}))
    .unwrap();
    cms.create(&pp, &held).await.unwrap();
    cms.create(&pp, &configmap("fg-2", owned_by(&owner, false)))
        .await
        .unwrap();
    cms.delete("fg", &delete_with(Foreground)).await.unwrap();
    until("the blocking dependent is being deleted", || async {
        cms.get("fg-1")
            .await
            .is_ok_and(|d| d.metadata.deletion_timestamp.is_some())
    })
    .await;
    let waiting = cms.get("fg").await.unwrap();
    assert_eq!(
        waiting.metadata.finalizers.unwrap_or_default(),
        vec!["foregroundDeletion".to_string()]
    );
    let patch = json!({"metadata": {"finalizers": null}});
    cms.patch(
        "fg-1",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .unwrap();
    until("the foreground owner and its dependents gone", || async {
        gone(&cms, "fg").await && gone(&cms, "fg-1").await && gone(&cms, "fg-2").await
    })
    .await;
}
