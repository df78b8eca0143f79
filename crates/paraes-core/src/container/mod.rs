//! The paraes container: one API for writing ([`seal`]) and reading ([`UnverifiedHeader::read`]
//! -> [`UnverifiedHeader::open`] -> [`Opened`]) containers, used alike by the CLI, MPI ranks,
//! fuzz targets and `info`. Nothing unverified reaches the pipeline: only an [`Opened`] makes
//! a [`StreamSpec`]. Format v2 (what paraes writes): a random file key D per file, wrapped by
//! stanzas for keys, a passphrase and public-key recipients; the body key and the MAC keys are
//! derived from D in their own domains. Format v1 is still read. docs/FORMAT.md has the layout
//! and the security argument.

mod body;
mod identity;
mod keys;
mod rekey;
mod stanza;
mod v1;
mod v2;

use std::io::Read;

pub use body::{verify, verify_file, BodyLayout, LayoutError, RangeError, SeekableReader};
pub use identity::{
    parse_identities, parse_recipients, HybridIdentity, HybridRecipient, PublicRecipient,
    SecretIdentity, X25519Identity, X25519Recipient,
};
pub use keys::{
    random_bytes, Argon2Params, Authenticator, FileSecret, DEFAULT_ARGON2_ITERATIONS,
    DEFAULT_ARGON2_LANES, DEFAULT_ARGON2_MEMORY_KIB, DEFAULT_MAX_KDF_MIB, MAX_ARGON2_ITERATIONS,
    MAX_ARGON2_LANES, MAX_ARGON2_MEMORY_KIB, TAG_LEN,
};
pub use rekey::{HeaderWrite, Rekey};
pub use stanza::{Identity, Recipient, StanzaKind};
pub use v1::V1KeySource;

use crate::engine::{Direction, Engine, Mode};
use crate::key::{Key, KeySize};
use crate::pipeline::StreamSpec;
use keys::StreamKeys;
use stanza::Stanza;
use v1::V1Header;
use v2::{Preamble, V2Header, V2Keys};

/// First bytes of every container: a high-bit byte (catches 7-bit channels), the name, and a
/// newline (catches newline translation), as PNG does.
pub const MAGIC: [u8; 8] = *b"\x89PARAES\n";
/// The format version paraes writes.
pub const VERSION: u8 = v2::VERSION;
/// Smallest chunk size a container may declare.
pub const MIN_CHUNK_SIZE: usize = 4 << 10;
/// Largest chunk size a container may declare: reading one chunk never allocates more.
pub const MAX_CHUNK_SIZE: usize = 64 << 20;
/// Most stanzas one header may hold.
pub const MAX_STANZAS: usize = v2::MAX_STANZAS;

