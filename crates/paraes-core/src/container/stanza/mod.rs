//! Stanzas: one per way to open a v2 or v3 container, each wrapping the file key D. A stanza
//! kind is one file in this folder behind the [`Kind`] trait (as age's recipient types are one
//! module each), named once in the registry (`kinds!` below); parsing, `info`, sealing
//! and opening all dispatch through it, and a kind byte it does not list is an unknown kind
//! (skipped when opening, docs/FORMAT.md). Every kind derives a wrap key in its own domain and
//! its D is wrapped here, in one place, with AES-256-GCM-SIV (RFC 8452), a
//! nonce-misuse-resistant AEAD with a 128-bit tag; the wrap key is fresh per stanza (fresh salt
//! or ephemeral key), so the fixed all-zero nonce is never used twice under one key.
//!
//! Adding a kind: its file here (a unit type implementing [`Kind`]; a public-key kind also
//! defines its key types, implementing `identity::RecipientKey` and `identity::IdentityKey`,
//! and may give them a Bech32 text form, [`Bech32Keys`], or another, [`TextKeys`], as the SSH
//! kinds share OpenSSH's in `ssh.rs`) and one line in the registry.

use std::str::FromStr;

use aes_gcm_siv::aead::{Aead, KeyInit, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

use super::identity::{self, Bech32Keys, PublicRecipient, SecretIdentity, TextKeys};
use super::keys::{Argon2Params, FileSecret, FILE_KEY_LEN};
use super::ContainerError;
use crate::key::Key;

pub use hybrid::{HybridIdentity, HybridRecipient};
pub use ssh::{MAX_BCRYPT_ROUNDS, MAX_RSA_BITS, MIN_RSA_BITS};
pub use x25519::{X25519Identity, X25519Recipient};

/// What the SSH kinds share (OpenSSH's text forms, the key tag, locked keys): not a kind.
mod ssh;
#[cfg(test)]
pub(crate) mod ssh_tests;

/// Declares each kind's module (its file) and lists its kind in [`KINDS`]: one entry per kind.
macro_rules! kinds {
    ($($(#[$attr:meta])* $module:ident::$kind:ident,)*) => {
        $($(#[$attr])* mod $module;)*

        /// Every stanza kind this paraes reads and writes, by kind byte: the one list that
        /// parsing, `info`, sealing and opening dispatch through.
        const KINDS: &[&dyn Kind] = &[$($(#[$attr])* &$module::$kind,)*];
    };
}

// The registry: adding a stanza kind is its file and one line here.
kinds! {
    key::KeyFile,
    passphrase::Passphrase,
    x25519::X25519,
    hybrid::Hybrid,
    ssh_ed25519::SshEd25519,
    ssh_rsa::SshRsa,
    #[cfg(test)]
    test_key::TestKey,
}

/// Bytes of a wrapped file key, the end of every stanza body: D and the AES-GCM-SIV tag.
const WRAPPED_LEN: usize = FILE_KEY_LEN + 16;
/// Associated data of every wrap, followed by the stanza kind byte.
const WRAP_AAD: &[u8] = b"paraes 2026-11 container v2 wrapped file key";

/// A 32-byte AES-256-GCM-SIV key that wraps D in one stanza. Wiped on drop.
type WrapKey = Zeroizing<[u8; 32]>;

/// What a kind's [`Kind::wrap`] gives for one recipient: the stanza body's bytes before the
/// wrapped D (its "args": a salt, an ephemeral share, a ciphertext...) and the wrap key.
struct Wrap {
    args: Vec<u8>,
    key: WrapKey,
}

/// The lengths a kind's stanza body may have, the wrapped D included (at least
/// [`WRAPPED_LEN`], at most 65,535: the slot stores a body's length in two bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BodyLen {
    /// Exactly this many bytes.
    Exact(usize),
    /// From the first to the second, both included (a variable-length body: SSH-RSA's, whose
    /// ciphertext is as long as the modulus).
    Between(usize, usize),
}

impl BodyLen {
    fn allows(self, len: usize) -> bool {
        match self {
            BodyLen::Exact(exact) => len == exact,
            BodyLen::Between(min, max) => (min..=max).contains(&len),
        }
    }

    /// Refuses a body of `len` bytes for kind `byte` unless it is allowed.
    fn check(self, byte: u8, len: usize) -> Result<(), ContainerError> {
        if self.allows(len) {
            return Ok(());
        }
        let expected = match self {
            BodyLen::Exact(exact) => exact.to_string(),
            BodyLen::Between(min, max) => format!("{min} to {max}"),
        };
        Err(ContainerError::BadHeader(format!(
            "a stanza of kind {byte} is {len} bytes, not {expected}"
        )))
    }
}

/// What a stanza kind is: its byte and name, the lengths of its body, what `info` shows of it,
/// and how it wraps D for its recipients and finds the wrap key with its identities. One unit
/// type per kind, each in its own file, listed once in [`KINDS`]. Every body ends with D
/// wrapped under the kind's wrap key ([`WRAPPED_LEN`] bytes, wrapped and unwrapped in this
/// module alone); the kind owns the bytes before it, its args.
trait Kind: Sync {
    /// Its kind byte in the header (unique in [`KINDS`]).
    fn byte(&self) -> u8;

    /// Its name, as `info` and error messages show it ("key file").
    fn name(&self) -> &'static str;

    /// The lengths its body may have; any other is refused when the header is read.
    fn body_len(&self) -> BodyLen;

    /// What `info` shows of a stanza whose body has an allowed length, given its args; refuses
    /// args that no writer makes. The default: its byte and name.
    fn describe(&self, args: &[u8]) -> Result<StanzaKind, ContainerError> {
        let _ = args;
        Ok(StanzaKind::known(self.byte(), self.name()))
    }

    /// For a recipient of this kind: the args and a fresh wrap key; `None` for a recipient of
    /// another kind.
    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>>;

    /// The wrap key that `identity` derives from a stanza's args (its length allowed and
    /// [`Kind::describe`] passed), or `None` for an identity of another kind or one that cannot
    /// fit (a wrong key of the right kind gives a wrong wrap key, which the wrap's tag refuses).
    /// `max_kdf_mib` caps a passphrase's Argon2id cost.
    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError>;

    /// The public tag at the start of a stanza's args that names its recipient's key (the SSH
    /// kinds), so that a reader tries only its own stanzas; none for kinds without one (the
    /// default). A slot may name one key at most [`MAX_SAME_TAG`] times.
    fn recipient_tag<'a>(&self, args: &'a [u8]) -> Option<&'a [u8]> {
        let _ = args;
        None
    }

    /// A public-key kind whose keys are written as Bech32 text: how. The default: none.
    fn bech32(&self) -> Option<&dyn Bech32Keys> {
        None
    }

    /// A public-key kind whose keys are written as other text (OpenSSH's public key lines and
    /// private key files): how, tried before Bech32. Several kinds may return the same form
    /// (a `&'static`), which is then tried once. The default: none.
    fn text(&self) -> Option<&'static dyn TextKeys> {
        None
    }
}

/// The kind of kind byte `byte`; `None` for a kind this paraes does not know.
fn lookup(byte: u8) -> Option<&'static dyn Kind> {
    KINDS.iter().copied().find(|kind| kind.byte() == byte)
}

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
    /// The secret key of this identity if it is a `T` (a public-key kind's own type).
    pub(crate) fn secret_key<T: 'static>(&self) -> Option<&T> {
        let Identity::Secret(secret) = self else {
            return None;
        };
        secret.key()
    }
}

/// What a stanza is, for `info` and error messages (public, unauthenticated facts): a kind
/// this paraes knows, by name (a passphrase with its Argon2id parameters), or an unknown kind
/// byte (skipped when opening).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StanzaKind {
    byte: u8,
    /// `None`: a kind this paraes does not know.
    name: Option<&'static str>,
    argon2: Option<Argon2Params>,
    /// The SSH key tag of an SSH stanza (docs/FORMAT.md): which key it claims to be for.
    ssh_tag: Option<[u8; 4]>,
}

