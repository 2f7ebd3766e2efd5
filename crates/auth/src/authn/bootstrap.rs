//! Bootstrap tokens (`--enable-bootstrap-token-auth`): `<id>.<secret>` bearer tokens backed by
//! Secrets `kube-system/bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token`, which
//! kubelets joining a cluster use to ask for their client certificate (TLS bootstrap).
//! Upstream's rules (`plugin/pkg/auth/authenticator/token/bootstrap` and
//! `k8s.io/cluster-bootstrap`): the Secret must exist and not be deleting, have that type, hold
//! the same `token-secret` (compared in constant time) and `token-id`, not be past its
//! `expiration` (RFC 3339; unparsable counts as expired), be marked
//! `usage-bootstrap-authentication: "true"`, and name only valid `auth-extra-groups`. The user is
//! `system:bootstrap:<id>` in `system:bootstrappers` plus those groups (sorted, deduplicated).
//! A token failing any of these is not recognised (upstream answers "not mine", so the request
//! is a 401 with no reason given); why is logged at debug level. Like static tokens, bootstrap
//! tokens are good for the server's own audiences only.

use super::serviceaccount::ServiceAccountLookup;
use super::{audiences_for, TokenAuthenticated, TokenAuthenticator, TokenUser};
use async_trait::async_trait;
use base64::Engine;
use kapi_machinery::{Object, UserInfo};
use std::sync::Arc;

/// Where bootstrap token Secrets live.
pub const NAMESPACE: &str = "kube-system";
pub const SECRET_PREFIX: &str = "bootstrap-token-";
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
pub const TOKEN_ID_KEY: &str = "token-id";
pub const TOKEN_SECRET_KEY: &str = "token-secret";
pub const EXPIRATION_KEY: &str = "expiration";
pub const EXTRA_GROUPS_KEY: &str = "auth-extra-groups";
pub const USAGE_AUTHENTICATION_KEY: &str = "usage-bootstrap-authentication";
pub const USER_PREFIX: &str = "system:bootstrap:";
pub const DEFAULT_GROUP: &str = "system:bootstrappers";
/// Upstream's `BootstrapGroupPattern`, quoted in its error message.
const GROUP_PATTERN: &str = r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z";

/// Upstream's `BootstrapTokenPattern` (`\A([a-z0-9]{6})\.([a-z0-9]{16})\z`): the id and the
/// secret, or `None` for any other token.
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// Upstream's `ValidateBootstrapGroupName`: `system:bootstrappers:` then up to 255 of
/// `[a-z0-9:-]`, ending in `[a-z0-9]`.
pub fn validate_group(name: &str) -> Result<(), String> {
    let valid = name
        .strip_prefix("system:bootstrappers:")
        .is_some_and(|rest| {
            let bytes = rest.as_bytes();
            matches!(bytes.last(), Some(b) if b.is_ascii_lowercase() || b.is_ascii_digit())
                && bytes.len() <= 256
                && bytes.iter().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b':' || *b == b'-'
                })
        });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "bootstrap group {name:?} is invalid (must match {GROUP_PATTERN})"
        ))
    }
}

