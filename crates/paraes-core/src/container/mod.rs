//! The paraes container: one API for writing ([`seal`]) and reading ([`UnverifiedHeader::read`]
//! -> [`UnverifiedHeader::open`] -> [`Opened`]) containers, used alike by the CLI, MPI ranks,
//! fuzz targets and `info`. Nothing unverified reaches the pipeline: only an [`Opened`] makes
//! a [`StreamSpec`]. Format v3 (what paraes writes): a random file key D per file, wrapped by
//! stanzas for keys, a passphrase and public-key recipients; the body is one C2SP
//! chunked-encryption message (Cobblestone) whose input key is derived from D, and whose key
//! commitment ties D to the body. Formats v1 and v2 are still read (v2's body has paraes's own
//! chunk tags). docs/FORMAT.md has the layouts and the security argument.

mod body;
mod identity;
mod keys;
mod rekey;
mod stanza;
mod v1;
mod v2;
mod v3;

use std::io::Read;

pub(crate) use body::BodyCheck;
pub use body::{
    verify, verify_file, BodyAccess, BodyLayout, LayoutError, RangeError, SeekableReader,
};
pub use identity::{
    is_identity_text, parse_identities, parse_identity_file, parse_recipients, AskPassphrase,
    PublicRecipient, SecretIdentity,
};
pub use keys::{
    random_bytes, Argon2Params, Authenticator, FileSecret, DEFAULT_ARGON2_ITERATIONS,
    DEFAULT_ARGON2_LANES, DEFAULT_ARGON2_MEMORY_KIB, DEFAULT_MAX_KDF_MIB, MAX_ARGON2_ITERATIONS,
    MAX_ARGON2_LANES, MAX_ARGON2_MEMORY_KIB, TAG_LEN,
};
pub use rekey::{HeaderWrite, InPlace, Rekey, RekeyWay};
pub use stanza::{
    HybridIdentity, HybridRecipient, Identity, Recipient, StanzaKind, X25519Identity,
    X25519Recipient, MAX_BCRYPT_ROUNDS, MAX_RSA_BITS, MIN_RSA_BITS,
};
pub use v1::V1KeySource;

use crate::cobblestone::{self, Variant};
use crate::engine::{Direction, Engine, Mode};
use crate::key::{Key, KeySize};
use crate::pipeline::{StreamSpec, Tags, DEFAULT_CHUNK_SIZE};
use keys::StreamKeys;
use stanza::Stanza;
use v1::V1Header;
use v2::{HeaderKeys, Preamble, SlottedHeader};
use v3::MessageBody;

/// First bytes of every container: a high-bit byte (catches 7-bit channels), the name, and a
/// newline (catches newline translation), as PNG does.
pub const MAGIC: [u8; 8] = *b"\x89PARAES\n";
/// The format version paraes writes.
pub const VERSION: u8 = v3::VERSION;
/// Bytes of a v3 body's message before its first chunk: salt and key commitment.
pub const MESSAGE_PREFIX_LEN: usize = cobblestone::PREFIX_LEN;
/// Smallest chunk size a container may declare.
pub const MIN_CHUNK_SIZE: usize = 4 << 10;
/// Largest chunk size a container may declare: reading one chunk never allocates more.
pub const MAX_CHUNK_SIZE: usize = 64 << 20;
/// Most stanzas one header may hold.
pub const MAX_STANZAS: usize = v2::MAX_STANZAS;
/// The generation of a new file's stanza slot; each rekey adds one.
const FIRST_GENERATION: u64 = 1;

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
    /// reported as ignored ([`Opened::ignored_slot`]).
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

fn read_exact(input: &mut impl Read, buf: &mut [u8]) -> Result<(), ContainerError> {
    input.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => ContainerError::TruncatedHeader,
        _ => ContainerError::Io(e),
    })
}

/// What the body is: mode, AES key size and chunk size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyParams {
    /// Mode of the body.
    pub mode: Mode,
    /// AES key size of the body key.
    pub key_size: KeySize,
    /// Plaintext bytes per chunk (the last chunk may be shorter); a multiple of 16.
    pub chunk_size: usize,
}

impl BodyParams {
    /// The parameters of a v3 body: a message of `variant`, whose chunks are 16 KiB AES-GCM
    /// (the CTR part run as [`Mode::Ctr`]).
    pub fn message(variant: Variant) -> Self {
        BodyParams {
            mode: Mode::Ctr,
            key_size: variant.key_size(),
            chunk_size: cobblestone::CHUNK_LEN,
        }
    }

    /// Mode, key size, a zero byte and the chunk size: header bytes 9..16 of format `version`
    /// (v3's mode byte is 3, a C2SP message).
    fn encode(&self, version: u8) -> [u8; 7] {
        let mut out = [0u8; 7];
        out[0] = if version == v3::VERSION {
            V3_BODY_BYTE
        } else {
            v1::mode_byte(self.mode)
        };
        out[1] = self.key_size.bytes() as u8;
        out[3..].copy_from_slice(&(self.chunk_size as u32).to_be_bytes());
        out
    }

    fn decode(bytes: &[u8], version: u8) -> Result<Self, ContainerError> {
        let key_size = v1::key_size_of(bytes[1])?;
        let chunk_size = u32::from_be_bytes(bytes[3..7].try_into().expect("4 bytes")) as usize;
        if version == v3::VERSION {
            let variant = Variant::for_key_size(key_size);
            return match (bytes[0], variant) {
                (V3_BODY_BYTE, Some(variant)) if chunk_size == cobblestone::CHUNK_LEN => {
                    Ok(BodyParams::message(variant))
                }
                _ => Err(ContainerError::BadHeader(format!(
                    "body {} with {}-bit keys and {chunk_size}-byte chunks (format v3 has C2SP messages, byte 3, of 128- or 256-bit keys and 16384-byte chunks)",
                    bytes[0],
                    key_size.bits()
                ))),
            };
        }
        let mode = match bytes[0] {
            1 => Mode::Ctr,
            2 => Mode::Ecb,
            other => return Err(ContainerError::BadHeader(format!("unknown mode {other}"))),
        };
        let params = BodyParams {
            mode,
            key_size,
            chunk_size,
        };
        params.check()?;
        Ok(params)
    }

