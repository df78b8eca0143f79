//! The header of formats v2 and v3: a 64-byte preamble (the body's parameters, fixed for the
//! file's life) and two equal stanza slots, so a rekey writes the new stanzas into the idle slot
//! and only then wipes the old one: at every instant one complete slot opens the file. The two
//! versions differ in their body (v2: paraes's own chunk tags; v3: a C2SP message, see
//! [`super::v3`]) and in the domain of the slot MAC key.

use std::io::Read;

use zeroize::Zeroizing;

use super::keys::{derive, FileSecret, StreamKeys};
use super::stanza::{Stanza, StanzaKind};
use super::{read_exact, BodyParams, ContainerError, MAGIC};
use crate::key::Key;

/// The version byte of format v2.
pub(crate) const VERSION: u8 = 2;
/// The version byte of format v3, whose header is this one too (its body is `v3.rs`'s).
pub(crate) const V3_VERSION: u8 = 3;
/// Bytes of the preamble.
pub(crate) const PREAMBLE_LEN: usize = 64;
/// The preamble bytes that bind the body (magic .. counter): the chunk keys are derived from
/// them, so a rekey, which may change the slot length, keeps every chunk tag valid.
const BODY_BINDING_LEN: usize = 32;
/// Header areas (preamble and both slots) are multiples of this, so bodies start aligned.
pub(crate) const HEADER_ALIGN: usize = 4096;
/// Largest slot a reader accepts (bounds what reading a header allocates: two slots).
pub(crate) const MAX_SLOT_LEN: usize = 1 << 20;
/// Most stanzas in a slot.
pub(crate) const MAX_STANZAS: usize = 255;
/// The largest generation a slot may hold: 2^64 - 1, like 0, marks a slot that does not parse
/// (a torn or planted one), so a checked add can never wrap into either.
pub(crate) const MAX_GENERATION: u64 = u64::MAX - 1;
/// Bytes of a slot's generation field, its first bytes.
pub(crate) const GENERATION_LEN: usize = 8;
/// Bytes of a slot tag.
const SLOT_TAG_LEN: usize = 32;
/// Slot bytes before the stanzas: generation (8) and stanza count (2).
const SLOT_FIXED_LEN: usize = 10;
/// Stanza bytes before its body: kind (1) and length (2).
const STANZA_FIXED_LEN: usize = 3;

/// BLAKE3 key-derivation context of the body's AES key.
const BODY_KEY_CONTEXT: &str = "paraes 2026-11 container v2 body AES key";
/// BLAKE3 key-derivation context of the header (slot) MAC key of format v2.
const HEADER_KEY_CONTEXT: &str = "paraes 2026-11 container v2 header MAC key";
/// BLAKE3 key-derivation context of the header (slot) MAC key of format v3.
const V3_HEADER_KEY_CONTEXT: &str = "paraes 2026-11 container v3 header MAC key";
/// BLAKE3 key-derivation context of the chunk MAC keys (POLYVAL key and tag AES key).
const CHUNK_KEY_CONTEXT: &str = "paraes 2026-11 container v2 chunk MAC keys";

/// The 64-byte preamble.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Preamble {
    /// 2 or 3.
    pub(crate) version: u8,
    pub(crate) params: BodyParams,
    pub(crate) counter: [u8; 16],
    pub(crate) slot_len: usize,
}

impl Preamble {
    pub(crate) fn encode(&self) -> [u8; PREAMBLE_LEN] {
        let mut out = [0u8; PREAMBLE_LEN];
        out[..8].copy_from_slice(&MAGIC);
        out[8] = self.version;
        out[9..16].copy_from_slice(&self.params.encode(self.version));
        out[16..32].copy_from_slice(&self.counter);
        out[32..36].copy_from_slice(&(self.slot_len as u32).to_be_bytes());
        out
    }

    /// Parses a preamble (magic and version, 2 or 3, already checked), refusing absurd values.
    fn decode(bytes: &[u8; PREAMBLE_LEN]) -> Result<Self, ContainerError> {
        let version = bytes[8];
        let params = BodyParams::decode(&bytes[9..16], version)?;
        // v3 has no counter block (the message derives its nonces): those bytes are reserved.
        let reserved_counter = version == V3_VERSION && bytes[16..32] != [0; 16];
        if bytes[11] != 0 || reserved_counter || bytes[36..].iter().any(|&b| b != 0) {
            return Err(ContainerError::BadHeader(
                "reserved bytes are not zero".into(),
            ));
        }
        let slot_len = u32::from_be_bytes(bytes[32..36].try_into().expect("4 bytes")) as usize;
        if slot_len > MAX_SLOT_LEN || !(PREAMBLE_LEN + 2 * slot_len).is_multiple_of(HEADER_ALIGN) {
            return Err(ContainerError::BadHeader(format!(
                "stanza slot of {slot_len} bytes (at most {MAX_SLOT_LEN}, header a multiple of {HEADER_ALIGN})"
            )));
        }
        Ok(Preamble {
            version,
            params,
            counter: bytes[16..32].try_into().expect("16 bytes"),
            slot_len,
        })
    }

