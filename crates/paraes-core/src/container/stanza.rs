//! Stanzas: one per way to open a v2 container, each wrapping the file key D. Every stanza
//! derives a wrap key in its own domain and wraps D with AES-256-GCM-SIV (RFC 8452), a
//! nonce-misuse-resistant AEAD with a 128-bit tag; the wrap key is fresh per stanza (fresh salt
//! or ephemeral key), so the fixed all-zero nonce is never used twice under one key.

use aes_gcm_siv::aead::{Aead, KeyInit, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};
use hkdf::Hkdf;
use sha2::Sha256;
use x_wing::{Decapsulate, Encapsulate};
use zeroize::{Zeroize, Zeroizing};

use super::identity::{
    x25519_agree, HybridIdentity, PublicRecipient, SecretIdentity, X25519Identity,
};
use super::keys::{random_bytes, Argon2Params, FileSecret, FILE_KEY_LEN};
use super::ContainerError;
use crate::key::Key;

/// Stanza kind: a symmetric key.
pub(crate) const KIND_KEY: u8 = 1;
/// Stanza kind: a passphrase through Argon2id.
pub(crate) const KIND_PASSPHRASE: u8 = 2;
/// Stanza kind: an X25519 recipient.
pub(crate) const KIND_X25519: u8 = 3;
/// Stanza kind: an ML-KEM-768 + X25519 (X-Wing) recipient.
pub(crate) const KIND_HYBRID: u8 = 4;

/// HKDF-SHA256 info of a key-file stanza's wrap key.
const KEY_INFO: &[u8] = b"paraes 2026-11 container v2 key-file stanza wrap key";
/// HKDF-SHA256 info of a passphrase stanza's wrap key (after Argon2id).
const PASSPHRASE_INFO: &[u8] = b"paraes 2026-11 container v2 passphrase stanza wrap key";
/// HKDF-SHA256 info of an X25519 stanza's wrap key.
const X25519_INFO: &[u8] = b"paraes 2026-11 container v2 X25519 stanza wrap key";
/// HKDF-SHA256 info of a hybrid stanza's wrap key.
const HYBRID_INFO: &[u8] = b"paraes 2026-11 container v2 X-Wing stanza wrap key";
/// Associated data of every wrap, followed by the stanza kind byte.
const WRAP_AAD: &[u8] = b"paraes 2026-11 container v2 wrapped file key";

/// Bytes of a wrapped file key: D and the AES-GCM-SIV tag.
const WRAPPED_LEN: usize = FILE_KEY_LEN + 16;
const SALT_LEN: usize = 16;
const X25519_LEN: usize = 32;

/// One way to open a container: a kind byte and its body, as stored in the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stanza {
    pub(crate) kind: u8,
    pub(crate) body: Vec<u8>,
}

/// Someone a container is sealed for: each becomes one stanza.
#[derive(Clone)]
pub enum Recipient {
    /// A symmetric key K (a key file): D wrapped under HKDF-SHA256(K, fresh salt).
    Key(Key),
    /// A passphrase: D wrapped under a key stretched by Argon2id with these parameters (whose
    /// salt must be fresh).
    Passphrase(Zeroizing<Vec<u8>>, Argon2Params),
    /// A public key: ephemeral-static key agreement (X25519 or X-Wing) then HKDF-SHA256.
    Public(PublicRecipient),
}

/// Something that may open a container: each is tried on the stanzas of its kind.
#[derive(Clone)]
pub enum Identity {
    /// A symmetric key K.
    Key(Key),
    /// A passphrase.
    Passphrase(Zeroizing<Vec<u8>>),
    /// A public-key identity (secret key).
    Secret(SecretIdentity),
}

/// What a stanza is, for `info` and error messages (public, unauthenticated facts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StanzaKind {
    /// A symmetric key.
    Key,
    /// A passphrase, with its Argon2id parameters.
    Passphrase(Argon2Params),
    /// An X25519 recipient.
    X25519,
    /// A post-quantum hybrid recipient.
    Hybrid,
    /// A kind this paraes does not know (skipped when opening).
    Unknown(u8),
}

