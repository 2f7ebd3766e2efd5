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
use kube::api::{Api, PostParams};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Etcd {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_etcd() -> Etcd {
    let dir = tempfile::tempdir().unwrap();
    let (client, peer) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .args(["--name", "default", "--data-dir"])
        .arg(dir.path().join("etcd"))
        .args([
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
        ])
        .args([
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
        ])
        .args(["--initial-cluster", &format!("default={peer_url}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd is installed (hack/install-etcd.sh)");
    for _ in 0..500 {
        if tokio::net::TcpStream::connect(("127.0.0.1", client))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Etcd {
        child,
        url,
        _dir: dir,
    }
}

#[tokio::test]
async fn serves_from_etcd_and_readyz_follows_it() {
    let mut etcd = start_etcd().await;
    let url = etcd.url.clone();
    let t = common::start_with(move |c| {
        c.storage = StorageConfig::Etcd(EtcdOptions {
            servers: vec![url],
            prefix: "/registry".into(),
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

    etcd.child.kill().unwrap();
    etcd.child.wait().unwrap();
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