    /// Bytes of the whole header: preamble and both slots.
    pub(crate) fn header_len(&self) -> usize {
        PREAMBLE_LEN + 2 * self.slot_len
    }

    /// Offset of slot `index` (0 or 1) in the file.
    pub(crate) fn slot_offset(&self, index: usize) -> usize {
        PREAMBLE_LEN + index * self.slot_len
    }

    /// The smallest slot length that holds `needed` bytes twice over (so a rekey to a stanza set
    /// twice as large still fits in place) with the header a multiple of [`HEADER_ALIGN`].
    pub(crate) fn slot_len_for(needed: usize) -> usize {
        let header = (PREAMBLE_LEN + 4 * needed).next_multiple_of(HEADER_ALIGN);
        (header - PREAMBLE_LEN) / 2
    }
}

/// The slot MAC key derived from a v2 or v3 file key.
pub(crate) struct HeaderKeys {
    header_mac: Zeroizing<[u8; 32]>,
}

impl HeaderKeys {
    /// The slot MAC key of a file of format `version` (2 or 3), each in its own domain.
    pub(crate) fn new(file_key: &FileSecret, version: u8) -> Self {
        let context = if version == V3_VERSION {
            V3_HEADER_KEY_CONTEXT
        } else {
            HEADER_KEY_CONTEXT
        };
        let mut header_mac = Zeroizing::new([0u8; 32]);
        derive(context, &[file_key.as_bytes()], &mut header_mac[..]);
        HeaderKeys { header_mac }
    }

    fn slot_tag(&self, preamble: &[u8; PREAMBLE_LEN], slot_body: &[u8]) -> blake3::Hash {
        let mut mac = blake3::Hasher::new_keyed(&self.header_mac);
        mac.update(preamble);
        mac.update(slot_body);
        let tag = mac.finalize();
        zeroize::Zeroize::zeroize(&mut mac);
        tag
    }
}

/// The v2 body key and chunk authenticator of the file whose preamble is `preamble`.
pub(crate) fn body_keys(
    file_key: &FileSecret,
    preamble: &[u8; PREAMBLE_LEN],
    params: BodyParams,
) -> StreamKeys {
    let mut body = Zeroizing::new([0u8; 32]);
    derive(BODY_KEY_CONTEXT, &[file_key.as_bytes()], &mut body[..]);
    let body = Key::new(&body[..params.key_size.bytes()]).expect("a valid key size");
    let mut material = Zeroizing::new([0u8; 48]);
    derive(
        CHUNK_KEY_CONTEXT,
        &[file_key.as_bytes(), &preamble[..BODY_BINDING_LEN]],
        &mut material[..],
    );
    StreamKeys::new(body, &material)
}

/// A parsed, non-empty slot: its generation and stanzas, tag not yet checked.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub(crate) index: usize,
    pub(crate) generation: u64,
    pub(crate) stanzas: Vec<Stanza>,
    authenticated_len: usize,
    bytes: Vec<u8>,
}

impl Slot {
    /// Whether the slot's tag verifies under the keys of `file_key`.
    pub(crate) fn verify(&self, preamble: &[u8; PREAMBLE_LEN], keys: &HeaderKeys) -> bool {
        let tag = &self.bytes[self.authenticated_len..self.authenticated_len + SLOT_TAG_LEN];
        let expected = keys.slot_tag(preamble, &self.bytes[..self.authenticated_len]);
        // blake3::Hash compares in constant time.
        expected == blake3::Hash::from_bytes(tag.try_into().expect("32 bytes"))
    }

    /// The public facts of the stanzas.
    pub(crate) fn kinds(&self) -> Result<Vec<StanzaKind>, ContainerError> {
        self.stanzas.iter().map(Stanza::kind).collect()
    }
}

/// Bytes a slot needs for `stanzas` (without padding).
pub(crate) fn slot_bytes_needed(stanzas: &[Stanza]) -> usize {
    SLOT_FIXED_LEN
        + stanzas
            .iter()
            .map(|s| STANZA_FIXED_LEN + s.body.len())
            .sum::<usize>()
        + SLOT_TAG_LEN
}