/// Why a container could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// The input does not start with the magic bytes.
    #[error("not a paraes container (no paraes header)")]
    NotAContainer,
    /// A newer or unknown format version.
    #[error("container format version {0} is not supported by this paraes (it reads versions 1 and 2): upgrade paraes")]
    UnsupportedVersion(u8),
    /// A header field is invalid or asks for more than the documented limits.
    #[error("damaged or hostile container header: {0}")]
    BadHeader(String),
    /// The header ends early.
    #[error("the container is truncated inside its header")]
    TruncatedHeader,
    /// A stanza opened but the header tag does not verify: the header was changed.
    #[error("the container header was changed (its tag does not verify)")]
    DamagedHeader,
    /// No given key, passphrase or identity opens any stanza.
    #[error(
        "none of the given keys, passphrases or identities opens this file (it opens with: {0})"
    )]
    NoMatchingStanza(String),
    /// Format v1: the header tag does not verify under the given key or passphrase.
    #[error("wrong key or passphrase, or the container header was changed")]
    WrongKeyOrDamagedHeader,
    /// A passphrase stanza asks for more Argon2id work than the reader allows.
    #[error("the passphrase stanza asks for Argon2id memory x passes of {cost_mib} MiB, above the cap of {cap_mib} MiB")]
    KdfTooCostly {
        /// What the header asks for (MiB x passes).
        cost_mib: u64,
        /// The cap.
        cap_mib: u64,
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
    /// Mode, key size, a zero byte and the chunk size: header bytes 9..16.
    fn encode(&self) -> [u8; 7] {
        let mut out = [0u8; 7];
        out[0] = v1::mode_byte(self.mode);
        out[1] = self.key_size.bytes() as u8;
        out[3..].copy_from_slice(&(self.chunk_size as u32).to_be_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Result<Self, ContainerError> {
        let mode = match bytes[0] {
            1 => Mode::Ctr,
            2 => Mode::Ecb,
            other => return Err(ContainerError::BadHeader(format!("unknown mode {other}"))),
        };
        let key_size = v1::key_size_of(bytes[1])?;
        let chunk_size = u32::from_be_bytes(bytes[3..7].try_into().expect("4 bytes")) as usize;
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

/// What a header says without a key: public and not yet authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderInfo {
    /// Format version (1 or 2).
    pub version: u8,
    /// The body's parameters.
    pub params: BodyParams,
    /// CTR's initial counter block; for ECB a random value that makes the file's tags unique.
    pub counter: [u8; 16],
    /// Bytes of the header: the body starts here.
    pub header_len: usize,
    /// How the file opens.
    pub access: Access,
}

/// How a container opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Format v1: with the key K itself, or a passphrase.
    V1(V1KeySource),
    /// Format v2: with any stanza of the newest slot; `older` lists the stanzas of a second,
    /// older slot (a rekey was interrupted between its two writes).
    V2 {
        /// The stanzas of the newest slot.
        stanzas: Vec<StanzaKind>,
        /// The stanzas of an older slot, if one is present.
        older: Option<Vec<StanzaKind>>,
    },
}

/// How to try to open a container: identities to try, and the most Argon2id work to accept.
#[derive(Clone)]
pub struct Unlock {
    /// Keys, passphrases and secret identities, tried in turn.
    pub identities: Vec<Identity>,
    /// The most Argon2id memory x passes (MiB) a passphrase stanza may ask for.
    pub max_kdf_mib: u64,
}

impl Unlock {
    /// Tries `identities` with the default Argon2id cap.
    pub fn new(identities: Vec<Identity>) -> Self {
        Unlock {
            identities,
            max_kdf_mib: DEFAULT_MAX_KDF_MIB,
        }
    }
}

#[derive(Debug)]
enum Parsed {
    V1(V1Header),
    V2(V2Header),
}

/// A parsed header whose tag has not been checked: its [`HeaderInfo`] may be shown, but only
/// [`UnverifiedHeader::open`] gives the keys a stream needs.
#[derive(Debug)]
pub struct UnverifiedHeader {
    info: HeaderInfo,
    parsed: Parsed,
}

impl UnverifiedHeader {
    /// Reads and parses a header (v1 or v2), refusing absurd values before allocating
    /// anything for them (at most two stanza slots of [`v2::MAX_SLOT_LEN`] bytes).
    pub fn read(input: &mut impl Read) -> Result<Self, ContainerError> {
        let mut first = [0u8; 32];
        match read_exact(input, &mut first[..MAGIC.len()]) {
            Err(ContainerError::TruncatedHeader) => return Err(ContainerError::NotAContainer),
            other => other?,
        }
        if first[..MAGIC.len()] != MAGIC {
            return Err(ContainerError::NotAContainer);
        }
        read_exact(input, &mut first[MAGIC.len()..MAGIC.len() + 1])?;
        if first[8] != v1::VERSION && first[8] != v2::VERSION {
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
            });
        }
        let header = V2Header::read(&first, input)?;
        let stanzas = header.slots[0].kinds()?;
        let older = header.slots.get(1).map(v2::Slot::kinds).transpose()?;
        Ok(UnverifiedHeader {
            info: HeaderInfo {
                version: v2::VERSION,
                params: header.preamble.params,
                counter,
                header_len: header.preamble.header_len(),
                access: Access::V2 { stanzas, older },
            },
            parsed: Parsed::V2(header),
        })
    }

    /// The header's public, unauthenticated facts.
    pub fn info(&self) -> &HeaderInfo {
        &self.info
    }

    /// Opens the header with the first identity that opens a stanza (newest slot first) and
    /// whose header tag then verifies.
    pub fn open(self, unlock: &Unlock) -> Result<Opened, ContainerError> {
        match &self.parsed {
            Parsed::V1(header) => {
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
                            return Ok(self.opened(secret, keys, None));
                        }
                    }
                }
                Err(if tried_key {
                    ContainerError::WrongKeyOrDamagedHeader
                } else {
                    ContainerError::NoMatchingStanza(match header.key_source {
                        V1KeySource::RawKey => "a key file (format v1)".into(),
                        V1KeySource::Passphrase(_) => "a passphrase (format v1)".into(),
                    })
                })
            }
            Parsed::V2(header) => {
                let mut opened_a_stanza = false;
                // A stanza refused (e.g. too costly a passphrase) does not stop another
                // identity from opening another stanza; it is reported if nothing opens.
                let mut refused = None;
                for slot in &header.slots {
                    for stanza in &slot.stanzas {
                        for identity in &unlock.identities {
                            let file_key = match stanza.unwrap(identity, unlock.max_kdf_mib) {
                                Ok(Some(file_key)) => file_key,
                                Ok(None) => continue,
                                Err(e) => {
                                    refused.get_or_insert(e);
                                    continue;
                                }
                            };
                            opened_a_stanza = true;
                            if let Some(opened) = self.open_v2(header, slot, file_key) {
                                return Ok(opened);
                            }
                        }
                    }
                }
                Err(if opened_a_stanza {
                    ContainerError::DamagedHeader
                } else if let Some(refused) = refused {
                    refused
                } else {
                    ContainerError::NoMatchingStanza(describe(&self.info.access))
                })
            }
        }
    }

    /// Opens the header with the file's secret itself, as another process of the same job
    /// received it from the one that opened the file (an MPI rank). The header tag is checked.
    pub fn open_with_secret(self, secret: &FileSecret) -> Result<Opened, ContainerError> {
        match &self.parsed {
            Parsed::V1(header) => {
                let key = Key::new(secret.as_bytes())
                    .map_err(|_| ContainerError::WrongKeyOrDamagedHeader)?;
                let keys = header
                    .open(&key)
                    .ok_or(ContainerError::WrongKeyOrDamagedHeader)?;
                Ok(self.opened(secret.clone(), keys, None))
            }
            Parsed::V2(header) => header
                .slots
                .iter()
                .find_map(|slot| self.open_v2(header, slot, secret.clone()))
                .ok_or(ContainerError::DamagedHeader),
        }
    }

    fn open_v2(&self, header: &V2Header, slot: &v2::Slot, file_key: FileSecret) -> Option<Opened> {
        if !slot.verify(&header.preamble_bytes, &V2Keys::new(&file_key)) {
            return None;
        }
        let keys = V2Keys::stream(&file_key, &header.preamble_bytes, header.preamble.params);
        let rekey = RekeyState {
            preamble: header.preamble,
            preamble_bytes: header.preamble_bytes,
            opened_slot: slot.index,
            next_generation: header.slots.iter().map(|s| s.generation).max().unwrap_or(0) + 1,
        };
        Some(self.opened(file_key, keys, Some(rekey)))
    }

    fn opened(&self, secret: FileSecret, keys: StreamKeys, rekey: Option<RekeyState>) -> Opened {
        Opened {
            info: self.info.clone(),
            secret,
            keys,
            rekey,
        }
    }
}