impl std::fmt::Display for StanzaKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StanzaKind::Key => f.write_str("key file"),
            StanzaKind::Passphrase(p) => write!(
                f,
                "passphrase (Argon2id m={} KiB t={} p={})",
                p.memory_kib, p.iterations, p.lanes
            ),
            StanzaKind::X25519 => f.write_str("X25519 recipient"),
            StanzaKind::Hybrid => f.write_str("ML-KEM-768 + X25519 recipient"),
            StanzaKind::Unknown(kind) => write!(f, "unknown stanza kind {kind}"),
        }
    }
}

impl Stanza {
    /// The stanza for `recipient` wrapping `file_key`.
    pub(crate) fn wrap(
        recipient: &Recipient,
        file_key: &FileSecret,
    ) -> Result<Self, ContainerError> {
        let (kind, mut body, kek) = match recipient {
            Recipient::Key(key) => {
                let mut salt = [0u8; SALT_LEN];
                random_bytes(&mut salt)?;
                let kek = hkdf(Some(&salt), key.as_bytes(), KEY_INFO);
                (KIND_KEY, salt.to_vec(), kek)
            }
            Recipient::Passphrase(passphrase, params) => {
                let kek = passphrase_kek(passphrase, params)?;
                (KIND_PASSPHRASE, params.encode().to_vec(), kek)
            }
            Recipient::Public(PublicRecipient::X25519(to)) => {
                let mut seed = Zeroizing::new([0u8; 32]);
                random_bytes(&mut seed[..])?;
                let ephemeral = x25519_dalek::StaticSecret::from(*seed);
                let share = x25519_dalek::PublicKey::from(&ephemeral);
                // Parsing refused low-order recipients already; this is the same check.
                let shared = x25519_agree(&ephemeral, &to.0).ok_or_else(|| {
                    ContainerError::BadRecipient(
                        "a low-order X25519 point, which no real key is".into(),
                    )
                })?;
                let kek = x25519_kek(shared.as_bytes(), share.as_bytes(), to.0.as_bytes());
                (KIND_X25519, share.as_bytes().to_vec(), kek)
            }
            Recipient::Public(PublicRecipient::Hybrid(to)) => {
                let (ciphertext, shared) = to.0.encapsulate();
                let shared = Zeroizing::new(shared);
                let kek = hkdf(None, &shared[..], HYBRID_INFO);
                (KIND_HYBRID, ciphertext.to_vec(), kek)
            }
        };
        body.extend_from_slice(&seal_file_key(&kek, kind, file_key));
        Ok(Stanza { kind, body })
    }

    /// What the stanza is; a stanza of a known kind with the wrong length is refused.
    pub(crate) fn kind(&self) -> Result<StanzaKind, ContainerError> {
        let expected = match self.kind {
            KIND_KEY => SALT_LEN + WRAPPED_LEN,
            KIND_PASSPHRASE => 28 + WRAPPED_LEN,
            KIND_X25519 => X25519_LEN + WRAPPED_LEN,
            KIND_HYBRID => x_wing::CIPHERTEXT_SIZE + WRAPPED_LEN,
            other => return Ok(StanzaKind::Unknown(other)),
        };
        if self.body.len() != expected {
            return Err(ContainerError::BadHeader(format!(
                "a stanza of kind {} is {} bytes, not {expected}",
                self.kind,
                self.body.len()
            )));
        }
        Ok(match self.kind {
            KIND_KEY => StanzaKind::Key,
            KIND_PASSPHRASE => {
                let params = Argon2Params::decode(self.body[..28].try_into().expect("28 bytes"));
                params.check()?;
                StanzaKind::Passphrase(params)
            }
            KIND_X25519 => StanzaKind::X25519,
            _ => StanzaKind::Hybrid,
        })
    }

