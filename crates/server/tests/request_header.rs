//! The request-header (front-proxy) authenticator over real HTTPS: a certificate from the
//! `--requestheader-client-ca-file` CA with an allowed CN names the user in `X-Remote-*`
//! headers (SelfSubjectReview shows user, uid, groups and extra); the same headers from a
//! normal client certificate, from a CN not allowed, or without a certificate are not honoured;
//! the headers are removed before the request goes on; the
//! `extension-apiserver-authentication` ConfigMap carries the `requestheader-*` keys.
#![allow(clippy::unwrap_used)]
#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code: a panic is a failed test"
)]

use crate::common;

use bytes::Bytes;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kapi_auth::authn::request_header::{RequestHeaderAuthenticator, RequestHeaderConfig};
use kapi_auth::authn::x509::{ChainVerifier, X509Authenticator};
use kapi_server::body::{full, HttpResponse, Request};
use kapi_server::filters::{build_handler_chain, ChainConfig};
use kapi_server::tls::PeerCertificates;
use kapi_server::RequestHeaderOptions;
use kube::api::Api;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

/// A CA and client certificates it signs.
struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

impl Ca {
    fn new(cn: &str) -> Ca {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let pem = params.self_signed(&key).unwrap().pem();
        Ca {
            issuer: rcgen::Issuer::new(params, key),
            pem,
        }
    }

    fn client(&self, cn: &str) -> common::Identity {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        common::Identity {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        }
    }
}

fn standard_headers(allowed: &[&str]) -> RequestHeaderConfig {
    RequestHeaderConfig {
        username_headers: vec!["X-Remote-User".into()],
        uid_headers: vec!["X-Remote-Uid".into()],
        group_headers: vec!["X-Remote-Group".into()],
        extra_headers_prefix: vec!["X-Remote-Extra-".into()],
        allowed_names: allowed.iter().map(|s| s.to_string()).collect(),
    }
}

const SSR: &str = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;

/// A SelfSubjectReview as `identity`, with `headers`.
async fn whoami(
    t: &common::TestServer,
    identity: Option<&common::Identity>,
    headers: &[(&str, &str)],
) -> common::Reply {
    let mut conn = common::connect(&t.server, identity).await;
    conn.send_with(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        headers,
        Some(SSR),
    )
    .await
}

const ALICE: &[(&str, &str)] = &[
    ("X-Remote-User", "alice"),
    ("X-Remote-Uid", "uid-42"),
    ("X-Remote-Group", "devs"),
    ("X-Remote-Group", "ops"),
    ("X-Remote-Extra-Scopes", "openid"),
    ("X-Remote-Extra-Scopes", "profile"),
    ("X-Remote-Extra-Acme.com%2Fproject", "p1"),
];

#[tokio::test]
async fn front_proxy_headers_name_the_user_only_with_the_proxy_certificate() {
    let files = tempfile::tempdir().unwrap();
    let front = Ca::new("front-proxy-ca");
    let ca_file = files.path().join("front-proxy-ca.crt");
    std::fs::write(&ca_file, &front.pem).unwrap();
    let options = RequestHeaderOptions {
        client_ca_file: ca_file,
        headers: standard_headers(&["front-proxy-client"]),
    };
    let t = common::start_with(move |c| c.request_header = Some(options)).await;

    // The proxy's certificate: the headers are the user (plus system:authenticated).
    let proxy = front.client("front-proxy-client");
    let r = whoami(&t, Some(&proxy), ALICE).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let user = &r.json()["status"]["userInfo"];
    assert_eq!(user["username"], "alice");
    assert_eq!(user["uid"], "uid-42");
    assert_eq!(
        user["groups"],
        serde_json::json!(["devs", "ops", "system:authenticated"])
    );
    assert_eq!(
        user["extra"],
        serde_json::json!({"acme.com/project": ["p1"], "scopes": ["openid", "profile"]})
    );

    // The proxy's certificate without a username header: nobody, and the certificate is no
    // client certificate kapi knows either: 401.
    let r = whoami(&t, Some(&proxy), &[("X-Remote-Group", "devs")]).await;
    assert_eq!(r.status, 401, "{}", r.body);

    // A normal client certificate: the headers are ignored (and stripped), the CN is the user.
    let admin = common::admin_identity(&t);
    let r = whoami(&t, Some(&admin), ALICE).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let user = &r.json()["status"]["userInfo"];
    assert_eq!(user["username"], "kubernetes-admin");
    assert_eq!(
        user["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );

    // The front-proxy CA's certificate with a CN not allowed: refused, and nobody else knows
    // it: 401.
    let intruder = front.client("intruder");
    let r = whoami(&t, Some(&intruder), ALICE).await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.json()["message"], "Unauthorized");

    // No certificate at all: anonymous, whatever the headers say (RBAC lets anonymous no
    // SelfSubjectReview).
    let r = whoami(&t, None, ALICE).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("system:anonymous"), "{}", r.body);

    // The ConfigMap names the front proxy as upstream writes it.
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    let data = cms
        .get("extension-apiserver-authentication")
        .await
        .unwrap()
        .data
        .unwrap();
    assert_eq!(data["requestheader-client-ca-file"], front.pem);
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-uid-headers"], r#"["X-Remote-Uid"]"#);
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert!(data["client-ca-file"].starts_with("-----BEGIN CERTIFICATE-----"));
    t.server.shutdown().await;
}

