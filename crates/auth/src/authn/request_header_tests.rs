//! The front-proxy authenticator with upstream's cases (`requestheader_test.go`): header
//! order, empty values, extra keys, clearing; and the CA and allowed-name checks.

use super::*;
use crate::authn::{AuthnError, Union};
use http::{HeaderMap, HeaderValue};
use rustls_pki_types::CertificateDer;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

fn config() -> RequestHeaderConfig {
    RequestHeaderConfig {
        username_headers: vec!["X-Remote-User".into(), "X-Other-User".into()],
        uid_headers: vec!["X-Remote-Uid".into()],
        group_headers: vec!["X-Remote-Group".into(), "X-Other-Group".into()],
        extra_headers_prefix: vec!["X-Remote-Extra-".into(), "X-Other-Extra-".into()],
        allowed_names: Vec::new(),
    }
}

#[test]
fn the_first_non_empty_username_header_wins() {
    let c = config();
    assert_eq!(c.user_from_headers(&HeaderMap::new()), None);
    assert_eq!(
        c.user_from_headers(&headers(&[("x-remote-user", "")])),
        None
    );
    let u = c
        .user_from_headers(&headers(&[
            ("x-remote-user", ""),
            ("x-other-user", "bob"),
            ("x-other-user", "carol"),
        ]))
        .unwrap();
    assert_eq!(u.name, "bob");
    let u = c
        .user_from_headers(&headers(&[
            ("x-other-user", "bob"),
            ("X-REMOTE-USER", "alice"),
        ]))
        .unwrap();
    assert_eq!(u.name, "alice");
    assert_eq!(u.uid, "");
}

#[test]
fn groups_uid_and_extra() {
    let u = config()
        .user_from_headers(&headers(&[
            ("x-remote-user", "alice"),
            ("x-remote-uid", "u-1"),
            ("x-other-group", "o1"),
            ("x-remote-group", "g1"),
            ("x-remote-group", ""),
            ("x-remote-group", "g2"),
            ("x-remote-extra-scopes", "openid"),
            ("x-remote-extra-scopes", "profile"),
            ("x-other-extra-scopes", "email"),
            ("x-remote-extra-acme.com%2Fproject", "p1"),
            ("x-remote-extra-bad%zzkey", "v"),
            ("x-remote-extra-empty", ""),
            ("x-remote-extra-", "nokey"),
        ]))
        .unwrap();
    assert_eq!(u.uid, "u-1");
    // Names in flag order, empty values dropped.
    assert_eq!(u.groups, ["g1", "g2", "o1"]);
    assert_eq!(u.extra["scopes"], ["openid", "profile", "email"]);
    assert_eq!(u.extra["acme.com/project"], ["p1"]);
    // Malformed escapes: the key as sent.
    assert_eq!(u.extra["bad%zzkey"], ["v"]);
    // Extra keeps empty values, and an empty key.
    assert_eq!(u.extra["empty"], [""]);
    assert_eq!(u.extra[""], ["nokey"]);
}

#[test]
fn extra_keys_are_unescaped_as_go_path_unescape() {
    assert_eq!(unescape_extra_key("a%2fb"), "a/b");
    assert_eq!(unescape_extra_key("a%2Fb%41"), "a/bA");
    assert_eq!(unescape_extra_key("a+b"), "a+b");
    assert_eq!(unescape_extra_key("trailing%2"), "trailing%2");
    assert_eq!(unescape_extra_key("%e2%9c%93"), "\u{2713}");
}

#[test]
fn clearing_removes_names_and_prefixes_only() {
    let mut h = headers(&[
        ("x-remote-user", "a"),
        ("x-other-user", "b"),
        ("x-remote-uid", "u"),
        ("x-remote-group", "g"),
        ("x-remote-extra-k", "v"),
        ("x-other-extra-k", "v"),
        ("x-remote-extras", "kept: not under x-remote-extra-"),
        ("accept", "application/json"),
    ]);
    clear_headers(&mut h, &config());
    let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
    left.sort();
    assert_eq!(left, ["accept", "x-remote-extras"]);
    let mut h = headers(&[("x-remote-user", "a"), ("x-remote-extra-k", "v")]);
    clear_headers(&mut h, &RequestHeaderConfig::standard());
    assert!(h.is_empty());
}

