//! Cobblestone-128 and Cobblestone-256: C2SP chunked encryption (c2sp.org/chunked-encryption,
//! v1) with HKDF-Expand-SHA512 and AES-GCM, as pyca/cryptography 50 implements it
//! (`cryptography.cobblestone`) and format v3's body will use it.
//!
//! From an input key IK (16 or 32 uniformly random bytes), a fresh 24-byte salt and a context:
//! `key || base_nonce || commitment = HKDF-Expand-SHA512(PRK = IK, info =
//! "c2sp.org/chunked-encryption@v1+" || AEAD name || 0x00 || salt || context, L = len(key) +
//! 12 + 32)` (RFC 5869 section 2.3 with the input key as PRK, shorter than SHA-512's 64 bytes as
//! the spec allows). The message is `salt || commitment || chunks`: the plaintext is cut into
//! 16 KiB pieces, the last one always shorter (empty when the plaintext is a multiple of 16 KiB);
//! piece i is AES-GCM-sealed under `key` with nonce `base_nonce XOR be96(i)` and no associated
//! data. A reader checks the commitment (constant time) before it decrypts any chunk.
//!
//! Each chunk's GCM is built from this crate's parts, so every engine can run its AES-CTR:
//! counter blocks `nonce_i || be32(2 + j)` (a 16 KiB chunk never carries out of the low 32
//! bits, so a 128-bit CTR job from `nonce_i || be32(2)` gives the same bytes), and the tag
//! `GHASH_H(C_i padded || be64(0) || be64(8 len)) XOR E(nonce_i || be32(1))` with
//! `H = E(0^128)` ([`crate::ghash`]).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha512;
use zeroize::Zeroizing;

use crate::aes::{AesImpl, ChunkBytes, StitchedGcm};
use crate::chunk_tag::constant_time_eq;
use crate::ghash::Ghash;
use crate::job::{Direction, Job, RecordsJob, GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN};
use crate::key::{ExpandedKey, Key, KeySize};

/// Plaintext bytes of every chunk but the last (which is always shorter).
pub const CHUNK_LEN: usize = GCM_CHUNK_LEN;
/// Bytes of the random salt that starts a message.
pub const SALT_LEN: usize = 24;
/// Bytes of the key commitment after the salt.
pub const COMMITMENT_LEN: usize = 32;
/// Bytes of a message before its first chunk: salt and commitment.
pub const PREFIX_LEN: usize = SALT_LEN + COMMITMENT_LEN;
/// Bytes of a GCM tag after each chunk's ciphertext.
pub const TAG_LEN: usize = GCM_TAG_LEN;
/// Bytes of a whole chunk record: a full chunk's ciphertext and its tag.
pub const RECORD_LEN: usize = GCM_RECORD_LEN;
/// Most chunks a message may have (the spec's limit: a writer aborts beyond it).
pub const MAX_CHUNKS: u64 = 1 << 38;
/// The spec and version every derivation names.
const LABEL: &[u8] = b"c2sp.org/chunked-encryption@v1+";

/// Which instantiation: its AEAD and input key size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// SHA-512 and AES-128-GCM; 16-byte input keys.
    Cobblestone128,
    /// SHA-512 and AES-256-GCM; 32-byte input keys.
    Cobblestone256,
}

impl Variant {
    /// The instantiation whose AES key has `size`, if there is one (none for 192 bits).
    pub fn for_key_size(size: KeySize) -> Option<Self> {
        match size {
            KeySize::Aes128 => Some(Variant::Cobblestone128),
            KeySize::Aes192 => None,
            KeySize::Aes256 => Some(Variant::Cobblestone256),
        }
    }

    /// The AES key size (and input key size) of the instantiation.
    pub fn key_size(self) -> KeySize {
        match self {
            Variant::Cobblestone128 => KeySize::Aes128,
            Variant::Cobblestone256 => KeySize::Aes256,
        }
    }

    /// The AEAD's registered name (RFC 5116), as the derivation's info names it.
    fn aead_name(self) -> &'static [u8] {
        match self {
            Variant::Cobblestone128 => b"AEAD_AES_128_GCM",
            Variant::Cobblestone256 => b"AEAD_AES_256_GCM",
        }
    }
}

/// Why a message could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CobblestoneError {
    /// The input key is not the variant's size.
    #[error("a Cobblestone input key has {expected} bytes, not {got}")]
    KeyLength {
        /// The variant's key size in bytes.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The message ends before its salt, commitment or final chunk.
    #[error("the message is truncated")]
    Truncated,
    /// The commitment does not match the key and context: a wrong key or context, or another
    /// message's body.
    #[error("the key or context does not match this message (its key commitment differs)")]
    CommitmentMismatch,
    /// A chunk's tag does not verify.
    #[error("chunk {0} of the message was changed (its tag does not verify)")]
    Tampered(u64),
    /// More than [`MAX_CHUNKS`] chunks.
    #[error("the message would have more than 2^38 chunks")]
    TooLong,
}