/// What the user can be told opens a file.
fn describe(access: &Access) -> String {
    match access {
        Access::V1(V1KeySource::RawKey) => "a key file (format v1)".into(),
        Access::V1(V1KeySource::Passphrase(_)) => "a passphrase (format v1)".into(),
        Access::V2 { stanzas, .. } => {
            let mut counts: Vec<(String, usize)> = Vec::new();
            for kind in stanzas {
                let name = match kind {
                    StanzaKind::Passphrase(_) => "passphrase".to_string(),
                    other => other.to_string(),
                };
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
    }
}

#[derive(Clone, Copy, Debug)]
struct RekeyState {
    preamble: Preamble,
    preamble_bytes: [u8; v2::PREAMBLE_LEN],
    opened_slot: usize,
    next_generation: u64,
}

/// A verified (or freshly sealed) container: its facts, and the keys its stream runs with.
pub struct Opened {
    info: HeaderInfo,
    secret: FileSecret,
    keys: StreamKeys,
    rekey: Option<RekeyState>,
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

    /// The stream of the body in `direction` on `engine`.
    pub fn stream_spec<'a>(
        &'a self,
        engine: &'a dyn Engine,
        direction: Direction,
    ) -> StreamSpec<'a> {
        StreamSpec {
            engine,
            mode: self.info.params.mode,
            direction,
            key: &self.keys.expanded,
            counter: self.info.counter,
            chunk_size: self.info.params.chunk_size,
            padding: true,
            auth: Some(&self.keys.auth),
        }
    }

    /// The secret another process of the same job opens the header with
    /// ([`UnverifiedHeader::open_with_secret`]): D for v2 (never the user's key), K for v1.
    pub fn secret(&self) -> &FileSecret {
        &self.secret
    }

    /// The body's AES key: with the counter block, it decrypts the body with any AES-CTR/ECB
    /// tool (after removing the chunk tags). It cannot forge chunk tags (those keys are
    /// derived from D separately). Show it only on an explicit request.
    pub fn body_key(&self) -> &Key {
        &self.keys.body
    }

    /// The chunk authenticator.
    pub fn authenticator(&self) -> &Authenticator {
        &self.keys.auth
    }
}

