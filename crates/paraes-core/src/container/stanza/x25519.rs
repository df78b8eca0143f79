//! The X25519 stanza (kind 3), as age's X25519 recipients: D wrapped under HKDF-SHA256 of an
//! ephemeral-static X25519 agreement, salted with the ephemeral share and the recipient's key;
//! and its keys, [`X25519Recipient`] (`paraes1...`) and [`X25519Identity`]
//! (`PARAES-SECRET-KEY-1...`), with paraes's one check for low-order points.

use zeroize::Zeroizing;

use super::{hkdf, BodyLen, Identity, Kind, Recipient, Wrap, WrapKey, WRAPPED_LEN};
use crate::container::identity::{
    degenerate, encode, random_secret, Bech32Keys, IdentityKey, PublicRecipient, RecipientKey,
    SecretIdentity,
};
use crate::container::ContainerError;

/// The X25519 stanza kind.
pub(super) struct X25519;

/// HKDF-SHA256 info of an X25519 stanza's wrap key.
const INFO: &[u8] = b"paraes 2026-11 container v2 X25519 stanza wrap key";
/// Bytes of the ephemeral share, the stanza's args.
const SHARE_LEN: usize = 32;
const RECIPIENT_HRP: &str = "paraes";
const IDENTITY_HRP: &str = "paraes-secret-key-";

/// An X25519 public key a file can be encrypted to.
#[derive(Clone, PartialEq, Eq)]
pub struct X25519Recipient(pub(crate) x25519_dalek::PublicKey);

/// The X25519 secret key that opens files encrypted to its [`X25519Recipient`].
#[derive(Clone)]
pub struct X25519Identity(pub(crate) x25519_dalek::StaticSecret);

impl Kind for X25519 {
    fn byte(&self) -> u8 {
        3
    }

    fn name(&self) -> &'static str {
        "X25519 recipient"
    }

    fn label(&self) -> &'static str {
        "x25519"
    }

    fn body_len(&self) -> BodyLen {
        BodyLen::Exact(SHARE_LEN + WRAPPED_LEN)
    }

    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>> {
        let X25519Recipient(to) = recipient.public_key()?;
        Some((|| {
            let seed = random_secret()?;
            let ephemeral = x25519_dalek::StaticSecret::from(*seed);
            let share = x25519_dalek::PublicKey::from(&ephemeral);
            // Parsing refused low-order recipients already; this is the same check.
            let shared = agree(&ephemeral, to).ok_or_else(|| {
                ContainerError::BadRecipient(
                    "a low-order X25519 point, which no real key is".into(),
                )
            })?;
            Ok(Wrap {
                args: share.as_bytes().to_vec(),
                key: wrap_key(shared.as_bytes(), share.as_bytes(), to.as_bytes()),
            })
        })())
    }

    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        _max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError> {
        let Some(X25519Identity(secret)) = identity.secret_key() else {
            return Ok(None);
        };
        let share: [u8; SHARE_LEN] = args.try_into().expect("length checked by its kind");
        let Some(shared) = agree(secret, &x25519_dalek::PublicKey::from(share)) else {
            return Ok(None);
        };
        let recipient = x25519_dalek::PublicKey::from(secret);
        Ok(Some(wrap_key(
            shared.as_bytes(),
            &share,
            recipient.as_bytes(),
        )))
    }

    fn bech32(&self) -> Option<&dyn Bech32Keys> {
        Some(self)
    }
}

impl Bech32Keys for X25519 {
    fn recipient_prefix(&self) -> &'static str {
        RECIPIENT_HRP
    }

    fn identity_prefix(&self) -> &'static str {
        IDENTITY_HRP
    }

    fn recipient(&self, data: &[u8]) -> Result<PublicRecipient, String> {
        let bytes: [u8; 32] = data
            .try_into()
            .map_err(|_| format!("{} bytes of key data, not 32", data.len()))?;
        let key = x25519_dalek::PublicKey::from(bytes);
        check_public(&key, "its X25519 key")?;
        Ok(PublicRecipient::new(X25519Recipient(key)))
    }

    fn identity(&self, secret: &[u8; 32]) -> SecretIdentity {
        SecretIdentity::new(X25519Identity(x25519_dalek::StaticSecret::from(*secret)))
    }
}

impl RecipientKey for X25519Recipient {
    fn text(&self) -> String {
        encode(RECIPIENT_HRP, self.0.as_bytes(), false).to_string()
    }
}

impl IdentityKey for X25519Identity {
    fn recipient(&self) -> PublicRecipient {
        PublicRecipient::new(X25519Recipient(x25519_dalek::PublicKey::from(&self.0)))
    }

    fn secret_text(&self) -> Zeroizing<String> {
        encode(IDENTITY_HRP, self.0.as_bytes(), true)
    }
}

impl SecretIdentity {
    /// A fresh X25519 identity.
    pub fn generate_x25519() -> Result<Self, ContainerError> {
        Ok(SecretIdentity::new(X25519Identity(
            x25519_dalek::StaticSecret::from(*random_secret()?),
        )))
    }
}

/// As age's X25519 stanza: HKDF-SHA256 of the shared secret, salted with the ephemeral share
/// and the recipient's public key.
fn wrap_key(shared: &[u8; 32], share: &[u8; 32], recipient: &[u8; 32]) -> WrapKey {
    let mut salt = [0u8; 64];
    salt[..32].copy_from_slice(share);
    salt[32..].copy_from_slice(recipient);
    hkdf(Some(&salt), shared, INFO)
}

/// X25519 of `secret` and `public`, or `None` where `public` is a low-order point: the result
/// is then all zero whatever the secret (RFC 7748 section 6.1), so it would keep nothing
/// secret. paraes's one check for low-order points: sealing, opening and parsing recipients
/// (of this kind, the hybrid one and SSH Ed25519) all go through it.
pub(super) fn agree(
    secret: &x25519_dalek::StaticSecret,
    public: &x25519_dalek::PublicKey,
) -> Option<x25519_dalek::SharedSecret> {
    let shared = secret.diffie_hellman(public);
    shared.was_contributory().then_some(shared)
}

/// Refuses a low-order X25519 public key (`what` names it in the error).
pub(super) fn check_public(public: &x25519_dalek::PublicKey, what: &str) -> Result<(), String> {
    // Any secret tells: a clamped scalar is a multiple of the cofactor 8, so it maps every
    // low-order point to zero, and (a multiple of neither large prime order) no other point.
    // This one is public and fixed.
    let probe = x25519_dalek::StaticSecret::from([0x5a; 32]);
    agree(&probe, public)
        .map(drop)
        .ok_or_else(|| degenerate(&format!("{what} is a low-order point")))
}