/// The keys of one message: derived from the input key, salt and context.
pub struct MessageKeys {
    aes: Key,
    base_nonce: [u8; 12],
    commitment: [u8; COMMITMENT_LEN],
}

impl MessageKeys {
    /// HKDF-Expand-SHA512 of the input key for `salt` and `context` (module docs).
    pub fn derive(
        variant: Variant,
        input_key: &[u8],
        salt: &[u8; SALT_LEN],
        context: &[u8],
    ) -> Result<Self, CobblestoneError> {
        let key_len = variant.key_size().bytes();
        if input_key.len() != key_len {
            return Err(CobblestoneError::KeyLength {
                expected: key_len,
                got: input_key.len(),
            });
        }
        let mut info = Vec::with_capacity(LABEL.len() + 17 + SALT_LEN + context.len());
        info.extend_from_slice(LABEL);
        info.extend_from_slice(variant.aead_name());
        info.push(0);
        info.extend_from_slice(salt);
        info.extend_from_slice(context);
        let mut okm = Zeroizing::new([0u8; 32 + 12 + COMMITMENT_LEN]);
        let okm = &mut okm[..key_len + 12 + COMMITMENT_LEN];
        hkdf_expand_sha512(input_key, &info, okm);
        let (aes, rest) = okm.split_at(key_len);
        let (base_nonce, commitment) = rest.split_at(12);
        Ok(MessageKeys {
            aes: Key::new(aes).expect("16 or 32 bytes"),
            base_nonce: base_nonce.try_into().expect("12 bytes"),
            commitment: commitment.try_into().expect("32 bytes"),
        })
    }

    /// The 32-byte key commitment a message carries after its salt.
    pub fn commitment(&self) -> &[u8; COMMITMENT_LEN] {
        &self.commitment
    }

    /// Whether `found` is this key's commitment (constant-time comparison).
    pub fn commits_to(&self, found: &[u8]) -> bool {
        constant_time_eq(&self.commitment, found)
    }

    /// The chunk cipher of these keys.
    pub fn chunks(&self) -> ChunkCipher {
        ChunkCipher::new(&self.aes, self.base_nonce)
    }
}

/// HKDF-Expand (RFC 5869 section 2.3) with HMAC-SHA512, PRK `prk` of any length, into `out`
/// (at most 255 x 64 bytes). The hkdf crate refuses a PRK shorter than 64 bytes; the spec uses
/// the 16- or 32-byte input key as the PRK directly, as HMAC allows.
fn hkdf_expand_sha512(prk: &[u8], info: &[u8], out: &mut [u8]) {
    debug_assert!(out.len() <= 255 * 64);
    let mut previous = Zeroizing::new(Vec::new());
    for (i, piece) in out.chunks_mut(64).enumerate() {
        let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(prk).expect("HMAC takes any key");
        mac.update(&previous);
        mac.update(info);
        mac.update(&[i as u8 + 1]);
        let block = Zeroizing::new(mac.finalize().into_bytes());
        piece.copy_from_slice(&block[..piece.len()]);
        previous.clear();
        previous.extend_from_slice(&block);
    }
}

/// AES-GCM for the chunks of one message: CTR from `nonce_i || be32(2)` and GHASH, with E(J0).
///
/// [`ChunkCipher::seal`] and [`ChunkCipher::open`] run the stitched kernel (CTR and GHASH in
/// one pass, `crate::aes::gcm_x86`) where the CPU has VAES-512 and VPCLMULQDQ, and CTR then
/// GHASH elsewhere; both give the same bytes. An engine seals or opens many chunks at once from
/// the [`RecordsJob`] the cipher describes ([`ChunkCipher::records_job`]).
#[derive(Clone)]
pub struct ChunkCipher {
    expanded: ExpandedKey,
    /// GHASH's hash key H = E(0^128), for the records jobs engines run.
    hash_key: Zeroizing<[u8; 16]>,
    ghash: Ghash,
    base_nonce: [u8; 12],
    aes_impl: AesImpl,
    stitched: Option<StitchedGcm>,
}

impl std::fmt::Debug for ChunkCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChunkCipher { keys: <redacted> }")
    }
}

