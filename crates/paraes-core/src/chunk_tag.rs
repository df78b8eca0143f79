//! The chunk authenticator of the container format (tags over each chunk's ciphertext): a leaf
//! module, so the pipeline (which tags chunks) and the container (which derives the keys and
//! builds stream specs for the pipeline) do not import each other.

use std::fmt;

use crate::aes::AesImpl;
use crate::key::ExpandedKey;
use crate::polyval::Polyval;

/// Bytes in a chunk tag.
pub const TAG_LEN: usize = 16;

/// Computes and checks chunk tags: `AES-256(K_tag, POLYVAL(H, ciphertext, length) xor N)` with
/// `N = index (8 bytes, little-endian) || last flag (1 byte) || 7 zero bytes`. Modelled on
/// AES-GCM-SIV's tag (RFC 8452) over the ciphertext, but not that tag: the length block holds
/// only the ciphertext's bit length, and no bit of the block is cleared before encryption
/// (RFC 8452 clears the top bit); docs/FORMAT.md gives it byte for byte.
/// Reordering, duplication, truncation and appending all change `N` or the hashed data.
#[derive(Clone)]
pub struct Authenticator {
    polyval: Polyval,
    tag_key: ExpandedKey,
    aes_impl: AesImpl,
}

impl Authenticator {
    /// The authenticator with POLYVAL key `polyval` and tag-encryption key `tag_key`.
    pub(crate) fn new(polyval: Polyval, tag_key: ExpandedKey) -> Self {
        Authenticator {
            polyval,
            tag_key,
            aes_impl: AesImpl::detect(),
        }
    }

    /// The tag of chunk `index` with `ciphertext`.
    pub fn tag(&self, index: u64, last: bool, ciphertext: &[u8]) -> [u8; TAG_LEN] {
        let mut trailer = [0u8; 16];
        trailer[..8].copy_from_slice(&(ciphertext.len() as u64 * 8).to_le_bytes());
        let mut block = self.polyval.hash(ciphertext, &trailer);
        for (b, n) in block.iter_mut().zip(index.to_le_bytes()) {
            *b ^= n;
        }
        block[8] ^= u8::from(last);
        self.aes_impl.encrypt_blocks(&self.tag_key, &mut block);
        block
    }

    /// Whether `tag` is the tag of chunk `index` with `ciphertext` (constant-time comparison).
    pub fn verify(&self, index: u64, last: bool, ciphertext: &[u8], tag: &[u8]) -> bool {
        constant_time_eq(&self.tag(index, last, ciphertext), tag)
    }
}

/// Whether `found` equals `expected`, comparing every byte whatever differs (tags and
/// commitments must not leak where they differ). Lengths are public.
pub(crate) fn constant_time_eq(expected: &[u8], found: &[u8]) -> bool {
    let difference = expected
        .iter()
        .zip(found)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    found.len() == expected.len() && std::hint::black_box(difference) == 0
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authenticator { keys: <redacted> }")
    }
}
