//! Encryption at rest: the value transformer between the backends and the bytes they store,
//! where upstream's storage applies its `value.Transformer` (`--encryption-provider-config`).
//!
//! Every value a backend writes passes [`Codec::encode`] and every value it reads
//! [`Codec::decode`]; resources the configuration names are encrypted by their first provider
//! and read by whichever provider's prefix (`k8s:enc:<provider>:v1:<key>:`) the stored value
//! carries, so keys can be rotated and encryption turned on or off without rewriting.
//! Other resources are stored as they are.

mod ciphers;
mod config;

use crate::error::{Error, Result};
use crate::events::{decode_stored, encode_for_storage};
use crate::interface::Revision;
use ciphers::Cipher;
use kapi_machinery::{GroupResource, Object};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

/// What every encrypted value starts with; the identity provider refuses to read such values.
const ENCRYPTED_MARK: &[u8] = b"k8s:enc:";

/// One provider key: its stored prefix and cipher (`None`: identity, the empty prefix).
struct Prefixed {
    prefix: Vec<u8>,
    cipher: Option<Cipher>,
}

/// The providers of one resource entry, in order.
struct Chain {
    entries: Vec<Prefixed>,
}

/// Which keys a rule covers.
enum Selector {
    /// `*.*`
    All,
    /// `secrets`, `deployments.apps`, `widgets.example.com`.
    Resource { resource: String, group: String },
}

struct Rule {
    selector: Selector,
    chain: Arc<Chain>,
}

/// The transformers of an encryption configuration, by resource.
pub struct Transformers {
    rules: Vec<Rule>,
}

impl std::fmt::Debug for Transformers {
    // Never prints keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Transformers({} rules)", self.rules.len())
    }
}

/// Whether a stored key is one of the selected resource's: under its storage prefix
/// (`GroupResource::storage_prefix`: `/secrets/ns/x`, `/minions/x`), a custom resource's
/// `/<group>/<plural>/`, or for another group's resource the plural alone, where an earlier
/// kapi kept CRDs, APIServices and Ingresses until they are moved.
fn key_matches(selector: &Selector, key: &str) -> bool {
    let (resource, group) = match selector {
        Selector::All => return true,
        Selector::Resource { resource, group } => (resource.as_str(), group.as_str()),
    };
    let key = key.trim_start_matches('/');
    let under = |prefix: &str| {
        key.strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    under(&GroupResource::new(group, resource).storage_prefix())
        || (!group.is_empty() && (under(&format!("{group}/{resource}")) || under(resource)))
}

impl Transformers {
    /// Reads an `EncryptionConfiguration` file.
    pub fn from_file(path: &Path) -> std::result::Result<Transformers, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "error reading encryption provider configuration file {:?}: {e}",
                path.display()
            )
        })?;
        config::parse(&text)
    }

    /// Parses an `EncryptionConfiguration` (YAML or JSON).
    pub fn parse(text: &str) -> std::result::Result<Transformers, String> {
        config::parse(text)
    }

    fn chain(&self, key: &str) -> Option<&Chain> {
        self.rules
            .iter()
            .find(|r| key_matches(&r.selector, key))
            .map(|r| r.chain.as_ref())
    }

    /// Encrypts a value for `key` with its resource's first provider; `stored_key` (the key
    /// as the backend stores it) is the authenticated data.
    pub fn to_storage(&self, key: &str, stored_key: &str, data: Vec<u8>) -> Result<Vec<u8>> {
        let Some(first) = self.chain(key).and_then(|c| c.entries.first()) else {
            return Ok(data);
        };
        match &first.cipher {
            None => Ok(data),
            Some(cipher) => {
                let sealed = cipher.seal(&data, stored_key.as_bytes()).map_err(|e| {
                    Error::Internal(format!("unable to transform key {stored_key:?}: {e}"))
                })?;
                Ok([first.prefix.as_slice(), &sealed].concat())
            }
        }
    }

    /// Decrypts a stored value with the provider whose prefix it carries.
    pub fn from_storage<'a>(
        &self,
        key: &str,
        stored_key: &str,
        data: &'a [u8],
    ) -> Result<Cow<'a, [u8]>> {
        let corrupt = |message: String| Error::Corrupt {
            key: stored_key.to_string(),
            message,
        };
        let Some(chain) = self.chain(key) else {
            return if data.starts_with(ENCRYPTED_MARK) {
                Err(corrupt(
                    "the value is encrypted but no provider is configured for its resource".into(),
                ))
            } else {
                Ok(Cow::Borrowed(data))
            };
        };
        let mut last = None;
        for entry in &chain.entries {
            let Some(rest) = data.strip_prefix(entry.prefix.as_slice()) else {
                continue;
            };
            match &entry.cipher {
                // Identity reads anything but encrypted data; a later provider may read that.
                None if data.starts_with(ENCRYPTED_MARK) => {
                    last = Some("identity transformer tried to read encrypted data".to_string());
                }
                None => return Ok(Cow::Borrowed(data)),
                Some(cipher) => match cipher.open(rest, stored_key.as_bytes()) {
                    Ok(plain) => return Ok(Cow::Owned(plain)),
                    Err(e) => last = Some(e),
                },
            }
        }
        Err(corrupt(format!(
            "unable to decrypt: {}",
            last.unwrap_or_else(|| "no matching prefix found".into())
        )))
    }
}

/// A backend's encoder: objects to stored bytes and back, through the transformers when an
/// encryption configuration is set. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Codec {
    transformers: Option<Arc<Transformers>>,
    /// The backend's key prefix (etcd's `/registry`): with it a key is the authenticated data
    /// upstream uses, the key as stored.
    prefix: Arc<str>,
}

impl Codec {
    pub fn new(transformers: Option<Arc<Transformers>>, prefix: &str) -> Codec {
        Codec {
            transformers,
            prefix: prefix.into(),
        }
    }

    /// The stored bytes of `obj` at `key` (without `resourceVersion`), encrypted if configured.
    pub(crate) fn encode(&self, key: &str, obj: &Object) -> Result<Vec<u8>> {
        self.seal(key, encode_for_storage(obj))
    }

    /// Encrypts already encoded bytes (the plain form of [`Codec::encode`]).
    pub(crate) fn seal(&self, key: &str, plain: Vec<u8>) -> Result<Vec<u8>> {
        match &self.transformers {
            None => Ok(plain),
            Some(t) => t.to_storage(key, &format!("{}{key}", self.prefix), plain),
        }
    }

    /// The plain stored bytes of a value read at `key`.
    pub(crate) fn plain<'a>(&self, key: &str, data: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match &self.transformers {
            None => Ok(Cow::Borrowed(data)),
            Some(t) => t.from_storage(key, &format!("{}{key}", self.prefix), data),
        }
    }

    /// Decodes a value read at `key` and stamps its revision.
    pub(crate) fn decode(&self, key: &str, data: &[u8], revision: Revision) -> Result<Object> {
        decode_stored(key, &self.plain(key, data)?, revision)
    }
}

#[cfg(test)]
mod tests;
