//! Service-account token issuing (the TokenRequest API's engine): bound JWTs with upstream's
//! claims — `iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti` and the `kubernetes.io` claim naming
//! the namespace, the service account (name and uid) and the bound Pod, Secret or Node — signed with
//! the service-account signing key (RS256 or ES256, `kid` = the key's id).

pub mod keys;

pub use keys::{SigningKey, VerifyingKey};

use serde::{Deserialize, Serialize};

/// `--service-account-issuer`'s default.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The issuer of legacy (Secret-based) service-account tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// A name and uid inside the `kubernetes.io` claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ref {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
}

/// The `kubernetes.io` claim of a bound token.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    #[serde(default)]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    #[serde(default)]
    pub serviceaccount: Ref,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
}

/// Every claim kapi reads or writes, bound and legacy (fields in upstream's JSON order).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub aud: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub iss: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    #[serde(
        rename = "kubernetes.io",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub kubernetes: Option<KubernetesClaims>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/namespace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_namespace: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/secret.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_secret_name: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_service_account_name: Option<String>,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.uid",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_service_account_uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sub: String,
}

/// `aud` may be one string or a list.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

/// `system:serviceaccount:<ns>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// What a bound token may be bound to besides its service account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoundKind {
    Pod,
    Secret,
    Node,
}

/// The object a token is bound to: it stops working when the object is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundObject {
    pub kind: BoundKind,
    pub name: String,
    pub uid: String,
}

/// What to issue.
#[derive(Clone, Debug, Default)]
pub struct TokenSpec {
    pub namespace: String,
    pub service_account: String,
    pub service_account_uid: String,
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    pub bound: Option<BoundObject>,
    /// For a pod-bound token: the node the pod runs on (claimed, not checked, as upstream).
    pub pod_node: Option<Ref>,
}

/// An issued token and when it expires (Unix seconds).
#[derive(Clone, Debug)]
pub struct IssuedToken {
    pub token: String,
    pub expires_at: i64,
}

/// Why a token could not be signed.
#[derive(Debug, thiserror::Error)]
#[error("failed to sign the token: {0}")]
pub struct IssueError(#[from] jsonwebtoken::errors::Error);

/// Signs bound service-account tokens.
#[derive(Clone)]
pub struct TokenIssuer {
    key: SigningKey,
    issuer: String,
}

impl TokenIssuer {
    pub fn new(key: SigningKey, issuer: impl Into<String>) -> Self {
        Self {
            key,
            issuer: issuer.into(),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The claims of a bound token issued at `now` (Unix seconds).
    pub fn claims(&self, spec: &TokenSpec, now: i64) -> Claims {
        let mut k8s = KubernetesClaims {
            namespace: spec.namespace.clone(),
            serviceaccount: Ref {
                name: spec.service_account.clone(),
                uid: spec.service_account_uid.clone(),
            },
            ..Default::default()
        };
        if let Some(b) = &spec.bound {
            let r = Some(Ref {
                name: b.name.clone(),
                uid: b.uid.clone(),
            });
            match b.kind {
                BoundKind::Pod => {
                    k8s.pod = r;
                    k8s.node = spec.pod_node.clone();
                }
                BoundKind::Secret => k8s.secret = r,
                BoundKind::Node => k8s.node = r,
            }
        }
        Claims {
            aud: spec.audiences.clone(),
            exp: Some(now.saturating_add(spec.expiration_seconds)),
            iat: Some(now),
            iss: self.issuer.clone(),
            jti: Some(uuid::Uuid::new_v4().to_string()),
            kubernetes: Some(k8s),
            nbf: Some(now),
            sub: service_account_username(&spec.namespace, &spec.service_account),
            ..Default::default()
        }
    }

    /// Signs a bound token issued at `now` (Unix seconds).
    pub fn issue(&self, spec: &TokenSpec, now: i64) -> Result<IssuedToken, IssueError> {
        let claims = self.claims(spec, now);
        let token = self.sign(&claims)?;
        Ok(IssuedToken {
            token,
            expires_at: now.saturating_add(spec.expiration_seconds),
        })
    }

    /// Signs any claims with the key (tests make legacy and malformed tokens with it).
    pub fn sign(&self, claims: &Claims) -> Result<String, IssueError> {
        let mut header = jsonwebtoken::Header::new(self.key.algorithm());
        header.kid = Some(self.key.key_id().to_string());
        header.typ = None;
        Ok(jsonwebtoken::encode(&header, claims, &self.key.encoding)?)
    }
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}
