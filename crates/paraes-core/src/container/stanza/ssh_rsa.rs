//! The SSH RSA stanza (kind 6), built as age's `ssh-rsa` stanza with paraes's own label: a
//! fresh 32-byte secret encrypted to the recipient's RSA key with RSA-OAEP (SHA-256, MGF1
//! with SHA-256, a paraes label), and D wrapped under HKDF-SHA256 of that secret; a 4-byte
//! tag of the key lets a reader skip stanzas for other keys. Keys of 2,048 to 16,384 bits,
//! so the stanza's length varies with the modulus. Its keys are OpenSSH's (`ssh-rsa AAAA...`
//! lines, private key files, PEM `id_rsa`; `ssh_text.rs` reads the text).
//!
//! The Marvin timing attack (RUSTSEC-2023-0071) recovers an RSA decryption by timing many
//! decryptions of chosen ciphertexts; the `rsa` 0.10 release used here does its private-key
//! arithmetic in constant time (crypto-bigint), and decryption is blinded with fresh
//! randomness each time ([`SysRandom`]), and paraes is no oracle: it decrypts only what its
//! user gives it, locally, once per stanza whose tag names the key, and every failure (OAEP or
//! the wrap's tag) reads the same, "this stanza does not open". docs/FORMAT.md has the details.

use std::sync::Arc;

use rsa::traits::PublicKeyParts;
use rsa::{BoxedUint, Oaep};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::ssh::{
    magnitude, put_mpint, put_string, secret_text, tag_of, Secret, MAX_RSA_BITS, MIN_RSA_BITS,
    TAG_LEN,
};
use super::{
    hkdf, BodyLen, Identity, Kind, Recipient, StanzaKind, Wrap, WrapKey, OPENSSH, WRAPPED_LEN,
};
use crate::container::identity::{
    random_secret, AskPassphrase, IdentityKey, PublicRecipient, RecipientKey, SecretIdentity,
    TextKeys,
};
use crate::container::keys::random_bytes;
use crate::container::ContainerError;

/// The SSH RSA stanza kind.
pub(super) struct SshRsa;

/// The SSH key type, as OpenSSH writes it.
const KEY_TYPE: &str = "ssh-rsa";
/// The RSA-OAEP label.
const LABEL: &[u8] = b"paraes 2026-11 container v2 ssh-rsa stanza";
/// HKDF-SHA256 info of the wrap key.
const WRAP_INFO: &[u8] = b"paraes 2026-11 container v2 ssh-rsa stanza wrap key";
/// Bytes of the secret that RSA-OAEP carries.
const SECRET_LEN: usize = 32;
/// Bytes of the shortest and the longest ciphertext: of a modulus of `MIN_RSA_BITS` and
/// `MAX_RSA_BITS` bits.
const MIN_CIPHERTEXT: usize = MIN_RSA_BITS / 8;
const MAX_CIPHERTEXT: usize = MAX_RSA_BITS / 8;
/// The largest public exponent the `rsa` crate takes (2^33 - 1).
const MAX_EXPONENT: u64 = (1 << 33) - 1;

/// An SSH RSA public key a file can be encrypted to.
#[derive(Clone)]
pub(crate) struct SshRsaRecipient {
    key: rsa::PublicKey,
    /// SHA-256 of the key's SSH wire encoding (string "ssh-rsa", mpint e, mpint n): its first
    /// 4 bytes are the tag; all 32 salt the wrap key.
    key_hash: [u8; 32],
    /// Its OpenSSH line, without a comment.
    line: String,
}

/// The private key of an [`SshRsaRecipient`], ready or locked by a passphrase.
pub(crate) struct SshRsaIdentity {
    recipient: SshRsaRecipient,
    key: Secret<rsa::PrivateKey>,
    /// The key file's text, as read.
    text: Zeroizing<String>,
}

impl SshRsaRecipient {
    fn tag(&self) -> [u8; TAG_LEN] {
        self.key_hash[..TAG_LEN].try_into().expect("4 bytes")
    }
}

impl Kind for SshRsa {
    fn byte(&self) -> u8 {
        6
    }

