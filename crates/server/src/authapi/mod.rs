//! Authentication at start-up and the `authentication.k8s.io` APIs.
//!
//! [`setup`] builds the request authenticators from the configuration (x509 client
//! certificates, `--token-auth-file`, service-account JWTs checked against the live objects
//! through [`lookup::RegistryLookup`], and with `--enable-bootstrap-token-auth` bootstrap
//! token Secrets read through it too) and installs, before the API handler is built, the
//! `serviceaccounts/token` subresource (TokenRequest, [`token_request`]) and the
//! `authentication.k8s.io/v1` group: TokenReview and SelfSubjectReview ([`reviews`]).

pub mod lookup;
pub mod reviews;
pub mod token_request;

use crate::config::ServerConfig;
use crate::error::ServerError;
use crate::tls::ClientCertChecker;
use kapi_auth::authn::bearer::BearerToken;
use kapi_auth::authn::bootstrap::BootstrapTokenAuthenticator;
use kapi_auth::authn::serviceaccount::ServiceAccountAuthenticator;
use kapi_auth::authn::token_file::StaticTokens;
use kapi_auth::authn::x509::X509Authenticator;
use kapi_auth::authn::{Authenticator, TokenAuthenticator, TokenUnion};
use kapi_auth::token::{keys, TokenIssuer, VerifyingKey, DEFAULT_ISSUER};
use kapi_registry::rest::{ApiGroupInfo, ApiVersionInfo, Storage};
use kapi_registry::watch_caches::WatchCaches;
use std::sync::Arc;

pub const GROUP: &str = "authentication.k8s.io";

/// What authentication needs at run time.
pub struct Authentication {
    /// The request authenticators, in order (x509, then bearer tokens).
    pub authenticators: Vec<Arc<dyn Authenticator>>,
    /// The token authenticators behind bearer tokens (also used by TokenReview).
    pub tokens: Arc<TokenUnion>,
}

/// `--service-account-issuer`, defaulted.
pub fn issuers(config: &ServerConfig) -> Vec<String> {
    if config.service_account_issuers.is_empty() {
        vec![DEFAULT_ISSUER.to_string()]
    } else {
        config.service_account_issuers.clone()
    }
}

/// `--api-audiences`, defaulted to the issuers.
pub fn api_audiences(config: &ServerConfig) -> Vec<String> {
    if config.api_audiences.is_empty() {
        issuers(config)
    } else {
        config.api_audiences.clone()
    }
}

/// Loads keys and the token file (blocking), builds the authenticators, and adds the
/// authentication APIs to `groups`.
pub async fn setup(
    config: &ServerConfig,
    groups: &mut Vec<ApiGroupInfo>,
    checker: &ClientCertChecker,
    caches: WatchCaches,
) -> Result<Authentication, ServerError> {
    let cfg = config.clone();
    let (signing, verifying, static_tokens) = tokio::task::spawn_blocking(move || load(&cfg))
        .await
        .map_err(|e| ServerError::Config(format!("loading authentication files: {e}")))??;
    let issuers = issuers(config);
    let audiences = api_audiences(config);
    let lookup = Arc::new(lookup::RegistryLookup::new(groups, caches)?);

    let mut tokens: Vec<Arc<dyn TokenAuthenticator>> = Vec::new();
    if let Some(t) = static_tokens {
        tokens.push(Arc::new(t));
    }
    tokens.push(Arc::new(ServiceAccountAuthenticator::new(
        issuers.clone(),
        verifying,
        audiences.clone(),
        lookup.clone(),
    )));
    // After the service-account tokens, as kube-apiserver orders them.
    if config.bootstrap_token_auth {
        tokens.push(Arc::new(BootstrapTokenAuthenticator::new(
            lookup.clone(),
            audiences.clone(),
        )));
    }
    let tokens = Arc::new(TokenUnion(tokens));

    let first_issuer = issuers
        .first()
        .cloned()
        .unwrap_or_else(|| DEFAULT_ISSUER.into());
    let issuer = TokenIssuer::new(signing, first_issuer);
    let token_storage: Arc<dyn Storage> = Arc::new(token_request::token_request_storage(
        issuer,
        audiences.clone(),
        lookup,
    ));
    let core = groups
        .iter_mut()
        .find(|g| g.group.is_empty())
        .and_then(|g| g.versions.iter_mut().find(|v| v.version == "v1"))
        .ok_or_else(|| ServerError::Config("the core API group is not installed".into()))?;
    core.storages.push(token_storage);
    groups.retain(|g| g.group != GROUP);
    groups.push(ApiGroupInfo {
        group: GROUP.into(),
        preferred_version: "v1".into(),
        versions: vec![ApiVersionInfo {
            version: "v1".into(),
            storages: vec![
                Arc::new(reviews::token_review_storage(tokens.clone(), audiences)),
                Arc::new(reviews::self_subject_review_storage()),
            ],
        }],
    });

    let authenticators: Vec<Arc<dyn Authenticator>> = vec![
        Arc::new(X509Authenticator::new(Arc::new(checker.clone()))),
        Arc::new(BearerToken::new(tokens.clone())),
    ];
    Ok(Authentication {
        authenticators,
        tokens,
    })
}

type Loaded = (keys::SigningKey, Vec<VerifyingKey>, Option<StaticTokens>);

fn load(config: &ServerConfig) -> Result<Loaded, ServerError> {
    let key_error = |e: keys::KeyError| ServerError::Config(format!("service-account key: {e}"));
    let signing = match &config.service_account_signing_key_file {
        Some(path) => keys::load_signing_key(path).map_err(key_error)?,
        None => keys::load_or_generate(&config.cert_dir).map_err(key_error)?,
    };
    let mut verifying = Vec::new();
    for path in &config.service_account_key_files {
        verifying.extend(keys::load_verifying_keys(path).map_err(key_error)?);
    }
    // Without verification keys, the tokens kapi signs are verified with its own key.
    if verifying.is_empty() {
        verifying.push(signing.public.clone());
    }
    let static_tokens = match &config.token_auth_file {
        Some(path) => {
            let t = StaticTokens::from_file(path, api_audiences(config))
                .map_err(|e| ServerError::Config(e.to_string()))?;
            tracing::info!(path = %path.display(), tokens = t.len(), "static tokens loaded");
            Some(t)
        }
        None => None,
    };
    Ok((signing, verifying, static_tokens))
}

/// `spec.audiences` of a TokenReview or TokenRequest; when empty, `default` (the API
/// server's own audiences).
fn audiences_or(review: &serde_json::Value, default: &[String]) -> Vec<String> {
    let audiences: Vec<String> = review
        .pointer("/spec/audiences")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if audiences.is_empty() {
        default.to_vec()
    } else {
        audiences
    }
}
