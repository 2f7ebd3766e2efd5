//! Service-account tokens whose signature was checked lately, so that a client sending the same
//! token on every request (a controller, a kubelet) costs one signature check per 10 s rather
//! than one per request. Only the signature and the decoded claims are kept: times, audiences
//! and the bound objects are checked on every request, so a deleted account or pod ends its
//! tokens at once. (kube-apiserver keeps the whole answer for 10 s, `tokencache`, so there a
//! deleted account's token works for up to 10 s more.)
//!
//! Tokens are keyed by an HMAC under a key made at start-up: the cache never holds a token.

use crate::token::Claims;
use aws_lc_rs::hmac;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a checked signature is trusted (upstream's token success cache TTL).
pub const VERIFIED_TTL: Duration = Duration::from_secs(10);

/// At most this many tokens are kept (upstream's cache: 32 stripes of 128).
const CAPACITY: usize = 4096;

type TokenKey = [u8; 32];

/// Claims of tokens whose signature verified, for [`VERIFIED_TTL`].
pub struct VerifiedTokens {
    key: hmac::Key,
    entries: Mutex<HashMap<TokenKey, (Instant, Claims)>>,
}

impl Default for VerifiedTokens {
    fn default() -> Self {
        Self::new()
    }
}

impl VerifiedTokens {
    pub fn new() -> Self {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        // Generating an HMAC key only fails when the system has no randomness; then a fixed
        // key still keys the map (the tokens are not kept either way).
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .unwrap_or_else(|_| hmac::Key::new(hmac::HMAC_SHA256, b"kapi verified tokens"));
        Self {
            key,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn key_of(&self, token: &str) -> TokenKey {
        let tag = hmac::sign(&self.key, token.as_bytes());
        let mut out = [0u8; 32];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// The claims of `token` if its signature verified less than [`VERIFIED_TTL`] ago.
    pub fn get(&self, token: &str) -> Option<Claims> {
        let key = self.key_of(token);
        let entries = self.entries.lock().ok()?;
        let (at, claims) = entries.get(&key)?;
        (at.elapsed() < VERIFIED_TTL).then(|| claims.clone())
    }

    /// Records that `token`'s signature verified, with its claims.
    pub fn insert(&self, token: &str, claims: &Claims) {
        let key = self.key_of(token);
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CAPACITY && !entries.contains_key(&key) {
            entries.retain(|_, (at, _)| at.elapsed() < VERIFIED_TTL);
            if entries.len() >= CAPACITY {
                // All current: forget one (any) rather than grow.
                if let Some(k) = entries.keys().next().copied() {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(key, (Instant::now(), claims.clone()));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_token_is_found_by_itself_only_and_never_kept_in_clear() {
        let cache = VerifiedTokens::new();
        let claims = Claims {
            iss: "issuer".into(),
            sub: "system:serviceaccount:ns:sa".into(),
            ..Default::default()
        };
        assert_eq!(cache.get("a.b.c"), None);
        cache.insert("a.b.c", &claims);
        assert_eq!(cache.get("a.b.c"), Some(claims));
        assert_eq!(cache.get("a.b.d"), None);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn it_stays_within_its_capacity() {
        let cache = VerifiedTokens::new();
        for i in 0..CAPACITY + 10 {
            cache.insert(&format!("t{i}"), &Claims::default());
        }
        assert_eq!(cache.len(), CAPACITY);
        // The newest is always kept.
        assert!(cache.get(&format!("t{}", CAPACITY + 9)).is_some());
    }
}