/// Seals a new v2 container for `recipients`: a fresh file key D and counter block, one stanza
/// per recipient. Returns the header bytes to write before the body, and the keys to encrypt
/// the body with.
pub fn seal(
    params: BodyParams,
    recipients: &[Recipient],
) -> Result<(Vec<u8>, Opened), ContainerError> {
    params.check()?;
    let file_key = FileSecret::random()?;
    let stanzas = make_stanzas(recipients, &file_key)?;
    let mut counter = [0u8; 16];
    random_bytes(&mut counter)?;
    let preamble = Preamble {
        params,
        counter,
        slot_len: Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas)),
    };
    let (header, rekey) = v2_header(preamble, &stanzas, &file_key, 1);
    let keys = V2Keys::stream(&file_key, &rekey.preamble_bytes, params);
    let opened = Opened {
        info: HeaderInfo {
            version: v2::VERSION,
            params,
            counter,
            header_len: header.len(),
            access: Access::V2 {
                stanzas: stanzas.iter().map(Stanza::kind).collect::<Result<_, _>>()?,
                older: None,
            },
        },
        secret: file_key,
        keys,
        rekey: Some(rekey),
    };
    Ok((header, opened))
}

/// One stanza per recipient; at most one passphrase, at least one recipient.
fn make_stanzas(
    recipients: &[Recipient],
    file_key: &FileSecret,
) -> Result<Vec<Stanza>, ContainerError> {
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
    recipients
        .iter()
        .map(|r| Stanza::wrap(r, file_key))
        .collect()
}

/// A whole v2 header with `stanzas` in slot 0 and an empty slot 1.
fn v2_header(
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
        &V2Keys::new(file_key),
    )
    .expect("the slot was sized for the stanzas");
    let mut header = preamble_bytes.to_vec();
    header.extend_from_slice(&slot);
    header.resize(preamble.header_len(), 0);
    let state = RekeyState {
        preamble,
        preamble_bytes,
        opened_slot: 0,
        next_generation: generation + 1,
    };
    (header, state)
}

#[cfg(test)]
mod tests;
