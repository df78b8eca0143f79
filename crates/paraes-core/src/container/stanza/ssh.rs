//! What the two SSH stanza kinds (`ssh_ed25519.rs`, `ssh_rsa.rs`) share, as age's `agessh`
//! shares it, naming neither: the limits on SSH keys, the SSH wire encoding and the key tag
//! that lets a reader skip stanzas that are not its own, and the lock on a private key with a
//! passphrase ([`Secret`]), opened only when a stanza's tag names that key. OpenSSH's text
//! forms, which make keys of both kinds, are read in `ssh_text.rs`.

use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::container::identity::AskPassphrase;
use crate::container::ContainerError;

/// Bits of the smallest RSA modulus paraes encrypts to or decrypts with.
pub const MIN_RSA_BITS: usize = 2048;
/// Bits of the largest RSA modulus paraes encrypts to or decrypts with (each RSA stanza holds
/// a ciphertext as long as the modulus: 2,048 bytes at most).
pub const MAX_RSA_BITS: usize = 16384;
/// The most bcrypt rounds an OpenSSH private key with a passphrase may ask for (`ssh-keygen
/// -a`; OpenSSH's default is 16, and 1,024 rounds take tens of seconds): a hostile key file
/// cannot make paraes work for hours.
pub const MAX_BCRYPT_ROUNDS: u32 = 1024;
/// Bytes of the SSH key tag at the start of an SSH stanza's body.
pub(super) const TAG_LEN: usize = 4;

/// The SSH key tag: the first 4 bytes of SHA-256 of the public key's SSH wire encoding.
pub(super) fn tag_of(wire: &[u8]) -> [u8; TAG_LEN] {
    let digest = Sha256::digest(wire);
    let mut tag = [0u8; TAG_LEN];
    tag.copy_from_slice(&digest[..TAG_LEN]);
    tag
}

/// Appends an SSH wire `string` (RFC 4251 section 5): a 32-bit big-endian length, the bytes.
pub(super) fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("SSH strings here are short");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Appends an SSH wire `mpint` (RFC 4251 section 5) of the non-negative integer whose
/// big-endian magnitude is `magnitude`: leading zero bytes dropped, one zero byte put back
/// when the top bit is set (so the number reads as positive), zero as the empty string.
pub(super) fn put_mpint(out: &mut Vec<u8>, magnitude: &[u8]) {
    let start = magnitude
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(magnitude.len());
    let digits = &magnitude[start..];
    if digits.first().is_some_and(|&b| b & 0x80 != 0) {
        let mut padded = Vec::with_capacity(digits.len() + 1);
        padded.push(0);
        padded.extend_from_slice(digits);
        put_string(out, &padded);
    } else {
        put_string(out, digits);
    }
}

/// `ssh-ed25519 AAAA...`: the OpenSSH public key line (no comment) of `wire`, which the kind
/// built from a key it checked.
pub(super) fn public_line(wire: &[u8]) -> String {
    ssh_key::PublicKey::from_bytes(wire)
        .and_then(|key| key.to_openssh())
        .expect("a wire encoding paraes built reads back")
}

/// A private key's secret part (an Ed25519 scalar, an RSA private key), ready, or locked by
/// a passphrase: unlocked at its first use (the first stanza whose tag names the key), by
/// asking the caller's [`AskPassphrase`] once; the outcome, key or failure, is kept.
pub(super) struct Secret<T> {
    /// What the key is, for prompts and errors ("SSH key /home/me/.ssh/id_ed25519").
    what: String,
    unlocked: OnceLock<Result<T, String>>,
    locked: Option<Locked<T>>,
}

/// An encrypted OpenSSH private key, how to ask for its passphrase, and how its kind turns the
/// decrypted key into its secret.
struct Locked<T> {
    key: ssh_key::PrivateKey,
    ask: Arc<dyn AskPassphrase>,
    open: fn(&ssh_key::PrivateKey) -> Result<T, String>,
}

impl<T> Secret<T> {
    /// A secret that needs no passphrase.
    pub(super) fn ready(what: &str, secret: T) -> Self {
        let unlocked = OnceLock::new();
        let _ = unlocked.set(Ok(secret));
        Secret {
            what: what.to_owned(),
            unlocked,
            locked: None,
        }
    }

    /// The secret of the encrypted key `key`: `open` (the kind's) makes it from the decrypted
    /// key, once `ask` has given the passphrase.
    pub(super) fn locked(
        what: &str,
        key: ssh_key::PrivateKey,
        ask: &Arc<dyn AskPassphrase>,
        open: fn(&ssh_key::PrivateKey) -> Result<T, String>,
    ) -> Self {
        Secret {
            what: what.to_owned(),
            unlocked: OnceLock::new(),
            locked: Some(Locked {
                key,
                ask: Arc::clone(ask),
                open,
            }),
        }
    }

    /// Whether [`Secret::get`] may ask for the passphrase: the secret is locked and its unlock
    /// has not been tried yet (once tried, the outcome is kept, key or failure, and nothing is
    /// asked again).
    pub(super) fn may_prompt(&self) -> bool {
        self.locked.is_some() && self.unlocked.get().is_none()
    }

    /// The secret, unlocking it first if it is locked (this may ask for the passphrase).
    pub(super) fn get(&self) -> Result<&T, ContainerError> {
        let outcome = self.unlocked.get_or_init(|| {
            let locked = self
                .locked
                .as_ref()
                .expect("a secret is either ready or locked");
            let passphrase = locked.ask.ask(&self.what)?;
            // A wrong passphrase fails the key's check numbers (or its AEAD tag).
            let key = locked.key.decrypt(&passphrase[..]).map_err(|_| {
                "the passphrase is wrong, or the key file is damaged: try again".to_string()
            })?;
            (locked.open)(&key)
        });
        outcome
            .as_ref()
            .map_err(|why| ContainerError::IdentityLocked {
                what: self.what.clone(),
                why: why.clone(),
            })
    }
}

/// The big-endian magnitude of a non-negative mpint (zero: empty), or `None` if negative.
pub(super) fn magnitude(m: &ssh_key::Mpint) -> Option<&[u8]> {
    if m.as_bytes().is_empty() {
        Some(&[])
    } else {
        m.as_positive_bytes()
    }
}

/// Zeroizing copy of a text that holds a secret (a private key file), for
/// `SecretIdentity::to_secret_text`.
pub(super) fn secret_text(text: &str) -> Zeroizing<String> {
    let mut out = Zeroizing::new(String::with_capacity(text.len()));
    out.push_str(text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpints_are_canonical() {
        let mpint = |magnitude: &[u8]| {
            let mut out = Vec::new();
            put_mpint(&mut out, magnitude);
            out
        };
        // RFC 4251 section 5's examples.
        assert_eq!(mpint(&[]), [0, 0, 0, 0]);
        assert_eq!(mpint(&[0, 0]), [0, 0, 0, 0]);
        assert_eq!(mpint(&[0x80]), [0, 0, 0, 2, 0, 0x80]);
        assert_eq!(mpint(&[0, 0x7f, 1]), [0, 0, 0, 2, 0x7f, 1]);
    }
}