    /// Refuses a chunk size outside the documented limits.
    pub fn check(&self) -> Result<(), ContainerError> {
        if !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&self.chunk_size)
            || !self.chunk_size.is_multiple_of(16)
        {
            return Err(ContainerError::BadHeader(format!(
                "chunk size {} (allowed: a multiple of 16 from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE})",
                self.chunk_size
            )));
        }
        Ok(())
    }
}

/// Header byte 9 of format v3: the body is a C2SP chunked-encryption message.
const V3_BODY_BYTE: u8 = 3;

/// What a header says without a key: public and not yet authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderInfo {
    /// Format version (1, 2 or 3).
    pub version: u8,
    /// The body's parameters (v3: [`BodyParams::message`]).
    pub params: BodyParams,
    /// v1 and v2: CTR's initial counter block; for ECB a random value that makes the file's
    /// tags unique. v3: zero (a message derives its nonces).
    pub counter: [u8; 16],
    /// Bytes of the header: the body starts here (for v3, the message, with its salt).
    pub header_len: usize,
    /// How the file opens.
    pub access: Access,
}

/// How a container opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Format v1: with the key K itself, or a passphrase.
    V1(V1KeySource),
    /// Formats v2 and v3: with a stanza of a slot. Before a key opens the file nothing here is
    /// authenticated (a slot may be planted); after, every slot listed verified under the
    /// file key, except one that `--allow-unverified-slot` let through.
    Slots {
        /// The slots that parse, by position in the file.
        slots: Vec<SlotInfo>,
        /// Slots that do not parse, by position, and why (a slot being written or wiped by
        /// a rekey, or damage): ignored.
        ignored: Vec<(usize, String)>,
    },
}

/// One stanza slot (v2, v3) as parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotInfo {
    /// Position of the slot in the header (0 or 1).
    pub position: usize,
    /// Its rekey generation.
    pub generation: u64,
    /// Its stanzas.
    pub stanzas: Vec<StanzaKind>,
}

/// A stanza slot that parses but that the file key which opened the file does not
/// authenticate, and that was ignored: in format v3 always (the body's key commitment decides
/// the one file key, so such a slot was planted by someone who could write the file, or left
/// by damage), in format v2 only with [`Unlock::allow_unverified_slot`] (a v2 file with such
/// a slot may show another recipient different content). It never lends its generation, and
/// a rekey in place overwrites it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoredSlot {
    /// Its position in the header (0 or 1).
    pub position: usize,
    /// The generation it claims.
    pub generation: u64,
    /// The format version of the file (2 or 3).
    pub version: u8,
    /// What its stanzas claim (kinds, with counts): the recipients an upgrade drops.
    pub lists: String,
}

impl IgnoredSlot {
    /// One line for the user: which slot was ignored and what that means for this format.
    pub fn warning(&self) -> String {
        let IgnoredSlot {
            position,
            generation,
            ..
        } = self;
        if self.version >= v3::VERSION {
            format!(
                "stanza slot {position} (generation {generation}) is ignored: it does not \
                 authenticate under the file key that the body's key commitment confirms \
                 (someone who could write the file added it, or it is damaged); every \
                 recipient sees this same content, and a rekey overwrites that slot"
            )
        } else {
            format!(
                "stanza slot {position} (generation {generation}) is ignored as asked: it does \
                 not authenticate under the file key that opened this format v2 file, so the \
                 recipients it lists ({}) may see different content in this same file; \
                 upgrading it to format v3 (paraes upgrade) ends that",
                self.lists
            )
        }
    }

    /// A few words for a per-file report line (`verify`).
    pub fn short(&self) -> String {
        if self.version >= v3::VERSION {
            format!(
                "stanza slot {} ignored: not authenticated by the body's key commitment",
                self.position
            )
        } else {
            format!(
                "stanza slot {} ignored as asked: format v2, its recipients may see different content",
                self.position
            )
        }
    }
}

/// How to try to open a container: identities to try, the most Argon2id work to accept, and
/// whether a second slot that the file key does not authenticate may be ignored.
#[derive(Clone)]
pub struct Unlock {
    /// Keys, passphrases and secret identities, tried in turn.
    pub identities: Vec<Identity>,
    /// The most Argon2id memory x passes (MiB) the passphrase stanzas of a header may ask for
    /// in all (both slots together).
    pub max_kdf_mib: u64,
    /// Open a v2 file even when its other slot parses but does not verify under the file key
    /// that opened it ([`ContainerError::UnverifiedSlot`] otherwise): that slot is ignored
    /// ([`Opened::ignored_slot`]), and a rekey may overwrite it. A v3 file opens so without
    /// it: its body's key commitment decides the file key.
    pub allow_unverified_slot: bool,
}

impl Unlock {
    /// Whether a passphrase is among the identities (so opening may run Argon2id).
    pub fn has_passphrase(&self) -> bool {
        self.identities
            .iter()
            .any(|i| matches!(i, Identity::Passphrase(_)))
    }

    /// Tries `identities` with the default Argon2id cap, refusing unverified slots.
    pub fn new(identities: Vec<Identity>) -> Self {
        Unlock {
            identities,
            max_kdf_mib: DEFAULT_MAX_KDF_MIB,
            allow_unverified_slot: false,
        }
    }
}