impl StanzaKind {
    /// A known kind.
    fn known(byte: u8, name: &'static str) -> Self {
        StanzaKind {
            byte,
            name: Some(name),
            argon2: None,
            ssh_tag: None,
        }
    }

    /// A kind this paraes does not know.
    fn unknown(byte: u8) -> Self {
        StanzaKind {
            byte,
            name: None,
            argon2: None,
            ssh_tag: None,
        }
    }

    /// This kind, whose stanza runs Argon2id with `params` before it opens.
    fn with_argon2(self, params: Argon2Params) -> Self {
        StanzaKind {
            argon2: Some(params),
            ..self
        }
    }

    /// This kind, whose stanza names the SSH key of tag `tag`.
    fn with_ssh_tag(self, tag: [u8; 4]) -> Self {
        StanzaKind {
            ssh_tag: Some(tag),
            ..self
        }
    }

    /// The kind byte.
    pub fn byte(&self) -> u8 {
        self.byte
    }

    /// The kind's name ("key file", "passphrase"), or `None` for a kind this paraes does not
    /// know.
    pub fn name(&self) -> Option<&'static str> {
        self.name
    }

    /// The Argon2id parameters a passphrase stanza asks for (their cost counts against the
    /// reader's cap).
    pub fn argon2(&self) -> Option<&Argon2Params> {
        self.argon2.as_ref()
    }

    /// The SSH key tag of an SSH stanza: the first 4 bytes of SHA-256 of the SSH wire encoding
    /// of the public key it was sealed to (unauthenticated: a claim). It links files sealed to
    /// one key, as age's SSH stanzas do.
    pub fn ssh_tag(&self) -> Option<[u8; 4]> {
        self.ssh_tag
    }
}

