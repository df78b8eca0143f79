//! What every kernel flavour provides (the cipher of one batch in LDM, the CTR keystream xor, and
//! its tables' LDM images), and the shape of a job's kernel.

use paraes_core::Direction;

pub use crate::batch::{BATCH_BLOCKS, BATCH_BYTES, BATCH_WORDS};
use crate::ldm::Ldm;
use crate::ldm_plan::LdmPlan;
use crate::machine::{Machine, Sink};

/// How a kernel transforms: cipher direction and rounds (CTR always encrypts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CipherShape {
    /// Encrypt or decrypt (equivalent inverse cipher).
    pub direction: Direction,
    /// Number of rounds Nr.
    pub rounds: usize,
    /// Whether the batch is a CTR keystream batch (counters generated, then xored into data).
    pub ctr: bool,
}

/// One implementation style of the CPE kernel (one rung of Fig. 8).
pub trait Flavor {
    /// Encrypts or decrypts the batch at LDM word `word` in place.
    fn cipher_batch<S: Sink>(
        m: &mut Machine<S>,
        ldm: &mut Ldm,
        plan: &LdmPlan,
        shape: CipherShape,
        word: usize,
    );
    /// Xors the keystream batch at `keystream` into the data batch at `word` (CTR).
    fn xor_keystream<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, keystream: usize, word: usize);
    /// The S-box table as LDM words.
    fn sbox_image(table: &[u8; 256]) -> Vec<u32>;
    /// The round keys as LDM words.
    fn round_key_image(keys: &[[u8; 16]]) -> Vec<u32>;
}

/// Packs bytes into little-endian LDM words (zero-padded).
pub fn bytes_image(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut word = [0u8; 4];
            word[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(word)
        })
        .collect()
}