    /// The file key if `identity` opens this stanza, `None` if it does not (wrong key, wrong
    /// kind). A passphrase stanza whose Argon2id cost exceeds `max_kdf_mib` is refused before
    /// Argon2id allocates anything.
    pub(crate) fn unwrap(
        &self,
        identity: &Identity,
        max_kdf_mib: u64,
    ) -> Result<Option<FileSecret>, ContainerError> {
        let kind = self.kind()?;
        if let StanzaKind::Unknown(_) = kind {
            return Ok(None);
        }
        let wrapped = &self.body[self.body.len() - WRAPPED_LEN..];
        let kek = match (kind, identity) {
            (StanzaKind::Key, Identity::Key(key)) => {
                hkdf(Some(&self.body[..SALT_LEN]), key.as_bytes(), KEY_INFO)
            }
            (StanzaKind::Passphrase(params), Identity::Passphrase(passphrase)) => {
                if params.cost_mib() > max_kdf_mib {
                    return Err(ContainerError::KdfTooCostly {
                        cost_mib: params.cost_mib(),
                        cap_mib: max_kdf_mib,
                        slots: 1,
                    });
                }
                passphrase_kek(passphrase, &params)?
            }
            (
                StanzaKind::X25519,
                Identity::Secret(SecretIdentity::X25519(X25519Identity(secret))),
            ) => {
                let share: [u8; 32] = self.body[..X25519_LEN].try_into().expect("32 bytes");
                let Some(shared) = x25519_agree(secret, &x25519_dalek::PublicKey::from(share))
                else {
                    return Ok(None);
                };
                let recipient = x25519_dalek::PublicKey::from(secret);
                x25519_kek(shared.as_bytes(), &share, recipient.as_bytes())
            }
            (
                StanzaKind::Hybrid,
                Identity::Secret(SecretIdentity::Hybrid(HybridIdentity(secret))),
            ) => {
                let ciphertext =
                    x_wing::Ciphertext::try_from(&self.body[..x_wing::CIPHERTEXT_SIZE])
                        .expect("length checked by kind()");
                let shared = Zeroizing::new(secret.decapsulate(&ciphertext));
                hkdf(None, &shared[..], HYBRID_INFO)
            }
            _ => return Ok(None),
        };
        Ok(open_file_key(&kek, self.kind, wrapped))
    }
}

/// HKDF-SHA256 (RFC 5869) of `ikm` with `salt` and `info`, 32 bytes.
///
/// What is wiped: the output; the pseudorandom key PRK, which `Hkdf::new` would drop unwiped
/// (hence `extract`); the HMAC state keyed with PRK (two SHA-256 states and a block buffer), on
/// drop at the end of this function, by sha2's and digest's `zeroize` features (the workspace
/// turns them on). What is not: the `hkdf` crate has no zeroize support of its own, and
/// `hmac` 0.13 leaves its key-xor-pad block on the stack when it is keyed.
fn hkdf(salt: Option<&[u8]>, ikm: &[u8], info: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut out = Zeroizing::new([0u8; 32]);
    let (mut prk, kdf) = Hkdf::<Sha256>::extract(salt, ikm);
    prk.as_mut_slice().zeroize();
    kdf.expand(info, &mut out[..])
        .expect("32 bytes is a valid HKDF-SHA256 length");
    out
}

/// As age's X25519 stanza: HKDF-SHA256 of the shared secret, salted with the ephemeral share
/// and the recipient's public key.
fn x25519_kek(shared: &[u8; 32], share: &[u8; 32], recipient: &[u8; 32]) -> Zeroizing<[u8; 32]> {
    let mut salt = [0u8; 64];
    salt[..32].copy_from_slice(share);
    salt[32..].copy_from_slice(recipient);
    hkdf(Some(&salt), shared, X25519_INFO)
}

fn passphrase_kek(
    passphrase: &[u8],
    params: &Argon2Params,
) -> Result<Zeroizing<[u8; 32]>, ContainerError> {
    let mut stretched = Zeroizing::new([0u8; 32]);
    params.derive_into(passphrase, &mut stretched[..])?;
    Ok(hkdf(None, &stretched[..], PASSPHRASE_INFO))
}

fn aad(kind: u8) -> Vec<u8> {
    let mut aad = WRAP_AAD.to_vec();
    aad.push(kind);
    aad
}

fn seal_file_key(kek: &[u8; 32], kind: u8, file_key: &FileSecret) -> Vec<u8> {
    let cipher = Aes256GcmSiv::new_from_slice(kek).expect("32-byte key");
    cipher
        .encrypt(
            &Nonce::default(),
            Payload {
                msg: file_key.as_bytes(),
                aad: &aad(kind),
            },
        )
        .expect("AES-GCM-SIV encrypts any short message")
}

fn open_file_key(kek: &[u8; 32], kind: u8, wrapped: &[u8]) -> Option<FileSecret> {
    let cipher = Aes256GcmSiv::new_from_slice(kek).expect("32-byte key");
    let key = Zeroizing::new(
        cipher
            .decrypt(
                &Nonce::default(),
                Payload {
                    msg: wrapped,
                    aad: &aad(kind),
                },
            )
            .ok()?,
    );
    Some(FileSecret::from_bytes(&key))
}
