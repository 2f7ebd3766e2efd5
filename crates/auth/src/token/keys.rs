//! Service-account keys: the signing key (`--service-account-signing-key-file`, RSA or EC P-256
//! private key) and the verification keys (`--service-account-key-file`, each file holding
//! public keys, private keys or certificates). Without a signing key, kapi makes an EC P-256
//! pair under the certificate directory on first start (`sa.key`, `sa.pub`) and reuses it.
//!
//! Everything here is blocking (files): call it from `spawn_blocking` on request paths.

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use rustls_pemfile::Item;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// File names under the certificate directory for a generated pair.
pub const GENERATED_KEY: &str = "sa.key";
pub const GENERATED_PUB: &str = "sa.pub";

const RSA_OID: &str = "1.2.840.113549.1.1.1";
const EC_OID: &str = "1.2.840.10045.2.1";

/// Why a key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("reading {path:?}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {path:?}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path:?}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("generating a key: {0}")]
    Generate(String),
}

/// A public key tokens are verified with.
#[derive(Clone)]
pub struct VerifyingKey {
    pub algorithm: Algorithm,
    pub key_id: String,
    pub(crate) decoding: DecodingKey,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("algorithm", &self.algorithm)
            .field("key_id", &self.key_id)
            .finish()
    }
}

/// The private key tokens are signed with, and its public half.
#[derive(Clone)]
pub struct SigningKey {
    pub(crate) encoding: EncodingKey,
    pub public: VerifyingKey,
}

impl SigningKey {
    pub fn algorithm(&self) -> Algorithm {
        self.public.algorithm
    }
    pub fn key_id(&self) -> &str {
        &self.public.key_id
    }
}

/// Upstream's key id: the unpadded base64url SHA-256 of the public key's DER (SPKI).
fn key_id(spki: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(spki))
}

