//! Authentication: who sent the request. The authenticators live in `kapi_auth::authn` and are
//! tried in order (a union); the first to recognise credentials wins. When none recognises any,
//! the request is `system:anonymous` in `system:unauthenticated` (if `--anonymous-auth`), else
//! 401. Credentials that are present but bad (a client certificate from an unknown CA, an
//! unknown or expired bearer token) are a 401 `Unauthorized` Status, as upstream's union fails
//! on error before it falls back to anonymous. Every authenticated user is also in
//! `system:authenticated`. A bearer token that authenticated is removed from the request, as
//! upstream does, so nothing further in can reuse it; so are the front-proxy headers (the
//! standard `X-Remote-*` ones and the `--requestheader-*` ones), whoever authenticated.

use super::filter::{Answer, Filter, Next};
use crate::body::{status_response, Request};
use crate::tls::{ClientCertChecker, PeerCertificates};
use kapi_auth::authn::request_header::{clear_headers, RequestHeaderAuthenticator};
use kapi_auth::authn::{bearer, AuthRequest, Union};
use kapi_machinery::ApiError;
use rustls::pki_types::CertificateDer;
use std::sync::Arc;

pub use kapi_auth::authn::request_header::RequestHeaderConfig;
pub use kapi_auth::authn::x509::{user_from_certificate, X509Authenticator, X509Verdict};
pub use kapi_auth::authn::{
    Authenticated, Authenticator, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP,
};

impl kapi_auth::authn::x509::ChainVerifier for ClientCertChecker {
    fn verify_chain(
        &self,
        chain: &[CertificateDer<'static>],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.verify(chain)?)
    }
}

/// The front-proxy authenticator and the headers it reads (removed after authentication).
pub type FrontProxy = (Arc<dyn Authenticator>, Arc<RequestHeaderConfig>);

/// The front-proxy authenticator of `--requestheader-*` over the request-header CA, and its
/// headers; `None` without `--requestheader-client-ca-file`.
pub fn request_header(
    config: &crate::ServerConfig,
    pki: &crate::pki::Pki,
) -> Result<Option<FrontProxy>, crate::ServerError> {
    let Some(options) = &config.request_header else {
        return Ok(None);
    };
    let checker = ClientCertChecker::new(&pki.request_header_ca)?;
    let headers = Arc::new(options.headers.clone());
    let authenticator = RequestHeaderAuthenticator::new(Arc::new(checker), headers.clone());
    Ok(Some((Arc::new(authenticator), headers)))
}

/// The authenticators and the anonymous fallback.
#[derive(Clone)]
pub struct Authentication {
    union: Arc<Union>,
    /// Removed from every authenticated request: the standard front-proxy headers, then the
    /// configured ones.
    clear: Arc<Vec<RequestHeaderConfig>>,
}

impl Authentication {
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>, anonymous: bool) -> Self {
        Self {
            union: Arc::new(Union::new(authenticators, anonymous)),
            clear: Arc::new(vec![RequestHeaderConfig::standard()]),
        }
    }

    /// Also removes the `--requestheader-*` headers after authentication.
    pub fn clearing(mut self, request_header: Option<Arc<RequestHeaderConfig>>) -> Self {
        if let Some(rh) = request_header {
            self.clear = Arc::new(vec![RequestHeaderConfig::standard(), (*rh).clone()]);
        }
        self
    }
}

impl Filter for Authentication {
    fn call(&self, mut req: Request, next: Next) -> Answer {
        let union = self.union.clone();
        let clear = self.clear.clone();
        Box::pin(async move {
            let peer = req.extensions().get::<PeerCertificates>().cloned();
            let verdict = req.extensions().get::<X509Verdict>().cloned();
            let outcome = union
                .authenticate(&AuthRequest {
                    headers: req.headers(),
                    peer_certificates: peer.as_ref().map(|p| p.0.as_slice()),
                    x509_verdict: verdict.as_ref(),
                })
                .await;
            match outcome {
                Ok(user) => {
                    if bearer::bearer_token(req.headers()).is_some() {
                        req.headers_mut().remove(http::header::AUTHORIZATION);
                    }
                    for headers in clear.iter() {
                        clear_headers(req.headers_mut(), headers);
                    }
                    req.extensions_mut().insert(user);
                    next.call(req).await
                }
                Err(reason) => {
                    tracing::debug!(
                        path = req.uri().path(),
                        %reason,
                        "unable to authenticate the request"
                    );
                    Ok(status_response(&ApiError::unauthorized("Unauthorized")))
                }
            }
        })
    }
}