#[derive(Debug)]
enum Parsed {
    V1(V1Header),
    /// v2 or v3: the preamble says which.
    Slots(SlottedHeader),
}

/// A parsed header whose tag has not been checked: its [`HeaderInfo`] may be shown, but only
/// [`UnverifiedHeader::open`] gives the keys a stream needs.
#[derive(Debug)]
pub struct UnverifiedHeader {
    info: HeaderInfo,
    parsed: Parsed,
    /// v3: the message's salt and commitment, read with the header.
    message_prefix: Option<[u8; MESSAGE_PREFIX_LEN]>,
    /// The exact bytes read: the header, and for v3 the message's salt and commitment.
    bytes: Vec<u8>,
}

/// A reader that keeps a copy of what it read (a header's exact bytes).
struct Recording<'a, R> {
    inner: &'a mut R,
    bytes: Vec<u8>,
}

impl<R: Read> Read for Recording<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl UnverifiedHeader {
    /// Reads and parses a header (v1, v2 or v3; for v3 also the message's salt and commitment
    /// after it), refusing absurd values before allocating anything for them (at most two
    /// stanza slots of [`v2::MAX_SLOT_LEN`] bytes). The bytes read are kept
    /// ([`Opened::header_bytes`]).
    pub fn read(input: &mut impl Read) -> Result<Self, ContainerError> {
        let mut recording = Recording {
            inner: input,
            bytes: Vec::new(),
        };
        let mut header = Self::parse(&mut recording)?;
        header.bytes = recording.bytes;
        Ok(header)
    }

    fn parse(input: &mut impl Read) -> Result<Self, ContainerError> {
        let mut first = [0u8; 32];
        match read_exact(input, &mut first[..MAGIC.len()]) {
            Err(ContainerError::TruncatedHeader) => return Err(ContainerError::NotAContainer),
            other => other?,
        }
        if first[..MAGIC.len()] != MAGIC {
            return Err(ContainerError::NotAContainer);
        }
        read_exact(input, &mut first[MAGIC.len()..MAGIC.len() + 1])?;
        if ![v1::VERSION, v2::VERSION, v3::VERSION].contains(&first[8]) {
            return Err(ContainerError::UnsupportedVersion(first[8]));
        }
        read_exact(input, &mut first[MAGIC.len() + 1..])?;
        let counter: [u8; 16] = first[16..32].try_into().expect("16 bytes");
        if first[8] == v1::VERSION {
            let header = V1Header::read(&first, input)?;
            return Ok(UnverifiedHeader {
                info: HeaderInfo {
                    version: v1::VERSION,
                    params: header.params,
                    counter,
                    header_len: header.len(),
                    access: Access::V1(header.key_source),
                },
                parsed: Parsed::V1(header),
                message_prefix: None,
                bytes: Vec::new(),
            });
        }
        let header = SlottedHeader::read(&first, input)?;
        let message_prefix = if header.preamble.version == v3::VERSION {
            let mut prefix = [0u8; MESSAGE_PREFIX_LEN];
            read_exact(input, &mut prefix).map_err(|e| match e {
                ContainerError::TruncatedHeader => ContainerError::BodyCutOrExtended(
                    "it ends inside its 24-byte salt and 32-byte key commitment".into(),
                ),
                other => other,
            })?;
            Some(prefix)
        } else {
            None
        };
        let mut slots = header
            .slots
            .iter()
            .map(|slot| {
                Ok(SlotInfo {
                    position: slot.index,
                    generation: slot.generation,
                    stanzas: slot.kinds()?,
                })
            })
            .collect::<Result<Vec<_>, ContainerError>>()?;
        slots.sort_by_key(|slot| slot.position);
        Ok(UnverifiedHeader {
            info: HeaderInfo {
                version: header.preamble.version,
                params: header.preamble.params,
                counter,
                header_len: header.preamble.header_len(),
                access: Access::Slots {
                    slots,
                    ignored: header.ignored.clone(),
                },
            },
            parsed: Parsed::Slots(header),
            message_prefix,
            bytes: Vec::new(),
        })
    }

    /// The header's public, unauthenticated facts.
    pub fn info(&self) -> &HeaderInfo {
        &self.info
    }

    /// Opens the header with an identity (docs/FORMAT.md, "Opening a file"). v2 and v3: a
    /// stanza's file key D is taken only if its slot's tag verifies under D and the body check
    /// passes (else the next stanza or slot is tried): v3, the message's key commitment
    /// matches D (read with the header, so on files and streams alike); v2, where `body` can be
    /// read at offsets, the body's first and last chunk tags verify under D (the first, on a
    /// stream). Then every other slot that parses must verify under D too, unless
    /// [`Unlock::allow_unverified_slot`]. Argon2id runs only if the passphrase stanzas of all
    /// slots together ask for no more than the cap.
    pub fn open(self, unlock: &Unlock, body: BodyAccess<'_>) -> Result<Opened, ContainerError> {
        // A v3 body whose length no writer makes is refused before any key is tried (it says
        // nothing about the keys, and trying them may run Argon2id).
        if let (true, Some(len)) = (self.info.is_message(), body.len()?) {
            self.info
                .layout(len)
                .map_err(|why| ContainerError::BodyCutOrExtended(why.to_string()))?;
        }
        match &self.parsed {
            Parsed::V1(header) => self.open_v1(header, unlock),
            Parsed::Slots(header) => self.open_slots(header, unlock, body),
        }
    }

