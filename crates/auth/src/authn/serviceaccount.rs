//! Service-account tokens: JWTs signed with a service-account key (RS256 or ES256), for an
//! issuer kapi accepts. Bound tokens (`--service-account-issuer`) are checked against the live
//! ServiceAccount (and the Pod or Secret they are bound to): a deleted object or another uid
//! ends the token. Legacy tokens (issuer `kubernetes/serviceaccount`, kept in a Secret) are
//! checked against that Secret and the ServiceAccount. Messages are upstream's; a token for
//! another issuer, or not a JWT at all, is left to the other token authenticators.

use super::verified::VerifiedTokens;
use super::{
    go_quote_list, intersect, TokenAuthenticated, TokenAuthenticator, TokenUser, CREDENTIAL_ID_KEY,
};
use crate::token::{service_account_username, Claims, VerifyingKey, LEGACY_ISSUER};
use async_trait::async_trait;
use base64::Engine;
use kapi_machinery::{Object, UserInfo};
use std::sync::Arc;

/// The token's claims may be this far off the clock (go-jose's `DefaultLeeway`).
const LEEWAY_SECONDS: i64 = 60;

const INVALIDATED: &str = "service account token has been invalidated";

pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// Why an object could not be read (not "not found": that is `Ok(None)`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LookupError(pub String);

/// Reads the objects tokens are bound to, as they are now. The server implements it over its
/// registry.
#[async_trait]
pub trait ServiceAccountLookup: Send + Sync {
    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, LookupError>;
    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Object>, LookupError>;
    async fn pod(&self, namespace: &str, name: &str) -> Result<Option<Object>, LookupError>;
    /// Nodes (cluster-scoped), for node-bound tokens; none by default.
    async fn node(&self, _name: &str) -> Result<Option<Object>, LookupError> {
        Ok(None)
    }
}

/// `system:serviceaccounts`, `system:serviceaccounts:<ns>`.
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        SERVICE_ACCOUNTS_GROUP.into(),
        format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    ]
}

/// Service-account JWTs.
pub struct ServiceAccountAuthenticator {
    /// Accepted issuers of bound tokens (`--service-account-issuer`).
    issuers: Vec<String>,
    keys: Vec<VerifyingKey>,
    /// `--api-audiences`: what a token without `aud` is good for, and what a request wants.
    api_audiences: Vec<String>,
    lookup: Arc<dyn ServiceAccountLookup>,
    /// Signatures checked lately (the check is most of a token's cost).
    verified: VerifiedTokens,
}

impl ServiceAccountAuthenticator {
    pub fn new(
        issuers: Vec<String>,
        keys: Vec<VerifyingKey>,
        api_audiences: Vec<String>,
        lookup: Arc<dyn ServiceAccountLookup>,
    ) -> Self {
        Self {
            issuers,
            keys,
            api_audiences,
            lookup,
            verified: VerifiedTokens::new(),
        }
    }

    /// The issuer a token claims, read before its signature is checked (to leave tokens for
    /// other issuers to other authenticators).
    fn unverified_issuer(token: &str) -> Option<String> {
        let mut parts = token.split('.');
        let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        value.get("iss")?.as_str().map(String::from)
    }

    /// The token's claims once its signature verifies with one of the keys, from
    /// [`VerifiedTokens`] when it verified lately.
    fn verify(&self, token: &str) -> Result<Claims, String> {
        if let Some(claims) = self.verified.get(token) {
            return Ok(claims);
        }
        let claims = self.verify_signature(token)?;
        self.verified.insert(token, &claims);
        Ok(claims)
    }

    fn verify_signature(&self, token: &str) -> Result<Claims, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
        let mut errors = Vec::new();
        for key in self.keys.iter().filter(|k| k.algorithm == header.alg) {
            let mut validation = jsonwebtoken::Validation::new(key.algorithm);
            // Time and audience are checked below, with upstream's leeway and messages.
            validation.validate_exp = false;
            validation.validate_nbf = false;
            validation.validate_aud = false;
            validation.required_spec_claims.clear();
            match jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.is_empty() {
            errors.push(format!(
                "no service-account key verifies {:?} signatures",
                header.alg
            ));
        }
        Err(super::aggregate(&errors))
    }
}

