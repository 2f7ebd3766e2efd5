//! Servers started at once in one test binary stay apart: each has its own port, certificates
//! and data, and a client of one never sees another's objects.
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use k8s_openapi::api::core::v1::ConfigMap;
use kapi_testing::{Storage, TestServer};
use kube::api::{Api, PostParams};
use std::collections::{BTreeMap, BTreeSet};

fn config_map(value: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("shared-name".into()),
            labels: Some(BTreeMap::from([(
                "test".to_string(),
                "parallel".to_string(),
            )])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("owner".to_string(), value.to_string())])),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_servers_do_not_interfere() {
    const N: usize = 4;
    // Both storage flavours, started concurrently.
    let servers = futures::future::try_join_all((0..N).map(|i| {
        let storage = if i % 2 == 0 {
            Storage::TempDir
        } else {
            Storage::Memory
        };
        TestServer::builder().storage(storage).start()
    }))
    .await
    .unwrap();

    let ports: BTreeSet<u16> = servers.iter().map(|s| s.server.addr.port()).collect();
    assert_eq!(ports.len(), N, "every server has its own port");
    let dirs: BTreeSet<_> = servers.iter().map(|s| s.dir.path().to_owned()).collect();
    assert_eq!(dirs.len(), N, "every server has its own data directory");
    let cas: BTreeSet<&str> = servers.iter().map(|s| s.server.ca_pem.as_str()).collect();
    assert_eq!(cas.len(), N, "every server has its own CA");

    // The same name in every server, created concurrently, each with its own content.
    futures::future::try_join_all(servers.iter().enumerate().map(|(i, s)| async move {
        let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
        cms.create(&PostParams::default(), &config_map(&format!("server-{i}")))
            .await
    }))
    .await
    .unwrap();
    for (i, s) in servers.iter().enumerate() {
        let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
        let list = cms
            .list(&kube::api::ListParams::default().labels("test=parallel"))
            .await
            .unwrap();
        let names: Vec<_> = list
            .items
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(
            names,
            ["shared-name"],
            "server {i} holds only its own object"
        );
        let cm = cms.get("shared-name").await.unwrap();
        assert_eq!(cm.data.unwrap()["owner"], format!("server-{i}"));
    }

    // A client of one server is not trusted by another (its own CA signed its certificate).
    let other: Api<ConfigMap> = Api::namespaced(
        kube::Client::try_from({
            let mut config = kube::Config::from_custom_kubeconfig(
                servers[0].kubeconfig().clone(),
                &Default::default(),
            )
            .await
            .unwrap();
            config.cluster_url = servers[1].url().parse().unwrap();
            config
        })
        .unwrap(),
        "default",
    );
    assert!(other.get("shared-name").await.is_err());

    // Stopping one leaves the others serving.
    let mut servers = servers;
    let first = servers.remove(0);
    first.shutdown().await;
    for s in &servers {
        let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
        assert!(cms.get("shared-name").await.is_ok());
    }
}

#[tokio::test]
async fn a_stopped_server_frees_its_port_and_data() {
    let t = TestServer::start().await.unwrap();
    let addr = t.server.addr;
    let dir = t.dir.path().to_owned();
    let store = dir.join("store");
    assert!(store.is_dir());
    t.shutdown().await;
    assert!(!dir.exists(), "the data directory is removed");
    // Nothing listens on the port any more.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// Stopped servers leave no task behind (an informer that outlived its server once held the
/// whole server: handler, watch caches, storage and its writer thread).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_servers_leave_no_tasks() {
    let alive = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let cycle = || async {
        let t = TestServer::start().await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(t.client(), "default");
        cms.list(&Default::default()).await.unwrap();
        t.shutdown().await;
    };
    cycle().await;
    let before = alive();
    for _ in 0..3 {
        cycle().await;
    }
    // Aborted tasks end when next polled, and a retry may still sleep: wait (bounded) for the
    // count to settle, and allow a few stragglers. A leaked server is ~90 tasks or more (one
    // informer per resource), so the margin still catches one.
    const STRAGGLERS: usize = 10;
    for _ in 0..200 {
        if alive() <= before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        alive() <= before + STRAGGLERS,
        "{} tasks alive after 3 more servers, {before} before",
        alive()
    );
}
