//! x509 client certificates: the chain is verified against the client CA, then CN is the user
//! name and each O a group, as upstream's `CommonNameUserConversion`. The verdict is computed
//! once per connection (the chain cannot change within one) and cached in [`X509Verdict`].

use super::{AuthRequest, Authenticated, Authenticator, CREDENTIAL_ID_KEY};
use async_trait::async_trait;
use kapi_machinery::UserInfo;
use rustls_pki_types::CertificateDer;
use sha2::{Digest, Sha256};
use std::sync::{Arc, OnceLock};

/// Checks a client chain (leaf first) against the client CA; the server implements it over
/// its TLS verifier.
pub trait ChainVerifier: Send + Sync {
    fn verify_chain(
        &self,
        chain: &[CertificateDer<'static>],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// The per-connection cache of the x509 verdict, kept next to the peer certificates.
#[derive(Clone, Debug, Default)]
pub struct X509Verdict(pub Arc<OnceLock<Authenticated>>);

/// Why a certificate names no user.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("parsing certificate: {0}")]
    Parse(String),
    #[error("certificate has no common name")]
    NoCommonName,
}

/// The user a certificate names: CN, each O, and the certificate's fingerprint as credential id.
pub fn user_from_certificate(der: &[u8]) -> Result<UserInfo, CertificateError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| CertificateError::Parse(e.to_string()))?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_string();
    if name.is_empty() {
        return Err(CertificateError::NoCommonName);
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    let fingerprint: String = Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut user = UserInfo {
        name,
        groups,
        ..Default::default()
    };
    user.extra.insert(
        CREDENTIAL_ID_KEY.into(),
        vec![format!("X509SHA256={fingerprint}")],
    );
    Ok(user)
}

/// `--client-ca-file` (kapi's own CA by default) client certificates.
pub struct X509Authenticator {
    verifier: Arc<dyn ChainVerifier>,
}

impl X509Authenticator {
    pub fn new(verifier: Arc<dyn ChainVerifier>) -> Self {
        Self { verifier }
    }

    fn judge(&self, chain: &[CertificateDer<'static>]) -> Authenticated {
        let Some(leaf) = chain.first() else {
            return Authenticated::NoCredentials;
        };
        if let Err(e) = self.verifier.verify_chain(chain) {
            return Authenticated::Failed(format!("verifying certificate: {e}"));
        }
        match user_from_certificate(leaf) {
            Ok(user) => Authenticated::User(user),
            // Upstream: a verified certificate without a CN is no opinion, not a failure.
            Err(CertificateError::NoCommonName) => Authenticated::NoCredentials,
            Err(e) => Authenticated::Failed(e.to_string()),
        }
    }
}

#[async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> Authenticated {
        let Some(chain) = req.peer_certificates.filter(|c| !c.is_empty()) else {
            return Authenticated::NoCredentials;
        };
        match req.x509_verdict {
            Some(cache) => cache.0.get_or_init(|| self.judge(chain)).clone(),
            None => self.judge(chain),
        }
    }
}
