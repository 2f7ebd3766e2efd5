//! Each authenticator with real keys, real files and real certificates: good, bad, expired,
//! wrong audience, wrong issuer, deleted or replaced account.

use super::bearer::BearerToken;
use super::serviceaccount::{LookupError, ServiceAccountAuthenticator, ServiceAccountLookup};
use super::token_file::{StaticTokens, TokenFileError};
use super::x509::{ChainVerifier, X509Authenticator, X509Verdict};
use super::*;
use crate::token::keys;
use crate::token::{BoundKind, BoundObject, Claims, TokenIssuer, TokenSpec, LEGACY_ISSUER};
use kapi_machinery::Object;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

#[derive(Default)]
struct Objects(Mutex<HashMap<(String, String, String), Object>>);

impl Objects {
    fn put(&self, kind: &str, ns: &str, name: &str, uid: &str, extra: serde_json::Value) {
        let mut v = json!({"metadata": {"name": name, "namespace": ns, "uid": uid}});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            for (k, val) in e {
                o.insert(k.clone(), val.clone());
            }
        }
        let obj = Object::from_value(v).unwrap();
        self.0
            .lock()
            .unwrap()
            .insert((kind.into(), ns.into(), name.into()), obj);
    }
    fn remove(&self, kind: &str, ns: &str, name: &str) {
        self.0
            .lock()
            .unwrap()
            .remove(&(kind.into(), ns.into(), name.into()));
    }
    fn get(&self, kind: &str, ns: &str, name: &str) -> Option<Object> {
        self.0
            .lock()
            .unwrap()
            .get(&(kind.into(), ns.into(), name.into()))
            .cloned()
    }
}

#[async_trait]
impl ServiceAccountLookup for Objects {
    async fn service_account(&self, ns: &str, name: &str) -> Result<Option<Object>, LookupError> {
        Ok(self.get("sa", ns, name))
    }
    async fn secret(&self, ns: &str, name: &str) -> Result<Option<Object>, LookupError> {
        Ok(self.get("secret", ns, name))
    }
    async fn pod(&self, ns: &str, name: &str) -> Result<Option<Object>, LookupError> {
        Ok(self.get("pod", ns, name))
    }
    async fn node(&self, name: &str) -> Result<Option<Object>, LookupError> {
        Ok(self.get("node", "", name))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    issuer: TokenIssuer,
    objects: Arc<Objects>,
    auth: ServiceAccountAuthenticator,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let key = keys::load_or_generate(dir.path()).unwrap();
    let public = keys::load_verifying_keys(&dir.path().join(keys::GENERATED_PUB)).unwrap();
    let objects = Arc::new(Objects::default());
    objects.put("sa", "ns1", "robot", "uid-1", json!({}));
    let auth = ServiceAccountAuthenticator::new(
        vec![ISSUER.into()],
        public,
        vec![ISSUER.into()],
        objects.clone(),
    );
    Fixture {
        _dir: dir,
        issuer: TokenIssuer::new(key, ISSUER),
        objects,
        auth,
    }
}

fn spec() -> TokenSpec {
    TokenSpec {
        namespace: "ns1".into(),
        service_account: "robot".into(),
        service_account_uid: "uid-1".into(),
        audiences: vec![ISSUER.into()],
        expiration_seconds: 3600,
        bound: None,
        pod_node: None,
    }
}

fn failed(r: TokenAuthenticated) -> String {
    match r {
        TokenAuthenticated::Failed(e) => e,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn bound_token_names_the_service_account() {
    let f = fixture();
    let t = f.issuer.issue(&spec(), crate::token::now_unix()).unwrap();
    let TokenAuthenticated::User(u) = f.auth.authenticate_token(&t.token, None).await else {
        panic!("not authenticated");
    };
    assert_eq!(u.user.name, "system:serviceaccount:ns1:robot");
    assert_eq!(u.user.uid, "uid-1");
    assert_eq!(
        u.user.groups,
        vec!["system:serviceaccounts", "system:serviceaccounts:ns1"]
    );
    assert!(u.user.extra[CREDENTIAL_ID_KEY][0].starts_with("JTI="));
    assert_eq!(u.audiences, vec![ISSUER.to_string()]);
    let header = jsonwebtoken::decode_header(&t.token).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
    assert!(header.kid.is_some());
}

#[tokio::test]
async fn expired_token_is_refused() {
    let f = fixture();
    let t = f
        .issuer
        .issue(&spec(), crate::token::now_unix() - 7200)
        .unwrap();
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        "service account token has expired"
    );
}

#[tokio::test]
async fn wrong_audience_is_refused() {
    let f = fixture();
    let mut s = spec();
    s.audiences = vec!["vault".into()];
    let t = f.issuer.issue(&s, crate::token::now_unix()).unwrap();
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        format!(r#"token audiences ["vault"] is invalid for the target audiences ["{ISSUER}"]"#)
    );
    // The same token is good for an audience that asks for it (TokenReview).
    let wanted = vec!["vault".to_string()];
    assert!(matches!(
        f.auth.authenticate_token(&t.token, Some(&wanted)).await,
        TokenAuthenticated::User(_)
    ));
}

#[tokio::test]
async fn other_issuer_is_not_ours() {
    let f = fixture();
    let other = TokenIssuer::new(
        keys::load_signing_key(&f._dir.path().join(keys::GENERATED_KEY)).unwrap(),
        "https://elsewhere",
    );
    let t = other.issue(&spec(), crate::token::now_unix()).unwrap();
    assert_eq!(
        f.auth.authenticate_token(&t.token, None).await,
        TokenAuthenticated::NotMine
    );
    assert_eq!(
        f.auth.authenticate_token("garbage", None).await,
        TokenAuthenticated::NotMine
    );
}

#[tokio::test]
async fn token_signed_by_another_key_is_refused() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let stranger = TokenIssuer::new(keys::load_or_generate(dir.path()).unwrap(), ISSUER);
    let t = stranger.issue(&spec(), crate::token::now_unix()).unwrap();
    assert!(matches!(
        f.auth.authenticate_token(&t.token, None).await,
        TokenAuthenticated::Failed(_)
    ));
}

#[tokio::test]
async fn deleted_or_replaced_account_ends_the_token() {
    let f = fixture();
    let t = f.issuer.issue(&spec(), crate::token::now_unix()).unwrap();
    f.objects.remove("sa", "ns1", "robot");
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        r#"serviceaccounts "robot" not found"#
    );
    f.objects.put("sa", "ns1", "robot", "uid-2", json!({}));
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        "service account UID (uid-2) does not match claim (uid-1)"
    );
    f.objects.put(
        "sa",
        "ns1",
        "robot",
        "uid-1",
        json!({"metadata": {"name": "robot", "namespace": "ns1", "uid": "uid-1",
            "deletionTimestamp": "2020-01-01T00:00:00Z"}}),
    );
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        "service account ns1/robot has been deleted"
    );
}

