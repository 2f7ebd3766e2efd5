//! TLS: the rustls server configuration (ALPN `h2` and `http/1.1`, client certificates
//! requested but optional) and the peer certificates attached to each request.
//!
//! As kube-apiserver does, the handshake accepts any client certificate and the x509
//! authenticator judges it per request: a certificate from an unknown CA is a 401, not a
//! failed handshake. The handshake still checks the client's proof of key possession.

use crate::error::ServerError;
use crate::pki::Pki;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use std::sync::{Arc, Once};

/// Installs aws-lc-rs as the process's rustls provider (once; later calls do nothing).
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means another provider was installed first (e.g. by an embedding program).
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}

/// Checks client certificate chains against the client CA.
#[derive(Clone, Debug)]
pub struct ClientCertChecker {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl ClientCertChecker {
    pub fn new(client_ca: &[CertificateDer<'static>]) -> Result<Self, ServerError> {
        let mut roots = RootCertStore::empty();
        for ca in client_ca {
            roots.add(ca.clone())?;
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
        Ok(Self { verifier })
    }

    /// Verifies a chain (leaf first) for client authentication at the current time.
    pub fn verify(&self, chain: &[CertificateDer<'static>]) -> Result<(), rustls::Error> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Err(rustls::Error::NoCertificatesPresented);
        };
        self.verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map(|_| ())
    }
}

/// Requests a client certificate, accepts any chain, and checks only the handshake signature.
#[derive(Debug)]
struct RequestClientCert {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }
    fn client_auth_mandatory(&self) -> bool {
        false
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }
    fn verify_client_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(m, c, d)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(m, c, d)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The rustls server configuration for the secure port.
pub fn server_config(
    pki: &Pki,
    checker: &ClientCertChecker,
) -> Result<Arc<rustls::ServerConfig>, ServerError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    // The handshake names the front-proxy CAs too (upstream adds them to the serving
    // ClientCAs), or a client that picks its certificate by the CAs named would not send it.
    let inner = match pki.request_header_ca.is_empty() {
        true => checker.verifier.clone(),
        false => {
            let all: Vec<CertificateDer<'static>> = pki
                .client_ca
                .iter()
                .chain(&pki.request_header_ca)
                .cloned()
                .collect();
            ClientCertChecker::new(&all)?.verifier
        }
    };
    let verifier = Arc::new(RequestClientCert { inner });
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(pki.serving_chain.clone(), pki.serving_key.clone_key())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The certificate chain a client presented (leaf first), shared by every request of one
/// connection. The authentication filter reads it from the request extensions.
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);