    fn name(&self) -> &'static str {
        "ssh-rsa recipient"
    }

    fn label(&self) -> &'static str {
        "ssh-rsa"
    }

    fn body_len(&self) -> BodyLen {
        BodyLen::Between(
            TAG_LEN + MIN_CIPHERTEXT + WRAPPED_LEN,
            TAG_LEN + MAX_CIPHERTEXT + WRAPPED_LEN,
        )
    }

    fn describe(&self, args: &[u8]) -> Result<StanzaKind, ContainerError> {
        let tag: [u8; TAG_LEN] = args[..TAG_LEN].try_into().expect("length checked");
        Ok(StanzaKind::known(self.byte(), self.name()).with_ssh_tag(tag))
    }

    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>> {
        let to: &SshRsaRecipient = recipient.public_key()?;
        Some((|| {
            let secret = random_secret()?;
            let ciphertext = to
                .key
                .encrypt(
                    &mut SysRandom,
                    Oaep::<Sha256>::new_with_label(LABEL),
                    &secret[..],
                )
                .map_err(|e| ContainerError::BadRecipient(format!("RSA-OAEP failed: {e}")))?;
            let mut args = Vec::with_capacity(TAG_LEN + ciphertext.len());
            args.extend_from_slice(&to.tag());
            args.extend_from_slice(&ciphertext);
            Ok(Wrap {
                args,
                key: hkdf(Some(&to.key_hash), &secret[..], WRAP_INFO),
            })
        })())
    }

    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        _max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError> {
        let Some(id) = identity.secret_key::<SshRsaIdentity>() else {
            return Ok(None);
        };
        let (tag, ciphertext) = args.split_at(TAG_LEN);
        if tag != id.recipient.tag() || ciphertext.len() != id.recipient.key.size() {
            // Another key's stanza: skipped without unlocking this key.
            return Ok(None);
        }
        let key = id.key.get()?;
        // Blinded with fresh randomness; a failure (OAEP or the wrap's tag later) is "does not
        // open", whatever failed.
        let Ok(secret) = key.decrypt_blinded(
            &mut SysRandom,
            Oaep::<Sha256>::new_with_label(LABEL),
            ciphertext,
        ) else {
            return Ok(None);
        };
        let secret = Zeroizing::new(secret);
        if secret.len() != SECRET_LEN {
            return Ok(None);
        }
        Ok(Some(hkdf(Some(&id.recipient.key_hash), &secret, WRAP_INFO)))
    }

    fn recipient_tag<'a>(&self, args: &'a [u8]) -> Option<&'a [u8]> {
        Some(&args[..TAG_LEN])
    }

    fn text(&self) -> Option<&'static dyn TextKeys> {
        Some(&OPENSSH)
    }
}

/// The system's random generator (getrandom) for RSA-OAEP's seed and the blinding of
/// decryption, as the `rsa` crate's RNG traits (rand_core 0.10) want it.
struct SysRandom;

impl rsa::rand_core::TryRng for SysRandom {
    type Error = ContainerError;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut bytes = [0u8; 4];
        random_bytes(&mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut bytes = [0u8; 8];
        random_bytes(&mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        random_bytes(dst)
    }
}

impl rsa::rand_core::TryCryptoRng for SysRandom {}

/// `magnitude` (big-endian) as an integer of at least `bits` bits of precision.
fn uint(magnitude: &[u8], bits: usize) -> BoxedUint {
    let bits = bits.max(8 * magnitude.len()).next_multiple_of(64);
    BoxedUint::from_be_slice(magnitude, u32::try_from(bits).expect("small"))
        .expect("the precision holds the bytes")
}

/// The number of significant bits of the big-endian `magnitude`.
fn bit_len(magnitude: &[u8]) -> usize {
    match magnitude.iter().position(|&b| b != 0) {
        None => 0,
        Some(first) => 8 * (magnitude.len() - first) - magnitude[first].leading_zeros() as usize,
    }
}

/// The recipient of the RSA public key with exponent `e` and modulus `n` (big-endian
/// magnitudes; `None`: a negative number), refusing a modulus outside 2,048 ..= 16,384 bits
/// or even, and an exponent below 3, even, or above 2^33 - 1.
pub(super) fn recipient(e: Option<&[u8]>, n: Option<&[u8]>) -> Result<PublicRecipient, String> {
    let (Some(e), Some(n)) = (e, n) else {
        return Err("its RSA key holds a negative number, which no real key does".into());
    };
    Ok(PublicRecipient::new(checked(e, n)?))
}

/// [`recipient`]'s key, checked.
fn checked(e: &[u8], n: &[u8]) -> Result<SshRsaRecipient, String> {
    let bits = bit_len(n);
    if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
        return Err(format!(
            "an RSA key of {bits} bits: paraes takes {MIN_RSA_BITS} to {MAX_RSA_BITS} bits \
             (make one with `ssh-keygen -t ed25519`, or `-t rsa -b 4096`)"
        ));
    }
    if n.last().is_some_and(|b| b & 1 == 0) {
        return Err("its RSA modulus is even, which no real key's is: copy it again".into());
    }
    let e_bits = bit_len(e);
    let small = e_bits < 2; // 0 or 1
    if small || e.last().is_some_and(|b| b & 1 == 0) || e_bits > 33 {
        return Err(format!(
            "its RSA public exponent is {}, which no real key's is (it must be odd, 3 or more, \
             below 2^33): copy it again",
            if small {
                "below 3"
            } else if e_bits > 33 {
                "too large"
            } else {
                "even"
            }
        ));
    }
    let e_int = uint(e, 64);
    if e_int > BoxedUint::from(MAX_EXPONENT) {
        return Err("its RSA public exponent is too large (at most 2^33 - 1)".into());
    }
    let key =
        rsa::PublicKey::new_with_size_limits(uint(n, bits), e_int, MIN_RSA_BITS..=MAX_RSA_BITS)
            .map_err(|e| format!("its RSA key is not valid ({e}): copy it again"))?;
    let mut wire = Vec::with_capacity(n.len() + e.len() + 32);
    put_string(&mut wire, KEY_TYPE.as_bytes());
    put_mpint(&mut wire, e);
    put_mpint(&mut wire, n);
    let mut key_hash = [0u8; 32];
    key_hash.copy_from_slice(&Sha256::digest(&wire));
    debug_assert_eq!(tag_of(&wire)[..], key_hash[..TAG_LEN]);
    Ok(SshRsaRecipient {
        key,
        key_hash,
        line: super::ssh::public_line(&wire),
    })
}

