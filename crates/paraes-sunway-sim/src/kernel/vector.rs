//! The two SIMD flavours (Fig. 8's "SIMD" and "SIMD+selldw" rungs): eight states in four 256-bit
//! row registers in the Fig. 3 layout, the byte-replicated ExtRoundKey, and SubBytes either by
//! extracting each lane to a scalar for byte lookups (the paper's naive way) or by extend,
//! `selldw` on the ExtS-Box, shrink (Fig. 4).

use crate::kernel::flavor::{bytes_image, CipherShape, Flavor, BATCH_WORDS};
use crate::kernel::layout::{byte_transpose, columns_to_states, states_to_columns};
use crate::kernel::steps::{cipher_rows, RowFlavor};
use crate::kernel::word::Word;
use crate::ldm::Ldm;
use crate::ldm_plan::LdmPlan;
use crate::machine::{Machine, Scalar, Sink, V256};

/// SIMD layout, SubBytes by extracting each lane to a scalar and inserting it back.
pub struct ExtractFlavor;
/// SIMD layout, SubBytes by extend + `selldw` on the ExtS-Box + shrink (Fig. 4).
pub struct SelldwFlavor;

/// Row `row` of a 16-byte round key as a word: byte `c` is column `c`.
fn key_row(key: &[u8; 16], row: usize) -> u32 {
    u32::from_le_bytes([key[row], key[4 + row], key[8 + row], key[12 + row]])
}

/// Loads eight states and transforms them into row form (Fig. 3).
fn load_rows<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> [V256; 4] {
    let a = [0, 1, 2, 3].map(|k| m.vload(ldm, word + 8 * k));
    let columns = states_to_columns(m, a);
    byte_transpose(m, columns)
}

/// Transforms row form back and stores the eight states.
fn store_rows<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, word: usize, rows: [V256; 4]) {
    let columns = byte_transpose(m, rows);
    let a = columns_to_states(m, columns);
    for (k, v) in a.into_iter().enumerate() {
        m.vstore(ldm, word + 8 * k, v);
    }
}

/// The ExtRoundKey row: 8 lanes of the same row word.
fn round_key_row<S: Sink>(
    m: &mut Machine<S>,
    ldm: &Ldm,
    plan: &LdmPlan,
    round: usize,
    row: usize,
) -> V256 {
    m.vload(ldm, plan.round_keys.word() + 32 * round + 8 * row)
}

/// ExtRoundKey: each row word of each round key replicated in 8 lanes (every byte 8 times).
fn ext_round_key_image(keys: &[[u8; 16]]) -> Vec<u32> {
    keys.iter()
        .flat_map(|key| (0..4).flat_map(move |row| [key_row(key, row); 8]))
        .collect()
}

/// The CTR xor of a whole batch with vector loads, xors and stores.
fn xor_batch<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, keystream: usize, word: usize) {
    for i in (0..BATCH_WORDS).step_by(8) {
        let k = m.vload(ldm, keystream + i);
        let d = m.vload(ldm, word + i);
        let out = m.vxor(k, d);
        m.vstore(ldm, word + i, out);
    }
}

/// Implements [`RowFlavor`]'s shared parts and [`Flavor`] for a vector flavour.
macro_rules! vector_flavor {
    ($flavor:ident, $sub_bytes:ident, $sbox_image:expr) => {
        impl RowFlavor for $flavor {
            type W = V256;
            const STATES: usize = 8;
            fn load_rows<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> [V256; 4] {
                load_rows(m, ldm, word)
            }
            fn store_rows<S: Sink>(
                m: &mut Machine<S>,
                ldm: &mut Ldm,
                word: usize,
                rows: [V256; 4],
            ) {
                store_rows(m, ldm, word, rows)
            }
            fn round_key_row<S: Sink>(
                m: &mut Machine<S>,
                ldm: &Ldm,
                plan: &LdmPlan,
                round: usize,
                row: usize,
            ) -> V256 {
                round_key_row(m, ldm, plan, round, row)
            }
            fn sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, x: V256) -> V256 {
                $sub_bytes(m, ldm, plan, x)
            }
        }

        impl Flavor for $flavor {
            fn cipher_batch<S: Sink>(
                m: &mut Machine<S>,
                ldm: &mut Ldm,
                plan: &LdmPlan,
                shape: CipherShape,
                word: usize,
            ) {
                cipher_rows::<Self, S>(m, ldm, plan, shape, word)
            }
            fn xor_keystream<S: Sink>(
                m: &mut Machine<S>,
                ldm: &mut Ldm,
                keystream: usize,
                word: usize,
            ) {
                xor_batch(m, ldm, keystream, word)
            }
            fn sbox_image(table: &[u8; 256]) -> Vec<u32> {
                $sbox_image(table)
            }
            fn round_key_image(keys: &[[u8; 16]]) -> Vec<u32> {
                ext_round_key_image(keys)
            }
        }
    };
}

