//! Start-up and shutdown: certificates and kubeconfig on disk and their reuse, and a graceful
//! shutdown that lets in-flight requests finish and ends watches.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use kapi_server::ServerConfig;
use std::os::unix::fs::PermissionsExt;

#[tokio::test]
async fn pki_and_kubeconfig_are_written_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let first = kapi_server::start(ServerConfig::for_test(dir.path()))
        .await
        .unwrap();
    let kubeconfig = std::fs::read_to_string(&first.kubeconfig_path).unwrap();
    assert_eq!(first.kubeconfig_path, dir.path().join("admin.kubeconfig"));
    assert_eq!(
        std::fs::metadata(&first.kubeconfig_path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert!(kubeconfig.contains(&format!("server: https://127.0.0.1:{}", first.addr.port())));
    assert!(kubeconfig.contains("current-context: kapi"));
    assert!(kubeconfig.contains("certificate-authority-data: "));
    assert!(kubeconfig.contains("client-certificate-data: "));
    assert!(kubeconfig.contains("client-key-data: "));
    for f in [
        "ca.crt",
        "ca.key",
        "apiserver.crt",
        "apiserver.key",
        "admin.crt",
        "admin.key",
    ] {
        assert!(dir.path().join("pki").join(f).is_file(), "{f} missing");
    }
    assert_eq!(
        std::fs::metadata(dir.path().join("pki/ca.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );

    // The serving certificate names what upstream's does.
    let pem = std::fs::read_to_string(dir.path().join("pki/apiserver.crt")).unwrap();
    let der = rustls_pemfile::certs(&mut pem.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let sans: Vec<String> = cert
        .subject_alternative_name()
        .unwrap()
        .unwrap()
        .value
        .general_names
        .iter()
        .map(|n| match n {
            x509_parser::extensions::GeneralName::DNSName(d) => d.to_string(),
            x509_parser::extensions::GeneralName::IPAddress(b) if b.len() == 4 => {
                std::net::IpAddr::from(<[u8; 4]>::try_from(*b).unwrap()).to_string()
            }
            x509_parser::extensions::GeneralName::IPAddress(b) => {
                std::net::IpAddr::from(<[u8; 16]>::try_from(*b).unwrap()).to_string()
            }
            other => format!("{other:?}"),
        })
        .collect();
    for want in [
        "localhost",
        "127.0.0.1",
        "::1",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "10.0.0.1",
    ] {
        assert!(
            sans.iter().any(|s| s == want),
            "serving certificate lacks {want}: {sans:?}"
        );
    }
    let admin_pem = std::fs::read_to_string(dir.path().join("pki/admin.crt")).unwrap();
    let admin_der = rustls_pemfile::certs(&mut admin_pem.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    let user = kapi_server::filters::authentication::user_from_certificate(&admin_der).unwrap();
    assert_eq!(user.name, "kubernetes-admin");
    assert_eq!(user.groups, vec!["system:masters".to_string()]);

    let ca = first.ca_pem.clone();
    first.shutdown().await;

    // A restart keeps the CA and the admin certificate; the same kubeconfig credentials work.
    let second = kapi_server::start(ServerConfig::for_test(dir.path()))
        .await
        .unwrap();
    assert_eq!(second.ca_pem, ca);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pki/admin.crt")).unwrap(),
        admin_pem
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pki/apiserver.crt")).unwrap(),
        pem
    );
    let client = common::kube_client(&second).await;
    assert_eq!(client.apiserver_version().await.unwrap().minor, "33");
    second.shutdown().await;

    // A new name for the serving certificate re-issues it from the same CA.
    let mut config = ServerConfig::for_test(dir.path());
    config.tls_sans = vec!["kapi.example.com".into()];
    let third = kapi_server::start(config).await.unwrap();
    assert_eq!(third.ca_pem, ca);
    let reissued = std::fs::read_to_string(dir.path().join("pki/apiserver.crt")).unwrap();
    assert_ne!(reissued, pem);
    third.shutdown().await;
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests() {
    let t = common::start().await;
    let admin = common::admin_identity(&t);
    let port = t.server.addr.port();

    // A request in flight: its body is still arriving.
    let mut slow = common::connect(&t.server, Some(&admin)).await;
    let (body, reply) = slow
        .send_streaming("POST", "/api/v1/namespaces/default/configmaps")
        .await;
    body.send(Bytes::from_static(
        br#"{"apiVersion":"v1","kind":"ConfigMap","#,
    ))
    .await
    .unwrap();
    common::wait_for_metric(
        &t.server,
        &admin,
        r#"apiserver_current_inflight_requests{request_kind="mutating"} 1"#,
    )
    .await;

    // An open watch.
    let mut watcher = common::connect(&t.server, Some(&admin)).await;
    let watch = tokio::spawn(async move {
        watcher
            .send(
                "GET",
                "/api/v1/namespaces/default/configmaps?watch=true",
                None,
            )
            .await
    });
    common::wait_for_metric_line(&t.server, &admin, |l| {
        l.starts_with("apiserver_request_total{") && l.contains(r#"verb="WATCH""#)
    })
    .await;

    let common::TestServer { server, dir: _dir } = t;
    let stopping = tokio::spawn(server.shutdown());

    // New connections are refused once the listener is closed.
    let mut refused = false;
    for _ in 0..500 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(refused, "the listener is still accepting");

    // The in-flight request completes normally.
    body.send(Bytes::from_static(br#""metadata":{"name":"drained"}}"#))
        .await
        .unwrap();
    drop(body);
    let r = reply.await.unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["metadata"]["name"], "drained");

    // The watch ended cleanly (200 with a finished body), and the server is gone.
    let w = watch.await.unwrap();
    assert_eq!(w.status, 200);
    stopping.await.unwrap();
}