/// The identity of an OpenSSH RSA private key (`what` names it), locked if it has a
/// passphrase.
pub(super) fn identity(
    key: ssh_key::PrivateKey,
    what: &str,
    ask: &Arc<dyn AskPassphrase>,
) -> Result<SecretIdentity, String> {
    let public = key.public_key().key_data().rsa().expect("an RSA key");
    let (Some(e), Some(n)) = (magnitude(&public.e), magnitude(&public.n)) else {
        return Err("its RSA key holds a negative number, which no real key does".into());
    };
    let recipient = checked(e, n)?;
    let text = secret_text(&key.to_openssh(ssh_key::LineEnding::LF).map_err(|_| {
        "the OpenSSH private key in it does not encode again: it is damaged".to_string()
    })?);
    let secret = if key.is_encrypted() {
        Secret::locked(what, key, ask, private_key_of)
    } else {
        Secret::ready(what, private_key_of(&key)?)
    };
    Ok(SecretIdentity::new(SshRsaIdentity {
        recipient,
        key: secret,
        text,
    }))
}

/// The identity of an RSA key read from PEM (PKCS#1 or PKCS#8, no passphrase).
pub(super) fn identity_from_pem(
    key: rsa::PrivateKey,
    what: &str,
) -> Result<SecretIdentity, String> {
    let e = key.e().to_be_bytes();
    let n = key.n().to_be_bytes();
    let recipient = checked(&e, &n)?;
    let text = {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        let pem = key
            .to_pkcs1_pem(rsa::pkcs1::LineEnding::LF)
            .map_err(|_| "the RSA key in it does not encode again: it is damaged".to_string())?;
        secret_text(&pem)
    };
    Ok(SecretIdentity::new(SshRsaIdentity {
        recipient,
        key: Secret::ready(what, key),
        text,
    }))
}

/// The `rsa` private key of a decrypted OpenSSH RSA key, checked by the `rsa` crate (d e = 1
/// modulo lambda(n), n = p q).
fn private_key_of(key: &ssh_key::PrivateKey) -> Result<rsa::PrivateKey, String> {
    let pair = key
        .key_data()
        .rsa()
        .ok_or_else(|| "the decrypted key is not an RSA key: the file is damaged".to_string())?;
    fn part(m: &ssh_key::Mpint) -> Result<&[u8], String> {
        magnitude(m)
            .ok_or_else(|| "its RSA private key holds a negative number: it is damaged".into())
    }
    let n = part(&pair.public.n)?;
    let bits = 8 * n.len();
    rsa::PrivateKey::from_components(
        uint(n, bits),
        uint(part(&pair.public.e)?, 64),
        uint(part(&pair.private.d)?, bits),
        vec![
            uint(part(&pair.private.p)?, bits),
            uint(part(&pair.private.q)?, bits),
        ],
    )
    .map_err(|_| {
        "its RSA private key is not consistent (d, p, q and n disagree): the key file is damaged"
            .to_string()
    })
}

impl RecipientKey for SshRsaRecipient {
    fn text(&self) -> String {
        self.line.clone()
    }
}

impl IdentityKey for SshRsaIdentity {
    fn recipient(&self) -> PublicRecipient {
        PublicRecipient::new(self.recipient.clone())
    }

    fn secret_text(&self) -> Zeroizing<String> {
        self.text.clone()
    }

    fn may_prompt(&self) -> bool {
        self.key.may_prompt()
    }
}