impl std::fmt::Display for StanzaKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.name, &self.argon2, &self.ssh_tag) {
            (None, _, _) => write!(f, "unknown stanza kind {}", self.byte),
            (Some(name), Some(p), _) => write!(
                f,
                "{name} (Argon2id m={} KiB t={} p={})",
                p.memory_kib, p.iterations, p.lanes
            ),
            (Some(name), None, Some(tag)) => write!(
                f,
                "{name} (SSH key tag {:02x}{:02x}{:02x}{:02x})",
                tag[0], tag[1], tag[2], tag[3]
            ),
            (Some(name), None, None) => f.write_str(name),
        }
    }
}

/// A stanza whose costly part is done (Argon2id, a key agreement, an encapsulation, RSA-OAEP)
/// and which waits only for the file key it will wrap: a rekey prepares its new stanzas so
/// before it opens the file, so that the time between reading the file and writing it is the
/// write itself.
pub(crate) struct PreparedStanza {
    kind: u8,
    wrap: Wrap,
}

impl PreparedStanza {
    /// The stanza for `recipient`, of the kind that takes the recipient, with a fresh wrap key.
    pub(crate) fn new(recipient: &Recipient) -> Result<Self, ContainerError> {
        let (kind, wrap) = KINDS
            .iter()
            .find_map(|kind| Some((*kind, kind.wrap(recipient)?)))
            .ok_or_else(|| {
                ContainerError::BadRecipient("no stanza kind of this paraes takes it".into())
            })?;
        Ok(PreparedStanza {
            kind: kind.byte(),
            wrap: wrap?,
        })
    }

    /// The stanza, wrapping `file_key`.
    pub(crate) fn seal(&self, file_key: &FileSecret) -> Result<Stanza, ContainerError> {
        let mut body = self.wrap.args.clone();
        body.extend_from_slice(&seal_file_key(&self.wrap.key, self.kind, file_key));
        let stanza = Stanza {
            kind: self.kind,
            body,
        };
        // What is written must read back: its length and args as its kind accepts them.
        stanza.kind()?;
        Ok(stanza)
    }
}