/// go-jose's time checks, in its order.
fn check_times(c: &Claims, now: i64) -> Result<(), String> {
    if c.nbf
        .is_some_and(|nbf| now.saturating_add(LEEWAY_SECONDS) < nbf)
    {
        return Err("service account token is not valid yet".into());
    }
    if c.exp
        .is_some_and(|exp| now.saturating_sub(LEEWAY_SECONDS) > exp)
    {
        return Err("service account token has expired".into());
    }
    if c.iat
        .is_some_and(|iat| now.saturating_add(LEEWAY_SECONDS) < iat)
    {
        return Err("service account token is issued in the future".into());
    }
    Ok(())
}

fn uid_of(o: &Object) -> String {
    o.metadata()
        .and_then(|m| m.get("uid"))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

/// Whether an object was deleted before `cutoff` (Unix seconds): a deletion timestamp that is
/// older than the leeway.
fn deleted_before(o: &Object, cutoff: i64) -> bool {
    let Some(ts) = o
        .metadata()
        .and_then(|m| m.get("deletionTimestamp"))
        .and_then(|v| v.as_str())
    else {
        return false;
    };
    match parse_rfc3339(ts) {
        Some(t) => t < cutoff,
        None => true,
    }
}

/// An RFC 3339 timestamp (`2006-01-02T15:04:05Z`) to Unix seconds.
fn parse_rfc3339(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp())
}

fn lookup_failed(
    resource: &str,
    name: &str,
    found: Result<Option<Object>, LookupError>,
) -> Result<Object, String> {
    match found {
        Ok(Some(o)) => Ok(o),
        Ok(None) => Err(format!("{resource} {name:?} not found")),
        Err(e) => Err(e.to_string()),
    }
}

impl ServiceAccountAuthenticator {
    async fn validate_bound(&self, c: &Claims, now: i64) -> Result<UserInfo, String> {
        check_times(c, now)?;
        let Some(k) = &c.kubernetes else {
            return Err("service account token claims could not be validated: the kubernetes.io claim is missing".into());
        };
        let cutoff = now.saturating_sub(LEEWAY_SECONDS);
        let ns = &k.namespace;
        let sa_name = &k.serviceaccount.name;
        let sa = lookup_failed(
            "serviceaccounts",
            sa_name,
            self.lookup.service_account(ns, sa_name).await,
        )?;
        if deleted_before(&sa, cutoff) {
            return Err(format!("service account {ns}/{sa_name} has been deleted"));
        }
        let uid = uid_of(&sa);
        if uid != k.serviceaccount.uid {
            return Err(format!(
                "service account UID ({uid}) does not match claim ({})",
                k.serviceaccount.uid
            ));
        }
        // A bound object that is gone (or going) says no more than upstream does.
        if let Some(secret) = &k.secret {
            let s = match self.lookup.secret(ns, &secret.name).await {
                Ok(Some(s)) => s,
                _ => return Err(INVALIDATED.into()),
            };
            if uid_of(&s) != secret.uid {
                return Err(format!(
                    "secret UID ({}) does not match service account secret ref claim ({})",
                    uid_of(&s),
                    secret.uid
                ));
            }
            if deleted_before(&s, cutoff) {
                return Err(INVALIDATED.into());
            }
        }
        if let Some(pod) = &k.pod {
            let p = match self.lookup.pod(ns, &pod.name).await {
                Ok(Some(p)) if !deleted_before(&p, cutoff) => p,
                _ => return Err(INVALIDATED.into()),
            };
            if uid_of(&p) != pod.uid {
                return Err(format!(
                    "pod UID ({}) does not match service account pod ref claim ({})",
                    uid_of(&p),
                    pod.uid
                ));
            }
        }
        // A pod-bound token's node is only claimed; a node-bound token's node must exist.
        if let (Some(node), None) = (&k.node, &k.pod) {
            let n = match self.lookup.node(&node.name).await {
                Ok(Some(n)) if !deleted_before(&n, cutoff) => n,
                _ => return Err(INVALIDATED.into()),
            };
            if uid_of(&n) != node.uid {
                return Err(format!(
                    "node UID ({}) does not match service account node ref claim ({})",
                    uid_of(&n),
                    node.uid
                ));
            }
        }
        let mut user = UserInfo {
            name: service_account_username(ns, sa_name),
            uid,
            groups: service_account_groups(ns),
            ..Default::default()
        };
        if let Some(node) = &k.node {
            user.extra
                .insert(NODE_NAME_KEY.into(), vec![node.name.clone()]);
            user.extra
                .insert(NODE_UID_KEY.into(), vec![node.uid.clone()]);
        }
        if let Some(pod) = &k.pod {
            user.extra
                .insert(POD_NAME_KEY.into(), vec![pod.name.clone()]);
            user.extra.insert(POD_UID_KEY.into(), vec![pod.uid.clone()]);
        }
        if let Some(jti) = c.jti.as_deref().filter(|j| !j.is_empty()) {
            user.extra
                .insert(CREDENTIAL_ID_KEY.into(), vec![format!("JTI={jti}")]);
        }
        Ok(user)
    }

