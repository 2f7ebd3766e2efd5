//! Request-header (front-proxy) authentication, as upstream's `headerrequest` wrapped in its
//! x509 CA verifier: a client certificate that verifies against `--requestheader-client-ca-file`
//! (and whose CN is in `--requestheader-allowed-names`, when that list is not empty) lets the
//! caller name the user in headers: the first non-empty username header, the first non-empty
//! uid header, every value of every group header, and extra from the headers under each
//! prefix (the rest of the name lower-cased and percent-decoded is the key).
//!
//! A certificate that does not verify, or whose CN is not allowed, is a failure (the union goes
//! on to the next authenticator, as upstream's does); a verified certificate without a username
//! header is no credentials at all. The headers are removed from the request by the
//! authentication filter ([`clear_headers`]) once someone authenticated it.

use super::x509::ChainVerifier;
use super::{AuthRequest, Authenticated, Authenticator};
use async_trait::async_trait;
use kapi_machinery::UserInfo;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The headers every kube-apiserver strips after authentication, configured or not (what an
/// aggregated API server trusts from its front proxy).
pub const STANDARD_USERNAME_HEADER: &str = "X-Remote-User";
pub const STANDARD_UID_HEADER: &str = "X-Remote-Uid";
pub const STANDARD_GROUP_HEADER: &str = "X-Remote-Group";
pub const STANDARD_EXTRA_PREFIX: &str = "X-Remote-Extra-";

/// Which headers name the user, and which certificate names may send them (the
/// `--requestheader-*` flags, as given).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderConfig {
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_headers_prefix: Vec<String>,
    /// Common names allowed to send the headers; empty: any certificate the CA verifies.
    pub allowed_names: Vec<String>,
}

impl RequestHeaderConfig {
    /// Upstream's `standardRequestHeaderConfig`: the headers removed from every authenticated
    /// request.
    pub fn standard() -> Self {
        RequestHeaderConfig {
            username_headers: vec![STANDARD_USERNAME_HEADER.into()],
            uid_headers: vec![STANDARD_UID_HEADER.into()],
            group_headers: vec![STANDARD_GROUP_HEADER.into()],
            extra_headers_prefix: vec![STANDARD_EXTRA_PREFIX.into()],
            allowed_names: Vec::new(),
        }
    }

    /// The user the headers name, or `None` without a non-empty username header.
    pub fn user_from_headers(&self, headers: &http::HeaderMap) -> Option<UserInfo> {
        let name = first_value(headers, &self.username_headers)?;
        Some(UserInfo {
            name,
            uid: first_value(headers, &self.uid_headers).unwrap_or_default(),
            groups: all_values(headers, &self.group_headers),
            extra: extra(headers, &self.extra_headers_prefix),
        })
    }
}

/// Go's `http.Header.Get` over each name in turn: the first value of the first header whose
/// first value is not empty.
fn first_value(headers: &http::HeaderMap, names: &[String]) -> Option<String> {
    names
        .iter()
        .filter_map(|n| headers.get(n.as_str()))
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .find(|v| !v.is_empty())
}

/// Every non-empty value of every header, in the order the names are given.
fn all_values(headers: &http::HeaderMap, names: &[String]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| headers.get_all(n.as_str()))
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

fn has_prefix_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.as_bytes()
            .iter()
            .zip(prefix.as_bytes())
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Upstream's `newExtra`: prefixes in order, and for each the headers under it; every value
/// (empty ones too) goes to the key.
fn extra(headers: &http::HeaderMap, prefixes: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for prefix in prefixes {
        for name in headers.keys() {
            let name = name.as_str();
            if !has_prefix_ignore_case(name, prefix) {
                continue;
            }
            let key =
                unescape_extra_key(&name.get(prefix.len()..).unwrap_or_default().to_lowercase());
            out.entry(key).or_default().extend(
                headers
                    .get_all(name)
                    .iter()
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            );
        }
    }
    out
}

