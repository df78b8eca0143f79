//! The SSH Ed25519 stanza (kind 5), built as age's `ssh-ed25519` stanza with paraes's own
//! strings: the recipient's Ed25519 key converted to X25519, an ephemeral-static agreement
//! multiplied by a tweak that binds the SSH key, and D wrapped under HKDF-SHA256 of it; a
//! 4-byte tag of the key lets a reader skip stanzas for other keys (and ask for a passphrase
//! only for its own). Its keys are OpenSSH's (`ssh-ed25519 AAAA...` lines, private key files;
//! `ssh_text.rs` reads the text).

use std::sync::Arc;

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use sha2::{Digest, Sha512};
use zeroize::Zeroizing;

use super::ssh::{put_string, secret_text, tag_of, Secret, TAG_LEN};
use super::x25519::agree;
use super::{
    hkdf, BodyLen, Identity, Kind, Recipient, StanzaKind, Wrap, WrapKey, OPENSSH, WRAPPED_LEN,
};
use crate::container::identity::{
    degenerate, random_secret, AskPassphrase, IdentityKey, PublicRecipient, RecipientKey,
    SecretIdentity, TextKeys,
};
use crate::container::ContainerError;

/// The SSH Ed25519 stanza kind.
pub(super) struct SshEd25519;

/// The SSH key type, as OpenSSH writes it.
const KEY_TYPE: &str = "ssh-ed25519";
/// HKDF-SHA256 info of the tweak, derived from the public key alone.
const TWEAK_INFO: &[u8] = b"paraes 2026-11 container v2 ssh-ed25519 stanza tweak";
/// HKDF-SHA256 info of the wrap key.
const WRAP_INFO: &[u8] = b"paraes 2026-11 container v2 ssh-ed25519 stanza wrap key";
/// Bytes of the ephemeral X25519 share after the tag.
const SHARE_LEN: usize = 32;

/// An SSH Ed25519 public key a file can be encrypted to, with what sealing needs of it.
#[derive(Clone)]
pub(crate) struct SshEd25519Recipient {
    /// The SSH key tag of its wire encoding (string "ssh-ed25519", string (its 32 bytes)).
    tag: [u8; TAG_LEN],
    /// The key converted to X25519 (the Montgomery u of its Edwards point).
    montgomery: x25519_dalek::PublicKey,
    /// HKDF-SHA256(salt = wire, ikm = empty, info = TWEAK_INFO): an X25519 scalar, public.
    tweak: [u8; 32],
    /// Its OpenSSH line, without a comment.
    line: String,
}

/// The private key of an [`SshEd25519Recipient`]: its X25519 scalar (the first 32 bytes of
/// SHA-512 of the Ed25519 seed, clamped when used), ready or locked by a passphrase.
pub(crate) struct SshEd25519Identity {
    recipient: SshEd25519Recipient,
    scalar: Secret<Zeroizing<[u8; 32]>>,
    /// The key file's text, as read.
    text: Zeroizing<String>,
}

impl Kind for SshEd25519 {
    fn byte(&self) -> u8 {
        5
    }

    fn name(&self) -> &'static str {
        "ssh-ed25519 recipient"
    }

    fn label(&self) -> &'static str {
        "ssh-ed25519"
    }

    fn body_len(&self) -> BodyLen {
        BodyLen::Exact(TAG_LEN + SHARE_LEN + WRAPPED_LEN)
    }

    fn describe(&self, args: &[u8]) -> Result<StanzaKind, ContainerError> {
        let tag: [u8; TAG_LEN] = args[..TAG_LEN].try_into().expect("length checked");
        Ok(StanzaKind::known(self.byte(), self.name()).with_ssh_tag(tag))
    }

    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>> {
        let to: &SshEd25519Recipient = recipient.public_key()?;
        Some((|| {
            let seed = random_secret()?;
            let ephemeral = x25519_dalek::StaticSecret::from(*seed);
            let share = x25519_dalek::PublicKey::from(&ephemeral);
            // Parsing refused small-order keys already; this is the same check.
            let first = agree(&ephemeral, &to.montgomery).ok_or_else(|| {
                ContainerError::BadRecipient(
                    "a small-order Ed25519 point, which no real key is".into(),
                )
            })?;
            let mut args = Vec::with_capacity(TAG_LEN + SHARE_LEN);
            args.extend_from_slice(&to.tag);
            args.extend_from_slice(share.as_bytes());
            Ok(Wrap {
                args,
                key: wrap_key(to, first.as_bytes(), share.as_bytes()),
            })
        })())
    }

    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        _max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError> {
        let Some(id) = identity.secret_key::<SshEd25519Identity>() else {
            return Ok(None);
        };
        if args[..TAG_LEN] != id.recipient.tag {
            // Another key's stanza: skipped without unlocking this key.
            return Ok(None);
        }
        let share: [u8; SHARE_LEN] = args[TAG_LEN..].try_into().expect("length checked");
        let scalar = id.scalar.get()?;
        let secret = x25519_dalek::StaticSecret::from(**scalar);
        let Some(first) = agree(&secret, &x25519_dalek::PublicKey::from(share)) else {
            return Ok(None);
        };
        Ok(Some(wrap_key(&id.recipient, first.as_bytes(), &share)))
    }

    fn recipient_tag<'a>(&self, args: &'a [u8]) -> Option<&'a [u8]> {
        Some(&args[..TAG_LEN])
    }

    fn text(&self) -> Option<&'static dyn TextKeys> {
        Some(&OPENSSH)
    }
}