#[tokio::test]
async fn pod_bound_token_follows_the_pod() {
    let f = fixture();
    f.objects.put("pod", "ns1", "p", "pod-uid", json!({}));
    let mut s = spec();
    s.bound = Some(BoundObject {
        kind: BoundKind::Pod,
        name: "p".into(),
        uid: "pod-uid".into(),
    });
    let t = f.issuer.issue(&s, crate::token::now_unix()).unwrap();
    let TokenAuthenticated::User(u) = f.auth.authenticate_token(&t.token, None).await else {
        panic!("not authenticated");
    };
    assert_eq!(
        u.user.extra["authentication.kubernetes.io/pod-name"],
        vec!["p"]
    );
    f.objects.remove("pod", "ns1", "p");
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        "service account token has been invalidated"
    );
}

#[tokio::test]
async fn node_bound_token_follows_the_node() {
    let f = fixture();
    f.objects.put("node", "", "n1", "node-uid", json!({}));
    let mut s = spec();
    s.bound = Some(BoundObject {
        kind: BoundKind::Node,
        name: "n1".into(),
        uid: "node-uid".into(),
    });
    let t = f.issuer.issue(&s, crate::token::now_unix()).unwrap();
    let TokenAuthenticated::User(u) = f.auth.authenticate_token(&t.token, None).await else {
        panic!("not authenticated");
    };
    assert_eq!(
        u.user.extra["authentication.kubernetes.io/node-name"],
        vec!["n1"]
    );
    assert_eq!(
        u.user.extra["authentication.kubernetes.io/node-uid"],
        vec!["node-uid"]
    );
    f.objects.put("node", "", "n1", "other-uid", json!({}));
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        "node UID (other-uid) does not match service account node ref claim (node-uid)"
    );
    f.objects.remove("node", "", "n1");
    assert_eq!(
        failed(f.auth.authenticate_token(&t.token, None).await),
        "service account token has been invalidated"
    );
    // A pod-bound token only claims its pod's node.
    f.objects.put("pod", "ns1", "p", "pod-uid", json!({}));
    let mut s = spec();
    s.bound = Some(BoundObject {
        kind: BoundKind::Pod,
        name: "p".into(),
        uid: "pod-uid".into(),
    });
    s.pod_node = Some(crate::token::Ref {
        name: "gone".into(),
        uid: "x".into(),
    });
    let t = f.issuer.issue(&s, crate::token::now_unix()).unwrap();
    let TokenAuthenticated::User(u) = f.auth.authenticate_token(&t.token, None).await else {
        panic!("not authenticated");
    };
    assert_eq!(
        u.user.extra["authentication.kubernetes.io/node-name"],
        vec!["gone"]
    );
}