    fn open_v1(&self, header: &V1Header, unlock: &Unlock) -> Result<Opened, ContainerError> {
        let mut tried_key = false;
        for identity in &unlock.identities {
            let key = match identity {
                Identity::Key(key) => Some(key.clone()),
                Identity::Passphrase(passphrase) => {
                    if let V1KeySource::Passphrase(params) = &header.key_source {
                        if params.cost_mib() > unlock.max_kdf_mib {
                            return Err(ContainerError::KdfTooCostly {
                                cost_mib: params.cost_mib(),
                                cap_mib: unlock.max_kdf_mib,
                                slots: 1,
                            });
                        }
                    }
                    header.passphrase_key(passphrase)?
                }
                Identity::Secret(_) => None,
            };
            if let Some(key) = key {
                tried_key = true;
                if let Some(keys) = header.open(&key) {
                    let secret = FileSecret::from_bytes(key.as_bytes());
                    return Ok(self.opened(
                        secret,
                        BodyKeys::Chunked(Box::new(keys)),
                        None,
                        Vec::new(),
                    ));
                }
            }
        }
        Err(if tried_key {
            ContainerError::WrongKeyOrDamagedHeader
        } else {
            ContainerError::NoMatchingStanza(describe(&self.info.access))
        })
    }

    fn open_slots(
        &self,
        header: &SlottedHeader,
        unlock: &Unlock,
        body: BodyAccess<'_>,
    ) -> Result<Opened, ContainerError> {
        // The Argon2id cap holds for the file, not per stanza: a planted second slot cannot
        // double the work (docs/FORMAT.md). Over the cap, no passphrase stanza is tried.
        let costs: Vec<u64> = header
            .slots
            .iter()
            .flat_map(|slot| &slot.stanzas)
            .filter_map(|stanza| Some(stanza.argon2()?.cost_mib()))
            .collect();
        let kdf_total: u64 = costs.iter().sum();
        let too_costly = kdf_total > unlock.max_kdf_mib;
        let mut opened_a_stanza = false;
        let mut body_mismatch = None;
        // A stanza refused (e.g. too costly a passphrase) does not stop another identity from
        // opening another stanza; it is reported if nothing opens.
        let mut refused = None;
        // Identities whose secret is at hand are tried on every slot first; only if none of
        // them opens the file are the locked ones (an SSH key with a passphrase) tried, so a
        // passphrase is asked only when it is needed. Split once: unlocking changes the answer.
        let (at_hand, locked): (Vec<&Identity>, Vec<&Identity>) =
            unlock.identities.iter().partition(|i| !i.may_prompt());
        // Slots are tried newest first only to save work: the checks below decide.
        for (slot, identities) in [&at_hand, &locked]
            .into_iter()
            .filter(|identities| !identities.is_empty())
            .flat_map(|identities| header.slots.iter().map(move |slot| (slot, identities)))
        {
            // A slot that names one key too often is not tried at all (paraes never writes
            // one): a planted header cannot make a key work hundreds of times.
            if stanza::names_a_key_too_often(&slot.stanzas) {
                refused.get_or_insert(ContainerError::KeyNamedTooOften);
                continue;
            }
            for stanza in &slot.stanzas {
                for &identity in identities {
                    if too_costly && stanza.argon2().is_some() {
                        refused.get_or_insert(ContainerError::KdfTooCostly {
                            cost_mib: kdf_total,
                            cap_mib: unlock.max_kdf_mib,
                            slots: costs.len(),
                        });
                        continue;
                    }
                    let file_key = match stanza.unwrap(identity, unlock.max_kdf_mib) {
                        Ok(Some(file_key)) => file_key,
                        Ok(None) => continue,
                        Err(e) => {
                            refused.get_or_insert(e);
                            continue;
                        }
                    };
                    opened_a_stanza = true;
                    let Some(mut opened) = self.open_slot(header, slot, file_key) else {
                        continue;
                    };
                    match self.check_body(&opened, body)? {
                        Err(mismatch) => {
                            body_mismatch.get_or_insert(mismatch);
                            continue;
                        }
                        Ok(checked) => opened.body_checked = checked,
                    }
                    // The opened facts list only the slots this key authenticates. Another
                    // slot that parses but does not verify: in v3 the key commitment already
                    // decided that this D is the body's, so that slot is ignored (and said
                    // so); in v2 nothing decides between the two, so it is refused unless
                    // the caller asked to ignore it.
                    let unverified = self.unverified_slot(&opened);
                    if let Some(ignored) = unverified {
                        if ignored.version < v3::VERSION && !unlock.allow_unverified_slot {
                            return Err(ContainerError::UnverifiedSlot);
                        }
                        opened.ignored = Some(ignored);
                    }
                    return Ok(opened);
                }
            }
        }
        Err(if let Some(mismatch) = body_mismatch {
            mismatch
        } else if opened_a_stanza {
            ContainerError::DamagedHeader
        } else if let Some(refused) = refused {
            refused
        } else {
            ContainerError::NoMatchingStanza(describe(&self.info.access))
        })
    }

    /// The slot that parses but that `opened`'s file key does not authenticate, if any.
    fn unverified_slot(&self, opened: &Opened) -> Option<IgnoredSlot> {
        let (
            Access::Slots { slots: all, .. },
            Access::Slots {
                slots: authentic, ..
            },
        ) = (&self.info.access, &opened.info.access)
        else {
            return None;
        };
        let slot = all
            .iter()
            .find(|slot| !authentic.iter().any(|a| a.position == slot.position))?;
        Some(IgnoredSlot {
            position: slot.position,
            generation: slot.generation,
            version: self.info.version,
            lists: count_kinds(&slot.stanzas),
        })
    }

