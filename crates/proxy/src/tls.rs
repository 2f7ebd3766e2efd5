//! The TLS client configurations kapi dials with: the kubelet's (client certificate from
//! `--kubelet-client-certificate/-key`, server verified against `--kubelet-certificate-authority`
//! or, without it, not verified, as upstream), the kubelet's without verification, and the proxy
//! transport's (no client certificate, no verification: upstream's `ProxyTransport`). Every
//! configuration offers only `http/1.1`: upgrades need it.

use crate::kubelet::KubeletClientConfig;
use crate::TransportKind;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// The three client configurations.
#[derive(Clone, Debug)]
pub struct Transports {
    pub kubelet: Arc<ClientConfig>,
    pub kubelet_insecure: Arc<ClientConfig>,
    pub proxy: Arc<ClientConfig>,
}

/// Accepts any server certificate; still checks the handshake's signatures.
#[derive(Debug)]
struct SkipVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

type ClientAuth = Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>;

fn build(roots: Option<RootCertStore>, auth: ClientAuth) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match roots {
        Some(roots) => builder.with_root_certificates(roots),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider))),
    };
    let mut config = match auth {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| format!("--kubelet-client-certificate/--kubelet-client-key: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn read(flag: &str, path: &std::path::Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

fn certs(flag: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Result<Vec<_>, _> = rustls_pemfile::certs(&mut &pem[..]).collect();
    let certs = certs.map_err(|e| format!("{flag}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{flag}: no certificate found"));
    }
    Ok(certs)
}

impl Transports {
    /// No client certificate and no verification anywhere (tests, embedding).
    pub fn insecure() -> Result<Self, String> {
        let config = Arc::new(build(None, None)?);
        Ok(Self {
            kubelet: config.clone(),
            kubelet_insecure: config.clone(),
            proxy: config,
        })
    }

    /// From the `--kubelet-*` flags; an unreadable or malformed file is an error naming its
    /// flag.
    pub fn from_config(config: &KubeletClientConfig) -> Result<Self, String> {
        let auth =
            match (&config.client_certificate, &config.client_key) {
                (Some(cert), Some(key)) => {
                    let chain = certs(
                        "--kubelet-client-certificate",
                        &read("--kubelet-client-certificate", cert)?,
                    )?;
                    let key_pem = read("--kubelet-client-key", key)?;
                    let key = rustls_pemfile::private_key(&mut &key_pem[..])
                        .map_err(|e| format!("--kubelet-client-key: {e}"))?
                        .ok_or_else(|| "--kubelet-client-key: no private key found".to_string())?;
                    Some((chain, key))
                }
                (None, None) => None,
                _ => return Err(
                    "--kubelet-client-certificate and --kubelet-client-key must be given together"
                        .into(),
                ),
            };
        let roots = match &config.certificate_authority {
            Some(path) => {
                let flag = "--kubelet-certificate-authority";
                let mut roots = RootCertStore::empty();
                for c in certs(flag, &read(flag, path)?)? {
                    roots.add(c).map_err(|e| format!("{flag}: {e}"))?;
                }
                Some(roots)
            }
            None => None,
        };
        let insecure_auth = auth.as_ref().map(|(c, k)| (c.clone(), k.clone_key()));
        Ok(Self {
            kubelet: Arc::new(build(roots, auth)?),
            kubelet_insecure: Arc::new(build(None, insecure_auth)?),
            proxy: Arc::new(build(None, None)?),
        })
    }

    /// The configuration of a transport.
    pub fn get(&self, kind: TransportKind) -> Arc<ClientConfig> {
        match kind {
            TransportKind::Kubelet => self.kubelet.clone(),
            TransportKind::KubeletInsecure => self.kubelet_insecure.clone(),
            TransportKind::Proxy => self.proxy.clone(),
        }
    }
}

/// Verifies a server's certificate as issued for one fixed name, whatever address was dialed:
/// upstream dials an APIService's endpoint address and checks its certificate against
/// `<service>.<namespace>.svc` (`tls.Config.ServerName`).
#[derive(Debug)]
struct FixedName {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for FixedName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Presents one loaded certificate to every server that asks.
#[derive(Debug)]
struct FixedClientCert(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for FixedClientCert {
    fn resolve(
        &self,
        _: &[&[u8]],
        _: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
    fn has_certs(&self) -> bool {
        true
    }
}

/// The TLS client configuration of an extension API server (upstream's
/// `remote.BuildTransportConfig`): the server verified against `ca_bundle` (PEM) as
/// `server_name`, or not verified when `insecure`; `client` presented when given (the
/// `--proxy-client-cert-file` pair). The error is the text upstream reports for a bundle that
/// holds no certificate.
pub fn service_config(
    ca_bundle: &[u8],
    insecure: bool,
    server_name: &str,
    client: Option<Arc<rustls::sign::CertifiedKey>>,
) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut &ca_bundle[..]).flatten() {
            let _ = roots.add(cert);
        }
        // client-go's `rootCertPool` refuses a bundle without a certificate (kapi has no
        // system roots to fall back on for an empty one).
        if roots.is_empty() {
            return Err(
                "unable to load root certificates: unable to parse bytes as PEM block".into(),
            );
        }
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|e| format!("invalid server name {server_name:?}: {e}"))?;
        let inner =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("x509: {e}"))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(FixedName { inner, name }))
    };
    let mut config = match client {
        Some(key) => builder.with_client_cert_resolver(Arc::new(FixedClientCert(key))),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

impl Transports {
    /// Every transport kind dialing with `config` (an extension API server's).
    pub fn all(config: Arc<ClientConfig>) -> Self {
        Self {
            kubelet: config.clone(),
            kubelet_insecure: config.clone(),
            proxy: config,
        }
    }
}
