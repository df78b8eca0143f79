//! The round steps on four row registers (ShiftRows as lane rotations, MixColumns and the
//! InvMixColumns preparation by shifts, ands and xors, AddRoundKey), and the row-form cipher of a
//! batch that the vector variants share: only SubBytes differs between them ([`RowFlavor`]).

use paraes_core::Direction;

use crate::kernel::flavor::{CipherShape, BATCH_BLOCKS};
use crate::kernel::word::Word;
use crate::ldm::Ldm;
use crate::ldm_plan::LdmPlan;
use crate::machine::{Machine, Sink, Step};

/// Multiplication by x of every byte (lane-wise, no byte SIMD): 11 instructions.
#[inline(always)]
pub fn xtime<W: Word, S: Sink>(m: &mut Machine<S>, x: W) -> W {
    let high = W::shr(m, x, 7);
    let high = W::and(m, high, W::konst(0x0101_0101));
    // high * 0x1b = high ^ high << 1 ^ high << 3 ^ high << 4 (bytes of high are 0 or 1).
    let h1 = W::shl(m, high, 1);
    let h3 = W::shl(m, high, 3);
    let h4 = W::shl(m, high, 4);
    let reduce = W::xor(m, high, h1);
    let reduce = W::xor(m, reduce, h3);
    let reduce = W::xor(m, reduce, h4);
    let low = W::and(m, x, W::konst(0x7f7f_7f7f));
    let low = W::shl(m, low, 1);
    W::xor(m, low, reduce)
}

/// Rotates every 32-bit lane right by `bits` (a multiple of 8): 3 instructions, none for 0.
#[inline(always)]
pub fn rotate_right<W: Word, S: Sink>(m: &mut Machine<S>, x: W, bits: u32) -> W {
    if bits.is_multiple_of(32) {
        return x;
    }
    let right = W::shr(m, x, bits);
    let left = W::shl(m, x, 32 - bits);
    W::or(m, right, left)
}

/// MixColumns on four row registers: `row_r ^= t ^ xtime(row_r ^ row_(r+1))`, `t` the xor of all
/// rows: 59 instructions.
pub fn mix_columns<W: Word, S: Sink>(m: &mut Machine<S>, rows: [W; 4]) -> [W; 4] {
    let t = W::xor(m, rows[0], rows[1]);
    let t = W::xor(m, t, rows[2]);
    let t = W::xor(m, t, rows[3]);
    let mut out = rows;
    for r in 0..4 {
        let pair = W::xor(m, rows[r], rows[(r + 1) % 4]);
        let doubled = xtime(m, pair);
        let with_t = W::xor(m, rows[r], t);
        out[r] = W::xor(m, with_t, doubled);
    }
    out
}

/// The step that turns MixColumns into InvMixColumns (multiply by `4x^2 + 5`, i.e. `u`/`v` of
/// "The Design of Rijndael" 4.1.3): 50 instructions.
pub fn inv_mix_prepare<W: Word, S: Sink>(m: &mut Machine<S>, rows: [W; 4]) -> [W; 4] {
    let mut out = rows;
    for half in 0..2 {
        let pair = W::xor(m, rows[half], rows[half + 2]);
        let twice = xtime(m, pair);
        let four = xtime(m, twice);
        out[half] = W::xor(m, rows[half], four);
        out[half + 2] = W::xor(m, rows[half + 2], four);
    }
    out
}

/// A way to hold eight states in four row registers and substitute their bytes: what the SIMD
/// variants differ in.
pub trait RowFlavor {
    /// The register type.
    type W: Word;
    /// AES states one group of four registers holds.
    const STATES: usize;
    /// Loads [`Self::STATES`] consecutive states at LDM word `word` into row form.
    fn load_rows<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> [Self::W; 4];
    /// Stores row-form states back to LDM word `word`.
    fn store_rows<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, word: usize, rows: [Self::W; 4]);
    /// Row `row` of round key `round`.
    fn round_key_row<S: Sink>(
        m: &mut Machine<S>,
        ldm: &Ldm,
        plan: &LdmPlan,
        round: usize,
        row: usize,
    ) -> Self::W;
    /// SubBytes of one row register.
    fn sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, x: Self::W) -> Self::W;
}

/// Encrypts or decrypts (equivalent inverse cipher) the batch at LDM word `word` in place, in row
/// form, marking each step.
pub fn cipher_rows<F: RowFlavor, S: Sink>(
    m: &mut Machine<S>,
    ldm: &mut Ldm,
    plan: &LdmPlan,
    shape: CipherShape,
    word: usize,
) {
    let decrypt = shape.direction == Direction::Decrypt;
    for group in 0..BATCH_BLOCKS / F::STATES {
        let group_word = word + 4 * F::STATES * group;
        m.step(Step::Load);
        let mut rows = F::load_rows(m, ldm, group_word);
        m.step(Step::AddRoundKey);
        add_round_key::<F, S>(m, ldm, plan, 0, &mut rows);
        for round in 1..=shape.rounds {
            m.step(Step::SubBytes);
            for row in rows.iter_mut() {
                *row = F::sub_bytes(m, ldm, plan, *row);
            }
            m.step(Step::ShiftRows);
            for (r, row) in rows.iter_mut().enumerate().skip(1) {
                let bits = if decrypt {
                    32 - 8 * r as u32
                } else {
                    8 * r as u32
                };
                *row = rotate_right(m, *row, bits);
            }
            if round < shape.rounds {
                m.step(Step::MixColumns);
                if decrypt {
                    rows = inv_mix_prepare(m, rows);
                }
                rows = mix_columns(m, rows);
            }
            m.step(Step::AddRoundKey);
            add_round_key::<F, S>(m, ldm, plan, round, &mut rows);
        }
        m.step(Step::Store);
        F::store_rows(m, ldm, group_word, rows);
    }
}

fn add_round_key<F: RowFlavor, S: Sink>(
    m: &mut Machine<S>,
    ldm: &Ldm,
    plan: &LdmPlan,
    round: usize,
    rows: &mut [F::W; 4],
) {
    for (r, row) in rows.iter_mut().enumerate() {
        let key = F::round_key_row(m, ldm, plan, round, r);
        *row = F::W::xor(m, *row, key);
    }
}