#[tokio::test]
async fn legacy_token_must_match_its_secret() {
    let f = fixture();
    let claims = Claims {
        iss: LEGACY_ISSUER.into(),
        sub: "system:serviceaccount:ns1:robot".into(),
        legacy_namespace: Some("ns1".into()),
        legacy_secret_name: Some("robot-token".into()),
        legacy_service_account_name: Some("robot".into()),
        legacy_service_account_uid: Some("uid-1".into()),
        ..Default::default()
    };
    let token = f.issuer.sign(&claims).unwrap();
    assert_eq!(
        failed(f.auth.authenticate_token(&token, None).await),
        "Token has been invalidated"
    );
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(&token);
    f.objects.put(
        "secret",
        "ns1",
        "robot-token",
        "s-uid",
        json!({"data": {"token": data}}),
    );
    let TokenAuthenticated::User(u) = f.auth.authenticate_token(&token, None).await else {
        panic!("not authenticated");
    };
    assert_eq!(u.user.name, "system:serviceaccount:ns1:robot");
    f.objects.put(
        "secret",
        "ns1",
        "robot-token",
        "s-uid",
        json!({"data": {"token": "b3RoZXI="}}),
    );
    assert_eq!(
        failed(f.auth.authenticate_token(&token, None).await),
        "Token does not match server's copy"
    );
}

#[tokio::test]
async fn rsa_keys_sign_rs256() {
    use aws_lc_rs::encoding::AsDer;
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let kp = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let der = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&kp).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    );
    let path = dir.path().join("rsa.key");
    std::fs::write(&path, pem).unwrap();
    let key = keys::load_signing_key(&path).unwrap();
    assert_eq!(key.algorithm(), jsonwebtoken::Algorithm::RS256);
    let public = keys::load_verifying_keys(&path).unwrap();
    assert_eq!(public[0].key_id, key.key_id());
    let objects = Arc::new(Objects::default());
    objects.put("sa", "ns1", "robot", "uid-1", json!({}));
    let auth =
        ServiceAccountAuthenticator::new(vec![ISSUER.into()], public, vec![ISSUER.into()], objects);
    let t = TokenIssuer::new(key, ISSUER)
        .issue(&spec(), crate::token::now_unix())
        .unwrap();
    assert_eq!(
        jsonwebtoken::decode_header(&t.token).unwrap().alg,
        jsonwebtoken::Algorithm::RS256
    );
    let TokenAuthenticated::User(u) = auth.authenticate_token(&t.token, None).await else {
        panic!("RS256 token not authenticated");
    };
    assert_eq!(u.user.name, "system:serviceaccount:ns1:robot");
}

#[test]
fn generated_key_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let a = keys::load_or_generate(dir.path()).unwrap();
    let b = keys::load_or_generate(dir.path()).unwrap();
    assert_eq!(a.key_id(), b.key_id());
    let public = keys::load_verifying_keys(&dir.path().join(keys::GENERATED_PUB)).unwrap();
    assert_eq!(public[0].key_id, a.key_id());
}

#[tokio::test]
async fn static_tokens_follow_upstream_parsing() {
    let csv = "tok1,alice,1001,\"dev,ops\"\n\n,nobody,0\ntok2,bob,1002\ntok1,carol,1003\n";
    let t = StaticTokens::parse(csv, "tokens.csv", vec![ISSUER.into()]).unwrap();
    assert_eq!(t.len(), 2);
    let TokenAuthenticated::User(u) = t.authenticate_token("tok2", None).await else {
        panic!("bob not found");
    };
    assert_eq!((u.user.name.as_str(), u.user.uid.as_str()), ("bob", "1002"));
    assert!(u.user.groups.is_empty());
    // A duplicate token replaces the earlier record.
    let TokenAuthenticated::User(u) = t.authenticate_token("tok1", None).await else {
        panic!("tok1 not found");
    };
    assert_eq!(u.user.name, "carol");
    let t = StaticTokens::parse("tok1,alice,1001,\"dev,ops\"\n", "f", vec![ISSUER.into()]).unwrap();
    let TokenAuthenticated::User(u) = t.authenticate_token("tok1", None).await else {
        panic!("alice not found");
    };
    assert_eq!(u.user.groups, vec!["dev", "ops"]);
    assert_eq!(
        t.authenticate_token("nope", None).await,
        TokenAuthenticated::NotMine
    );
    // Static tokens are only good for the server's own audiences.
    let other = vec!["vault".to_string()];
    assert_eq!(
        t.authenticate_token("tok1", Some(&other)).await,
        TokenAuthenticated::NotMine
    );
    let err = StaticTokens::parse("tok,alice\n", "tokens.csv", vec![])
        .err()
        .unwrap();
    assert!(matches!(err, TokenFileError::Columns { found: 2, .. }));
    assert_eq!(
        err.to_string(),
        "token file 'tokens.csv' must have at least 3 columns (token, user name, user uid), found 2"
    );
}