vector_flavor!(ExtractFlavor, extract_sub_bytes, |t: &[u8; 256]| {
    bytes_image(t)
});
vector_flavor!(SelldwFlavor, selldw_sub_bytes, |t: &[u8; 256]| t
    .iter()
    .map(|&b| u32::from(b))
    .collect());

/// Looks up the four bytes of a scalar word one by one in the byte S-box: 22 instructions.
#[inline(always)]
fn scalar_sub_word<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, w: Scalar) -> Scalar {
    let base = Scalar::imm(plan.sbox.byte as u64);
    let mut acc = Scalar::imm(0);
    for byte in 0..4u32 {
        let shifted = if byte == 0 {
            w
        } else {
            Scalar::shr(m, w, 8 * byte)
        };
        let index = Scalar::and(m, shifted, Scalar::imm(0xff));
        let addr = m.alu(index, base, |x, y| x + y);
        let value = m.load_byte(ldm, addr);
        acc = if byte == 0 {
            value
        } else {
            let placed = Scalar::shl(m, value, 8 * byte);
            Scalar::or(m, acc, placed)
        };
    }
    acc
}

/// The naive SubBytes: every lane extracted, looked up byte by byte, inserted back.
#[inline(always)]
fn extract_sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, x: V256) -> V256 {
    let mut out = x;
    for lane in 0..8 {
        let word = m.vextract(x, lane);
        let substituted = scalar_sub_word(m, ldm, plan, word);
        out = m.vinsert(out, substituted, lane);
    }
    out
}

/// The semi-SIMD SubBytes of Fig. 4: extend, look up, shrink.
#[inline(always)]
fn selldw_sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, x: V256) -> V256 {
    // Extend: 3 vsrlw + 4 vandw give four intv8 vectors of byte indices.
    let mask = V256::splat(0xff);
    let mut extended = [x; 4];
    for (byte, slot) in extended.iter_mut().enumerate() {
        let shifted = if byte == 0 {
            x
        } else {
            m.vsrl(x, 8 * byte as u32)
        };
        *slot = m.vand(shifted, mask);
    }
    let table = plan.sbox.word();
    let looked_up = if m.temporaries() == 0 {
        // The other reading: each selldw depends only on its index vector, no move.
        extended.map(|indices| {
            let mut result = indices;
            for lane in 0..8 {
                result = m.selldw(ldm, indices, table, lane, result);
            }
            result
        })
    } else {
        look_up_through_temporaries(m, ldm, table, extended)
    };
    // Shrink: back to four bytes per lane.
    let mut out = looked_up[0];
    for (byte, &part) in looked_up.iter().enumerate().skip(1) {
        let placed = m.vsll(part, 8 * byte as u32);
        out = m.vor(out, placed);
    }
    out
}

/// Sec. III-B2 as written: "Eight selldw instructions work sequentially to finish the ExtS-Box
/// table look-up with one intv8 vector. It caches the return values in a temporary register and
/// move them to Vd registers afterwards." Group `g` goes through temporary `g % T`; its move is
/// issued as late as the temporaries allow (just before the temporary is reused, or at the end).
fn look_up_through_temporaries<S: Sink>(
    m: &mut Machine<S>,
    ldm: &Ldm,
    table: usize,
    indices: [V256; 4],
) -> [V256; 4] {
    let temporaries = m.temporaries();
    let mut out = indices;
    for (group, vector) in indices.iter().enumerate() {
        if group >= temporaries {
            let done = group - temporaries;
            out[done] = m.move_temporary(done % temporaries);
        }
        for lane in 0..8 {
            m.selldw_temporary(ldm, *vector, table, lane, group % temporaries);
        }
    }
    for (group, slot) in out
        .iter_mut()
        .enumerate()
        .skip(indices.len().saturating_sub(temporaries))
    {
        *slot = m.move_temporary(group % temporaries);
    }
    out
}