impl Stanza {
    /// The stanza for `recipient` wrapping `file_key`, of the kind that takes the recipient.
    #[cfg(test)]
    pub(crate) fn wrap(
        recipient: &Recipient,
        file_key: &FileSecret,
    ) -> Result<Self, ContainerError> {
        PreparedStanza::new(recipient)?.seal(file_key)
    }

    /// What the stanza is; a stanza of a known kind with a length or args its kind refuses is
    /// refused.
    pub(crate) fn kind(&self) -> Result<StanzaKind, ContainerError> {
        Ok(match self.known()? {
            Some((_, described)) => described,
            None => StanzaKind::unknown(self.kind),
        })
    }

    /// The stanza's kind and what it shows, its length and args checked; `None` for a kind
    /// this paraes does not know.
    fn known(&self) -> Result<Option<(&'static dyn Kind, StanzaKind)>, ContainerError> {
        let Some(kind) = lookup(self.kind) else {
            return Ok(None);
        };
        kind.body_len().check(self.kind, self.body.len())?;
        Ok(Some((kind, kind.describe(self.args())?)))
    }

    /// The Argon2id parameters this stanza asks for (a passphrase stanza that parses).
    pub(crate) fn argon2(&self) -> Option<Argon2Params> {
        self.kind().ok()?.argon2
    }

    /// The body before the wrapped D (of a known kind whose length was checked).
    fn args(&self) -> &[u8] {
        &self.body[..self.body.len() - WRAPPED_LEN]
    }

    /// The file key if `identity` opens this stanza, `None` if it does not (wrong key, wrong
    /// kind, unknown kind). A passphrase stanza whose Argon2id cost exceeds `max_kdf_mib` is
    /// refused before Argon2id allocates anything.
    pub(crate) fn unwrap(
        &self,
        identity: &Identity,
        max_kdf_mib: u64,
    ) -> Result<Option<FileSecret>, ContainerError> {
        let Some((kind, _)) = self.known()? else {
            // An unknown kind: skipped (docs/FORMAT.md, "Opening a file").
            return Ok(None);
        };
        let Some(key) = kind.unwrap(self.args(), identity, max_kdf_mib)? else {
            return Ok(None);
        };
        let wrapped = &self.body[self.body.len() - WRAPPED_LEN..];
        Ok(open_file_key(&key, self.kind, wrapped))
    }
}

/// Most stanzas of one slot that may name the same key by kind and public tag: two (a 4-byte
/// tag may collide between two honest recipients). Every such stanza costs the named key a
/// private-key operation (RSA: milliseconds to a tenth of a second each), so a planted header
/// with hundreds of them would make one key work hundreds of times; paraes never writes more.
pub(crate) const MAX_SAME_TAG: usize = 2;

/// Whether `stanzas` (one slot's) name one key by the same kind and tag more than
/// [`MAX_SAME_TAG`] times.
pub(crate) fn names_a_key_too_often(stanzas: &[Stanza]) -> bool {
    let mut seen: Vec<(u8, &[u8], usize)> = Vec::new();
    for stanza in stanzas {
        let Ok(Some((kind, _))) = stanza.known() else {
            continue;
        };
        let Some(tag) = kind.recipient_tag(stanza.args()) else {
            continue;
        };
        match seen
            .iter_mut()
            .find(|(byte, seen_tag, _)| *byte == stanza.kind && *seen_tag == tag)
        {
            Some((.., count)) => {
                *count += 1;
                if *count > MAX_SAME_TAG {
                    return true;
                }
            }
            None => seen.push((stanza.kind, tag, 1)),
        }
    }
    false
}

