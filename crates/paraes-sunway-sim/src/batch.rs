//! The paper's *state batch* (Table I): eight AES states processed together, because "a SIMD
//! instruction is able to operate on at most eight integers in parallel" (Sec. III-B1).

/// AES blocks in one batch (8 states in four 256-bit registers).
pub const BATCH_BLOCKS: usize = 8;
/// Bytes in one batch.
pub const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;
/// LDM words in one batch.
pub const BATCH_WORDS: usize = BATCH_BYTES / 4;