/// A key of the Secret's `data`, decoded; empty when absent or undecodable (upstream's
/// `GetData`).
fn data(secret: &Object, key: &str) -> String {
    secret
        .get("data")
        .and_then(|d| d.get(key))
        .and_then(|v| v.as_str())
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Upstream's `HasExpired`: past `expiration`, or an `expiration` that does not parse.
pub fn has_expired(secret: &Object, now: chrono::DateTime<chrono::Utc>) -> bool {
    let expiration = data(secret, EXPIRATION_KEY);
    if expiration.is_empty() {
        return false;
    }
    match chrono::DateTime::parse_from_rfc3339(&expiration) {
        Ok(t) => t <= now,
        Err(e) => {
            tracing::debug!(
                "Unparseable expiration time ({expiration}) in {}/{} Secret: {e}. Treating as expired.",
                secret.namespace(),
                secret.name()
            );
            true
        }
    }
}

/// Upstream's `GetGroups`: `system:bootstrappers` and the valid extra groups, sorted and
/// deduplicated; one invalid group refuses them all.
pub fn groups(secret: &Object) -> Result<Vec<String>, String> {
    let mut groups = std::collections::BTreeSet::from([DEFAULT_GROUP.to_string()]);
    let extra = data(secret, EXTRA_GROUPS_KEY);
    if !extra.is_empty() {
        for group in extra.split(',') {
            validate_group(group)?;
            groups.insert(group.to_string());
        }
    }
    Ok(groups.into_iter().collect())
}

/// Bootstrap token Secrets, read as they are now.
pub struct BootstrapTokenAuthenticator {
    lookup: Arc<dyn ServiceAccountLookup>,
    api_audiences: Vec<String>,
}

impl BootstrapTokenAuthenticator {
    pub fn new(lookup: Arc<dyn ServiceAccountLookup>, api_audiences: Vec<String>) -> Self {
        Self {
            lookup,
            api_audiences,
        }
    }

    /// The user of a token at `now`; `Ok(None)` for a token that is not (or no longer) a
    /// bootstrap token's, `Err` when the Secret could not be read.
    pub async fn authenticate_at(
        &self,
        token: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<UserInfo>, String> {
        let Some((token_id, token_secret)) = parse_token(token) else {
            return Ok(None);
        };
        let name = format!("{SECRET_PREFIX}{token_id}");
        let Some(secret) = self
            .lookup
            .secret(NAMESPACE, &name)
            .await
            .map_err(|e| e.to_string())?
        else {
            tracing::debug!("No secret of name {name} to match bootstrap bearer token");
            return Ok(None);
        };
        let refuse = |why: String| {
            tracing::debug!("Bootstrap secret {NAMESPACE}/{name} matching bearer token {why}");
            Ok(None)
        };
        if secret.deletion_timestamp().is_some() {
            return refuse("is deleted and awaiting removal".into());
        }
        if secret.get("type").and_then(|t| t.as_str()) != Some(SECRET_TYPE)
            || secret.get("data").is_none_or(|d| d.is_null())
        {
            return refuse(format!("has invalid type, expected {SECRET_TYPE}."));
        }
        let stored = data(&secret, TOKEN_SECRET_KEY);
        // Constant time, so the time taken tells nothing of how much of the secret matched.
        if aws_lc_rs::constant_time::verify_slices_are_equal(
            stored.as_bytes(),
            token_secret.as_bytes(),
        )
        .is_err()
        {
            return refuse(format!("has invalid value for key {TOKEN_SECRET_KEY}."));
        }
        let id = data(&secret, TOKEN_ID_KEY);
        if id != token_id {
            return refuse(format!(
                "has invalid value for key {TOKEN_ID_KEY}, expected {token_id}."
            ));
        }
        if has_expired(&secret, now) {
            return Ok(None);
        }
        if data(&secret, USAGE_AUTHENTICATION_KEY) != "true" {
            return refuse(format!("not marked {USAGE_AUTHENTICATION_KEY}=true."));
        }
        let groups = match groups(&secret) {
            Ok(g) => g,
            Err(e) => {
                return refuse(format!(
                    "has invalid value for key {EXTRA_GROUPS_KEY}: {e}."
                ))
            }
        };
        Ok(Some(UserInfo {
            name: format!("{USER_PREFIX}{id}"),
            groups,
            ..Default::default()
        }))
    }
}

#[async_trait]
impl TokenAuthenticator for BootstrapTokenAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> TokenAuthenticated {
        let Some(auds) = audiences_for(&self.api_audiences, audiences) else {
            return TokenAuthenticated::NotMine;
        };
        match self.authenticate_at(token, chrono::Utc::now()).await {
            Ok(Some(user)) => TokenAuthenticated::User(TokenUser {
                user,
                audiences: auds,
            }),
            Ok(None) => TokenAuthenticated::NotMine,
            Err(e) => TokenAuthenticated::Failed(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::serviceaccount::LookupError;
    use serde_json::json;
    use std::sync::Mutex;

    const TOKEN: &str = "abcdef.0123456789abcdef";

    /// The Secrets of kube-system, or a storage that fails.
    #[derive(Default)]
    struct Secrets {
        items: Mutex<Vec<Object>>,
        broken: bool,
    }

    #[async_trait]
    impl ServiceAccountLookup for Secrets {
        async fn service_account(&self, _: &str, _: &str) -> Result<Option<Object>, LookupError> {
            Ok(None)
        }
        async fn secret(&self, ns: &str, name: &str) -> Result<Option<Object>, LookupError> {
            if self.broken {
                return Err(LookupError("etcdserver: request timed out".into()));
            }
            let items = self.items.lock().unwrap();
            Ok(items
                .iter()
                .find(|o| o.namespace() == ns && o.name() == name)
                .cloned())
        }
        async fn pod(&self, _: &str, _: &str) -> Result<Option<Object>, LookupError> {
            Ok(None)
        }
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    /// A valid token Secret for `TOKEN`, with `data` entries replaced or added by `extra`
    /// (a `null` value removes the key).
    fn secret(extra: serde_json::Value) -> Object {
        let mut data = serde_json::Map::new();
        for (k, v) in [
            (TOKEN_ID_KEY, "abcdef"),
            (TOKEN_SECRET_KEY, "0123456789abcdef"),
            (USAGE_AUTHENTICATION_KEY, "true"),
        ] {
            data.insert(k.into(), json!(b64(v)));
        }
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            match v.as_str() {
                Some(s) => data.insert(k, json!(b64(s))),
                None => data.remove(&k),
            };
        }
        Object::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
            "type": SECRET_TYPE,
            "data": data,
        }))
        .unwrap()
    }

    fn authenticator(items: Vec<Object>) -> BootstrapTokenAuthenticator {
        BootstrapTokenAuthenticator::new(
            Arc::new(Secrets {
                items: Mutex::new(items),
                broken: false,
            }),
            vec!["https://kubernetes.default.svc.cluster.local".into()],
        )
    }

    fn now() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339("2025-06-01T12:00:00Z")
            .unwrap()
            .to_utc()
    }

    async fn user_of(items: Vec<Object>, token: &str) -> Option<UserInfo> {
        authenticator(items)
            .authenticate_at(token, now())
            .await
            .unwrap()
    }

    #[test]
    fn token_format() {
        assert_eq!(parse_token(TOKEN), Some(("abcdef", "0123456789abcdef")));
        for bad in [
            "",
            "abcdef",
            "abcdef.",
            "abcdef.0123456789abcde",   // 15
            "abcdef.0123456789abcdef0", // 17
            "abcde.0123456789abcdef",
            "ABCDEF.0123456789abcdef",
            "abcdef:0123456789abcdef",
            "abcdef.0123456789ABCDEF",
            "abcdef.0123456789abcde_",
            "abcdef.0123456789abcdef\n",
            "a.b.c",
        ] {
            assert_eq!(parse_token(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_valid_token_is_its_bootstrap_user() {
        let user = user_of(vec![secret(json!({}))], TOKEN).await.unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(user.groups, vec!["system:bootstrappers"]);
        assert!(user.uid.is_empty() && user.extra.is_empty());

        // Through the trait: the server's audiences, nothing for another audience.
        let a = authenticator(vec![secret(json!({}))]);
        let TokenAuthenticated::User(u) = a.authenticate_token(TOKEN, None).await else {
            panic!("not authenticated");
        };
        assert_eq!(
            u.audiences,
            vec!["https://kubernetes.default.svc.cluster.local"]
        );
        assert_eq!(
            a.authenticate_token(TOKEN, Some(&["vault".to_string()]))
                .await,
            TokenAuthenticated::NotMine
        );
    }

    #[tokio::test]
    async fn wrong_or_malformed_tokens_are_not_recognised() {
        let s = || vec![secret(json!({}))];
        assert_eq!(user_of(s(), "abcdef.0123456789abcdee").await, None);
        assert_eq!(user_of(s(), "abcdeg.0123456789abcdef").await, None); // no such Secret
        assert_eq!(user_of(s(), "abcdef-0123456789abcdef").await, None);
        assert_eq!(user_of(vec![], TOKEN).await, None);
        // The Secret's token-id must be the token's.
        assert_eq!(
            user_of(vec![secret(json!({"token-id": "zzzzzz"}))], TOKEN).await,
            None
        );
        // Another type, or one being deleted.
        let mut typed = secret(json!({}));
        typed.insert("type", json!("Opaque"));
        assert_eq!(user_of(vec![typed], TOKEN).await, None);
        let mut deleting = secret(json!({}));
        deleting.set_deletion_timestamp(Some("2025-06-01T11:59:00Z"));
        assert_eq!(user_of(vec![deleting], TOKEN).await, None);
        // In another namespace.
        let mut elsewhere = secret(json!({}));
        elsewhere.set_namespace("default");
        assert_eq!(user_of(vec![elsewhere], TOKEN).await, None);
    }

    #[tokio::test]
    async fn expiration() {
        let at = |t: &str| vec![secret(json!({ "expiration": t }))];
        assert!(user_of(at("2025-06-01T12:00:01Z"), TOKEN).await.is_some());
        assert!(user_of(at("2025-06-01T13:00:00+01:00"), TOKEN)
            .await
            .is_none()); // == now
        assert!(user_of(at("2025-06-01T11:59:59Z"), TOKEN).await.is_none());
        assert!(user_of(at("tomorrow"), TOKEN).await.is_none()); // unparsable: expired
        assert!(user_of(at("2025-06-02"), TOKEN).await.is_none());
    }

    #[tokio::test]
    async fn usage_must_be_authentication_true() {
        for v in [json!(null), json!("false"), json!("True"), json!("1")] {
            let s = secret(json!({ USAGE_AUTHENTICATION_KEY: v }));
            assert_eq!(user_of(vec![s], TOKEN).await, None, "{v}");
        }
    }

    #[tokio::test]
    async fn extra_groups() {
        let with = |g: &str| vec![secret(json!({ EXTRA_GROUPS_KEY: g }))];
        let user = user_of(
            with("system:bootstrappers:worker,system:bootstrappers:a:b-1,system:bootstrappers:worker"),
            TOKEN,
        )
        .await
        .unwrap();
        assert_eq!(
            user.groups,
            vec![
                "system:bootstrappers",
                "system:bootstrappers:a:b-1",
                "system:bootstrappers:worker"
            ]
        );
        for bad in [
            "system:masters",
            "system:bootstrappers:",
            "system:bootstrappers:worker,",
            "system:bootstrappers:Worker",
            "system:bootstrappers:worker-",
            "system:bootstrappers",
        ] {
            assert_eq!(user_of(with(bad), TOKEN).await, None, "{bad}");
        }
        assert_eq!(
            validate_group("system:masters").unwrap_err(),
            r#"bootstrap group "system:masters" is invalid (must match \Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z)"#
        );
        assert!(validate_group(&format!("system:bootstrappers:{}", "a".repeat(256))).is_ok());
        assert!(validate_group(&format!("system:bootstrappers:{}", "a".repeat(257))).is_err());
    }

    #[tokio::test]
    async fn a_storage_error_is_a_failure() {
        let a = BootstrapTokenAuthenticator::new(
            Arc::new(Secrets {
                items: Mutex::default(),
                broken: true,
            }),
            vec![],
        );
        assert_eq!(
            a.authenticate_token(TOKEN, None).await,
            TokenAuthenticated::Failed("etcdserver: request timed out".into())
        );
        // A token of another form never reaches storage.
        assert_eq!(
            a.authenticate_token("not-a-bootstrap-token", None).await,
            TokenAuthenticated::NotMine
        );
    }
}