#[tokio::test]
async fn without_a_request_header_ca_the_configmap_has_no_requestheader_keys() {
    let t = common::start().await;
    let client = common::kube_client(&t.server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    let data = cms
        .get("extension-apiserver-authentication")
        .await
        .unwrap()
        .data
        .unwrap();
    let keys: Vec<&String> = data.keys().collect();
    assert_eq!(keys, ["client-ca-file"]);
    t.server.shutdown().await;
}

/// Trusts exactly the leaves given.
struct Leaves(Vec<CertificateDer<'static>>);

impl ChainVerifier for Leaves {
    fn verify_chain(
        &self,
        chain: &[CertificateDer<'static>],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        match chain.first() {
            Some(c) if self.0.contains(c) => Ok(()),
            _ => Err("x509: certificate signed by unknown authority".into()),
        }
    }
}

/// Authentication removes the configured and the standard front-proxy headers from every
/// request it authenticated, whoever authenticated it.
#[tokio::test]
async fn the_headers_do_not_reach_the_handler() {
    let ca = Ca::new("ca");
    let proxy = ca.client("front-proxy-client").chain;
    let admin = ca.client("admin").chain;
    let headers = Arc::new(RequestHeaderConfig {
        username_headers: vec!["X-Proxy-User".into()],
        uid_headers: vec!["X-Proxy-Uid".into()],
        group_headers: vec!["X-Proxy-Group".into()],
        extra_headers_prefix: vec!["X-Proxy-Extra-".into()],
        allowed_names: Vec::new(),
    });
    let authenticators: Vec<Arc<dyn kapi_auth::authn::Authenticator>> = vec![
        Arc::new(RequestHeaderAuthenticator::new(
            Arc::new(Leaves(proxy.clone())),
            headers.clone(),
        )),
        Arc::new(X509Authenticator::new(Arc::new(Leaves(admin.clone())))),
    ];
    // The handler answers the user and the headers it was given.
    let inner = tower::service_fn(|req: Request| async move {
        let user = req
            .extensions()
            .get::<kapi_machinery::UserInfo>()
            .map(|u| u.name.clone())
            .unwrap_or_default();
        let mut names: Vec<&str> = req.headers().keys().map(|k| k.as_str()).collect();
        names.sort();
        let body = format!("{user} {}", names.join(","));
        Ok::<HttpResponse, Infallible>(http::Response::new(full(body)))
    });
    let (_running, shutdown) = tokio::sync::watch::channel(false);
    let svc = build_handler_chain(
        inner,
        ChainConfig {
            metrics: kapi_server::metrics::Metrics::new().unwrap(),
            known_resource: None,
            request_timeout: Duration::from_secs(60),
            authenticators,
            request_header: Some(headers),
            anonymous_auth: true,
            authorizer: Arc::new(kapi_server::filters::authorization::AlwaysAllow),
            max_requests_inflight: 0,
            max_mutating_requests_inflight: 0,
            apf: None,
            shutdown,
            auditor: None,
        },
    );
    let request = |chain: Option<&Vec<CertificateDer<'static>>>| {
        let mut req = http::Request::builder().uri("/api");
        for (k, v) in [
            ("x-proxy-user", "alice"),
            ("x-proxy-uid", "1"),
            ("x-proxy-group", "g"),
            ("x-proxy-extra-k", "v"),
            ("x-remote-user", "mallory"),
            ("x-remote-uid", "2"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-k", "v"),
            ("x-remote-extras", "not under a prefix"),
            ("accept", "application/json"),
        ] {
            req = req.header(k, v);
        }
        let mut req = req.body(full(Bytes::new())).unwrap();
        if let Some(c) = chain {
            req.extensions_mut()
                .insert(PeerCertificates(Arc::new(c.clone())));
        }
        req
    };
    let answer = |req| {
        let svc = svc.clone();
        async move {
            let resp = svc.oneshot(req).await.unwrap();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            String::from_utf8(body.to_vec()).unwrap()
        }
    };
    // The proxy names alice; an x509 user and an anonymous one get no such headers either.
    assert_eq!(
        answer(request(Some(&proxy))).await,
        "alice accept,x-remote-extras"
    );
    assert_eq!(
        answer(request(Some(&admin))).await,
        "admin accept,x-remote-extras"
    );
    assert_eq!(
        answer(request(None)).await,
        "system:anonymous accept,x-remote-extras"
    );
}
