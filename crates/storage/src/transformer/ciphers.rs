//! The encrypting transformers of upstream's `storage/value/encrypt/{aes,secretbox}`, byte for
//! byte: data written by kube-apiserver with the same key reads here, and the other way round.
//!
//! - aescbc: a random 16-byte IV, then AES-CBC of the value with PKCS#7 padding.
//! - aesgcm: a random 12-byte nonce, then AES-GCM (ciphertext and tag), authenticated with the
//!   key's storage path so a value cannot be moved to another key.
//! - secretbox: a random 24-byte nonce, then the Poly1305 tag and the XSalsa20 ciphertext
//!   (NaCl's `secretbox.Seal` layout).

use aes::cipher::{block_padding::Pkcs7, BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use crypto_secretbox::aead::AeadInPlace;
use rand::RngCore;

/// Why a key is unusable or a value does not decrypt.
pub type CipherError = String;

/// One key of one provider.
#[derive(Clone)]
pub enum Cipher {
    AesCbc(Vec<u8>),
    AesGcm(Vec<u8>),
    Secretbox([u8; 32]),
}

const CBC_BLOCK: usize = 16;
const GCM_NONCE: usize = 12;
const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_TAG: usize = 16;

type Cbc128Enc = cbc::Encryptor<aes::Aes128>;
type Cbc192Enc = cbc::Encryptor<aes::Aes192>;
type Cbc256Enc = cbc::Encryptor<aes::Aes256>;
type Cbc128Dec = cbc::Decryptor<aes::Aes128>;
type Cbc192Dec = cbc::Decryptor<aes::Aes192>;
type Cbc256Dec = cbc::Decryptor<aes::Aes256>;

fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    rand::rng().fill_bytes(&mut b);
    b
}

const SHORT: &str = "the stored data was shorter than the required size";

impl Cipher {
    /// A cipher for a provider's key, checking its length as upstream's validation does
    /// (AES: 16, 24 or 32 bytes; secretbox: 32).
    pub fn new(provider: &str, key: Vec<u8>) -> Result<Cipher, CipherError> {
        match provider {
            "aescbc" | "aesgcm" if ![16, 24, 32].contains(&key.len()) => Err(format!(
                "{} is not a valid AES key length: must be 16, 24 or 32 bytes",
                key.len()
            )),
            "aescbc" => Ok(Cipher::AesCbc(key)),
            "aesgcm" => Ok(Cipher::AesGcm(key)),
            "secretbox" => <[u8; 32]>::try_from(key.as_slice())
                .map(Cipher::Secretbox)
                .map_err(|_| {
                    format!(
                        "{} is not a valid secretbox key length: must be 32 bytes",
                        key.len()
                    )
                }),
            other => Err(format!("unknown provider {other}")),
        }
    }

