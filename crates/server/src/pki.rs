//! kapi's own PKI: a CA, a serving certificate and an admin client certificate, made with rcgen
//! on first start under `--cert-dir` and reused later (regenerated only when missing, unreadable,
//! close to expiry, issued by another CA, or — for the serving certificate — missing a needed
//! name). `--tls-cert-file`/`--tls-private-key-file`/`--client-ca-file` replace the generated
//! serving certificate and client CA.
//!
//! Everything here is blocking (files, key generation): call it from `spawn_blocking`.

use crate::config::ServerConfig;
use crate::error::ServerError;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use time::{Duration as TimeDuration, OffsetDateTime};

const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const SERVING_CERT: &str = "apiserver.crt";
const SERVING_KEY: &str = "apiserver.key";
const ADMIN_CERT: &str = "admin.crt";
const ADMIN_KEY: &str = "admin.key";

/// The admin user's name and group, as kubeadm's `kubernetes-admin` in `system:masters`.
pub const ADMIN_USER: &str = "kubernetes-admin";
pub const ADMIN_GROUP: &str = "system:masters";

/// Certificates are renewed when they expire within this window.
const RENEW_BEFORE: TimeDuration = TimeDuration::days(30);

/// The server's certificates and keys, ready for rustls and the kubeconfig.
pub struct Pki {
    /// The CA bundle (PEM) clients need to trust the serving certificate: kapi's CA, plus the
    /// issuers of a user-provided serving certificate. Written into the kubeconfig.
    pub ca_pem: String,
    /// The serving certificate chain and key.
    pub serving_chain: Vec<CertificateDer<'static>>,
    pub serving_key: PrivateKeyDer<'static>,
    /// The CAs client certificates are checked against.
    pub client_ca: Vec<CertificateDer<'static>>,
    /// `--requestheader-client-ca-file`: the CAs front proxies' certificates are checked
    /// against (empty without the flag).
    pub request_header_ca: Vec<CertificateDer<'static>>,
    /// `--proxy-client-cert-file` and `--proxy-client-key-file`, checked to match: the
    /// identity kapi will present to aggregated API servers.
    pub proxy_client: Option<Arc<CertifiedKey>>,
    /// The admin client certificate and key (PEM) for the kubeconfig.
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

/// The names upstream puts into the serving certificate, plus `--tls-sans`.
pub fn serving_names(cfg: &ServerConfig) -> Vec<String> {
    let mut names: Vec<String> = [
        "localhost",
        "127.0.0.1",
        "::1",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.push("kubernetes.default.svc.cluster.local".into());
    if !cfg.bind_address.is_unspecified() {
        names.push(cfg.bind_address.to_string());
    }
    if let Some(ip) = cfg.service_ip() {
        names.push(ip.to_string());
    }
    names.extend(cfg.tls_sans.iter().cloned());
    let mut seen = BTreeSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// Loads (or makes) every certificate the server needs.
pub fn load_or_create(cfg: &ServerConfig) -> Result<Pki, ServerError> {
    let dir = &cfg.cert_dir;
    private_dir(dir)?;
    // Keys written by an older kapi (or by hand) with looser modes.
    for key in [CA_KEY, SERVING_KEY, ADMIN_KEY] {
        kapi_storage::embedded::tighten(&dir.join(key), 0o600)
            .map_err(|e| ServerError::Config(e.to_string()))?;
    }
    let now = OffsetDateTime::now_utc();

    let (issuer, ca_pem, ca_subject, fresh_ca) = load_or_create_ca(dir, now)?;

    // The serving certificate: a user-provided one, or kapi's own.
    let (serving_chain, serving_key) = match (&cfg.tls_cert_file, &cfg.tls_private_key_file) {
        (Some(cert), Some(key)) => (read_certs(cert)?, read_key(key)?),
        _ => {
            let names = serving_names(cfg);
            let cert_path = dir.join(SERVING_CERT);
            let key_path = dir.join(SERVING_KEY);
            let reusable =
                !fresh_ca && leaf_still_good(&cert_path, &key_path, &ca_subject, now, Some(&names));
            if !reusable {
                let key = KeyPair::generate()?;
                let mut params = leaf_params(now, "kube-apiserver", None)?;
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
                params.subject_alt_names =
                    names.iter().map(|n| san(n)).collect::<Result<_, _>>()?;
                let cert = params.signed_by(&key, &issuer)?;
                write_file(&cert_path, cert.pem().as_bytes(), 0o644)?;
                write_file(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
            }
            let mut chain = read_certs(&cert_path)?;
            chain.extend(read_certs(&dir.join(CA_CERT))?);
            (chain, read_key(&key_path)?)
        }
    };

    // The admin client certificate, always signed by kapi's CA.
    let admin_cert_path = dir.join(ADMIN_CERT);
    let admin_key_path = dir.join(ADMIN_KEY);
    if fresh_ca || !leaf_still_good(&admin_cert_path, &admin_key_path, &ca_subject, now, None) {
        let key = KeyPair::generate()?;
        let mut params = leaf_params(now, ADMIN_USER, Some(ADMIN_GROUP))?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &issuer)?;
        write_file(&admin_cert_path, cert.pem().as_bytes(), 0o644)?;
        write_file(&admin_key_path, key.serialize_pem().as_bytes(), 0o600)?;
    }
    let admin_cert_pem = read_string(&admin_cert_path)?;
    let admin_key_pem = read_string(&admin_key_path)?;

    // kapi's CA stays trusted next to a user-provided client CA, so that the admin kubeconfig
    // kapi writes keeps working.
    let mut client_ca = read_certs(&dir.join(CA_CERT))?;
    if let Some(path) = &cfg.client_ca_file {
        client_ca.extend(read_certs(path)?);
    }
    // With a user-provided serving certificate, clients must trust its issuers: the rest of its
    // chain, or the certificate itself when it stands alone (self-signed).
    let mut ca_pem = ca_pem;
    if cfg.tls_cert_file.is_some() {
        if !ca_pem.ends_with('\n') {
            ca_pem.push('\n');
        }
        let issuers = match serving_chain.split_first() {
            Some((_, rest)) if !rest.is_empty() => rest,
            _ => serving_chain.as_slice(),
        };
        for der in issuers {
            ca_pem.push_str(&pem_certificate(der));
        }
    }
    let request_header_ca = match &cfg.request_header {
        Some(rh) => read_certs(&rh.client_ca_file)?,
        None => Vec::new(),
    };
    let proxy_client = match (&cfg.proxy_client_cert_file, &cfg.proxy_client_key_file) {
        (Some(cert), Some(key)) => Some(load_key_pair(cert, key)?),
        _ => None,
    };
    Ok(Pki {
        ca_pem,
        serving_chain,
        serving_key,
        client_ca,
        request_header_ca,
        proxy_client,
        admin_cert_pem,
        admin_key_pem,
    })
}

type LoadedCa = (Issuer<'static, KeyPair>, String, Vec<u8>, bool);

/// Loads the CA if both files parse and it is not about to expire; otherwise makes a new one.
/// Returns the CA as an issuer, its PEM and raw subject, and whether it is new.
fn load_or_create_ca(dir: &Path, now: OffsetDateTime) -> Result<LoadedCa, ServerError> {
    let cert_path = dir.join(CA_CERT);
    let key_path = dir.join(CA_KEY);
    if let (Ok(pem), Ok(key_pem)) = (
        std::fs::read_to_string(&cert_path),
        std::fs::read_to_string(&key_path),
    ) {
        if let (Ok(key), Some(der)) = (KeyPair::from_pem(&key_pem), first_der(&pem)) {
            if let Ok((_, x509)) = x509_parser::parse_x509_certificate(&der) {
                let expires = x509.validity().not_after.timestamp();
                let same_key =
                    x509.public_key().subject_public_key.data.as_ref() == key.public_key_raw();
                if x509.is_ca()
                    && same_key
                    && expires > now.saturating_add(RENEW_BEFORE).unix_timestamp()
                {
                    let subject = x509.subject().as_raw().to_vec();
                    let issuer = Issuer::from_ca_cert_der(&CertificateDer::from(der.clone()), key)?;
                    return Ok((issuer, pem, subject, false));
                }
            }
        }
        tracing::warn!(dir = %dir.display(), "the CA in the certificate directory is unusable; making a new one");
    }
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    // A unique name per CA, as kube-apiserver's self-signed `localhost-ca@<time>`, so that
    // certificates from an older CA are recognised and replaced.
    dn.push(
        DnType::CommonName,
        format!("kapi-ca@{}", now.unix_timestamp()),
    );
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = now.saturating_sub(TimeDuration::hours(1));
    params.not_after = now.saturating_add(TimeDuration::days(3650));
    let cert = params.self_signed(&key)?;
    let pem = cert.pem();
    write_file(&cert_path, pem.as_bytes(), 0o644)?;
    write_file(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
    let subject = x509_parser::parse_x509_certificate(cert.der())
        .map(|(_, x)| x.subject().as_raw().to_vec())
        .map_err(|e| ServerError::Certificate {
            path: cert_path.clone(),
            reason: e.to_string(),
        })?;
    Ok((Issuer::new(params, key), pem, subject, true))
}

fn leaf_params(
    now: OffsetDateTime,
    cn: &str,
    org: Option<&str>,
) -> Result<CertificateParams, ServerError> {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    if let Some(o) = org {
        dn.push(DnType::OrganizationName, o);
    }
    dn.push(DnType::CommonName, cn);
    params.distinguished_name = dn;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.use_authority_key_identifier_extension = true;
    params.not_before = now.saturating_sub(TimeDuration::hours(1));
    params.not_after = now.saturating_add(TimeDuration::days(365));
    Ok(params)
}

fn san(name: &str) -> Result<SanType, ServerError> {
    Ok(match name.parse::<IpAddr>() {
        Ok(ip) => SanType::IpAddress(ip),
        Err(_) => SanType::DnsName(name.try_into()?),
    })
}

/// Whether a leaf certificate can be reused: both files parse, the key matches, it was issued
/// by this CA, it does not expire soon, and (for serving) it names everything it must.
fn leaf_still_good(
    cert_path: &Path,
    key_path: &Path,
    ca_subject: &[u8],
    now: OffsetDateTime,
    names: Option<&[String]>,
) -> bool {
    let (Ok(pem), Ok(key_pem)) = (
        std::fs::read_to_string(cert_path),
        std::fs::read_to_string(key_path),
    ) else {
        return false;
    };
    let (Ok(key), Some(der)) = (KeyPair::from_pem(&key_pem), first_der(&pem)) else {
        return false;
    };
    let Ok((_, x509)) = x509_parser::parse_x509_certificate(&der) else {
        return false;
    };
    if x509.issuer().as_raw() != ca_subject
        || x509.public_key().subject_public_key.data.as_ref() != key.public_key_raw()
        || x509.validity().not_after.timestamp()
            <= now.saturating_add(RENEW_BEFORE).unix_timestamp()
    {
        return false;
    }
    let Some(names) = names else { return true };
    let mut present = BTreeSet::new();
    if let Ok(Some(ext)) = x509.subject_alternative_name() {
        for gn in &ext.value.general_names {
            match gn {
                x509_parser::extensions::GeneralName::DNSName(d) => {
                    present.insert(d.to_string());
                }
                x509_parser::extensions::GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                        16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                        _ => None,
                    };
                    if let Some(ip) = ip {
                        present.insert(ip.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    names.iter().all(|n| {
        present.contains(
            &n.parse::<IpAddr>()
                .map(|ip| ip.to_string())
                .unwrap_or_else(|_| n.clone()),
        )
    })
}

fn first_der(pem: &str) -> Option<Vec<u8>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .next()?
        .ok()
        .map(|c| c.to_vec())
}

fn read_string(path: &Path) -> Result<String, ServerError> {
    std::fs::read_to_string(path).map_err(|source| ServerError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads every certificate of a PEM file.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ServerError> {
    let pem = read_string(path)?;
    let certs = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ServerError::Certificate {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(ServerError::Certificate {
            path: path.to_path_buf(),
            reason: "no certificate found".into(),
        });
    }
    Ok(certs)
}

/// Reads the first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ServerError> {
    let pem = read_string(path)?;
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .map_err(|e| ServerError::Certificate {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?
        .ok_or_else(|| ServerError::Certificate {
            path: path.to_path_buf(),
            reason: "no private key found".into(),
        })
}

/// A certificate and its key, refused unless the key is the certificate's (as Go's
/// `tls.X509KeyPair`).
pub fn load_key_pair(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, ServerError> {
    let chain = read_certs(cert)?;
    let key_der = read_key(key)?;
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    CertifiedKey::from_der(chain, key_der, &provider)
        .map(Arc::new)
        .map_err(|e| ServerError::Certificate {
            path: cert.to_path_buf(),
            reason: match e {
                rustls::Error::InconsistentKeys(_) => {
                    format!("private key {} does not match public key", key.display())
                }
                e => format!("with key {}: {e}", key.display()),
            },
        })
}

/// Creates `dir` (and its parents) 0700, or tightens an existing one with a log line: it
/// holds private keys or the store.
pub fn private_dir(dir: &Path) -> Result<(), ServerError> {
    kapi_storage::embedded::private_dir(dir).map_err(|e| ServerError::Config(e.to_string()))
}

/// Writes a file with the given mode, replacing it atomically.
pub fn write_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), ServerError> {
    kapi_auth::files::write_atomically(path, contents, mode).map_err(|source| ServerError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// One certificate in PEM form (as Go's `pem.Encode`).
pub(crate) fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}