    /// The body check of `opened` (a slot that verified under its file key): `Ok(true)` if
    /// it passed with the whole body at hand, `Ok(false)` if not all of it could be checked
    /// (a stream, whose end the pipeline checks, or a length no writer makes, which the
    /// pipeline reports), `Err(why)` if this file key does not belong to the body. v3: the
    /// message's key commitment (read with the header) must match, then on a whole file its
    /// last chunk's tag must verify; v2: the first and last chunk tags (the first, on a
    /// stream).
    fn check_body(
        &self,
        opened: &Opened,
        body: BodyAccess<'_>,
    ) -> Result<Result<bool, ContainerError>, ContainerError> {
        let check = match (&opened.keys, &self.message_prefix) {
            (BodyKeys::Message(message), Some(prefix)) => {
                if !message.commits_to(prefix) {
                    return Ok(Err(ContainerError::CommitmentMismatch));
                }
                body.check_message_end(self.info.chunks_start(), &message.cipher)?
            }
            (BodyKeys::Chunked(keys), _) => {
                body.check(self.info.params, self.info.header_len as u64, &keys.auth)?
            }
            (BodyKeys::Message(_), None) => unreachable!("a v3 header is read with its prefix"),
        };
        Ok(match check {
            BodyCheck::Failed(chunk) => Err(ContainerError::BodyKeyMismatch(chunk)),
            BodyCheck::Verified => Ok(matches!(body, BodyAccess::File(_) | BodyAccess::Bytes(_))),
            BodyCheck::NotChecked => Ok(false),
        })
    }

    /// Opens the header with the file's secret itself, as another process of the same job
    /// received it from the one that opened the file (an MPI rank): that process applied the
    /// rules of [`UnverifiedHeader::open`]; here the header tag of a slot is checked, and for
    /// v3 the body's key commitment.
    pub fn open_with_secret(self, secret: &FileSecret) -> Result<Opened, ContainerError> {
        match &self.parsed {
            Parsed::V1(header) => {
                let key = Key::new(secret.as_bytes())
                    .map_err(|_| ContainerError::WrongKeyOrDamagedHeader)?;
                let keys = header
                    .open(&key)
                    .ok_or(ContainerError::WrongKeyOrDamagedHeader)?;
                Ok(self.opened(
                    secret.clone(),
                    BodyKeys::Chunked(Box::new(keys)),
                    None,
                    Vec::new(),
                ))
            }
            Parsed::Slots(header) => {
                let opened = header
                    .slots
                    .iter()
                    .find_map(|slot| self.open_slot(header, slot, secret.clone()))
                    .ok_or(ContainerError::DamagedHeader)?;
                if let (BodyKeys::Message(message), Some(prefix)) =
                    (&opened.keys, &self.message_prefix)
                {
                    if !message.commits_to(prefix) {
                        return Err(ContainerError::CommitmentMismatch);
                    }
                }
                Ok(opened)
            }
        }
    }

    /// `slot` opened with `file_key`, if the slot's tag verifies under it. The next rekey
    /// generation comes from the slots this key authenticates, never from another.
    fn open_slot(
        &self,
        header: &SlottedHeader,
        slot: &v2::Slot,
        file_key: FileSecret,
    ) -> Option<Opened> {
        let header_keys = HeaderKeys::new(&file_key, header.preamble.version);
        let authentic: Vec<&v2::Slot> = header
            .slots
            .iter()
            .filter(|s| s.verify(&header.preamble_bytes, &header_keys))
            .collect();
        if !authentic.iter().any(|s| s.index == slot.index) {
            return None;
        }
        let newest_authentic = authentic
            .iter()
            .map(|s| s.generation)
            .max()
            .unwrap_or(slot.generation);
        let keys = match &self.message_prefix {
            Some(prefix) => BodyKeys::Message(Box::new(MessageBody::new(
                &file_key,
                &header.preamble_bytes,
                Variant::for_key_size(header.preamble.params.key_size)
                    .expect("a v3 preamble has a message's key size"),
                prefix[..cobblestone::SALT_LEN]
                    .try_into()
                    .expect("24 bytes"),
            ))),
            None => BodyKeys::Chunked(Box::new(v2::body_keys(
                &file_key,
                &header.preamble_bytes,
                header.preamble.params,
            ))),
        };
        let rekey = RekeyState {
            preamble: header.preamble,
            preamble_bytes: header.preamble_bytes,
            opened_slot: slot.index,
            newest_generation: newest_authentic,
        };
        let mut opened = self.opened(file_key, keys, Some(rekey), slot.stanzas.clone());
        // Once opened, the facts shown are the authenticated ones only.
        if let Access::Slots { slots, .. } = &mut opened.info.access {
            slots.retain(|info| authentic.iter().any(|s| s.index == info.position));
        }
        Some(opened)
    }

    fn opened(
        &self,
        secret: FileSecret,
        keys: BodyKeys,
        rekey: Option<RekeyState>,
        stanzas: Vec<Stanza>,
    ) -> Opened {
        Opened {
            info: self.info.clone(),
            header: self.bytes.clone(),
            secret,
            keys,
            rekey,
            stanzas,
            body_checked: false,
            batch: DEFAULT_CHUNK_SIZE,
            ignored: None,
        }
    }
}

/// What the user can be told opens a file.
fn describe(access: &Access) -> String {
    match access {
        Access::V1(V1KeySource::RawKey) => "a key file (format v1)".into(),
        Access::V1(V1KeySource::Passphrase(_)) => "a passphrase (format v1)".into(),
        // Nothing here is authenticated: this only lists what the slots claim, each apart.
        Access::Slots { slots, .. } => {
            let claims: Vec<String> = slots
                .iter()
                .map(|slot| count_kinds(&slot.stanzas))
                .collect();
            match claims.as_slice() {
                [one] => one.clone(),
                _ => format!(
                    "its two stanza slots, which no key has authenticated, list: {}",
                    claims.join("; and ")
                ),
            }
        }
    }
}

