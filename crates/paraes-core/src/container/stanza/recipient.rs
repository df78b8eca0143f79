//! Who a container is sealed for ([`Recipient`]: each becomes one stanza) and what may open
//! it ([`Identity`]: each is tried on the stanzas of its kind).

use zeroize::Zeroizing;

use crate::container::identity::{PublicRecipient, SecretIdentity};
use crate::container::keys::Argon2Params;
use crate::key::Key;

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

impl Recipient {
    /// The public key of this recipient if it is a `T` (a public-key kind's own type).
    pub(crate) fn public_key<T: 'static>(&self) -> Option<&T> {
        let Recipient::Public(public) = self else {
            return None;
        };
        public.key()
    }
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

impl Identity {
    /// Whether trying this identity on a stanza may ask for a passphrase: true only for a
    /// public-key identity whose secret is still locked and has not been unlocked (or tried)
    /// yet ([`SecretIdentity::may_prompt`]); false for keys, passphrases (Argon2id may run,
    /// but nothing is asked), identities without a passphrase, and unlocked ones. Even then it
    /// asks only when a stanza's tag names its key. An opener may try the identities for which
    /// this is false first, so that a passphrase is asked only when no other identity opens
    /// the file.
    pub fn may_prompt(&self) -> bool {
        matches!(self, Identity::Secret(secret) if secret.may_prompt())
    }

    /// `identities` with each public-key identity given once: an identity that is the same key
    /// as an earlier one (same kind and public key: equal recipients), such as one key file
    /// given twice or through two paths, is merged into the first one's place, so that a locked
    /// key is asked for its passphrase at most once. Of the copies, the first that needs no
    /// passphrase ([`Identity::may_prompt`] false) is kept, else the first. Keys and
    /// passphrases are kept as they are, in order.
    pub fn merge_same_keys(identities: Vec<Identity>) -> Vec<Identity> {
        let mut out: Vec<Identity> = Vec::with_capacity(identities.len());
        // The recipient text of each public-key identity kept, and its place in `out`.
        let mut kept: Vec<(String, usize)> = Vec::new();
        for identity in identities {
            let Identity::Secret(secret) = &identity else {
                out.push(identity);
                continue;
            };
            let public = secret.recipient().to_string();
            match kept.iter().find(|(text, _)| *text == public) {
                Some(&(_, at)) => {
                    if out[at].may_prompt() && !identity.may_prompt() {
                        out[at] = identity;
                    }
                }
                None => {
                    kept.push((public, out.len()));
                    out.push(identity);
                }
            }
        }
        out
    }
}

impl Identity {
    /// Whether this identity opens the stanza made for `recipient`: the same key, the same
    /// passphrase, or the secret key of the same public key. A rekey asks it to tell whether
    /// the way that opened a file is among its new stanzas.
    pub fn is_for(&self, recipient: &Recipient) -> bool {
        match (self, recipient) {
            (Identity::Key(key), Recipient::Key(other)) => key.as_bytes() == other.as_bytes(),
            (Identity::Passphrase(passphrase), Recipient::Passphrase(other, _)) => {
                passphrase[..] == other[..]
            }
            (Identity::Secret(secret), Recipient::Public(public)) => secret.recipient() == *public,
            _ => false,
        }
    }

    /// The secret key of this identity if it is a `T` (a public-key kind's own type).
    pub(crate) fn secret_key<T: 'static>(&self) -> Option<&T> {
        let Identity::Secret(secret) = self else {
            return None;
        };
        secret.key()
    }
}
