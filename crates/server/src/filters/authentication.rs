//! Authentication: who sent the request. The authenticators live in `kapi_auth::authn` and are
//! tried in order (a union); the first to recognise credentials wins. When none recognises any,
//! the request is `system:anonymous` in `system:unauthenticated` (if `--anonymous-auth`), else
//! 401. Credentials that are present but bad (a client certificate from an unknown CA, an
//! unknown or expired bearer token) are a 401 `Unauthorized` Status, as upstream's union fails
//! on error before it falls back to anonymous. Every authenticated user is also in
//! `system:authenticated`. A bearer token that authenticated is removed from the request, as
//! upstream does, so nothing further in can reuse it.

use crate::body::{status_response, HttpResponse, Request};
use crate::tls::{ClientCertChecker, PeerCertificates};
use futures::future::BoxFuture;
use kapi_auth::authn::{bearer, AuthRequest, Union};
use kapi_machinery::ApiError;
use rustls::pki_types::CertificateDer;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

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
pub struct AuthenticationLayer {
    union: Arc<Union>,
}

impl AuthenticationLayer {
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>, anonymous: bool) -> Self {
        Self {
            union: Arc::new(Union::new(authenticators, anonymous)),
        }
    }
}

impl<S> Layer<S> for AuthenticationLayer {
    type Service = Authentication<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Authentication {
            inner,
            union: self.union.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Authentication<S> {
    inner: S,
    union: Arc<Union>,
}

impl<S> Service<Request> for Authentication<S>
where
    S: Service<Request, Response = HttpResponse, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        // The ready service goes into the future; a fresh clone stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
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
                    super::call_boxed(&mut inner, req).await
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