impl ChunkCipher {
    pub(crate) fn new(key: &Key, base_nonce: [u8; 12]) -> Self {
        let expanded = key.expand();
        let aes_impl = AesImpl::detect();
        let mut hash_key = Zeroizing::new([0u8; 16]);
        aes_impl.encrypt_blocks(&expanded, &mut hash_key[..]);
        let ghash = Ghash::new(&hash_key);
        // The kernel hashes with the fast GHASH path's powers of H: both or neither.
        let stitched = StitchedGcm::detect(aes_impl).filter(|_| ghash.powers().is_some());
        ChunkCipher {
            expanded,
            hash_key,
            ghash,
            base_nonce,
            aes_impl,
            stitched,
        }
    }

    /// The stitched kernel with the powers of H it hashes with, where it runs.
    fn stitched(&self) -> Option<(StitchedGcm, &[[u8; 16]; crate::polyval::GROUP])> {
        Some((self.stitched?, self.ghash.powers()?))
    }

    /// Whether [`ChunkCipher::seal`] and [`ChunkCipher::open`] run the stitched kernel here.
    #[cfg(test)]
    pub(crate) fn runs_stitched(&self) -> bool {
        self.stitched().is_some()
    }

    /// The job of sealing ([`Direction::Encrypt`]) or opening ([`Direction::Decrypt`]) this
    /// message's chunk records from chunk `first_index` on, for an engine that runs it
    /// ([`crate::engine::Engine::process_records`]): the key, H and the base nonce as data.
    pub fn records_job(&self, direction: Direction, first_index: u64) -> RecordsJob<'_> {
        RecordsJob::new(
            direction,
            &self.expanded,
            &self.hash_key,
            self.base_nonce,
            first_index,
        )
    }

    /// The expanded AES key (for an engine's CTR job over many chunks).
    pub fn key(&self) -> &ExpandedKey {
        &self.expanded
    }

    /// The message's base nonce (chunk `i`'s nonce is it XOR `be96(i)`).
    pub fn base_nonce(&self) -> [u8; 12] {
        self.base_nonce
    }

    /// Chunk `index`'s 96-bit nonce: the base nonce XOR `be96(index)`.
    pub fn nonce(&self, index: u64) -> [u8; 12] {
        crate::job::gcm_chunk_nonce(&self.base_nonce, index)
    }

    /// Chunk `index`'s CTR counter block for its first data block: `nonce || be32(2)` (the
    /// engines' [`crate::engine::Counters::GcmChunks`] counters).
    pub fn counter(&self, index: u64) -> [u8; 16] {
        crate::modes::gcm_chunk_counter(&self.base_nonce, index)
    }

    /// The tag of chunk `index` whose ciphertext is `ciphertext`.
    pub fn tag(&self, index: u64, ciphertext: &[u8]) -> [u8; TAG_LEN] {
        // E(J0), J0 = nonce || be32(1).
        let mut tag = self.counter(index);
        tag[15] = 1;
        self.aes_impl.encrypt_blocks(&self.expanded, &mut tag);
        for (t, g) in tag.iter_mut().zip(self.ghash.gcm(ciphertext)) {
            *t ^= g;
        }
        tag
    }

    /// Whether `tag` is chunk `index`'s tag for `ciphertext` (constant-time comparison).
    pub fn verify(&self, index: u64, ciphertext: &[u8], tag: &[u8]) -> bool {
        constant_time_eq(&self.tag(index, ciphertext), tag)
    }

    /// CTR of chunk `index` over `data` in place, on this thread (engines do many chunks at
    /// once with the same counters).
    pub fn ctr(&self, index: u64, data: &mut [u8]) {
        debug_assert!(data.len() <= CHUNK_LEN);
        let job = Job::ctr(&self.expanded, self.counter(index), 0);
        crate::modes::apply(self.aes_impl, &job, data).expect("CTR takes any length");
    }

    /// Encrypts chunk `index` (at most [`CHUNK_LEN`] bytes) in place; returns its tag.
    pub fn seal(&self, index: u64, data: &mut [u8]) -> [u8; TAG_LEN] {
        debug_assert!(data.len() <= CHUNK_LEN);
        match self.stitched() {
            Some((kernel, powers)) => kernel.seal(
                &self.expanded,
                powers,
                &self.nonce(index),
                ChunkBytes::InPlace(data),
            ),
            None => {
                self.ctr(index, data);
                self.tag(index, data)
            }
        }
    }

    /// Checks chunk `index`'s tag and decrypts it in place; nothing is changed on failure.
    ///
    /// The stitched kernel hashes and decrypts in one pass; when the tag then differs, CTR runs
    /// again over the chunk, which restores its ciphertext exactly before the error returns (a
    /// forgery costs two passes, an authentic chunk one). Elsewhere the tag is checked first.
    pub fn open(&self, index: u64, data: &mut [u8], tag: &[u8]) -> Result<(), CobblestoneError> {
        debug_assert!(data.len() <= CHUNK_LEN);
        match self.stitched() {
            Some((kernel, powers)) => {
                let found = kernel.open(
                    &self.expanded,
                    powers,
                    &self.nonce(index),
                    ChunkBytes::InPlace(data),
                );
                if !constant_time_eq(&found, tag) {
                    self.ctr(index, data);
                    return Err(CobblestoneError::Tampered(index));
                }
            }
            None => {
                if !self.verify(index, data, tag) {
                    return Err(CobblestoneError::Tampered(index));
                }
                self.ctr(index, data);
            }
        }
        Ok(())
    }
}

