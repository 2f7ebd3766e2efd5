//! `Authorization: Bearer <token>`: the token goes to the token authenticators. As upstream's
//! bearer authenticator, a header that is not a bearer token is no credential, and a bearer
//! token nobody recognises is a failure (`invalid bearer token`), not anonymous.

use super::{AuthRequest, Authenticated, Authenticator, TokenAuthenticated, TokenAuthenticator};
use async_trait::async_trait;
use std::sync::Arc;

pub const INVALID_BEARER_TOKEN: &str = "invalid bearer token";

/// The bearer token of a request's `Authorization` header, if it carries one.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(token)
}

/// Bearer tokens checked by a token authenticator (usually a [`super::TokenUnion`]).
pub struct BearerToken {
    tokens: Arc<dyn TokenAuthenticator>,
}

impl BearerToken {
    pub fn new(tokens: Arc<dyn TokenAuthenticator>) -> Self {
        Self { tokens }
    }
}

#[async_trait]
impl Authenticator for BearerToken {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> Authenticated {
        let Some(token) = bearer_token(req.headers) else {
            return Authenticated::NoCredentials;
        };
        match self.tokens.authenticate_token(token, None).await {
            TokenAuthenticated::User(u) => Authenticated::User(u.user),
            TokenAuthenticated::Failed(e) => Authenticated::Failed(e),
            TokenAuthenticated::NotMine => Authenticated::Failed(INVALID_BEARER_TOKEN.into()),
        }
    }
}
