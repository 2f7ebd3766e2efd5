//! The server on a real etcd process: objects go through etcd, and `/readyz` fails (500,
//! `[-]etcd failed: reason withheld`) while etcd is unreachable.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use k8s_openapi::api::core::v1::ConfigMap;
use kapi_server::{EtcdOptions, StorageConfig};
use kapi_storage::testing::EtcdProcess;
use kube::api::{Api, PostParams};
use std::time::Duration;

#[tokio::test]
async fn serves_from_etcd_and_readyz_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut etcd = EtcdProcess::start(&dir.path().join("etcd"));
    let url = etcd.client_url();
    let t = common::start_with(move |c| {
        c.storage = StorageConfig::Etcd(EtcdOptions {
            servers: vec![url],
            prefix: "/kapi-etcd-test".into(),
            compaction_interval: None,
            request_timeout: Duration::from_secs(5),
            ..Default::default()
        })
    })
    .await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("in-etcd".into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    assert_eq!(
        cms.get("in-etcd").await.unwrap().metadata.name.as_deref(),
        Some("in-etcd")
    );

    let admin = common::admin_identity(&t);
    let mut conn = common::connect(&t.server, Some(&admin)).await;
    let r = conn.send("GET", "/readyz?verbose", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("[+]etcd ok\n"));
    // Counts are timed under the stored prefix, `--etcd-prefix` included, as upstream's are.
    common::wait_for_metric_line(&t.server, &admin, |l| {
        l.starts_with(
            r#"etcd_request_duration_seconds_count{operation="listWithCount",type="/kapi-etcd-test/configmaps/"} "#,
        )
    })
    .await;

    etcd.kill();
    let r = conn.send("GET", "/readyz", None).await;
    assert_eq!(r.status, 500);
    assert!(
        r.body.contains("[-]etcd failed: reason withheld\n"),
        "{}",
        r.body
    );
    assert!(r.body.contains("[+]ping ok\n"));
    assert!(r.body.ends_with("readyz check failed\n"), "{}", r.body);
    let r = conn.send("GET", "/readyz/etcd", None).await;
    assert_eq!(r.status, 500);
    assert!(r.body.starts_with("internal server error: "), "{}", r.body);
    // Liveness of the process itself is unaffected by the ping check.
    let r = conn.send("GET", "/livez/ping", None).await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    t.server.shutdown().await;
}