/// The length of the message that seals `plaintext_len` bytes.
pub fn sealed_len(plaintext_len: u64) -> u64 {
    let chunks = plaintext_len / CHUNK_LEN as u64 + 1;
    PREFIX_LEN as u64 + plaintext_len + chunks * TAG_LEN as u64
}

/// The chunks of a message whose chunk records (everything after the salt and commitment)
/// take `records_len` bytes: their number and the ciphertext bytes of the last one, or `None`
/// for a length no writer makes (the last record must hold a tag and fewer than 16 KiB of
/// ciphertext: a message cut at a chunk boundary, or extended, has no such record).
pub fn chunk_count(records_len: u64) -> Option<(u64, u64)> {
    let tail = records_len % RECORD_LEN as u64;
    let last_len = tail.checked_sub(TAG_LEN as u64)?;
    Some((records_len / RECORD_LEN as u64 + 1, last_len))
}

/// Seals `plaintext` as one whole message under `input_key` and `context` with `salt` (which
/// must be fresh and random for every message), on this thread.
pub fn seal(
    variant: Variant,
    input_key: &[u8],
    salt: &[u8; SALT_LEN],
    context: &[u8],
    plaintext: &[u8],
) -> Result<Vec<u8>, CobblestoneError> {
    let keys = MessageKeys::derive(variant, input_key, salt, context)?;
    let chunks = keys.chunks();
    if plaintext.len() as u64 / CHUNK_LEN as u64 >= MAX_CHUNKS {
        return Err(CobblestoneError::TooLong);
    }
    let mut out = Vec::with_capacity(sealed_len(plaintext.len() as u64) as usize);
    out.extend_from_slice(salt);
    out.extend_from_slice(keys.commitment());
    // The last piece is always shorter than a chunk: an exact multiple ends in an empty one.
    let pieces = plaintext
        .chunks(CHUNK_LEN)
        .chain(plaintext.len().is_multiple_of(CHUNK_LEN).then_some(&[][..]));
    for (index, piece) in pieces.enumerate() {
        let start = out.len();
        out.extend_from_slice(piece);
        let tag = chunks.seal(index as u64, &mut out[start..]);
        out.extend_from_slice(&tag);
    }
    Ok(out)
}

/// Opens one whole message: checks the commitment, then every chunk before any plaintext is
/// returned, on this thread.
pub fn open(
    variant: Variant,
    input_key: &[u8],
    context: &[u8],
    message: &[u8],
) -> Result<Vec<u8>, CobblestoneError> {
    let (prefix, body) = message
        .split_at_checked(PREFIX_LEN)
        .ok_or(CobblestoneError::Truncated)?;
    let salt: &[u8; SALT_LEN] = prefix[..SALT_LEN].try_into().expect("24 bytes");
    let keys = MessageKeys::derive(variant, input_key, salt, context)?;
    if !keys.commits_to(&prefix[SALT_LEN..]) {
        return Err(CobblestoneError::CommitmentMismatch);
    }
    let chunks = keys.chunks();
    let mut out = Vec::with_capacity(body.len());
    let mut records = body.chunks(RECORD_LEN).enumerate().peekable();
    let mut ended = false;
    while let Some((index, record)) = records.next() {
        let last = records.peek().is_none();
        if index as u64 >= MAX_CHUNKS {
            return Err(CobblestoneError::TooLong);
        }
        if record.len() < TAG_LEN {
            return Err(CobblestoneError::Truncated);
        }
        // A full record is never the last: the final chunk is always shorter.
        if last && record.len() == RECORD_LEN {
            return Err(CobblestoneError::Truncated);
        }
        let (ciphertext, tag) = record.split_at(record.len() - TAG_LEN);
        let start = out.len();
        out.extend_from_slice(ciphertext);
        chunks.open(index as u64, &mut out[start..], tag)?;
        ended = last;
    }
    if !ended {
        return Err(CobblestoneError::Truncated);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