/// Trusts exactly one leaf, as a CA that signed it would.
struct OneLeaf(Vec<u8>);

impl ChainVerifier for OneLeaf {
    fn verify_chain(
        &self,
        chain: &[CertificateDer<'static>],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        match chain.first() {
            Some(c) if c.as_ref() == self.0.as_slice() => Ok(()),
            _ => Err("x509: certificate signed by unknown authority".into()),
        }
    }
}

fn certificate(cn: &str) -> Vec<u8> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.self_signed(&key).unwrap().der().to_vec()
}

async fn judge(
    auth: &RequestHeaderAuthenticator,
    cert: Option<&[u8]>,
    h: &HeaderMap,
) -> Authenticated {
    let chain: Vec<CertificateDer<'static>> = cert
        .map(|c| vec![CertificateDer::from(c.to_vec())])
        .unwrap_or_default();
    auth.authenticate(&AuthRequest {
        headers: h,
        peer_certificates: cert.map(|_| chain.as_slice()),
        x509_verdict: None,
    })
    .await
}

#[tokio::test]
async fn only_a_verified_allowed_certificate_may_name_the_user() {
    let proxy = certificate("front-proxy-client");
    let other = certificate("someone");
    let h = headers(&[("x-remote-user", "alice"), ("x-remote-group", "g1")]);
    let mut c = config();
    c.allowed_names = vec!["front-proxy-client".into()];
    let auth = RequestHeaderAuthenticator::new(Arc::new(OneLeaf(proxy.clone())), Arc::new(c));

    let Authenticated::User(u) = judge(&auth, Some(&proxy), &h).await else {
        panic!("the proxy's certificate is trusted");
    };
    assert_eq!(
        (u.name.as_str(), u.groups.as_slice()),
        ("alice", &["g1".to_string()][..])
    );
    // No certificate: the headers mean nothing.
    assert_eq!(judge(&auth, None, &h).await, Authenticated::NoCredentials);
    // A certificate from another CA: a failure, so the union tries the x509 authenticator.
    assert!(matches!(
        judge(&auth, Some(&other), &h).await,
        Authenticated::Failed(e) if e.contains("unknown authority")
    ));
    // The proxy's certificate without a username header: nobody.
    assert_eq!(
        judge(&auth, Some(&proxy), &HeaderMap::new()).await,
        Authenticated::NoCredentials
    );

    // The CA's certificate with a CN not allowed: upstream's error.
    let intruder = certificate("intruder");
    let mut c = config();
    c.allowed_names = vec!["front-proxy-client".into()];
    let auth = RequestHeaderAuthenticator::new(Arc::new(OneLeaf(intruder.clone())), Arc::new(c));
    assert_eq!(
        judge(&auth, Some(&intruder), &h).await,
        Authenticated::Failed("x509: subject with cn=intruder is not in the allowed list".into())
    );
    // Any CN when the list is empty.
    let auth =
        RequestHeaderAuthenticator::new(Arc::new(OneLeaf(intruder.clone())), Arc::new(config()));
    assert!(matches!(
        judge(&auth, Some(&intruder), &h).await,
        Authenticated::User(_)
    ));
}

#[tokio::test]
async fn in_the_union_a_refused_proxy_certificate_falls_through() {
    let proxy = certificate("front-proxy-client");
    let h = headers(&[("x-remote-user", "alice")]);
    let mut c = config();
    c.allowed_names = vec!["someone-else".into()];
    let union = Union::new(
        vec![Arc::new(RequestHeaderAuthenticator::new(
            Arc::new(OneLeaf(proxy.clone())),
            Arc::new(c),
        ))],
        true,
    );
    let chain = vec![CertificateDer::from(proxy)];
    let req = AuthRequest {
        headers: &h,
        peer_certificates: Some(&chain),
        x509_verdict: None,
    };
    // Nobody else accepts it: 401, not anonymous.
    assert_eq!(
        union.authenticate(&req).await,
        Err(AuthnError::Failed(
            "x509: subject with cn=front-proxy-client is not in the allowed list".into()
        ))
    );
}