/// The Bech32 text forms of the registered kinds, in registry order.
fn bech32_forms() -> Vec<&'static dyn Bech32Keys> {
    KINDS.iter().filter_map(|kind| kind.bech32()).collect()
}

/// The other text forms of the registered kinds, in registry order, each once.
pub(crate) fn text_forms() -> Vec<&'static dyn TextKeys> {
    let mut forms: Vec<&'static dyn TextKeys> = Vec::new();
    for form in KINDS.iter().filter_map(|kind| kind.text()) {
        if !forms.iter().any(|seen| std::ptr::addr_eq(*seen, form)) {
            forms.push(form);
        }
    }
    forms
}

/// Parsed through the registry (here, beside it); the text itself is `identity.rs`'s.
impl FromStr for PublicRecipient {
    type Err = ContainerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        identity::parse_recipient(text, &bech32_forms(), &text_forms())
    }
}

/// Parsed through the registry (here, beside it); the text itself is `identity.rs`'s.
impl FromStr for SecretIdentity {
    type Err = ContainerError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        identity::parse_identity(text, &bech32_forms())
    }
}

/// HKDF-SHA256 (RFC 5869) of `ikm` with `salt` and `info`, 32 bytes: every kind's wrap key.
///
/// What is wiped: the output; the pseudorandom key PRK, which `Hkdf::new` would drop unwiped
/// (hence `extract`); the HMAC state keyed with PRK (two SHA-256 states and a block buffer), on
/// drop at the end of this function, by sha2's and digest's `zeroize` features (the workspace
/// turns them on). What is not: the `hkdf` crate has no zeroize support of its own, and
/// `hmac` 0.13 leaves its key-xor-pad block on the stack when it is keyed.
fn hkdf(salt: Option<&[u8]>, ikm: &[u8], info: &[u8]) -> WrapKey {
    let mut out = Zeroizing::new([0u8; 32]);
    let (mut prk, kdf) = Hkdf::<Sha256>::extract(salt, ikm);
    prk.as_mut_slice().zeroize();
    kdf.expand(info, &mut out[..])
        .expect("32 bytes is a valid HKDF-SHA256 length");
    out
}

fn aad(kind: u8) -> Vec<u8> {
    let mut aad = WRAP_AAD.to_vec();
    aad.push(kind);
    aad
}

