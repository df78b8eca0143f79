//! Why a container could not be written or read ([`ContainerError`]), and the header reads
//! that say "truncated" for an early end.

use std::io::Read;

/// Why a container could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// The input does not start with the magic bytes.
    #[error("not a paraes container (no paraes header)")]
    NotAContainer,
    /// A newer or unknown format version.
    #[error("container format version {0} is not supported by this paraes (it reads versions 1, 2 and 3): upgrade paraes")]
    UnsupportedVersion(u8),
    /// A header field is invalid or asks for more than the documented limits.
    #[error("damaged or hostile container header: {0}")]
    BadHeader(String),
    /// The header ends early.
    #[error("the container is truncated inside its header")]
    TruncatedHeader,
    /// A stanza slot names one key (by kind and public tag) more than twice.
    #[error("a stanza slot names the same key more than twice, which paraes never writes: it was not tried (a planted header must not make one key work hundreds of times)")]
    KeyNamedTooOften,
    /// A stanza opened but the header tag does not verify: the header was changed.
    #[error("the container header was changed (its tag does not verify)")]
    DamagedHeader,
    /// No given key, passphrase or identity opens any stanza.
    #[error(
        "none of the given keys, passphrases or identities opens this file (it opens with: {0})"
    )]
    NoMatchingStanza(String),
    /// Format v2: another stanza slot parses but is not authenticated by the file key that
    /// opened the file: two slots that disagree (docs/FORMAT.md, "Opening a file"). A v3
    /// file opens instead, its body's key commitment deciding the file key, and the slot is
    /// reported as ignored ([`Opened::ignored_slot`](super::Opened::ignored_slot)).
    #[error("this format v2 header holds a second stanza slot that the key which opened the file does not authenticate: the header was tampered with, a rekey by an older paraes was interrupted, or the file was made to show different content to different recipients (format v2 cannot tell which; format v3 can)")]
    UnverifiedSlot,
    /// A stanza opened and its slot verified, but a chunk tag the body check reads does not
    /// verify under that file key (nor under any other slot's).
    #[error("chunk {0} failed authentication under the key that opened the header: the file is damaged, truncated, reordered or was tampered with (or its header came from another file)")]
    BodyKeyMismatch(u64),
    /// A v3 file's length is one no writer makes: its body was cut (at or inside a chunk,
    /// or inside its salt and commitment) or extended. Found before any key is tried.
    #[error("the body was cut or extended ({0}): the file is damaged or truncated")]
    BodyCutOrExtended(String),
    /// A stanza opened and its slot verified, but the v3 body's key commitment does not match
    /// that file key (nor any other slot's).
    #[error("the body's key commitment does not match the key that opened the header: the body was changed or its header came from another file")]
    CommitmentMismatch,
    /// A rekey would need a slot generation past the largest a slot may hold.
    #[error(
        "the header's rekey generation is at its limit: decrypt the file and encrypt it again"
    )]
    GenerationExhausted,
    /// What a rekey wrote, read back from the file, does not open with the file key.
    #[error("the rekeyed header read back from the file does not open with the file's key ({0})")]
    RekeyNotConfirmed(String),
    /// Format v1: the header tag does not verify under the given key or passphrase.
    #[error("wrong key or passphrase, or the container header was changed")]
    WrongKeyOrDamagedHeader,
    /// The passphrase stanzas of a header ask for more Argon2id work, in all, than the reader
    /// allows.
    #[error("the passphrase stanzas ask for Argon2id memory x passes of {cost_mib} MiB in all{}, above the cap of {cap_mib} MiB", if *slots > 1 { " (two stanza slots ask; one may have been planted)" } else { "" })]
    KdfTooCostly {
        /// What the header asks for (MiB x passes).
        cost_mib: u64,
        /// The cap.
        cap_mib: u64,
        /// How many stanza slots hold a passphrase stanza (a second one may be planted, and
        /// nothing authenticates it before Argon2id has run).
        slots: usize,
    },
    /// More than one passphrase among the recipients, or none at all.
    #[error("{0}")]
    BadRecipients(String),
    /// A change of a file's stanzas by name that cannot be made: a name that names no stanza
    /// or several, or a result with no way in.
    #[error("{0}")]
    BadStanzaChange(String),
    /// A recipient's text does not parse.
    #[error("not a paraes recipient: {0}")]
    BadRecipient(String),
    /// An identity's text does not parse.
    #[error("not a paraes identity: {0}")]
    BadIdentity(String),
    /// An identity file holds no identity at all.
    #[error("not a paraes identity: no identity in it")]
    NoIdentity,
    /// A locked identity (an SSH key with a passphrase) whose stanza was found could not be
    /// unlocked: no way to ask for its passphrase, or a wrong one.
    #[error("cannot unlock {what}: {why}")]
    IdentityLocked {
        /// The identity ("SSH key ~/.ssh/id_ed25519").
        what: String,
        /// Why, and what to do.
        why: String,
    },
    /// Argon2id failed (e.g. out of memory).
    #[error("passphrase key derivation failed: {0}")]
    Kdf(String),
    /// The system random generator failed.
    #[error("the system random number generator failed: {0}")]
    Random(String),
    /// Reading the container header failed (the I/O error is in the message, not also a
    /// `source`, so a report of the error chain gives the reason once).
    #[error("reading the container header failed: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ContainerError {
    fn from(e: std::io::Error) -> Self {
        ContainerError::Io(e)
    }
}

pub(super) fn read_exact(input: &mut impl Read, buf: &mut [u8]) -> Result<(), ContainerError> {
    input.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => ContainerError::TruncatedHeader,
        _ => ContainerError::Io(e),
    })
}