    async fn validate_legacy(&self, token: &str, c: &Claims, now: i64) -> Result<UserInfo, String> {
        if c.sub.is_empty() {
            return Err("sub claim is missing".into());
        }
        let missing = |v: &Option<String>, what: &str| match v.as_deref() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(format!("{what} claim is missing")),
        };
        let ns = missing(&c.legacy_namespace, "namespace")?;
        let secret_name = missing(&c.legacy_secret_name, "secretName")?;
        let sa_name = missing(&c.legacy_service_account_name, "serviceAccountName")?;
        let sa_uid = missing(&c.legacy_service_account_uid, "serviceAccountUID")?;
        if c.sub != service_account_username(&ns, &sa_name) {
            return Err("sub claim is invalid".into());
        }
        let cutoff = now.saturating_sub(LEEWAY_SECONDS);
        let secret = match self.lookup.secret(&ns, &secret_name).await {
            Ok(Some(s)) if !deleted_before(&s, cutoff) => s,
            _ => return Err("Token has been invalidated".into()),
        };
        let stored = secret
            .get("data")
            .and_then(|d| d.get("token"))
            .and_then(|t| t.as_str())
            .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
            .unwrap_or_default();
        if stored != token.as_bytes() {
            return Err("Token does not match server's copy".into());
        }
        let sa = lookup_failed(
            "serviceaccounts",
            &sa_name,
            self.lookup.service_account(&ns, &sa_name).await,
        )?;
        if deleted_before(&sa, cutoff) {
            return Err(format!("ServiceAccount {ns}/{sa_name} has been deleted"));
        }
        let uid = uid_of(&sa);
        if uid != sa_uid {
            return Err(format!(
                "ServiceAccount UID ({uid}) does not match claim ({sa_uid})"
            ));
        }
        Ok(UserInfo {
            name: service_account_username(&ns, &sa_name),
            uid,
            groups: service_account_groups(&ns),
            ..Default::default()
        })
    }
}

#[async_trait]
impl TokenAuthenticator for ServiceAccountAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> TokenAuthenticated {
        let Some(iss) = Self::unverified_issuer(token) else {
            return TokenAuthenticated::NotMine;
        };
        let legacy = iss == LEGACY_ISSUER;
        if !legacy && !self.issuers.contains(&iss) {
            return TokenAuthenticated::NotMine;
        }
        let claims = match self.verify(token) {
            Ok(c) => c,
            Err(e) => return TokenAuthenticated::Failed(e),
        };
        // The issuer was read before the signature was checked: check it again.
        if claims.iss != iss {
            return TokenAuthenticated::Failed(format!("token issuer {:?} is invalid", claims.iss));
        }
        let token_auds = if claims.aud.is_empty() {
            self.api_audiences.clone()
        } else {
            claims.aud.clone()
        };
        let wanted = audiences.unwrap_or(&self.api_audiences);
        let auds = intersect(&token_auds, wanted);
        if auds.is_empty() && !self.api_audiences.is_empty() {
            return TokenAuthenticated::Failed(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quote_list(&token_auds),
                go_quote_list(wanted)
            ));
        }
        let now = crate::token::now_unix();
        let user = if legacy {
            self.validate_legacy(token, &claims, now).await
        } else {
            self.validate_bound(&claims, now).await
        };
        match user {
            Ok(user) => TokenAuthenticated::User(TokenUser {
                user,
                audiences: auds,
            }),
            Err(e) => TokenAuthenticated::Failed(e),
        }
    }
}

#[cfg(test)]
mod unit {
    use super::parse_rfc3339;

    #[test]
    fn rfc3339_seconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2024-02-29T12:00:01Z"), Some(1_709_208_001));
        assert_eq!(parse_rfc3339("garbage"), None);
    }
}