/// `kinds` named, with counts ("2 x X25519 recipient, passphrase").
fn count_kinds(kinds: &[StanzaKind]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for kind in kinds {
        // By name alone (a passphrase without its Argon2id parameters); unknown kinds by byte.
        let name = kind.name().map_or_else(|| kind.to_string(), str::to_string);
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    counts
        .into_iter()
        .map(|(name, count)| {
            if count == 1 {
                name
            } else {
                format!("{count} x {name}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a rekey (or an upgrade) of an opened v2 or v3 file needs: the preamble, which slot the
/// file key opened, and the newest generation among the slots that key authenticates.
#[derive(Clone, Copy, Debug)]
struct RekeyState {
    preamble: Preamble,
    preamble_bytes: [u8; v2::PREAMBLE_LEN],
    opened_slot: usize,
    newest_generation: u64,
}

/// The keys a body runs with.
enum BodyKeys {
    /// v1 and v2: the body's AES key and paraes's chunk authenticator.
    Chunked(Box<StreamKeys>),
    /// v3: the message's input key, context and chunk cipher.
    Message(Box<MessageBody>),
}

/// A verified (or freshly sealed) container: its facts, and the keys its stream runs with.
pub struct Opened {
    info: HeaderInfo,
    /// The exact bytes before the body's first chunk: the header, and for v3 the message's
    /// salt and commitment (read, or written by [`seal`]).
    header: Vec<u8>,
    secret: FileSecret,
    keys: BodyKeys,
    rekey: Option<RekeyState>,
    /// The stanzas of the slot that opened the file (v2, v3), as they are: an upgrade keeps
    /// them.
    stanzas: Vec<Stanza>,
    /// Whether the body check passed with the whole body at hand when the file was opened
    /// (v2: its first and last chunk tags from a whole file; v3: the key commitment), which a
    /// rekey needs before it writes anything.
    body_checked: bool,
    /// Plaintext bytes per pipeline chunk of a v3 body (a whole number of 16 KiB message
    /// chunks); v1 and v2 bodies go through the pipeline one format chunk at a time.
    batch: usize,
    /// A slot that parses but that the file key does not authenticate, ignored.
    ignored: Option<IgnoredSlot>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opened {{ {:?}, keys: <redacted> }}", self.info)
    }
}

impl Opened {
    /// The header's facts, now authenticated.
    pub fn info(&self) -> &HeaderInfo {
        &self.info
    }

    /// The exact bytes before the body's first chunk: the header, and for v3 the message's
    /// salt and commitment (what [`seal`] wrote, or what [`UnverifiedHeader::read`] read).
    pub fn header_bytes(&self) -> &[u8] {
        &self.header
    }

    /// A stanza slot that parses but that this file key does not authenticate, which opening
    /// ignored (v3 always; v2 only with [`Unlock::allow_unverified_slot`]): every front end
    /// tells the user ([`IgnoredSlot::warning`]).
    pub fn ignored_slot(&self) -> Option<&IgnoredSlot> {
        self.ignored.as_ref()
    }

    /// Sets how many plaintext bytes of a v3 body go through the pipeline as one chunk:
    /// `bytes` rounded down to a whole number of 16 KiB message chunks (at least one). The
    /// bytes written do not depend on it. No effect on v1 and v2 bodies, whose chunk size is
    /// in their header.
    pub fn set_batch(&mut self, bytes: usize) {
        self.batch = message_batch(bytes);
    }

    /// Plaintext bytes of a v3 body per pipeline chunk ([`Opened::set_batch`]).
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The stream of the body in `direction` on `engine`, as the pipeline runs it (a v3 body
    /// in batches of [`Opened::set_batch`]).
    pub fn stream_spec<'a>(
        &'a self,
        engine: &'a dyn Engine,
        direction: Direction,
    ) -> StreamSpec<'a> {
        self.spec(engine, direction, self.batch)
    }

    /// The stream of the body with one format chunk per pipeline chunk (16 KiB for v3), for
    /// readers that index chunks by their place in the file: `verify`, `--range`.
    pub fn chunk_spec<'a>(
        &'a self,
        engine: &'a dyn Engine,
        direction: Direction,
    ) -> StreamSpec<'a> {
        self.spec(engine, direction, self.info.params.chunk_size)
    }

    fn spec<'a>(
        &'a self,
        engine: &'a dyn Engine,
        direction: Direction,
        batch: usize,
    ) -> StreamSpec<'a> {
        match &self.keys {
            BodyKeys::Chunked(keys) => StreamSpec {
                engine,
                mode: self.info.params.mode,
                direction,
                key: &keys.expanded,
                counter: self.info.counter,
                chunk_size: self.info.params.chunk_size,
                padding: true,
                tags: Tags::Chunk(&keys.auth),
            },
            BodyKeys::Message(message) => {
                StreamSpec::message(engine, direction, &message.cipher, batch)
            }
        }
    }

    /// The secret another process of the same job opens the header with
    /// ([`UnverifiedHeader::open_with_secret`]): D for v2 and v3 (never the user's key), K
    /// for v1.
    pub fn secret(&self) -> &FileSecret {
        &self.secret
    }

    /// The key that reads the body without paraes (show it only on an explicit request). v3:
    /// the message's input key IK, which with [`Opened::message_context`] reads the body with
    /// any C2SP Cobblestone implementation, and also lets its holder write a different body
    /// that this key accepts, for every recipient. v1 and v2: the body's AES key, which with
    /// the counter block decrypts the body with any AES-CTR/ECB tool (after removing the chunk
    /// tags) and cannot forge chunk tags (their keys are derived from D separately).
    pub fn data_key(&self) -> &Key {
        match &self.keys {
            BodyKeys::Chunked(keys) => &keys.body,
            BodyKeys::Message(message) => &message.input_key,
        }
    }

    /// v3: the context of the body's message (the preamble's first 16 bytes).
    pub fn message_context(&self) -> Option<&[u8]> {
        match &self.keys {
            BodyKeys::Message(message) => Some(&message.context),
            BodyKeys::Chunked(_) => None,
        }
    }

    /// v3: the body message's chunk cipher.
    pub fn message_cipher(&self) -> Option<&cobblestone::ChunkCipher> {
        match &self.keys {
            BodyKeys::Message(message) => Some(&message.cipher),
            BodyKeys::Chunked(_) => None,
        }
    }

    /// The v1/v2 chunk authenticator (none for a v3 body, whose chunks are AES-GCM).
    pub fn authenticator(&self) -> Option<&Authenticator> {
        match &self.keys {
            BodyKeys::Chunked(keys) => Some(&keys.auth),
            BodyKeys::Message(_) => None,
        }
    }

    /// A v3 header, with its message prefix, for the same file key D and the stanzas of the
    /// slot that opened this v2 file (every stanza kept, so recipients who are not present
    /// still open the upgraded file), and the opened v3 container to encrypt the body with.
    /// Refused for v1 (no file key to keep), v3, and a file whose two slots both verify under
    /// D (an unfinished rekey: which set is meant is the rekey's to say).
    pub fn upgrade(&self, key_size: KeySize) -> Result<(Vec<u8>, Opened), ContainerError> {
        let (Some(state), 2) = (&self.rekey, self.info.version) else {
            return Err(ContainerError::BadRecipients(format!(
                "only format v2 files can be upgraded, and this one is format v{}{}",
                self.info.version,
                if self.info.version == 1 {
                    " (it has no file key to keep): decrypt it and encrypt it again"
                } else {
                    ""
                }
            )));
        };
        // Both slots authentic under D: a rekey published its new stanzas but did not wipe the
        // old ones. Keeping either set alone would silently undo or lose that rekey.
        if matches!(&self.info.access, Access::Slots { slots, .. } if slots.len() > 1) {
            return Err(ContainerError::BadRecipients(
                "both stanza slots open with this file's key (a rekey did not finish): run the rekey again to finish it, then upgrade".into(),
            ));
        }
        let variant = Variant::for_key_size(key_size).ok_or_else(|| {
            ContainerError::BadRecipients(
                "a v3 body has a 128- or 256-bit key, not 192: give --bits 128 or 256".into(),
            )
        })?;
        seal_message(
            &self.stanzas,
            self.secret.clone(),
            variant,
            state.preamble.slot_len,
            state.newest_generation,
        )
    }
}

