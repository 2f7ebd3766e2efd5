//! Authentication: who sent the request. The authenticators live in `kapi_auth::authn` and are
//! tried in order (a union); the first to recognise credentials wins. When none recognises any,
//! the request is `system:anonymous` in `system:unauthenticated` (if `--anonymous-auth`), else
//! 401. Credentials that are present but bad (a client certificate from an unknown CA, an
//! unknown or expired bearer token) are a 401 `Unauthorized` Status, as upstream's union fails
//! on error before it falls back to anonymous. Every authenticated user is also in
//! `system:authenticated`. A bearer token that authenticated is removed from the request, as
//! upstream does, so nothing further in can reuse it.

use super::filter::{Answer, Filter, Next};
use crate::body::{status_response, Request};
use crate::tls::{ClientCertChecker, PeerCertificates};
use kapi_auth::authn::{bearer, AuthRequest, Union};
use kapi_machinery::ApiError;
use rustls::pki_types::CertificateDer;
use std::sync::Arc;

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

/// The authenticators and the anonymous fallback.
#[derive(Clone)]
pub struct Authentication {
    union: Arc<Union>,
}

impl Authentication {
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>, anonymous: bool) -> Self {
        Self {
            union: Arc::new(Union::new(authenticators, anonymous)),
        }
    }
}

impl Filter for Authentication {
    fn call(&self, mut req: Request, next: Next) -> Answer {
        let union = self.union.clone();
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
