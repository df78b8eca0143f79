//! The "Original parallel" rung of Fig. 8: AES as plain C over a 16-byte state array in LDM, one
//! block after another, no vectorisation: every step loads the state bytes it needs (`ldbu`),
//! computes with scalar integer instructions and stores them back (`stb`), with a 256-byte S-box
//! and a 240-byte round-key array (Table I's *S-Box* and *Round Key*). Its loops are emitted as
//! the vendor compiler builds them (innermost ones unrolled [`Machine::c_unroll`] times, each
//! loop body closed by its counter update, compare and branch); how the compiler then orders
//! each basic block is `Params::original_compilation` (`kernel::record_variant`).

use paraes_core::Direction;

use crate::kernel::flavor::{bytes_image, CipherShape, Flavor, BATCH_BLOCKS, BATCH_BYTES};
use crate::ldm::Ldm;
use crate::ldm_plan::LdmPlan;
use crate::machine::{Machine, Scalar, Sink, Step};

/// The original, non-vectorised kernel: byte-array AES on each block in place.
pub struct ByteFlavor;

impl Flavor for ByteFlavor {
    fn cipher_batch<S: Sink>(
        m: &mut Machine<S>,
        ldm: &mut Ldm,
        plan: &LdmPlan,
        shape: CipherShape,
        word: usize,
    ) {
        // for (block = 0; block < 8; block++) Cipher(data + 16 * block, ...);
        c_loop(m, BATCH_BLOCKS, 1, |m, block| {
            cipher_block(m, ldm, plan, shape, 4 * word + 16 * block);
        });
    }

    fn xor_keystream<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, keystream: usize, word: usize) {
        // for (i = 0; i < 128; i++) data[i] ^= keystream[i];
        let unroll = m.c_unroll();
        c_loop(m, BATCH_BYTES, unroll, |m, i| {
            let k = m.load_byte_at(ldm, 4 * keystream + i);
            let d = m.load_byte_at(ldm, 4 * word + i);
            let x = xor(m, k, d);
            m.store_byte(ldm, 4 * word + i, x);
        });
    }

    fn sbox_image(table: &[u8; 256]) -> Vec<u32> {
        bytes_image(table)
    }

    fn round_key_image(keys: &[[u8; 16]]) -> Vec<u32> {
        bytes_image(keys.as_flattened())
    }
}

/// `for (i = 0; i < trips; i++) body(i);` as the compiler builds it with the body unrolled
/// `unroll` times: after every `unroll` iterations, and after the last, the counter update, the
/// compare and the branch that close the loop body's basic block. A loop of at most `unroll`
/// trips is unrolled completely: no loop is left, and no branch. The loop control changes no
/// data, so a sink that records nothing skips it.
#[inline(always)]
fn c_loop<S: Sink>(
    m: &mut Machine<S>,
    trips: usize,
    unroll: usize,
    mut body: impl FnMut(&mut Machine<S>, usize),
) {
    let looped = S::RECORDS && trips > unroll;
    let mut counter = Scalar::imm(0);
    for i in 0..trips {
        body(m, i);
        let done = i + 1;
        if looped && (done % unroll == 0 || done == trips) {
            let step = (done - 1) % unroll + 1;
            counter = m.alu(counter, Scalar::imm(step as u64), |x, y| x + y);
            let more = m.alu(counter, Scalar::imm(trips as u64), |x, y| u64::from(x != y));
            m.branch(more);
        }
    }
}

#[inline(always)]
fn xor<S: Sink>(m: &mut Machine<S>, a: Scalar, b: Scalar) -> Scalar {
    m.alu(a, b, |x, y| x ^ y)
}

/// `xtime(x) = (x & 0x80 ? (x << 1) ^ 0x1b : x << 1) & 0xff`, compiled without a branch: 5 scalar
/// instructions, the last but one a select (`selne`; the vendor compiler emits selects for CPE
/// code at -O2, e.g. `selge` in swCandle's `RLC/col/test_rlc_multi_p2p/slave.s`). The select
/// reads the condition and `(x << 1) ^ 0x1b`, which is issued after `x << 1`, so its two
/// recorded operands carry every dependency. This is the cheapest form: `(x >> 7) * 0x1b` as a
/// multiply would wait 7 cycles (`mull` at cycle 3, its user at 10, in the compiler's CPE
/// schedule in swCandle's `memory/stream_sw/gldst/slave.s`, built at -O0), and expanded into
/// shifts and adds it takes 7 instructions.
#[inline(always)]
fn xtime<S: Sink>(m: &mut Machine<S>, x: Scalar) -> Scalar {
    let high = m.alu(x, Scalar::imm(0x80), |v, bit| v & bit);
    let low = m.alu(x, Scalar::imm(1), |v, s| v << s);
    let reduced = m.alu(low, Scalar::imm(0x1b), |v, p| v ^ p);
    // selne high, reduced, low: `low` is `reduced ^ 0x1b`.
    let y = m.alu(high, reduced, |h, r| if h != 0 { r } else { r ^ 0x1b });
    m.alu(y, Scalar::imm(0xff), |v, mask| v & mask)
}