/// Encodes a slot of `slot_len` bytes, or `None` when the stanzas do not fit.
pub(crate) fn encode_slot(
    preamble: &[u8; PREAMBLE_LEN],
    slot_len: usize,
    generation: u64,
    stanzas: &[Stanza],
    keys: &HeaderKeys,
) -> Option<Vec<u8>> {
    if slot_bytes_needed(stanzas) > slot_len {
        return None;
    }
    let mut out = Vec::with_capacity(slot_len);
    out.extend_from_slice(&generation.to_be_bytes());
    out.extend_from_slice(&(stanzas.len() as u16).to_be_bytes());
    for stanza in stanzas {
        out.push(stanza.kind);
        out.extend_from_slice(&(stanza.body.len() as u16).to_be_bytes());
        out.extend_from_slice(&stanza.body);
    }
    let tag = keys.slot_tag(preamble, &out);
    out.extend_from_slice(tag.as_bytes());
    out.resize(slot_len, 0);
    Some(out)
}

/// Parses one slot. `Ok(None)`: empty (all zero). A slot that does not parse is an error for
/// that slot only: the other may still open the file (a rekey interrupted mid-write). A
/// generation of 0 (a slot being published or wiped) or 2^64 - 1 does not parse.
fn parse_slot(index: usize, bytes: Vec<u8>) -> Result<Option<Slot>, String> {
    if bytes.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let generation = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
    let count = usize::from(u16::from_be_bytes(
        bytes[8..10].try_into().expect("2 bytes"),
    ));
    if !(1..=MAX_GENERATION).contains(&generation) || count == 0 || count > MAX_STANZAS {
        return Err(format!("generation {generation} with {count} stanzas"));
    }
    let mut stanzas = Vec::with_capacity(count);
    let mut at = SLOT_FIXED_LEN;
    for _ in 0..count {
        let fixed = bytes
            .get(at..at + STANZA_FIXED_LEN)
            .ok_or("stanzas run past the slot")?;
        let len = usize::from(u16::from_be_bytes([fixed[1], fixed[2]]));
        let body = bytes
            .get(at + STANZA_FIXED_LEN..at + STANZA_FIXED_LEN + len)
            .ok_or("a stanza runs past the slot")?;
        stanzas.push(Stanza {
            kind: fixed[0],
            body: body.to_vec(),
        });
        at += STANZA_FIXED_LEN + len;
    }
    if at + SLOT_TAG_LEN > bytes.len() {
        return Err("no room for the slot tag".into());
    }
    if bytes[at + SLOT_TAG_LEN..].iter().any(|&b| b != 0) {
        return Err("bytes after the slot tag are not zero".into());
    }
    for stanza in &stanzas {
        stanza.kind().map_err(|e| e.to_string())?;
    }
    if stanzas.iter().filter(|s| s.argon2().is_some()).count() > 1 {
        return Err("more than one passphrase stanza".into());
    }
    Ok(Some(Slot {
        index,
        generation,
        stanzas,
        authenticated_len: at,
        bytes,
    }))
}

/// A v2 or v3 header as read: preamble, the slots that parse (newest first: an order that saves
/// work, never one that decides anything), and the positions of those that do not, with why.
#[derive(Debug)]
pub(crate) struct SlottedHeader {
    pub(crate) preamble: Preamble,
    pub(crate) preamble_bytes: [u8; PREAMBLE_LEN],
    pub(crate) slots: Vec<Slot>,
    pub(crate) ignored: Vec<(usize, String)>,
}

impl SlottedHeader {
    /// Reads the rest of a v2 or v3 header after its first 32 bytes (magic and version
    /// checked).
    pub(crate) fn read(first: &[u8; 32], input: &mut impl Read) -> Result<Self, ContainerError> {
        let mut preamble_bytes = [0u8; PREAMBLE_LEN];
        preamble_bytes[..32].copy_from_slice(first);
        read_exact(input, &mut preamble_bytes[32..])?;
        let preamble = Preamble::decode(&preamble_bytes)?;
        let mut slots = Vec::new();
        let mut damaged = Vec::new();
        for index in 0..2 {
            let mut bytes = vec![0u8; preamble.slot_len];
            read_exact(input, &mut bytes)?;
            match parse_slot(index, bytes) {
                Ok(Some(slot)) => slots.push(slot),
                Ok(None) => {}
                Err(why) => damaged.push((index, why)),
            }
        }
        if slots.is_empty() {
            return Err(ContainerError::BadHeader(if damaged.is_empty() {
                "no stanzas: nothing can open this file".into()
            } else {
                let whys: Vec<&str> = damaged.iter().map(|(_, why)| why.as_str()).collect();
                format!("no readable stanza slot ({})", whys.join("; "))
            }));
        }
        slots.sort_by_key(|slot| std::cmp::Reverse(slot.generation));
        Ok(SlottedHeader {
            preamble,
            preamble_bytes,
            slots,
            ignored: damaged,
        })
    }
}
