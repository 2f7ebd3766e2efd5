//! Authentication: recognising the user behind a request.
//!
//! Request authenticators ([`Authenticator`]) look at a request's headers and client
//! certificates; token authenticators ([`TokenAuthenticator`]) look at one bearer token (the
//! request path reaches them through [`bearer::BearerToken`], TokenReview calls them directly).
//! [`Union`] tries request authenticators in order: the first to recognise credentials decides;
//! when one fails and none succeeds the request is refused (401), and only when nobody saw any
//! credentials does the anonymous fallback apply. Every authenticated user gains
//! `system:authenticated`.

pub mod bearer;
pub mod bootstrap;
pub mod request_header;
pub mod serviceaccount;
pub mod token_file;
pub mod verified;
pub mod x509;

#[cfg(test)]
mod tests;

use async_trait::async_trait;
use kapi_machinery::UserInfo;
use rustls_pki_types::CertificateDer;
use std::sync::Arc;

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// The extra key naming the credential a user authenticated with (`JTI=...`, `X509SHA256=...`).
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// An authenticator's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Authenticated {
    /// No credentials this authenticator understands.
    NoCredentials,
    User(UserInfo),
    /// Credentials present but not acceptable; the reason is logged, not returned.
    Failed(String),
}

/// What request authenticators may look at: not the server's request type, so that this crate
/// stays free of the HTTP stack.
#[derive(Clone, Copy, Debug)]
pub struct AuthRequest<'a> {
    pub headers: &'a http::HeaderMap,
    /// The client certificate chain of the connection, leaf first.
    pub peer_certificates: Option<&'a [CertificateDer<'static>]>,
    /// The connection's cached x509 verdict (the chain cannot change within one connection).
    pub x509_verdict: Option<&'a x509::X509Verdict>,
}

impl<'a> AuthRequest<'a> {
    pub fn from_headers(headers: &'a http::HeaderMap) -> Self {
        Self {
            headers,
            peer_certificates: None,
            x509_verdict: None,
        }
    }
}

/// One way of recognising a user from a request.
#[async_trait]
pub trait Authenticator: Send + Sync {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> Authenticated;
}

/// A user recognised from a token, with the audiences the token is good for.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct TokenUser {
    pub user: UserInfo,
    pub audiences: Vec<String>,
}

/// A token authenticator's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenAuthenticated {
    /// Not a token this authenticator knows.
    NotMine,
    User(TokenUser),
    /// A token it knows, refused; the message is upstream's (TokenReview shows it).
    Failed(String),
}

/// One way of recognising a user from a bearer token. `audiences` are the audiences the
/// caller wants the token to be good for; `None` means the server's own (`--api-audiences`).
#[async_trait]
pub trait TokenAuthenticator: Send + Sync {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> TokenAuthenticated;
}

/// Several token authenticators, asked in order; the first to recognise the token decides,
/// and errors from the others are reported together when none does.
#[derive(Clone, Default)]
pub struct TokenUnion(pub Vec<Arc<dyn TokenAuthenticator>>);

#[async_trait]
impl TokenAuthenticator for TokenUnion {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> TokenAuthenticated {
        let mut errors = Vec::new();
        for a in &self.0 {
            match a.authenticate_token(token, audiences).await {
                TokenAuthenticated::User(u) => return TokenAuthenticated::User(u),
                TokenAuthenticated::Failed(e) => errors.push(e),
                TokenAuthenticated::NotMine => {}
            }
        }
        match errors.len() {
            0 => TokenAuthenticated::NotMine,
            _ => TokenAuthenticated::Failed(aggregate(&errors)),
        }
    }
}

/// Upstream's `utilerrors.NewAggregate(...).Error()`: one message as is, several as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Why a request was refused; only logged, the client sees `Unauthorized`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AuthnError {
    #[error("{0}")]
    Failed(String),
    #[error("no credentials provided and anonymous requests are disabled")]
    NoCredentials,
}

/// The request authenticators in order, and the anonymous fallback (`--anonymous-auth`).
#[derive(Clone, Default)]
pub struct Union {
    pub authenticators: Vec<Arc<dyn Authenticator>>,
    pub anonymous: bool,
}

impl Union {
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>, anonymous: bool) -> Self {
        Self {
            authenticators,
            anonymous,
        }
    }

    /// The user a request comes from, or why it is refused.
    pub async fn authenticate(&self, req: &AuthRequest<'_>) -> Result<UserInfo, AuthnError> {
        let mut failures = Vec::new();
        for a in &self.authenticators {
            match a.authenticate(req).await {
                Authenticated::User(user) => return Ok(with_authenticated_group(user)),
                Authenticated::Failed(reason) => failures.push(reason),
                Authenticated::NoCredentials => {}
            }
        }
        if !failures.is_empty() {
            return Err(AuthnError::Failed(aggregate(&failures)));
        }
        if self.anonymous {
            return Ok(anonymous_user());
        }
        Err(AuthnError::NoCredentials)
    }
}

/// `system:anonymous` in `system:unauthenticated`.
pub fn anonymous_user() -> UserInfo {
    UserInfo {
        name: ANONYMOUS_USER.into(),
        groups: vec![UNAUTHENTICATED_GROUP.into()],
        ..Default::default()
    }
}

/// Adds `system:authenticated` unless the user already has it or is anonymous (upstream's
/// `AuthenticatedGroupAdder`).
pub fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    let skip = user.name == ANONYMOUS_USER
        || user
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
    if !skip {
        user.groups.push(AUTHENTICATED_GROUP.into());
    }
    user
}

/// Go's `%q` of a string slice: `["a" "b"]`.
pub(crate) fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// Upstream's audience-agnostic token authenticator wrapper: a token good for the server's
/// audiences only. The audiences a request asked for that the server has (`None` when it asked
/// for others only), or the server's when it asked for none.
pub fn audiences_for(api_audiences: &[String], wanted: Option<&[String]>) -> Option<Vec<String>> {
    match wanted {
        Some(wanted) => Some(intersect(api_audiences, wanted)).filter(|both| !both.is_empty()),
        None => Some(api_audiences.to_vec()),
    }
}

/// The audiences in both lists, in `a`'s order.
pub fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}
