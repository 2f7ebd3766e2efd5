//! Start-up and shutdown: certificates and kubeconfig on disk and their reuse, and a graceful
//! shutdown that lets in-flight requests finish and ends watches.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

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
    let (_slow, body, reply) = common::hold_mutating_slot(&t, &admin).await;

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
        l.starts_with("apiserver_longrunning_requests{")
            && l.contains(r#"verb="WATCH""#)
            && l.ends_with(" 1")
    })
    .await;

    let common::TestServer {
        server, dir: _dir, ..
    } = t;
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

#[tokio::test]
async fn user_provided_serving_certificate_and_client_ca() {
    // Someone else's CA, with a serving certificate and a client certificate for "alice".
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::default();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "corp-ca");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let ca = rcgen::Issuer::new(ca_params, ca_key);
    let serving_key = rcgen::KeyPair::generate().unwrap();
    let mut serving =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    serving.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let serving_cert = serving.signed_by(&serving_key, &ca).unwrap();
    let alice_key = rcgen::KeyPair::generate().unwrap();
    let mut alice = rcgen::CertificateParams::default();
    alice.distinguished_name = rcgen::DistinguishedName::new();
    alice
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "devs");
    alice
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    alice.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let alice_cert = alice.signed_by(&alice_key, &ca).unwrap();

    let files = tempfile::tempdir().unwrap();
    let write = |name: &str, pem: String| {
        let p = files.path().join(name);
        std::fs::write(&p, pem).unwrap();
        p
    };
    let cert_file = write(
        "serving.crt",
        format!("{}{}", serving_cert.pem(), ca_cert.pem()),
    );
    let key_file = write("serving.key", serving_key.serialize_pem());
    let client_ca_file = write("client-ca.crt", ca_cert.pem());

    let t = common::start_with(|c| {
        c.tls_cert_file = Some(cert_file);
        c.tls_private_key_file = Some(key_file);
        c.client_ca_file = Some(client_ca_file);
        c.authorization_modes = vec![kapi_server::AuthorizationMode::AlwaysDeny];
    })
    .await;
    // The served certificate is the given one, and the kubeconfig's CA bundle trusts it.
    assert!(t.server.ca_pem.contains(ca_cert.pem().trim()));
    // AlwaysDeny refuses everyone outside system:masters.
    let r = common::connect(&t.server, None)
        .await
        .send("GET", "/version", None)
        .await;
    assert_eq!(r.status, 403);

    // A certificate from the client CA authenticates (the 403 names the user).
    let id = common::Identity {
        chain: vec![alice_cert.der().clone()],
        key: rustls::pki_types::PrivateKeyDer::try_from(alice_key.serialize_der()).unwrap(),
    };
    let r = common::connect(&t.server, Some(&id))
        .await
        .send("GET", "/api/v1/namespaces/default/pods", None)
        .await;
    assert_eq!(r.status, 403);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains(r#"User "alice" cannot list resource "pods""#),
        "{}",
        r.body
    );
    // kapi's own admin certificate still works too (system:masters: allowed even here).
    let admin = common::admin_identity(&t);
    let r = common::connect(&t.server, Some(&admin))
        .await
        .send("GET", "/api/v1/namespaces/default/pods", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    t.server.shutdown().await;
}

/// The group/versions discovery lists, as `group/version` (`v1` for the core group).
async fn served_versions(client: &kube::Client) -> std::collections::BTreeSet<String> {
    let mut served: std::collections::BTreeSet<String> = client
        .list_core_api_versions()
        .await
        .unwrap()
        .versions
        .into_iter()
        .collect();
    for group in client.list_api_groups().await.unwrap().groups {
        served.extend(group.versions.into_iter().map(|v| v.group_version));
    }
    served
}

/// `--runtime-config`: kapi's table of what it can serve is what it serves with everything on,
/// and by default only what is on by default; a version turned off leaves discovery, routes
/// and OpenAPI.
#[tokio::test]
async fn runtime_config_turns_versions_on_and_off() {
    use kapi_server::resource_config::SERVED;
    let name = |g: &str, v: &str| {
        if g.is_empty() {
            v.to_string()
        } else {
            format!("{g}/{v}")
        }
    };
    let all = kapi_testing::TestServer::builder()
        .configure(|c| c.runtime_config = vec![("api/all".into(), "true".into())])
        .start()
        .await
        .unwrap();
    let want: std::collections::BTreeSet<String> =
        SERVED.iter().map(|(g, v, _)| name(g, v)).collect();
    assert_eq!(served_versions(&all.client()).await, want);
    drop(all);

    let default = kapi_testing::TestServer::start().await.unwrap();
    let want: std::collections::BTreeSet<String> = SERVED
        .iter()
        .filter(|(_, _, on)| *on)
        .map(|(g, v, _)| name(g, v))
        .collect();
    assert_eq!(served_versions(&default.client()).await, want);
    drop(default);

    let off = kapi_testing::TestServer::builder()
        .configure(|c| {
            c.runtime_config = vec![
                ("batch/v1".into(), "false".into()),
                ("apps/v1/daemonsets".into(), "false".into()),
            ]
        })
        .start()
        .await
        .unwrap();
    let client = off.client();
    assert!(!served_versions(&client).await.contains("batch/v1"));
    let apps = client.list_api_group_resources("apps/v1").await.unwrap();
    let names: Vec<&str> = apps.resources.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"deployments") && !names.contains(&"daemonsets"));
    let err = client
        .request_text(
            http::Request::get("/apis/batch/v1/namespaces/default/jobs")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );
    let openapi = client
        .request_text(http::Request::get("/openapi/v3").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert!(!openapi.contains("apis/batch/v1\""));
    assert!(openapi.contains("apis/apps/v1\""));
}
