//! kube-apiserver's `continue` token: base64url (no padding) of
//! `{"v":"meta.k8s.io/v1","rv":N,"start":"<key suffix>"}`, where `start` is the next key to
//! read with the list prefix removed.

use crate::error::{Error, Result};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Token {
    #[serde(rename = "v")]
    api_version: String,
    #[serde(rename = "rv")]
    resource_version: i64,
    #[serde(rename = "start")]
    start_key: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// Encodes the token for continuing a list of `prefix` at `revision` from `next_key`.
pub fn encode(next_key: &str, prefix: &str, revision: i64) -> Result<String> {
    let start = next_key
        .strip_prefix(prefix)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Error::Internal(format!(
                "unable to encode next field: the key {next_key:?} is not under {prefix:?}"
            ))
        })?;
    let token = Token {
        api_version: TOKEN_VERSION.into(),
        resource_version: revision,
        start_key: start.into(),
    };
    let json = serde_json::to_vec(&token).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a token into the full key to start from and the revision of the first page.
pub fn decode(token: &str, prefix: &str) -> Result<(String, i64)> {
    let invalid = |m: String| Error::InvalidContinue(format!("continue key is not valid: {m}"));
    let data = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|e| invalid(e.to_string()))?;
    let t: Token = serde_json::from_slice(&data).map_err(|e| invalid(e.to_string()))?;
    if t.api_version != TOKEN_VERSION {
        return Err(Error::InvalidContinue(format!(
            "continue key is not valid: server does not recognize this encoded key {:?}",
            t.api_version
        )));
    }
    if t.resource_version == 0 {
        return Err(invalid(
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
        ));
    }
    if t.start_key.is_empty() {
        return Err(invalid(
            "encoded start key empty (version meta.k8s.io/v1)".into(),
        ));
    }
    // Upstream cleans the key as a path and refuses anything that escapes the prefix.
    if t.start_key.split('/').any(|seg| seg == "..") {
        return Err(Error::InvalidContinue("continue key is not valid".into()));
    }
    Ok((format!("{prefix}{}", t.start_key), t.resource_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_wire_form() {
        let t = encode("/configmaps/default/b\u{0}", "/configmaps/default/", 42).unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        assert_eq!(
            String::from_utf8(raw).unwrap(),
            r#"{"v":"meta.k8s.io/v1","rv":42,"start":"b\u0000"}"#
        );
        assert_eq!(
            decode(&t, "/configmaps/default/").unwrap(),
            ("/configmaps/default/b\u{0}".to_string(), 42)
        );
        let bad = decode("!!!", "/x/").unwrap_err();
        assert!(
            matches!(bad, Error::InvalidContinue(ref m) if m.starts_with("continue key is not valid"))
        );
        let zero = URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#);
        assert!(decode(&zero, "/x/")
            .unwrap_err()
            .to_string()
            .contains("incorrect encoded start resourceVersion"));
    }
}