/// Go's `headerKeyEscape`, the sending side of [`unescape_extra_key`]: an extra's key
/// percent-encoded where it is not a header token.
pub fn escape_extra_key(key: &str) -> String {
    let mut out = String::new();
    for b in key.bytes() {
        let token = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if token && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Go's `url.PathUnescape`, falling back to the key as sent when it is malformed (upstream
/// records extra keys either way).
pub fn unescape_extra_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b != b'%' {
            out.push(b);
            i = i.saturating_add(1);
            continue;
        }
        let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
        match (hex(i.saturating_add(1)), hex(i.saturating_add(2))) {
            (Some(h), Some(l)) => {
                // Two hex digits: at most 0xff.
                out.push(u8::try_from(h.saturating_mul(16).saturating_add(l)).unwrap_or(b'?'));
                i = i.saturating_add(3);
            }
            _ => return key.to_string(),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes the headers `config` names (and every header under its prefixes), as upstream's
/// `ClearAuthenticationHeaders`.
pub fn clear_headers(headers: &mut http::HeaderMap, config: &RequestHeaderConfig) {
    for name in config
        .username_headers
        .iter()
        .chain(&config.uid_headers)
        .chain(&config.group_headers)
    {
        if let Ok(name) = http::HeaderName::from_bytes(name.as_bytes()) {
            headers.remove(name);
        }
    }
    if config.extra_headers_prefix.is_empty() {
        return;
    }
    let doomed: Vec<http::HeaderName> = headers
        .keys()
        .filter(|k| {
            config
                .extra_headers_prefix
                .iter()
                .any(|p| has_prefix_ignore_case(k.as_str(), p))
        })
        .cloned()
        .collect();
    for name in doomed {
        headers.remove(name);
    }
}

/// Why a front proxy's certificate is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum ProxyCertificateError {
    #[error("verifying certificate: {0}")]
    Verify(String),
    #[error("x509: subject with cn={0} is not in the allowed list")]
    NotAllowed(String),
}

/// The front-proxy authenticator: [`RequestHeaderConfig`] behind a CA check.
pub struct RequestHeaderAuthenticator {
    verifier: Arc<dyn ChainVerifier>,
    config: Arc<RequestHeaderConfig>,
}

impl RequestHeaderAuthenticator {
    /// `verifier` checks chains against the request-header CA.
    pub fn new(verifier: Arc<dyn ChainVerifier>, config: Arc<RequestHeaderConfig>) -> Self {
        Self { verifier, config }
    }

    /// Upstream's `Verifier`: the chain against the CA, then the CN against the allowed names.
    fn check(
        &self,
        chain: &[rustls_pki_types::CertificateDer<'static>],
    ) -> Result<(), ProxyCertificateError> {
        self.verifier
            .verify_chain(chain)
            .map_err(|e| ProxyCertificateError::Verify(e.to_string()))?;
        if self.config.allowed_names.is_empty() {
            return Ok(());
        }
        let cn = chain.first().map(|c| common_name(c)).unwrap_or_default();
        if self.config.allowed_names.contains(&cn) {
            Ok(())
        } else {
            Err(ProxyCertificateError::NotAllowed(cn))
        }
    }
}

/// The subject's CN as Go's `pkix.Name.CommonName` has it (the last one), or empty.
fn common_name(der: &[u8]) -> String {
    x509_parser::parse_x509_certificate(der)
        .ok()
        .and_then(|(_, c)| {
            c.subject()
                .iter_common_name()
                .last()
                .and_then(|cn| cn.as_str().ok().map(String::from))
        })
        .unwrap_or_default()
}

#[async_trait]
impl Authenticator for RequestHeaderAuthenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> Authenticated {
        let Some(chain) = req.peer_certificates.filter(|c| !c.is_empty()) else {
            return Authenticated::NoCredentials;
        };
        if let Err(e) = self.check(chain) {
            return Authenticated::Failed(e.to_string());
        }
        match self.config.user_from_headers(req.headers) {
            Some(user) => Authenticated::User(user),
            None => Authenticated::NoCredentials,
        }
    }
}

#[cfg(test)]
#[path = "request_header_tests.rs"]
mod tests;
