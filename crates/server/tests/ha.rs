//! Two kapi replicas on one real etcd: one holds kube-controller-manager's Lease and runs the
//! controllers; when it stops, the other takes the Lease over (one more `leaseTransitions`)
//! and the controllers keep working. Each replica keeps its identity Lease, and the
//! `kubernetes` Endpoints/EndpointSlice list the live replicas.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Namespace};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kapi_server::leaderelection::LeaderElectionConfig;
use kapi_server::{EtcdOptions, StorageConfig};
use kapi_storage::testing::{free_port, EtcdProcess};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use std::net::IpAddr;
use std::time::Duration;

async fn replica(etcd: &str, advertise: &str) -> common::TestServer {
    let etcd = etcd.to_string();
    let advertise: IpAddr = advertise.parse().unwrap();
    common::start_with(move |c| {
        c.storage = StorageConfig::Etcd(EtcdOptions {
            servers: vec![etcd],
            prefix: "/registry".into(),
            request_timeout: Duration::from_secs(5),
            ..Default::default()
        });
        // Short, valid timings so the test does not wait 15 s per step.
        c.leader_election = LeaderElectionConfig {
            enabled: true,
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(500),
        };
        c.advertise_address = Some(advertise);
    })
    .await
}

/// Polls `f` for up to 30 s until it returns `Some`.
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..300 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

async fn holder(leases: &Api<Lease>) -> Option<(String, i32)> {
    let l = leases.get_opt("kube-controller-manager").await.ok()??;
    let spec = l.spec?;
    let h = spec.holder_identity.filter(|h| !h.is_empty())?;
    Some((h, spec.lease_transitions.unwrap_or(0)))
}

