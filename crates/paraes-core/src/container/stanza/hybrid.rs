//! The post-quantum hybrid stanza (kind 4): D wrapped under HKDF-SHA256 of an X-Wing
//! (ML-KEM-768 + X25519, draft-connolly-cfrg-xwing-kem-06) encapsulation's shared secret; and
//! its keys, [`HybridRecipient`] (`paraespq1...`) and [`HybridIdentity`]
//! (`PARAES-PQ-SECRET-KEY-1...`), with the checks that refuse degenerate public keys.

use x_wing::{Decapsulate, Encapsulate, KeyExport, KeySizeUser, TryKeyInit};
use zeroize::Zeroizing;

use super::x25519::check_public;
use super::{hkdf, BodyLen, Identity, Kind, Recipient, Wrap, WrapKey, WRAPPED_LEN};
use crate::container::identity::{
    degenerate, encode, random_secret, Bech32Keys, IdentityKey, PublicRecipient, RecipientKey,
    SecretIdentity,
};
use crate::container::ContainerError;

/// The hybrid stanza kind.
pub(super) struct Hybrid;

/// HKDF-SHA256 info of a hybrid stanza's wrap key.
const INFO: &[u8] = b"paraes 2026-11 container v2 X-Wing stanza wrap key";
const RECIPIENT_HRP: &str = "paraespq";
const IDENTITY_HRP: &str = "paraes-pq-secret-key-";
/// Bytes of the ML-KEM-768 encapsulation key at the start of an X-Wing public key (the X25519
/// key follows): 3 x 384 bytes of 12-bit coefficients (t), then the 32-byte seed rho.
const MLKEM768_KEY_LEN: usize = 1184;
/// Bytes of the coefficients t of an ML-KEM-768 encapsulation key.
const MLKEM768_T_LEN: usize = 3 * 384;

/// A hybrid post-quantum public key (X-Wing: ML-KEM-768 + X25519).
#[derive(Clone, PartialEq, Eq)]
pub struct HybridRecipient(pub(crate) Box<x_wing::EncapsulationKey>);

/// The hybrid secret key (a 32-byte X-Wing seed) that opens files encrypted to its
/// [`HybridRecipient`].
#[derive(Clone)]
pub struct HybridIdentity(pub(crate) Box<x_wing::DecapsulationKey>);

impl Kind for Hybrid {
    fn byte(&self) -> u8 {
        4
    }

    fn name(&self) -> &'static str {
        "ML-KEM-768 + X25519 recipient"
    }

    fn label(&self) -> &'static str {
        "mlkem768-x25519"
    }

    fn body_len(&self) -> BodyLen {
        BodyLen::Exact(x_wing::CIPHERTEXT_SIZE + WRAPPED_LEN)
    }

    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>> {
        let HybridRecipient(to) = recipient.public_key()?;
        let (ciphertext, shared) = to.encapsulate();
        let shared = Zeroizing::new(shared);
        Some(Ok(Wrap {
            args: ciphertext.to_vec(),
            key: hkdf(None, &shared[..], INFO),
        }))
    }

    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        _max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError> {
        let Some(HybridIdentity(secret)) = identity.secret_key() else {
            return Ok(None);
        };
        let ciphertext = x_wing::Ciphertext::try_from(args).expect("length checked by its kind");
        let shared = Zeroizing::new(secret.decapsulate(&ciphertext));
        Ok(Some(hkdf(None, &shared[..], INFO)))
    }

    fn bech32(&self) -> Option<&dyn Bech32Keys> {
        Some(self)
    }
}

impl Bech32Keys for Hybrid {
    fn recipient_prefix(&self) -> &'static str {
        RECIPIENT_HRP
    }

    fn identity_prefix(&self) -> &'static str {
        IDENTITY_HRP
    }

    fn recipient(&self, data: &[u8]) -> Result<PublicRecipient, String> {
        Ok(PublicRecipient::new(HybridRecipient(Box::new(public_key(
            data,
        )?))))
    }

    fn identity(&self, secret: &[u8; 32]) -> SecretIdentity {
        SecretIdentity::new(HybridIdentity(Box::new(x_wing::DecapsulationKey::from(
            *secret,
        ))))
    }
}

impl RecipientKey for HybridRecipient {
    fn text(&self) -> String {
        encode(RECIPIENT_HRP, &self.0.to_bytes(), false).to_string()
    }

    fn post_quantum(&self) -> bool {
        true
    }
}

impl IdentityKey for HybridIdentity {
    fn recipient(&self) -> PublicRecipient {
        use x_wing::Decapsulator;
        PublicRecipient::new(HybridRecipient(Box::new(
            self.0.encapsulation_key().clone(),
        )))
    }

    fn secret_text(&self) -> Zeroizing<String> {
        encode(IDENTITY_HRP, self.0.as_bytes(), true)
    }
}

impl SecretIdentity {
    /// A fresh hybrid (ML-KEM-768 + X25519) identity.
    pub fn generate_hybrid() -> Result<Self, ContainerError> {
        Ok(SecretIdentity::new(HybridIdentity(Box::new(
            x_wing::DecapsulationKey::from(*random_secret()?),
        ))))
    }
}

/// An X-Wing public key from its bytes, refusing degenerate ones: an ML-KEM-768 key whose
/// coefficients t are all zero (then its ciphertexts carry the shared secret in the clear), a
/// low-order X25519 key, and (in `ml-kem`, FIPS 203 section 7.2's modulus check) a coefficient
/// of q = 3329 or more.
fn public_key(bytes: &[u8]) -> Result<x_wing::EncapsulationKey, String> {
    let expected = <x_wing::EncapsulationKey as KeySizeUser>::key_size();
    if bytes.len() != expected {
        return Err(format!("{} bytes of key data, not {expected}", bytes.len()));
    }
    if bytes[..MLKEM768_T_LEN].iter().all(|&b| b == 0) {
        return Err(degenerate("its ML-KEM-768 key is all zero"));
    }
    let x25519: [u8; 32] = bytes[MLKEM768_KEY_LEN..].try_into().expect("32 bytes");
    check_public(&x25519_dalek::PublicKey::from(x25519), "its X25519 key")?;
    x_wing::EncapsulationKey::new_from_slice(bytes).map_err(|_| {
        "its ML-KEM-768 key has a coefficient of 3329 or more, which no real key has \
         (FIPS 203 modulus check): copy it again"
            .to_string()
    })
}
