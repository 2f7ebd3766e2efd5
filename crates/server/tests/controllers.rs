//! The in-process controllers and the default-on ServiceAccount admission against a real
//! server: a new namespace gets its `default` ServiceAccount and `kube-root-ca.crt` (holding the
//! server's CA), and a pod created there gets the account and the projected token volume.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
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