fn endpoint_ips(ep: &Endpoints) -> Vec<String> {
    ep.subsets
        .iter()
        .flatten()
        .flat_map(|s| s.addresses.iter().flatten())
        .map(|a| a.ip.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_lead_once_and_move_when_the_leader_stops() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = EtcdProcess::start(&dir.path().join("etcd"));
    // A starts first and leads; B waits as a candidate.
    let a = replica(&etcd.client_url(), "127.0.0.1").await;
    let client_a = common::kube_client(&a.server).await;
    let leases_a: Api<Lease> = Api::namespaced(client_a.clone(), "kube-system");
    let (first, transitions) = eventually("a leader", || holder(&leases_a)).await;
    let b = replica(&etcd.client_url(), "127.0.0.2").await;
    let client_b = common::kube_client(&b.server).await;
    let leases_b: Api<Lease> = Api::namespaced(client_b.clone(), "kube-system");

    // One holder, `<hostname>_<uuid>`, with upstream's fields.
    let (host, uuid) = first.rsplit_once('_').unwrap();
    assert!(!host.is_empty() && uuid.len() == 36, "{first}");
    let lease = leases_b.get("kube-controller-manager").await.unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(3));
    assert!(spec.acquire_time.is_some() && spec.renew_time.is_some());

    // The controllers act, whichever replica is asked: a namespace deleted through B goes away.
    let ns_a: Api<Namespace> = Api::all(client_a.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("ha-gone".into());
    ns_a.create(&PostParams::default(), &ns).await.unwrap();
    let ns_b: Api<Namespace> = Api::all(client_b.clone());
    ns_b.delete("ha-gone", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the namespace to be finalized", || async {
        ns_b.get_opt("ha-gone")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // Each replica has its identity Lease.
    let identities = leases_b
        .list(&ListParams::default().labels("apiserver.kubernetes.io/identity=kube-apiserver"))
        .await
        .unwrap();
    assert_eq!(identities.items.len(), 2, "{identities:?}");
    for l in &identities.items {
        let name = l.metadata.name.as_deref().unwrap();
        assert!(name.starts_with("apiserver-"), "{name}");
        let labels = l.metadata.labels.as_ref().unwrap();
        assert!(labels.contains_key("kubernetes.io/hostname"), "{labels:?}");
        let spec = l.spec.as_ref().unwrap();
        assert_eq!(spec.lease_duration_seconds, Some(3600));
        assert!(spec.holder_identity.as_deref().unwrap().starts_with(name));
    }

    // The kubernetes endpoints list both replicas.
    let eps: Api<Endpoints> = Api::namespaced(client_a.clone(), "default");
    eventually("both replicas in the endpoints", || async {
        let ep = eps.get_opt("kubernetes").await.ok()??;
        (endpoint_ips(&ep) == ["127.0.0.1", "127.0.0.2"]).then_some(())
    })
    .await;
    let slices: Api<EndpointSlice> = Api::namespaced(client_a.clone(), "default");
    let slice = slices.get("kubernetes").await.unwrap();
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(
        slice
            .metadata
            .labels
            .unwrap()
            .get("kubernetes.io/service-name"),
        Some(&"kubernetes".to_string())
    );
    assert_eq!(slice.endpoints.len(), 2);

    // B never took the Lease while A renewed it.
    assert_eq!(holder(&leases_b).await, Some((first.clone(), transitions)));

    // The leader stops (and releases the Lease); B takes over and the controllers still act.
    a.server.shutdown().await;
    let (now, now_transitions) = eventually("B to lead", || async {
        holder(&leases_b).await.filter(|(h, _)| *h != first)
    })
    .await;
    assert_eq!(now_transitions, transitions + 1, "{now}");
    let survivor_client = client_b.clone();
    let ns_s: Api<Namespace> = Api::all(survivor_client.clone());
    ns.metadata.name = Some("ha-gone-too".into());
    ns_s.create(&PostParams::default(), &ns).await.unwrap();
    ns_s.delete("ha-gone-too", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the namespace to be finalized by the new leader",
        || async {
            ns_s.get_opt("ha-gone-too")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        },
    )
    .await;
    // The stopped replica took itself out of the endpoints.
    let eps: Api<Endpoints> = Api::namespaced(survivor_client, "default");
    eventually("only the survivor in the endpoints", || async {
        let ep = eps.get_opt("kubernetes").await.ok()??;
        (endpoint_ips(&ep) == ["127.0.0.2"]).then_some(())
    })
    .await;
    b.server.shutdown().await;
}

/// A CA, and a certificate for 127.0.0.1 (server and client use) signed by it, as PEM files.
fn etcd_pki(dir: &std::path::Path) -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
        KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    leaf.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let write = |name: &str, pem: String| {
        let p = dir.join(name);
        std::fs::write(&p, pem).unwrap();
        p.display().to_string()
    };
    (
        write("ca.crt", ca_cert.pem()),
        write("etcd.crt", cert.pem()),
        write("etcd.key", key.serialize_pem()),
    )
}

/// etcd serving TLS and requiring client certificates: kapi reaches it with `--etcd-cafile`,
/// `--etcd-certfile` and `--etcd-keyfile`; without a client certificate it cannot start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn talks_to_etcd_over_tls_with_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = etcd_pki(dir.path());
    let (client_port, peer_port) = (free_port(), free_port());
    let url = format!("https://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let mut etcd = std::process::Command::new("etcd")
        .args(["--name", "tls", "--data-dir"])
        .arg(dir.path().join("etcd"))
        .args([
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
        ])
        .args([
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
        ])
        .args(["--initial-cluster", &format!("tls={peer}")])
        .args([
            "--cert-file",
            &cert,
            "--key-file",
            &key,
            "--trusted-ca-file",
            &ca,
        ])
        .arg("--client-cert-auth")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("etcd is installed (hack/install-etcd.sh)");
    eventually("etcd to listen", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", client_port))
            .await
            .ok()
            .map(|_| ())
    })
    .await;

    let tls = |with_client_cert: bool| {
        let (url, ca, cert, key) = (url.clone(), ca.clone(), cert.clone(), key.clone());
        move |c: &mut kapi_server::ServerConfig| {
            c.storage = StorageConfig::Etcd(EtcdOptions {
                servers: vec![url],
                prefix: "/registry".into(),
                request_timeout: Duration::from_secs(5),
                ca_file: Some(ca.into()),
                cert_file: with_client_cert.then(|| cert.into()),
                key_file: with_client_cert.then(|| key.into()),
                ..Default::default()
            });
        }
    };
    let t = common::start_with(tls(true)).await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
    cm.metadata.name = Some("over-tls".into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(cms.get_opt("over-tls").await.unwrap().is_some());
    let ready = client
        .request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(ready, "ok");
    t.server.shutdown().await;

    // Without a client certificate etcd refuses the handshake: kapi cannot start on it.
    let dir2 = tempfile::tempdir().unwrap();
    let mut config = kapi_server::ServerConfig::for_test(dir2.path());
    tls(false)(&mut config);
    match kapi_server::start(config).await {
        Ok(_) => panic!("kapi started on etcd without the client certificate it requires"),
        // The first storage request at start-up fails (which one comes first may change).
        Err(e) => assert!(
            ["could not be completed", "storage unavailable"]
                .iter()
                .any(|m| e.to_string().contains(m)),
            "{e}"
        ),
    }
    let _ = etcd.kill();
    let _ = etcd.wait();
}