/// A pipeline batch of a C2SP message for `bytes`: rounded down to a whole number of 16 KiB
/// message chunks, at least one.
pub fn message_batch(bytes: usize) -> usize {
    let chunk = cobblestone::CHUNK_LEN;
    (bytes / chunk).max(1) * chunk
}

/// Seals a new v3 container for `recipients` with a body of `key_size` (128 or 256 bits): a
/// fresh file key D and message salt, one stanza per recipient. Returns the bytes to write
/// before the body's first chunk (header, then the message's salt and commitment), and the
/// keys to encrypt the body with.
pub fn seal(
    key_size: KeySize,
    recipients: &[Recipient],
) -> Result<(Vec<u8>, Opened), ContainerError> {
    let variant = Variant::for_key_size(key_size).ok_or_else(|| {
        ContainerError::BadRecipients(
            "a container's body has a 128- or 256-bit key, not 192".into(),
        )
    })?;
    let file_key = FileSecret::random()?;
    let stanzas = make_stanzas(recipients, &file_key)?;
    let slot_len = Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas));
    seal_message(&stanzas, file_key, variant, slot_len, FIRST_GENERATION)
}

/// A v3 container with `stanzas` (which wrap `file_key`) in slot 0 of `slot_len` bytes at
/// `generation`: its header and message prefix, and its opened keys.
fn seal_message(
    stanzas: &[Stanza],
    file_key: FileSecret,
    variant: Variant,
    slot_len: usize,
    generation: u64,
) -> Result<(Vec<u8>, Opened), ContainerError> {
    let preamble = Preamble {
        version: v3::VERSION,
        params: BodyParams::message(variant),
        counter: [0; 16],
        slot_len,
    };
    let (mut header, rekey) = slotted_header(preamble, stanzas, &file_key, generation);
    let header_len = header.len();
    let mut salt = [0u8; cobblestone::SALT_LEN];
    random_bytes(&mut salt)?;
    let message = MessageBody::new(&file_key, &rekey.preamble_bytes, variant, &salt);
    header.extend_from_slice(&message.prefix(&salt));
    let opened = Opened {
        info: sealed_info(preamble, header_len, generation, stanzas)?,
        header: header.clone(),
        secret: file_key,
        keys: BodyKeys::Message(Box::new(message)),
        rekey: Some(rekey),
        stanzas: stanzas.to_vec(),
        body_checked: false,
        batch: DEFAULT_CHUNK_SIZE,
        ignored: None,
    };
    Ok((header, opened))
}

/// The facts of a freshly sealed header.
fn sealed_info(
    preamble: Preamble,
    header_len: usize,
    generation: u64,
    stanzas: &[Stanza],
) -> Result<HeaderInfo, ContainerError> {
    Ok(HeaderInfo {
        version: preamble.version,
        params: preamble.params,
        counter: preamble.counter,
        header_len,
        access: Access::Slots {
            slots: vec![SlotInfo {
                position: 0,
                generation,
                stanzas: stanzas.iter().map(Stanza::kind).collect::<Result<_, _>>()?,
            }],
            ignored: Vec::new(),
        },
    })
}

