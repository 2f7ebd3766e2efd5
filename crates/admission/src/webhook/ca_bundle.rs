//! How a webhook's server certificate is verified against its `caBundle`, as Go's `x509`
//! verifies it for kube-apiserver: a chain to one of the bundle's certificates, or the server's
//! certificate itself found in the bundle. The second case matters in practice:
//! controller-runtime's envtest puts its webhook server's own (leaf) certificate in
//! `caBundle`, and Go accepts a leaf that is one of the roots (its name and validity period are
//! still checked), where webpki would answer `UnknownIssuer`.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use std::sync::Arc;

#[derive(Debug)]
pub struct CaBundleVerifier {
    chains: Arc<WebPkiServerVerifier>,
    /// The bundle's certificates as they are, for a server presenting one of them.
    bundle: Vec<CertificateDer<'static>>,
}

impl CaBundleVerifier {
    pub fn new(
        roots: RootCertStore,
        bundle: Vec<CertificateDer<'static>>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Self, String> {
        let chains = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { chains, bundle })
    }
}

/// Whether `now` is within the certificate's validity period (Go's `isValid` for a root leaf).
fn valid_at(cert: &CertificateDer<'_>, now: UnixTime) -> Result<(), Error> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let validity = parsed.validity();
    if now < validity.not_before.timestamp() {
        return Err(Error::InvalidCertificate(CertificateError::NotValidYet));
    }
    if now > validity.not_after.timestamp() {
        return Err(Error::InvalidCertificate(CertificateError::Expired));
    }
    Ok(())
}

impl ServerCertVerifier for CaBundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if self
            .bundle
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            valid_at(end_entity, now)?;
            rustls::client::verify_server_name(
                &ParsedCertificate::try_from(end_entity)?,
                server_name,
            )?;
            return Ok(ServerCertVerified::assertion());
        }
        self.chains
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.chains.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.chains.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chains.supported_verify_schemes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]
mod tests {
    use super::*;

    fn leaf(names: &[&str]) -> CertificateDer<'static> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(names).unwrap();
        let issuer = rcgen::Issuer::from_ca_cert_der(ca.der(), &ca_key).unwrap();
        params.signed_by(&key, &issuer).unwrap().der().clone()
    }

    fn verifier(bundle: &[CertificateDer<'static>]) -> CaBundleVerifier {
        let mut roots = RootCertStore::empty();
        for c in bundle {
            roots.add(c.clone()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        CaBundleVerifier::new(roots, bundle.to_vec(), provider).unwrap()
    }

    fn verify(v: &CaBundleVerifier, cert: &CertificateDer<'_>, name: &str) -> Result<(), Error> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        v.verify_server_cert(cert, &[], &name, &[], UnixTime::now())
            .map(|_| ())
    }

    /// envtest's webhook server: its own certificate is the caBundle.
    #[test]
    fn a_server_certificate_in_the_bundle_is_trusted_for_its_names() {
        let cert = leaf(&["localhost", "127.0.0.1"]);
        let v = verifier(std::slice::from_ref(&cert));
        assert!(verify(&v, &cert, "127.0.0.1").is_ok());
        assert!(verify(&v, &cert, "localhost").is_ok());
        assert!(matches!(
            verify(&v, &cert, "example.com"),
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            ))
        ));
    }

    #[test]
    fn another_certificate_still_needs_a_chain() {
        let trusted = leaf(&["localhost"]);
        let presented = leaf(&["localhost"]);
        let v = verifier(&[trusted]);
        assert!(matches!(
            verify(&v, &presented, "localhost"),
            Err(Error::InvalidCertificate(_))
        ));
    }
}