#[tokio::test]
async fn bearer_tokens_and_the_union() {
    let tokens = StaticTokens::parse("tok1,alice,1001\n", "f", vec![ISSUER.into()]).unwrap();
    let union = Union::new(
        vec![Arc::new(BearerToken::new(Arc::new(TokenUnion(vec![
            Arc::new(tokens),
        ]))))],
        true,
    );
    let mut headers = http::HeaderMap::new();
    // No credentials: anonymous.
    let u = union
        .authenticate(&AuthRequest::from_headers(&headers))
        .await
        .unwrap();
    assert_eq!(u.name, ANONYMOUS_USER);
    assert_eq!(u.groups, vec![UNAUTHENTICATED_GROUP]);
    // A good token: the user, in system:authenticated.
    headers.insert("authorization", "Bearer tok1".parse().unwrap());
    let u = union
        .authenticate(&AuthRequest::from_headers(&headers))
        .await
        .unwrap();
    assert_eq!(u.name, "alice");
    assert_eq!(u.groups, vec![AUTHENTICATED_GROUP]);
    // A bad token is refused, not anonymous.
    headers.insert("authorization", "Bearer nope".parse().unwrap());
    assert_eq!(
        union
            .authenticate(&AuthRequest::from_headers(&headers))
            .await,
        Err(AuthnError::Failed("invalid bearer token".into()))
    );
    // Another scheme is no credential.
    headers.insert("authorization", "Basic YTpi".parse().unwrap());
    assert_eq!(
        union
            .authenticate(&AuthRequest::from_headers(&headers))
            .await
            .unwrap()
            .name,
        ANONYMOUS_USER
    );
    let strict = Union::new(union.authenticators.clone(), false);
    assert_eq!(
        strict
            .authenticate(&AuthRequest::from_headers(&headers))
            .await,
        Err(AuthnError::NoCredentials)
    );
}

struct Verifier(Vec<u8>);

impl ChainVerifier for Verifier {
    fn verify_chain(
        &self,
        chain: &[rustls_pki_types::CertificateDer<'static>],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        // Trusts exactly one leaf: enough to exercise both verdicts.
        if chain[0].as_ref() == self.0.as_slice() {
            Ok(())
        } else {
            Err("certificate signed by unknown authority".into())
        }
    }
}

fn certificate(cn: &str, orgs: &[&str]) -> Vec<u8> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    for o in orgs {
        dn.push(rcgen::DnType::OrganizationName, *o);
    }
    if !cn.is_empty() {
        dn.push(rcgen::DnType::CommonName, cn);
    }
    params.distinguished_name = dn;
    params.self_signed(&key).unwrap().der().to_vec()
}

#[tokio::test]
async fn x509_names_cn_and_organizations() {
    let good = certificate("jane", &["system:masters"]);
    let other = certificate("mallory", &[]);
    let auth = X509Authenticator::new(Arc::new(Verifier(good.clone())));
    let headers = http::HeaderMap::new();
    let chain = vec![rustls_pki_types::CertificateDer::from(good)];
    let verdict = X509Verdict::default();
    let req = AuthRequest {
        headers: &headers,
        peer_certificates: Some(&chain),
        x509_verdict: Some(&verdict),
    };
    let Authenticated::User(u) = auth.authenticate(&req).await else {
        panic!("not authenticated");
    };
    assert_eq!(u.name, "jane");
    assert_eq!(u.groups, vec!["system:masters"]);
    assert!(u.extra[CREDENTIAL_ID_KEY][0].starts_with("X509SHA256="));
    // The verdict is cached for the connection.
    assert!(matches!(verdict.0.get(), Some(Authenticated::User(_))));
    let chain = vec![rustls_pki_types::CertificateDer::from(other)];
    let req = AuthRequest {
        headers: &headers,
        peer_certificates: Some(&chain),
        x509_verdict: None,
    };
    assert!(matches!(
        auth.authenticate(&req).await,
        Authenticated::Failed(_)
    ));
    let nocn = certificate("", &["dev"]);
    let auth = X509Authenticator::new(Arc::new(Verifier(nocn.clone())));
    let chain = vec![rustls_pki_types::CertificateDer::from(nocn)];
    let req = AuthRequest {
        headers: &headers,
        peer_certificates: Some(&chain),
        x509_verdict: None,
    };
    assert_eq!(auth.authenticate(&req).await, Authenticated::NoCredentials);
}