/// The wrap key, as age's ssh-ed25519 stanza makes it with its own strings: the agreement
/// `first` = X25519(e, pk_X) = X25519(r, E) multiplied by the tweak, then HKDF-SHA256 salted
/// with the ephemeral share and the recipient's X25519 key.
fn wrap_key(to: &SshEd25519Recipient, first: &[u8; 32], share: &[u8; 32]) -> WrapKey {
    let shared = Zeroizing::new(x25519_dalek::x25519(to.tweak, *first));
    let mut salt = [0u8; 64];
    salt[..32].copy_from_slice(share);
    salt[32..].copy_from_slice(to.montgomery.as_bytes());
    hkdf(Some(&salt), &shared[..], WRAP_INFO)
}

/// The recipient of the Ed25519 public key `public` (32 bytes), refusing bytes that are not a
/// point of the curve, a non-canonical encoding, and small-order points (their X25519 form is
/// a low-order point: every agreement with it is all zero).
pub(super) fn recipient(public: &[u8; 32]) -> Result<PublicRecipient, String> {
    Ok(PublicRecipient::new(checked(public)?))
}

/// [`recipient`]'s key, checked.
fn checked(public: &[u8; 32]) -> Result<SshEd25519Recipient, String> {
    let point = CompressedEdwardsY(*public)
        .decompress()
        .filter(|point| point.compress().0 == *public)
        .ok_or_else(|| {
            "its ssh-ed25519 key is not a point of the Ed25519 curve, which no real key is: \
             copy the line again"
                .to_string()
        })?;
    if point.is_small_order() {
        return Err(degenerate("its Ed25519 key is a small-order point"));
    }
    let mut wire = Vec::with_capacity(51);
    put_string(&mut wire, KEY_TYPE.as_bytes());
    put_string(&mut wire, public);
    let tweak = hkdf(Some(&wire), &[], TWEAK_INFO);
    Ok(SshEd25519Recipient {
        tag: tag_of(&wire),
        montgomery: x25519_dalek::PublicKey::from(point.to_montgomery().to_bytes()),
        tweak: *tweak,
        line: super::ssh::public_line(&wire),
    })
}

/// The identity of an OpenSSH Ed25519 private key (`what` names it), locked if it has a
/// passphrase.
pub(super) fn identity(
    key: ssh_key::PrivateKey,
    what: &str,
    ask: &Arc<dyn AskPassphrase>,
) -> Result<SecretIdentity, String> {
    let public = key
        .public_key()
        .key_data()
        .ed25519()
        .expect("an Ed25519 key")
        .0;
    let recipient = checked(&public)?;
    let text = secret_text(&key.to_openssh(ssh_key::LineEnding::LF).map_err(|_| {
        "the OpenSSH private key in it does not encode again: it is damaged".to_string()
    })?);
    let scalar = if key.is_encrypted() {
        Secret::locked(what, key, ask, scalar_of)
    } else {
        Secret::ready(what, scalar_of(&key)?)
    };
    Ok(SecretIdentity::new(SshEd25519Identity {
        recipient,
        scalar,
        text,
    }))
}

/// The X25519 scalar of a decrypted Ed25519 key: the first 32 bytes of SHA-512 of its seed (as
/// Ed25519 derives its signing scalar, RFC 8032 section 5.1.5). The seed must give the key's
/// public key (a file whose halves disagree is refused).
fn scalar_of(key: &ssh_key::PrivateKey) -> Result<Zeroizing<[u8; 32]>, String> {
    let pair = key.key_data().ed25519().ok_or_else(|| {
        "the decrypted key is not an Ed25519 key: the file is damaged".to_string()
    })?;
    let seed = Zeroizing::new(pair.private.to_bytes());
    // Hashed into a buffer that is wiped (Sha512::digest would return an unwiped copy).
    let mut digest = Zeroizing::new(sha2::digest::Output::<Sha512>::default());
    Sha512::new_with_prefix(&seed[..]).finalize_into(&mut digest);
    let mut scalar = Zeroizing::new([0u8; 32]);
    scalar.copy_from_slice(&digest[..32]);
    if EdwardsPoint::mul_base_clamped(*scalar).compress().0 != pair.public.0 {
        return Err("its private key does not give its public key: the key file is damaged".into());
    }
    Ok(scalar)
}

impl RecipientKey for SshEd25519Recipient {
    fn text(&self) -> String {
        self.line.clone()
    }
}

impl IdentityKey for SshEd25519Identity {
    fn recipient(&self) -> PublicRecipient {
        PublicRecipient::new(self.recipient.clone())
    }

    fn secret_text(&self) -> Zeroizing<String> {
        self.text.clone()
    }

    fn may_prompt(&self) -> bool {
        self.scalar.may_prompt()
    }
}
