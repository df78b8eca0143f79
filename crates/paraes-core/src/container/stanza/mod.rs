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
//! kinds share OpenSSH's, read in `ssh_text.rs` and listed here as [`OPENSSH`]) and one line in
//! the registry. Keys are read as text through the registry in `text.rs`.

use aes_gcm_siv::aead::{Aead, KeyInit, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

use super::identity::{Bech32Keys, TextKeys};
use super::keys::{Argon2Params, FileSecret, FILE_KEY_LEN};
use super::ContainerError;

pub use hybrid::{HybridIdentity, HybridRecipient};
pub use recipient::{Identity, Recipient};
pub use ssh::{MAX_BCRYPT_ROUNDS, MAX_RSA_BITS, MIN_RSA_BITS};
pub use text::{parse_identities, parse_identity_file, parse_recipients};
pub use x25519::{X25519Identity, X25519Recipient};

/// Who a container is sealed for and what may open it.
mod recipient;
/// What the SSH kinds share (the key tag, locked keys), naming neither: not a kind.
mod ssh;
#[cfg(test)]
pub(crate) mod ssh_tests;
/// OpenSSH's text forms (public key lines, private key files), which make keys of both SSH
/// kinds: not a kind.
mod ssh_text;
/// Keys and files of keys read as text, through the registry.
mod text;

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
    // recipe-example: stanza-kind (the test-only kind's registry line)
    #[cfg(test)]
    test_key::TestKey,
}

/// OpenSSH's text forms, shared by both SSH kinds (each kind's `Kind::text` returns it): here
/// beside the registry, so that the kinds need not name `ssh_text.rs`, which names them.
static OPENSSH: ssh_text::OpenSsh = ssh_text::OpenSsh;

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

    /// The word that names its stanzas in `info`'s stanza names and in `rekey --remove`
    /// ("key-file"): lower case, no spaces, unique in [`KINDS`].
    fn label(&self) -> &'static str;

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

/// The words that name the stanza kinds this paraes knows ([`Kind::label`]), in registry
/// order.
pub fn kind_labels() -> Vec<&'static str> {
    KINDS.iter().map(|kind| kind.label()).collect()
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

/// What a stanza is, for `info` and error messages (public, unauthenticated facts): a kind
/// this paraes knows, by name (a passphrase with its Argon2id parameters), or an unknown kind
/// byte (skipped when opening).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StanzaKind {
    byte: u8,
    /// `None`: a kind this paraes does not know.
    name: Option<&'static str>,
    /// Its kind's [`Kind::label`]; `None` for a kind this paraes does not know.
    label: Option<&'static str>,
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
            label: None,
            argon2: None,
            ssh_tag: None,
        }
    }

    /// A kind this paraes does not know.
    fn unknown(byte: u8) -> Self {
        StanzaKind {
            byte,
            name: None,
            label: None,
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

    /// This kind, named in stanza names by `label`.
    fn with_label(self, label: &'static str) -> Self {
        StanzaKind {
            label: Some(label),
            ..self
        }
    }

    /// What names a stanza of this kind (docs/FORMAT.md, "Naming stanzas"): its kind's word
    /// ("key-file", "x25519"), followed for an SSH stanza by a colon and its key tag in hex
    /// ("ssh-ed25519:1a2b3c4d"); "kind-N" for a kind byte N this paraes does not know. Stanzas
    /// of one slot may share it ([`crate::container::stanza_names`] tells them apart).
    pub fn label(&self) -> String {
        match (self.label, self.ssh_tag) {
            (None, _) => format!("kind-{}", self.byte),
            (Some(label), None) => label.to_owned(),
            (Some(label), Some(tag)) => format!(
                "{label}:{:02x}{:02x}{:02x}{:02x}",
                tag[0], tag[1], tag[2], tag[3]
            ),
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
        Ok(Some((
            kind,
            kind.describe(self.args())?.with_label(kind.label()),
        )))
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
mod tests;
