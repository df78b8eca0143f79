//! What a header says without a key, as `paraes info` and error messages show it: the body's
//! parameters ([`BodyParams`]), the header's public facts ([`HeaderInfo`]), how the file
//! opens ([`Access`]: its stanza slots, [`SlotInfo`]), a slot that opening ignored
//! ([`IgnoredSlot`]), and the words that say what opens a file.

use super::stanza::StanzaKind;
use super::{v1, v3, ContainerError, V1KeySource, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE};
use crate::cobblestone::{self, Variant};
use crate::engine::Mode;
use crate::key::KeySize;

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
    pub(super) fn encode(&self, version: u8) -> [u8; 7] {
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

    pub(super) fn decode(bytes: &[u8], version: u8) -> Result<Self, ContainerError> {
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

/// A stanza slot that parses but that the file key which opened the file does not authenticate, and
/// that was ignored: in format v3 always (the body's key commitment decides the one file key, so
/// such a slot was planted by someone who could write the file, or left by damage), in format v2
/// only with [`Unlock::allow_unverified_slot`](super::Unlock::allow_unverified_slot) (a v2 file
/// with such a slot may show another recipient different content). It never lends its generation,
/// and a rekey in place overwrites it.
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

/// What the user can be told opens a file.
pub(super) fn describe(access: &Access) -> String {
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
pub(super) fn count_kinds(kinds: &[StanzaKind]) -> String {
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