/// Seals a format v2 container, as paraes wrote them before v3 (for tests of the v2 reader,
/// rekey and upgrade): a fresh file key D and counter block, one stanza per recipient.
#[cfg(any(test, feature = "testing"))]
pub fn seal_v2(
    params: BodyParams,
    recipients: &[Recipient],
) -> Result<(Vec<u8>, Opened), ContainerError> {
    params.check()?;
    let file_key = FileSecret::random()?;
    let stanzas = make_stanzas(recipients, &file_key)?;
    let mut counter = [0u8; 16];
    random_bytes(&mut counter)?;
    let preamble = Preamble {
        version: v2::VERSION,
        params,
        counter,
        slot_len: Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas)),
    };
    let (header, rekey) = slotted_header(preamble, &stanzas, &file_key, FIRST_GENERATION);
    let keys = v2::body_keys(&file_key, &rekey.preamble_bytes, params);
    let opened = Opened {
        info: sealed_info(preamble, header.len(), FIRST_GENERATION, &stanzas)?,
        header: header.clone(),
        secret: file_key,
        keys: BodyKeys::Chunked(Box::new(keys)),
        rekey: Some(rekey),
        stanzas,
        body_checked: false,
        batch: DEFAULT_CHUNK_SIZE,
        ignored: None,
    };
    Ok((header, opened))
}

/// New stanzas for recipients, prepared before the file key they will wrap is known: the
/// checks every writer makes (at least one recipient, at most [`MAX_STANZAS`], at most one
/// passphrase), and each recipient's costly part done (Argon2id, key agreement,
/// encapsulation). A rekey prepares them before it opens the file ([`Opened::rekey_with`]).
pub struct NewStanzas {
    prepared: Vec<stanza::PreparedStanza>,
}

impl std::fmt::Debug for NewStanzas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NewStanzas({} stanzas, wrap keys redacted)",
            self.prepared.len()
        )
    }
}

impl NewStanzas {
    /// One prepared stanza per recipient.
    pub fn prepare(recipients: &[Recipient]) -> Result<Self, ContainerError> {
        if recipients.is_empty() {
            return Err(ContainerError::BadRecipients(
                "no recipients: a container needs at least one way to open it".into(),
            ));
        }
        if recipients.len() > MAX_STANZAS {
            return Err(ContainerError::BadRecipients(format!(
                "{} recipients: a container holds at most {MAX_STANZAS}",
                recipients.len()
            )));
        }
        if recipients
            .iter()
            .filter(|r| matches!(r, Recipient::Passphrase(..)))
            .count()
            > 1
        {
            return Err(ContainerError::BadRecipients(
                "at most one passphrase per container".into(),
            ));
        }
        let prepared = recipients
            .iter()
            .map(stanza::PreparedStanza::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(NewStanzas { prepared })
    }

    /// The stanzas, each wrapping `file_key`.
    fn seal(&self, file_key: &FileSecret) -> Result<Vec<Stanza>, ContainerError> {
        let stanzas = self
            .prepared
            .iter()
            .map(|prepared| prepared.seal(file_key))
            .collect::<Result<Vec<_>, _>>()?;
        // What a reader refuses, no writer makes.
        if stanza::names_a_key_too_often(&stanzas) {
            return Err(ContainerError::BadRecipients(format!(
                "the same SSH key is given more than {} times: give it once",
                stanza::MAX_SAME_TAG
            )));
        }
        Ok(stanzas)
    }
}

/// One stanza per recipient; at most one passphrase, at least one recipient.
fn make_stanzas(
    recipients: &[Recipient],
    file_key: &FileSecret,
) -> Result<Vec<Stanza>, ContainerError> {
    NewStanzas::prepare(recipients)?.seal(file_key)
}

/// A whole v2 or v3 header (the preamble says which) with `stanzas` in slot 0 and an empty
/// slot 1.
fn slotted_header(
    preamble: Preamble,
    stanzas: &[Stanza],
    file_key: &FileSecret,
    generation: u64,
) -> (Vec<u8>, RekeyState) {
    let preamble_bytes = preamble.encode();
    let slot = v2::encode_slot(
        &preamble_bytes,
        preamble.slot_len,
        generation,
        stanzas,
        &HeaderKeys::new(file_key, preamble.version),
    )
    .expect("the slot was sized for the stanzas");
    let mut header = preamble_bytes.to_vec();
    header.extend_from_slice(&slot);
    header.resize(preamble.header_len(), 0);
    let state = RekeyState {
        preamble,
        preamble_bytes,
        opened_slot: 0,
        newest_generation: generation,
    };
    (header, state)
}

/// The hostile-input harness's forger (docs/FORMAT.md, "Opening a file"): `file` with slot
/// `position` replaced by a valid slot of `generation` whose stanzas, for `recipients`, wrap a
/// fresh file key of the forger's own, with a correct tag under that key. Someone who knows
/// only public recipients can make it; readers must not let it replace or shadow the real slot.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn plant_slot(
    file: &[u8],
    position: usize,
    recipients: &[Recipient],
    generation: u64,
) -> Result<Vec<u8>, ContainerError> {
    let first: &[u8; 32] = file
        .get(..32)
        .and_then(|b| b.try_into().ok())
        .ok_or(ContainerError::TruncatedHeader)?;
    let header = SlottedHeader::read(first, &mut &file[32..])?;
    let forged_key = FileSecret::random()?;
    let stanzas = make_stanzas(recipients, &forged_key)?;
    let slot = v2::encode_slot(
        &header.preamble_bytes,
        header.preamble.slot_len,
        generation,
        &stanzas,
        &HeaderKeys::new(&forged_key, header.preamble.version),
    )
    .ok_or_else(|| ContainerError::BadRecipients("the forged stanzas do not fit".into()))?;
    let at = header.preamble.slot_offset(position);
    let mut out = file.to_vec();
    out[at..at + slot.len()].copy_from_slice(&slot);
    Ok(out)
}

#[cfg(test)]
mod tests;