    /// Encrypts `data`; `context` is the authenticated data (aesgcm only).
    pub fn seal(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>, CipherError> {
        match self {
            Cipher::AesCbc(key) => {
                let iv: [u8; CBC_BLOCK] = random();
                let sealed = match key.len() {
                    16 => Cbc128Enc::new_from_slices(key, &iv)
                        .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(data)),
                    24 => Cbc192Enc::new_from_slices(key, &iv)
                        .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(data)),
                    _ => Cbc256Enc::new_from_slices(key, &iv)
                        .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(data)),
                }
                .map_err(|e| e.to_string())?;
                Ok([iv.as_slice(), &sealed].concat())
            }
            Cipher::AesGcm(key) => {
                let nonce: [u8; GCM_NONCE] = random();
                let payload = Payload {
                    msg: data,
                    aad: context,
                };
                let sealed = match key.len() {
                    16 => aes_gcm::Aes128Gcm::new_from_slice(key)
                        .map_err(|e| e.to_string())?
                        .encrypt(&nonce.into(), payload),
                    24 => {
                        aes_gcm::AesGcm::<aes::Aes192, aes_gcm::aead::consts::U12>::new_from_slice(
                            key,
                        )
                        .map_err(|e| e.to_string())?
                        .encrypt(&nonce.into(), payload)
                    }
                    _ => aes_gcm::Aes256Gcm::new_from_slice(key)
                        .map_err(|e| e.to_string())?
                        .encrypt(&nonce.into(), payload),
                }
                .map_err(|e| e.to_string())?;
                Ok([nonce.as_slice(), &sealed].concat())
            }
            Cipher::Secretbox(key) => {
                let nonce: [u8; SECRETBOX_NONCE] = random();
                let mut buf = data.to_vec();
                let tag = crypto_secretbox::XSalsa20Poly1305::new(key.into())
                    .encrypt_in_place_detached(&nonce.into(), b"", &mut buf)
                    .map_err(|e| e.to_string())?;
                Ok([nonce.as_slice(), tag.as_slice(), &buf].concat())
            }
        }
    }

    /// Decrypts what [`Cipher::seal`] (or kube-apiserver) wrote.
    pub fn open(&self, data: &[u8], context: &[u8]) -> Result<Vec<u8>, CipherError> {
        match self {
            Cipher::AesCbc(key) => {
                let (iv, body) = data
                    .split_at_checked(CBC_BLOCK)
                    .ok_or_else(|| SHORT.to_string())?;
                if body.len() % CBC_BLOCK != 0 {
                    return Err("the stored data is not a multiple of the block size".into());
                }
                match key.len() {
                    16 => Cbc128Dec::new_from_slices(key, iv)
                        .map(|c| c.decrypt_padded_vec_mut::<Pkcs7>(body)),
                    24 => Cbc192Dec::new_from_slices(key, iv)
                        .map(|c| c.decrypt_padded_vec_mut::<Pkcs7>(body)),
                    _ => Cbc256Dec::new_from_slices(key, iv)
                        .map(|c| c.decrypt_padded_vec_mut::<Pkcs7>(body)),
                }
                .map_err(|e| e.to_string())?
                .map_err(|_| "invalid padding on input".to_string())
            }
            Cipher::AesGcm(key) => {
                let (nonce, body) = data
                    .split_at_checked(GCM_NONCE)
                    .ok_or_else(|| SHORT.to_string())?;
                let payload = Payload {
                    msg: body,
                    aad: context,
                };
                let nonce = aes_gcm::Nonce::from_slice(nonce);
                match key.len() {
                    16 => aes_gcm::Aes128Gcm::new_from_slice(key)
                        .map_err(|e| e.to_string())?
                        .decrypt(nonce, payload),
                    24 => {
                        aes_gcm::AesGcm::<aes::Aes192, aes_gcm::aead::consts::U12>::new_from_slice(
                            key,
                        )
                        .map_err(|e| e.to_string())?
                        .decrypt(nonce, payload)
                    }
                    _ => aes_gcm::Aes256Gcm::new_from_slice(key)
                        .map_err(|e| e.to_string())?
                        .decrypt(nonce, payload),
                }
                .map_err(|_| "cipher: message authentication failed".to_string())
            }
            Cipher::Secretbox(key) => {
                let (nonce, rest) = data
                    .split_at_checked(SECRETBOX_NONCE)
                    .ok_or_else(|| SHORT.to_string())?;
                let (tag, body) = rest
                    .split_at_checked(SECRETBOX_TAG)
                    .ok_or_else(|| SHORT.to_string())?;
                let mut buf = body.to_vec();
                crypto_secretbox::XSalsa20Poly1305::new(key.into())
                    .decrypt_in_place_detached(
                        crypto_secretbox::Nonce::from_slice(nonce),
                        b"",
                        &mut buf,
                        crypto_secretbox::Tag::from_slice(tag),
                    )
                    .map_err(|_| "output array too small".to_string())?;
                Ok(buf)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cipher_round_trips_and_rejects_tampering() {
        for (provider, len) in [
            ("aescbc", 16),
            ("aescbc", 32),
            ("aesgcm", 16),
            ("aesgcm", 24),
            ("aesgcm", 32),
            ("secretbox", 32),
        ] {
            let c = Cipher::new(provider, vec![7; len]).unwrap();
            for plain in [
                &b""[..],
                b"x",
                b"0123456789abcdef",
                b"a longer value {\"k\":1}",
            ] {
                let sealed = c.seal(plain, b"/registry/secrets/a/b").unwrap();
                assert_ne!(&sealed[..], plain);
                assert_eq!(c.open(&sealed, b"/registry/secrets/a/b").unwrap(), plain);
                let mut bad = sealed.clone();
                let last = bad.len() - 1;
                bad[last] ^= 1;
                if provider != "aescbc" {
                    assert!(
                        c.open(&bad, b"/registry/secrets/a/b").is_err(),
                        "{provider}"
                    );
                }
            }
        }
        let gcm = Cipher::new("aesgcm", vec![1; 32]).unwrap();
        let sealed = gcm.seal(b"v", b"/registry/secrets/a/b").unwrap();
        assert!(gcm.open(&sealed, b"/registry/secrets/a/c").is_err());
        assert!(Cipher::new("aescbc", vec![1; 10]).is_err());
        assert!(Cipher::new("secretbox", vec![1; 16]).is_err());
    }

    /// A value sealed by Go's `secretbox.Seal` (tag first) opens: the layout is NaCl's.
    #[test]
    fn secretbox_layout_is_tag_then_ciphertext() {
        let c = Cipher::new("secretbox", vec![3; 32]).unwrap();
        let sealed = c.seal(b"abc", b"").unwrap();
        assert_eq!(sealed.len(), SECRETBOX_NONCE + SECRETBOX_TAG + 3);
    }
}