/// The cipher of one block at LDM byte address `at`, in place, step by step, with FIPS-197's
/// round structure (as tiny-AES-c's `Cipher` has it): the first AddRoundKey, a loop over the
/// rounds but the last, then the last round without MixColumns.
fn cipher_block<S: Sink>(
    m: &mut Machine<S>,
    ldm: &mut Ldm,
    plan: &LdmPlan,
    shape: CipherShape,
    at: usize,
) {
    let decrypt = shape.direction == Direction::Decrypt;
    let round_steps = |m: &mut Machine<S>, ldm: &mut Ldm, round: usize| {
        m.step(Step::SubBytes);
        sub_bytes(m, ldm, plan, at);
        m.step(Step::ShiftRows);
        shift_rows(m, ldm, at, decrypt);
        if round < shape.rounds {
            m.step(Step::MixColumns);
            mix_columns(m, ldm, at, decrypt);
        }
        m.step(Step::AddRoundKey);
        add_round_key(m, ldm, plan, round, at);
    };
    m.step(Step::AddRoundKey);
    add_round_key(m, ldm, plan, 0, at);
    c_loop(m, shape.rounds - 1, 1, |m, i| round_steps(m, ldm, i + 1));
    round_steps(m, ldm, shape.rounds);
}

/// `for (i = 0; i < 16; i++) s[i] ^= rk[16 * round + i];`
fn add_round_key<S: Sink>(
    m: &mut Machine<S>,
    ldm: &mut Ldm,
    plan: &LdmPlan,
    round: usize,
    at: usize,
) {
    let unroll = m.c_unroll();
    c_loop(m, 16, unroll, |m, i| {
        let s = m.load_byte_at(ldm, at + i);
        let k = m.load_byte_at(ldm, plan.round_keys.byte + 16 * round + i);
        let x = xor(m, s, k);
        m.store_byte(ldm, at + i, x);
    });
}

/// `for (i = 0; i < 16; i++) s[i] = sbox[s[i]];`
fn sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, plan: &LdmPlan, at: usize) {
    let base = Scalar::imm(plan.sbox.byte as u64);
    let unroll = m.c_unroll();
    c_loop(m, 16, unroll, |m, i| {
        let s = m.load_byte_at(ldm, at + i);
        let addr = m.alu(s, base, |x, y| x + y);
        let v = m.load_byte(ldm, addr);
        m.store_byte(ldm, at + i, v);
    });
}

/// Rows 1-3 rotated left by their index (right when decrypting): 12 loads, 12 stores.
fn shift_rows<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, at: usize, decrypt: bool) {
    for r in 1..4 {
        let row = [0, 1, 2, 3].map(|c| m.load_byte_at(ldm, at + 4 * c + r));
        let shift = if decrypt { 4 - r } else { r };
        for c in 0..4 {
            m.store_byte(ldm, at + 4 * c + r, row[(c + shift) % 4]);
        }
    }
}

/// MixColumns column by column (`a_r ^= t ^ xtime(a_r ^ a_(r+1))`); when decrypting, first the
/// step that turns it into InvMixColumns (`u = xtime(xtime(a0 ^ a2))`, "The Design of Rijndael"
/// 4.1.3).
fn mix_columns<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, at: usize, decrypt: bool) {
    let unroll = m.c_unroll();
    c_loop(m, 4, unroll, |m, c| {
        let mut a = [0, 1, 2, 3].map(|r| m.load_byte_at(ldm, at + 4 * c + r));
        if decrypt {
            for half in 0..2 {
                let pair = xor(m, a[half], a[half + 2]);
                let twice = xtime(m, pair);
                let four = xtime(m, twice);
                a[half] = xor(m, a[half], four);
                a[half + 2] = xor(m, a[half + 2], four);
            }
        }
        let t = xor(m, a[0], a[1]);
        let t = xor(m, t, a[2]);
        let t = xor(m, t, a[3]);
        for r in 0..4 {
            let pair = xor(m, a[r], a[(r + 1) % 4]);
            let doubled = xtime(m, pair);
            let with_t = xor(m, a[r], t);
            let out = xor(m, with_t, doubled);
            m.store_byte(ldm, at + 4 * c + r, out);
        }
    });
}