/// A verifying key from a SubjectPublicKeyInfo.
pub fn verifying_key_from_spki(spki: &[u8]) -> Result<VerifyingKey, String> {
    use x509_parser::prelude::FromDer;
    let (_, info) = x509_parser::x509::SubjectPublicKeyInfo::from_der(spki)
        .map_err(|e| format!("parsing public key: {e}"))?;
    let bits = info.subject_public_key.data.as_ref();
    let (algorithm, decoding) = match info.algorithm.algorithm.to_id_string().as_str() {
        RSA_OID => (Algorithm::RS256, DecodingKey::from_rsa_der(bits)),
        EC_OID => (Algorithm::ES256, DecodingKey::from_ec_der(bits)),
        other => return Err(format!("unsupported public key algorithm {other}")),
    };
    Ok(VerifyingKey {
        algorithm,
        key_id: key_id(spki),
        decoding,
    })
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

enum PrivateKey {
    Pkcs1(Vec<u8>),
    Pkcs8(Vec<u8>),
    Sec1(Vec<u8>),
}

/// A signing key from a private key's DER.
fn signing_key(key: &PrivateKey) -> Result<SigningKey, String> {
    match key {
        PrivateKey::Pkcs1(der) => {
            let kp = aws_lc_rs::rsa::KeyPair::from_der(der).map_err(|e| e.to_string())?;
            let spki = kp.public_key().as_der().map_err(|e| e.to_string())?;
            Ok(SigningKey {
                encoding: EncodingKey::from_rsa_der(der),
                public: verifying_key_from_spki(spki.as_ref())?,
            })
        }
        PrivateKey::Pkcs8(der) => {
            if let Ok(kp) = aws_lc_rs::rsa::KeyPair::from_pkcs8(der) {
                let spki = kp.public_key().as_der().map_err(|e| e.to_string())?;
                let encoding = EncodingKey::from_rsa_pem(pem("PRIVATE KEY", der).as_bytes())
                    .map_err(|e| e.to_string())?;
                return Ok(SigningKey {
                    encoding,
                    public: verifying_key_from_spki(spki.as_ref())?,
                });
            }
            ec_signing_key(der)
        }
        PrivateKey::Sec1(der) => {
            let kp = EcdsaKeyPair::from_private_key_der(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
                .map_err(|e| format!("only RSA and EC P-256 keys are supported: {e}"))?;
            let pkcs8 = kp.to_pkcs8v1().map_err(|e| e.to_string())?;
            ec_signing_key(pkcs8.as_ref())
        }
    }
}

fn ec_signing_key(pkcs8: &[u8]) -> Result<SigningKey, String> {
    let kp = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8)
        .map_err(|e| format!("only RSA and EC P-256 keys are supported: {e}"))?;
    let spki = kp.public_key().as_der().map_err(|e| e.to_string())?;
    Ok(SigningKey {
        encoding: EncodingKey::from_ec_der(pkcs8),
        public: verifying_key_from_spki(spki.as_ref())?,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, KeyError> {
    std::fs::read(path).map_err(|source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn invalid(path: &Path, reason: impl Into<String>) -> KeyError {
    KeyError::Invalid {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn pem_items(path: &Path, bytes: &[u8]) -> Result<Vec<Item>, KeyError> {
    rustls_pemfile::read_all(&mut &bytes[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(path, format!("reading PEM: {e}")))
}

/// Loads `--service-account-signing-key-file`: the first private key in the file.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let bytes = read(path)?;
    for item in pem_items(path, &bytes)? {
        let key = match item {
            Item::Pkcs1Key(k) => PrivateKey::Pkcs1(k.secret_pkcs1_der().to_vec()),
            Item::Pkcs8Key(k) => PrivateKey::Pkcs8(k.secret_pkcs8_der().to_vec()),
            Item::Sec1Key(k) => PrivateKey::Sec1(k.secret_sec1_der().to_vec()),
            _ => continue,
        };
        return signing_key(&key).map_err(|e| invalid(path, e));
    }
    Err(invalid(path, "no private key found"))
}

/// Loads a `--service-account-key-file`: every public key, private key (its public half) and
/// certificate (its key) in the file.
pub fn load_verifying_keys(path: &Path) -> Result<Vec<VerifyingKey>, KeyError> {
    let bytes = read(path)?;
    let mut keys = Vec::new();
    for item in pem_items(path, &bytes)? {
        let key = match item {
            Item::SubjectPublicKeyInfo(spki) => verifying_key_from_spki(spki.as_ref()),
            Item::X509Certificate(cert) => x509_parser::parse_x509_certificate(cert.as_ref())
                .map_err(|e| e.to_string())
                .and_then(|(_, c)| verifying_key_from_spki(c.public_key().raw)),
            Item::Pkcs1Key(k) => {
                signing_key(&PrivateKey::Pkcs1(k.secret_pkcs1_der().to_vec())).map(|s| s.public)
            }
            Item::Pkcs8Key(k) => {
                signing_key(&PrivateKey::Pkcs8(k.secret_pkcs8_der().to_vec())).map(|s| s.public)
            }
            Item::Sec1Key(k) => {
                signing_key(&PrivateKey::Sec1(k.secret_sec1_der().to_vec())).map(|s| s.public)
            }
            _ => continue,
        };
        keys.push(key.map_err(|e| invalid(path, e))?);
    }
    if keys.is_empty() {
        return Err(invalid(path, "no public key found"));
    }
    Ok(keys)
}

/// The signing key under `dir` (`sa.key`), made (with `sa.pub`) when missing or unreadable.
pub fn load_or_generate(dir: &Path) -> Result<SigningKey, KeyError> {
    let key_path = dir.join(GENERATED_KEY);
    if key_path.exists() {
        match load_signing_key(&key_path) {
            Ok(k) => return Ok(k),
            Err(e) => {
                tracing::warn!(error = %e, "the service-account key is unusable; making a new one")
            }
        }
    }
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        &aws_lc_rs::rand::SystemRandom::new(),
    )
    .map_err(|e| KeyError::Generate(e.to_string()))?;
    let key = ec_signing_key(pkcs8.as_ref()).map_err(KeyError::Generate)?;
    let kp = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
        .map_err(|e| KeyError::Generate(e.to_string()))?;
    let spki = kp
        .public_key()
        .as_der()
        .map_err(|e| KeyError::Generate(e.to_string()))?;
    write(
        &dir.join(GENERATED_PUB),
        pem("PUBLIC KEY", spki.as_ref()).as_bytes(),
        0o644,
    )?;
    write(
        &key_path,
        pem("PRIVATE KEY", pkcs8.as_ref()).as_bytes(),
        0o600,
    )?;
    Ok(key)
}

/// Writes a file with a mode, atomically.
fn write(path: &Path, contents: &[u8], mode: u32) -> Result<(), KeyError> {
    crate::files::write_atomically(path, contents, mode).map_err(|source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    })
}