/// D wrapped under `key` for a stanza of kind `kind`: AES-256-GCM-SIV, all-zero nonce.
fn seal_file_key(key: &[u8; 32], kind: u8, file_key: &FileSecret) -> Vec<u8> {
    let cipher = Aes256GcmSiv::new_from_slice(key).expect("32-byte key");
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

/// D if `wrapped` opens under `key` for kind `kind` (its tag verifies), else `None`.
fn open_file_key(key: &[u8; 32], kind: u8, wrapped: &[u8]) -> Option<FileSecret> {
    let cipher = Aes256GcmSiv::new_from_slice(key).expect("32-byte key");
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

#[cfg(test)]
mod tests {
    use super::test_key::{TestIdentity, TestRecipient, FIXED_KEY};
    use super::*;
    use crate::cobblestone::Variant;
    use crate::container::identity::SECRET_PREFIX;
    use crate::container::v2::{slot_bytes_needed, Preamble};
    use crate::container::{
        seal_message, Access, BodyAccess, Unlock, UnverifiedHeader, FIRST_GENERATION,
    };
    use crate::cpu::CpuEngine;
    use crate::engine::Direction;
    use crate::key::KeySize;
    use crate::pipeline;

    /// A whole v3 container of a short text, whose slot holds `stanzas` (wrapping `file_key`).
    fn sealed_with(stanzas: &[Stanza], file_key: FileSecret) -> Vec<u8> {
        let slot_len = Preamble::slot_len_for(slot_bytes_needed(stanzas));
        let variant = Variant::for_key_size(KeySize::Aes256).unwrap();
        let (mut file, opened) =
            seal_message(stanzas, file_key, variant, slot_len, FIRST_GENERATION).unwrap();
        let engine = CpuEngine::new(Some(1)).unwrap();
        let spec = opened.stream_spec(&engine, Direction::Encrypt);
        pipeline::run(&spec, &mut &b"hello"[..], &mut file, &|_| {}).unwrap();
        file
    }

    fn cheap() -> Argon2Params {
        Argon2Params {
            salt: [3; 16],
            memory_kib: 64,
            iterations: 1,
            lanes: 1,
        }
    }

    /// One recipient and one identity of every registered kind.
    fn every_kind() -> Vec<(Recipient, Identity)> {
        let x = SecretIdentity::generate_x25519().unwrap();
        let pq = SecretIdentity::generate_hybrid().unwrap();
        let key = Key::new(&[5; 32]).unwrap();
        let passphrase = Zeroizing::new(b"pass words".to_vec());
        vec![
            (Recipient::Key(key.clone()), Identity::Key(key)),
            (
                Recipient::Passphrase(passphrase.clone(), cheap()),
                Identity::Passphrase(passphrase),
            ),
            (Recipient::Public(x.recipient()), Identity::Secret(x)),
            (Recipient::Public(pq.recipient()), Identity::Secret(pq)),
            (
                Recipient::Public(TestRecipient::fixed(20)),
                Identity::Secret(TestIdentity::of(FIXED_KEY)),
            ),
            (
                Recipient::Public(ssh_tests::recipient(ssh_tests::ED25519_PUB)),
                Identity::Secret(ssh_tests::identity(ssh_tests::ED25519)),
            ),
            (
                Recipient::Public(ssh_tests::recipient(ssh_tests::RSA_PUB)),
                Identity::Secret(ssh_tests::identity(ssh_tests::RSA)),
            ),
        ]
    }

    #[test]
    fn the_registry_is_consistent() {
        for (i, kind) in KINDS.iter().enumerate() {
            let (min, max) = match kind.body_len() {
                BodyLen::Exact(len) => (len, len),
                BodyLen::Between(min, max) => (min, max),
            };
            assert!(WRAPPED_LEN <= min && min <= max, "{}", kind.name());
            assert!(max <= usize::from(u16::MAX), "{}", kind.name());
            for other in &KINDS[i + 1..] {
                assert_ne!(kind.byte(), other.byte(), "{}", kind.name());
                assert_ne!(kind.name(), other.name());
            }
            assert!(std::ptr::addr_eq(lookup(kind.byte()).unwrap(), *kind));
        }
        let forms = bech32_forms();
        for (i, form) in forms.iter().enumerate() {
            assert!(form.identity_prefix().starts_with(SECRET_PREFIX));
            assert!(!form.recipient_prefix().starts_with(SECRET_PREFIX));
            for other in &forms[i + 1..] {
                assert_ne!(form.recipient_prefix(), other.recipient_prefix());
                assert_ne!(form.identity_prefix(), other.identity_prefix());
            }
        }
    }

    /// Each recipient is taken by exactly one kind, and only its own identity opens the stanza.
    #[test]
    fn every_kind_wraps_for_its_own_recipients_and_opens_for_its_own_identities() {
        let file_key = FileSecret::random().unwrap();
        let all = every_kind();
        for (i, (recipient, identity)) in all.iter().enumerate() {
            let takers = KINDS.iter().filter(|k| k.wrap(recipient).is_some()).count();
            assert_eq!(takers, 1, "recipient {i}");
            let stanza = Stanza::wrap(recipient, &file_key).unwrap();
            let opened = stanza.unwrap(identity, u64::MAX).unwrap().unwrap();
            assert_eq!(opened.as_bytes(), file_key.as_bytes());
            for (j, (_, other)) in all.iter().enumerate() {
                if i != j {
                    assert!(stanza.unwrap(other, u64::MAX).unwrap().is_none(), "{i} {j}");
                }
            }
        }
    }

    /// What `info` and the error messages say of each kind, word for word.
    #[test]
    fn kinds_are_named_as_before() {
        let file_key = FileSecret::random().unwrap();
        let names: Vec<String> = every_kind()
            .iter()
            .map(|(r, _)| {
                Stanza::wrap(r, &file_key)
                    .unwrap()
                    .kind()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "key file",
                "passphrase (Argon2id m=64 KiB t=1 p=1)",
                "X25519 recipient",
                "ML-KEM-768 + X25519 recipient",
                "test key",
                "ssh-ed25519 recipient (SSH key tag f71e6864)",
                "ssh-rsa recipient (SSH key tag 307b7497)",
            ]
        );
        let wrong = Stanza {
            kind: 1,
            body: vec![0; 63],
        };
        assert_eq!(
            wrong.kind().unwrap_err().to_string(),
            "damaged or hostile container header: a stanza of kind 1 is 63 bytes, not 64"
        );
    }

    /// An unknown kind byte, of any length, parses as "unknown stanza kind N", opens nothing
    /// and is skipped: a file with one opens with the key of another stanza (docs/FORMAT.md).
    #[test]
    fn an_unknown_kind_is_listed_and_skipped() {
        let key = Key::new(&[7; 32]).unwrap();
        let file_key = FileSecret::random().unwrap();
        let unknown = [
            Stanza {
                kind: 9,
                body: vec![1, 2, 3],
            },
            Stanza {
                kind: 200,
                body: Vec::new(),
            },
            Stanza {
                kind: 0,
                body: vec![0; 2000],
            },
        ];
        for stanza in &unknown {
            assert!(lookup(stanza.kind).is_none());
            let kind = stanza.kind().unwrap();
            assert_eq!(
                kind.to_string(),
                format!("unknown stanza kind {}", stanza.kind)
            );
            assert_eq!((kind.byte(), kind.name()), (stanza.kind, None));
            for (_, identity) in every_kind() {
                assert!(stanza.unwrap(&identity, u64::MAX).unwrap().is_none());
            }
        }
        let mut stanzas = unknown.to_vec();
        stanzas.insert(
            1,
            Stanza::wrap(&Recipient::Key(key.clone()), &file_key).unwrap(),
        );
        let file = sealed_with(&stanzas, file_key);
        let header = UnverifiedHeader::read(&mut &file[..]).unwrap();
        let Access::Slots { slots, .. } = &header.info().access else {
            panic!("a v3 file has slots");
        };
        let listed: Vec<String> = slots[0].stanzas.iter().map(ToString::to_string).collect();
        assert_eq!(
            listed,
            [
                "unknown stanza kind 9",
                "key file",
                "unknown stanza kind 200",
                "unknown stanza kind 0"
            ]
        );
        let opens = |identity: Identity| {
            UnverifiedHeader::read(&mut &file[..])
                .unwrap()
                .open(&Unlock::new(vec![identity]), BodyAccess::Bytes(&file))
        };
        opens(Identity::Key(key)).unwrap();
        let refused = opens(Identity::Key(Key::new(&[8; 32]).unwrap()))
            .unwrap_err()
            .to_string();
        assert!(
            refused.ends_with("(it opens with: unknown stanza kind 9, key file, unknown stanza kind 200, unknown stanza kind 0)"),
            "{refused}"
        );
        // A file whose only stanza is of an unknown kind opens with nothing.
        let only_unknown = sealed_with(&unknown[..1], FileSecret::random().unwrap());
        let refused = UnverifiedHeader::read(&mut &only_unknown[..])
            .unwrap()
            .open(
                &Unlock::new(every_kind().into_iter().map(|(_, i)| i).collect()),
                BodyAccess::Bytes(&only_unknown),
            )
            .unwrap_err();
        assert!(
            matches!(&refused, ContainerError::NoMatchingStanza(what) if what == "unknown stanza kind 9"),
            "{refused}"
        );
    }
}
