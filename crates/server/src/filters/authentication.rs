//! Authentication: who sent the request. Authenticators are tried in order (a union); the first
//! to recognise credentials wins. When none recognises any, the request is `system:anonymous`
//! in `system:unauthenticated` (if `--anonymous-auth`), else 401. Credentials that are present
//! but bad (a client certificate from an unknown CA) are a 401 `Unauthorized` Status, as
//! upstream's union fails on error before it falls back to anonymous.
//!
//! Today's authenticator is x509 client certificates: user = CN, groups = O; every
//! authenticated user is also in `system:authenticated`.

use crate::body::{status_response, HttpResponse, Request};
use crate::tls::{ClientCertChecker, PeerCertificates};
use futures::future::{ready, Either, Ready};
use kapi_machinery::{ApiError, UserInfo};
use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use tower::{Layer, Service};

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// An authenticator's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Authenticated {
    /// No credentials this authenticator understands.
    NoCredentials,
    User(UserInfo),
    /// Credentials present but not acceptable; the reason is logged, not returned.
    Failed(String),
}

/// One way of recognising a user.
pub trait Authenticator: Send + Sync {
    fn authenticate(&self, req: &Request) -> Authenticated;
}

/// x509 client certificates verified against the client CA. The verdict is computed once per
/// connection (the chain cannot change within one).
pub struct X509Authenticator {
    checker: ClientCertChecker,
}

impl X509Authenticator {
    pub fn new(checker: ClientCertChecker) -> Self {
        Self { checker }
    }
}

/// The per-connection cache of the x509 verdict, inserted next to [`PeerCertificates`].
#[derive(Clone, Debug, Default)]
pub struct X509Verdict(pub Arc<OnceLock<Authenticated>>);

/// The user a certificate names: CN and each O.
pub fn user_from_certificate(der: &[u8]) -> Result<UserInfo, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| e.to_string())?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_string();
    if name.is_empty() {
        return Err("certificate has no common name".into());
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    Ok(UserInfo {
        name,
        groups,
        ..Default::default()
    })
}

impl X509Authenticator {
    fn judge(&self, chain: &PeerCertificates) -> Authenticated {
        let Some(leaf) = chain.0.first() else {
            return Authenticated::NoCredentials;
        };
        if let Err(e) = self.checker.verify(&chain.0) {
            return Authenticated::Failed(format!("verifying certificate: {e}"));
        }
        match user_from_certificate(leaf) {
            Ok(user) => Authenticated::User(user),
            Err(e) => Authenticated::Failed(e),
        }
    }
}

impl Authenticator for X509Authenticator {
    fn authenticate(&self, req: &Request) -> Authenticated {
        let Some(chain) = req.extensions().get::<PeerCertificates>() else {
            return Authenticated::NoCredentials;
        };
        match req.extensions().get::<X509Verdict>() {
            Some(cache) => cache.0.get_or_init(|| self.judge(chain)).clone(),
            None => self.judge(chain),
        }
    }
}

/// The authenticators and the anonymous fallback.
#[derive(Clone)]
pub struct AuthenticationLayer {
    authenticators: Arc<Vec<Box<dyn Authenticator>>>,
    anonymous: bool,
}

impl AuthenticationLayer {
    pub fn new(authenticators: Vec<Box<dyn Authenticator>>, anonymous: bool) -> Self {
        Self {
            authenticators: Arc::new(authenticators),
            anonymous,
        }
    }
}

impl<S> Layer<S> for AuthenticationLayer {
    type Service = Authentication<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Authentication {
            inner,
            authenticators: self.authenticators.clone(),
            anonymous: self.anonymous,
        }
    }
}

#[derive(Clone)]
pub struct Authentication<S> {
    inner: S,
    authenticators: Arc<Vec<Box<dyn Authenticator>>>,
    anonymous: bool,
}

impl<S> Authentication<S> {
    fn identify(&self, req: &Request) -> Result<UserInfo, String> {
        let mut failures = Vec::new();
        for a in self.authenticators.iter() {
            match a.authenticate(req) {
                Authenticated::User(mut user) => {
                    if !user.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
                        user.groups.push(AUTHENTICATED_GROUP.into());
                    }
                    return Ok(user);
                }
                Authenticated::Failed(reason) => failures.push(reason),
                Authenticated::NoCredentials => {}
            }
        }
        if !failures.is_empty() {
            return Err(failures.join("; "));
        }
        if self.anonymous {
            return Ok(UserInfo {
                name: ANONYMOUS_USER.into(),
                groups: vec![UNAUTHENTICATED_GROUP.into()],
                ..Default::default()
            });
        }
        Err("no credentials".into())
    }
}

impl<S> Service<Request> for Authentication<S>
where
    S: Service<Request, Response = HttpResponse, Error = Infallible>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = Either<Ready<Result<HttpResponse, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        match self.identify(&req) {
            Ok(user) => {
                req.extensions_mut().insert(user);
                Either::Right(self.inner.call(req))
            }
            Err(reason) => {
                tracing::debug!(
                    path = req.uri().path(),
                    reason,
                    "unable to authenticate the request"
                );
                Either::Left(ready(Ok(status_response(&ApiError::unauthorized(
                    "Unauthorized",
                )))))
            }
        }
    }
}
