//! The SW-AES kernels of a CPE, written once over a generic register type so that every variant
//! shares the same round code: the SIMD-friendly layout (Fig. 3) and back, AddRoundKey with the
//! byte-replicated ExtRoundKey, ShiftRows and MixColumns as lane-wise shifts/ands/xors, and
//! SubBytes by one of three lookups (scalar per byte, lane extraction, or `selldw` on the
//! ExtS-Box). Every operation goes through [`Machine`], so it is both executed and counted.

use paraes_core::Direction;

use crate::ldm::{Ldm, LdmAllocator};
use crate::machine::{Machine, Scalar, Sink, Trace, V256};
use crate::{Buffering, SimError, Variant};

/// AES blocks in one batch (the paper's *state batch*: 8 states in four 256-bit registers).
pub const BATCH_BLOCKS: usize = 8;
/// Bytes in one batch.
pub const BATCH_BYTES: usize = 16 * BATCH_BLOCKS;
/// LDM words in one batch.
pub const BATCH_WORDS: usize = BATCH_BYTES / 4;

/// The AES S-box (FIPS-197 Fig. 7), computed from the multiplicative inverse and the affine map.
pub fn sbox() -> [u8; 256] {
    let mut table = [0u8; 256];
    for (x, out) in table.iter_mut().enumerate() {
        let inv = gf_inverse(x as u8);
        let mut s = inv;
        for shift in 1..5 {
            s ^= inv.rotate_left(shift);
        }
        *out = s ^ 0x63;
    }
    table
}

/// The inverse S-box.
pub fn inv_sbox() -> [u8; 256] {
    let forward = sbox();
    let mut table = [0u8; 256];
    for (x, &s) in forward.iter().enumerate() {
        table[s as usize] = x as u8;
    }
    table
}

fn gf_mul(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0;
    while b != 0 {
        if b & 1 != 0 {
            product ^= a;
        }
        a = (a << 1) ^ if a & 0x80 != 0 { 0x1b } else { 0 };
        b >>= 1;
    }
    product
}

fn gf_inverse(x: u8) -> u8 {
    // x^254 = x^-1 in GF(2^8) (0 maps to 0).
    let mut result = 1u8;
    let mut power = x;
    let mut exponent = 254u32;
    while exponent != 0 {
        if exponent & 1 != 0 {
            result = gf_mul(result, power);
        }
        power = gf_mul(power, power);
        exponent >>= 1;
    }
    result
}

/// A register the AES steps run on: a 256-bit vector (8 states) or a 32-bit scalar (1 state).
pub trait Word: Copy {
    /// A preloaded constant with `value` in every 32-bit lane (not counted).
    fn konst(value: u32) -> Self;
    /// Lane-wise xor.
    fn xor<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self;
    /// Lane-wise and.
    fn and<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self;
    /// Lane-wise or.
    fn or<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self;
    /// Lane-wise 32-bit left shift.
    fn shl<S: Sink>(m: &mut Machine<S>, a: Self, bits: u32) -> Self;
    /// Lane-wise 32-bit logical right shift.
    fn shr<S: Sink>(m: &mut Machine<S>, a: Self, bits: u32) -> Self;
}

impl Word for V256 {
    fn konst(value: u32) -> Self {
        V256::splat(value)
    }
    #[inline(always)]
    fn xor<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self {
        m.vxor(a, b)
    }
    #[inline(always)]
    fn and<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self {
        m.vand(a, b)
    }
    #[inline(always)]
    fn or<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self {
        m.vor(a, b)
    }
    #[inline(always)]
    fn shl<S: Sink>(m: &mut Machine<S>, a: Self, bits: u32) -> Self {
        m.vsll(a, bits)
    }
    #[inline(always)]
    fn shr<S: Sink>(m: &mut Machine<S>, a: Self, bits: u32) -> Self {
        m.vsrl(a, bits)
    }
}

impl Word for Scalar {
    fn konst(value: u32) -> Self {
        Scalar::imm(u64::from(value))
    }
    #[inline(always)]
    fn xor<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self {
        m.alu(a, b, |x, y| x ^ y)
    }
    #[inline(always)]
    fn and<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self {
        m.alu(a, b, |x, y| x & y)
    }
    #[inline(always)]
    fn or<S: Sink>(m: &mut Machine<S>, a: Self, b: Self) -> Self {
        m.alu(a, b, |x, y| x | y)
    }
    #[inline(always)]
    fn shl<S: Sink>(m: &mut Machine<S>, a: Self, bits: u32) -> Self {
        // A 32-bit shift (sllw-like): the result stays zero-extended.
        m.alu(a, Scalar::imm(u64::from(bits)), |x, y| {
            (x << y) & 0xffff_ffff
        })
    }
    #[inline(always)]
    fn shr<S: Sink>(m: &mut Machine<S>, a: Self, bits: u32) -> Self {
        m.alu(a, Scalar::imm(u64::from(bits)), |x, y| x >> y)
    }
}

/// Multiplication by x of every byte (lane-wise, no byte SIMD): 11 instructions.
#[inline(always)]
fn xtime<W: Word, S: Sink>(m: &mut Machine<S>, x: W) -> W {
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
fn rotate_right<W: Word, S: Sink>(m: &mut Machine<S>, x: W, bits: u32) -> W {
    if bits.is_multiple_of(32) {
        return x;
    }
    let right = W::shr(m, x, bits);
    let left = W::shl(m, x, 32 - bits);
    W::or(m, right, left)
}

/// Exchanges the bits of `b` selected by `mask` with those of `a` selected by `mask << shift`.
#[inline(always)]
fn swap_move<W: Word, S: Sink>(m: &mut Machine<S>, a: W, b: W, shift: u32, mask: u32) -> (W, W) {
    let t = W::shr(m, a, shift);
    let t = W::xor(m, t, b);
    let t = W::and(m, t, W::konst(mask));
    let b = W::xor(m, b, t);
    let t = W::shl(m, t, shift);
    (W::xor(m, a, t), b)
}

/// Transposes the 4x4 byte matrix formed by byte `j` of lane `i` of the four registers, in every
/// lane at once (Fig. 3 step 4: vectorised SHIFT and AND): 24 instructions; its own inverse.
pub fn byte_transpose<W: Word, S: Sink>(m: &mut Machine<S>, x: [W; 4]) -> [W; 4] {
    let (x0, x1) = swap_move(m, x[0], x[1], 8, 0x00ff_00ff);
    let (x2, x3) = swap_move(m, x[2], x[3], 8, 0x00ff_00ff);
    let (x0, x2) = swap_move(m, x0, x2, 16, 0x0000_ffff);
    let (x1, x3) = swap_move(m, x1, x3, 16, 0x0000_ffff);
    [x0, x1, x2, x3]
}

/// Fig. 3 steps 1-3: four registers holding two states each (lane `j` of register `k` is column
/// `j % 4` of state `2k + j / 4`) to four registers holding one column of all eight states
/// (lane `s` of register `c` is column `c` of state `s`): 8 shuffles.
pub fn states_to_columns<S: Sink>(m: &mut Machine<S>, a: [V256; 4]) -> [V256; 4] {
    let low_cols = [0, 4, 1, 5, 0, 4, 1, 5];
    let high_cols = [2, 6, 3, 7, 2, 6, 3, 7];
    let t0 = m.vshuffle(a[0], a[1], low_cols);
    let t1 = m.vshuffle(a[0], a[1], high_cols);
    let t2 = m.vshuffle(a[2], a[3], low_cols);
    let t3 = m.vshuffle(a[2], a[3], high_cols);
    let even = [0, 1, 4, 5, 0, 1, 4, 5];
    let odd = [2, 3, 6, 7, 2, 3, 6, 7];
    [
        m.vshuffle(t0, t2, even),
        m.vshuffle(t0, t2, odd),
        m.vshuffle(t1, t3, even),
        m.vshuffle(t1, t3, odd),
    ]
}

/// The inverse of [`states_to_columns`], in three steps of 4 shuffles (the shuffle takes four
/// lanes from each source, so the reverse path needs one more step).
pub fn columns_to_states<S: Sink>(m: &mut Machine<S>, c: [V256; 4]) -> [V256; 4] {
    let low = [0, 1, 2, 3, 0, 1, 2, 3];
    let high = [4, 5, 6, 7, 4, 5, 6, 7];
    let z0 = m.vshuffle(c[0], c[1], low);
    let z1 = m.vshuffle(c[0], c[1], high);
    let z2 = m.vshuffle(c[2], c[3], low);
    let z3 = m.vshuffle(c[2], c[3], high);
    let first = [0, 4, 1, 5, 0, 4, 1, 5];
    let second = [2, 6, 3, 7, 2, 6, 3, 7];
    let y = [
        m.vshuffle(z0, z2, first),
        m.vshuffle(z0, z2, second),
        m.vshuffle(z1, z3, first),
        m.vshuffle(z1, z3, second),
    ];
    let regroup = [0, 1, 4, 5, 2, 3, 6, 7];
    y.map(|yk| m.vshuffle(yk, yk, regroup))
}

/// MixColumns on four row registers: `row_r ^= t ^ xtime(row_r ^ row_(r+1))`, `t` the xor of all
/// rows: 59 instructions.
fn mix_columns<W: Word, S: Sink>(m: &mut Machine<S>, rows: [W; 4]) -> [W; 4] {
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
fn inv_mix_prepare<W: Word, S: Sink>(m: &mut Machine<S>, rows: [W; 4]) -> [W; 4] {
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

/// Where a kernel's tables and buffers live in LDM.
#[derive(Clone, Debug)]
pub struct LdmPlan {
    /// Word address of the S-box (ExtS-Box for selldw, a 256-byte table otherwise).
    pub sbox_word: usize,
    /// Word address of the round keys (ExtRoundKey for vector variants, row words for scalar).
    pub round_key_word: usize,
    /// Word address of the CTR counter batch.
    pub scratch_word: usize,
    /// Word addresses of the data buffers (one or two).
    pub buffer_words: Vec<usize>,
    /// Bytes per data buffer.
    pub buffer_bytes: usize,
    /// LDM bytes allocated in all.
    pub total_bytes: usize,
    /// The allocation: (name, byte address, bytes).
    pub regions: Vec<(String, usize, usize)>,
}

impl LdmPlan {
    /// Lays out the LDM of a CPE for `variant` and `buffering`; fails if it does not fit.
    pub fn new(
        variant: Variant,
        buffering: Buffering,
        ldm_bytes: usize,
        reserved_bytes: usize,
        buffer_bytes: usize,
    ) -> Result<Self, SimError> {
        let (sbox_bytes, key_bytes) = match variant {
            Variant::Original => (256, 240),
            Variant::Simd => (256, 2048),
            Variant::Selldw | Variant::Pipelined => (1024, 2048),
        };
        if buffer_bytes == 0 || !buffer_bytes.is_multiple_of(BATCH_BYTES) {
            return Err(SimError::Config(format!(
                "the LDM buffer must be a positive multiple of {BATCH_BYTES} bytes, not {buffer_bytes}"
            )));
        }
        let mut ldm = LdmAllocator::new(ldm_bytes);
        ldm.alloc("reserved (stack, spills)", reserved_bytes)?;
        let sbox_word = ldm.alloc(
            if sbox_bytes == 1024 {
                "ExtS-Box"
            } else {
                "S-Box"
            },
            sbox_bytes,
        )?;
        let round_key_word = ldm.alloc(
            if key_bytes == 2048 {
                "ExtRoundKey"
            } else {
                "RoundKey"
            },
            key_bytes,
        )?;
        let scratch_word = ldm.alloc("CTR counter batch", BATCH_BYTES)?;
        let buffers = match buffering {
            Buffering::Single => 1,
            Buffering::Double => 2,
        };
        let buffer_words = (0..buffers)
            .map(|i| ldm.alloc(&format!("data buffer {i}"), buffer_bytes))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LdmPlan {
            sbox_word,
            round_key_word,
            scratch_word,
            buffer_words,
            buffer_bytes,
            total_bytes: ldm.used(),
            regions: ldm.regions().to_vec(),
        })
    }
}

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

/// A way to hold states in registers and look up the S-box: one per implementation style.
pub trait Flavor {
    /// The register type.
    type W: Word;
    /// AES states one group of four registers holds.
    const STATES: usize;
    /// LDM words one register holds.
    const WORDS: usize;
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
    /// A plain register load (for the CTR xor).
    fn load<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> Self::W;
    /// A plain register store.
    fn store<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, word: usize, x: Self::W);
    /// The S-box table as LDM words.
    fn sbox_image(table: &[u8; 256]) -> Vec<u32>;
    /// The round keys as LDM words.
    fn round_key_image(keys: &[[u8; 16]]) -> Vec<u32>;
}

/// Row `row` of a 16-byte round key as a word: byte `c` is column `c`.
fn key_row(key: &[u8; 16], row: usize) -> u32 {
    u32::from_le_bytes([key[row], key[4 + row], key[8 + row], key[12 + row]])
}

/// Packs a 256-byte table into 64 little-endian words.
fn byte_table_image(table: &[u8; 256]) -> Vec<u32> {
    table
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Looks up the four bytes of a scalar word one by one in the byte S-box: 22 instructions.
#[inline(always)]
fn scalar_sub_word<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, w: Scalar) -> Scalar {
    let base = Scalar::imm(4 * plan.sbox_word as u64);
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

/// The original, non-vectorised kernel: one state in four 32-bit row words, byte lookups.
pub struct ScalarFlavor;
/// SIMD layout, SubBytes by extracting each lane to a scalar and inserting it back.
pub struct ExtractFlavor;
/// SIMD layout, SubBytes by extend + `selldw` on the ExtS-Box + shrink (Fig. 4).
pub struct SelldwFlavor;

/// The vector flavors' shared load/store/key code.
macro_rules! vector_flavor_common {
    () => {
        type W = V256;
        const STATES: usize = 8;
        const WORDS: usize = 8;
        fn load_rows<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> [V256; 4] {
            let a = [0, 1, 2, 3].map(|k| m.vload(ldm, word + 8 * k));
            let columns = states_to_columns(m, a);
            byte_transpose(m, columns)
        }
        fn store_rows<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, word: usize, rows: [V256; 4]) {
            let columns = byte_transpose(m, rows);
            let a = columns_to_states(m, columns);
            for (k, v) in a.into_iter().enumerate() {
                m.vstore(ldm, word + 8 * k, v);
            }
        }
        fn round_key_row<S: Sink>(
            m: &mut Machine<S>,
            ldm: &Ldm,
            plan: &LdmPlan,
            round: usize,
            row: usize,
        ) -> V256 {
            m.vload(ldm, plan.round_key_word + 32 * round + 8 * row)
        }
        fn load<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> V256 {
            m.vload(ldm, word)
        }
        fn store<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, word: usize, x: V256) {
            m.vstore(ldm, word, x)
        }
        fn round_key_image(keys: &[[u8; 16]]) -> Vec<u32> {
            // ExtRoundKey: each row word of each round key replicated in 8 lanes (every byte 8x).
            keys.iter()
                .flat_map(|key| (0..4).flat_map(move |row| [key_row(key, row); 8]))
                .collect()
        }
    };
}

impl Flavor for ExtractFlavor {
    vector_flavor_common!();
    fn sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, x: V256) -> V256 {
        let mut out = x;
        for lane in 0..8 {
            let word = m.vextract(x, lane);
            let substituted = scalar_sub_word(m, ldm, plan, word);
            out = m.vinsert(out, substituted, lane);
        }
        out
    }
    fn sbox_image(table: &[u8; 256]) -> Vec<u32> {
        byte_table_image(table)
    }
}

impl Flavor for SelldwFlavor {
    vector_flavor_common!();
    fn sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, x: V256) -> V256 {
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
        // Look up: eight selldw per intv8 vector on the ExtS-Box.
        let looked_up = extended.map(|indices| {
            let mut result = indices;
            for lane in 0..8 {
                result = m.selldw(ldm, indices, plan.sbox_word, lane, result);
            }
            result
        });
        // Shrink: back to four bytes per lane.
        let mut out = looked_up[0];
        for (byte, &part) in looked_up.iter().enumerate().skip(1) {
            let placed = m.vsll(part, 8 * byte as u32);
            out = m.vor(out, placed);
        }
        out
    }
    fn sbox_image(table: &[u8; 256]) -> Vec<u32> {
        table.iter().map(|&b| u32::from(b)).collect()
    }
}

impl Flavor for ScalarFlavor {
    type W = Scalar;
    const STATES: usize = 1;
    const WORDS: usize = 1;
    fn load_rows<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> [Scalar; 4] {
        let columns = [0, 1, 2, 3].map(|c| m.load_word(ldm, word + c));
        byte_transpose(m, columns)
    }
    fn store_rows<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, word: usize, rows: [Scalar; 4]) {
        let columns = byte_transpose(m, rows);
        for (c, w) in columns.into_iter().enumerate() {
            m.store_word(ldm, word + c, w);
        }
    }
    fn round_key_row<S: Sink>(
        m: &mut Machine<S>,
        ldm: &Ldm,
        plan: &LdmPlan,
        round: usize,
        row: usize,
    ) -> Scalar {
        m.load_word(ldm, plan.round_key_word + 4 * round + row)
    }
    fn sub_bytes<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, plan: &LdmPlan, x: Scalar) -> Scalar {
        scalar_sub_word(m, ldm, plan, x)
    }
    fn load<S: Sink>(m: &mut Machine<S>, ldm: &Ldm, word: usize) -> Scalar {
        m.load_word(ldm, word)
    }
    fn store<S: Sink>(m: &mut Machine<S>, ldm: &mut Ldm, word: usize, x: Scalar) {
        m.store_word(ldm, word, x)
    }
    fn sbox_image(table: &[u8; 256]) -> Vec<u32> {
        byte_table_image(table)
    }
    fn round_key_image(keys: &[[u8; 16]]) -> Vec<u32> {
        keys.iter()
            .flat_map(|key| (0..4).map(move |row| key_row(key, row)))
            .collect()
    }
}

/// Encrypts or decrypts (equivalent inverse cipher) the batch at LDM word `word` in place.
pub fn cipher_batch<F: Flavor, S: Sink>(
    m: &mut Machine<S>,
    ldm: &mut Ldm,
    plan: &LdmPlan,
    shape: CipherShape,
    word: usize,
) {
    let decrypt = shape.direction == Direction::Decrypt;
    for group in 0..BATCH_BLOCKS / F::STATES {
        let group_word = word + 4 * F::STATES * group;
        m.step();
        let mut rows = F::load_rows(m, ldm, group_word);
        m.step();
        add_round_key::<F, S>(m, ldm, plan, 0, &mut rows);
        for round in 1..=shape.rounds {
            m.step();
            for row in rows.iter_mut() {
                *row = F::sub_bytes(m, ldm, plan, *row);
            }
            m.step();
            for (r, row) in rows.iter_mut().enumerate().skip(1) {
                let bits = if decrypt {
                    32 - 8 * r as u32
                } else {
                    8 * r as u32
                };
                *row = rotate_right(m, *row, bits);
            }
            if round < shape.rounds {
                m.step();
                if decrypt {
                    rows = inv_mix_prepare(m, rows);
                }
                rows = mix_columns(m, rows);
            }
            m.step();
            add_round_key::<F, S>(m, ldm, plan, round, &mut rows);
        }
        m.step();
        F::store_rows(m, ldm, group_word, rows);
    }
}

fn add_round_key<F: Flavor, S: Sink>(
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

/// The CTR counter carried from batch to batch: the next block's 128-bit counter as two halves.
#[derive(Clone, Copy, Debug)]
pub struct Counter {
    /// High 64 bits.
    pub high: Scalar,
    /// Low 64 bits.
    pub low: Scalar,
}

impl Counter {
    /// The counter value `value`, held in registers before the traced code.
    pub fn new(value: u128) -> Self {
        Counter {
            high: Scalar::imm((value >> 64) as u64),
            low: Scalar::imm(value as u64),
        }
    }
}

/// One batch of a job as the CPE runs it: ECB in place, or CTR (counters written to the scratch
/// batch, encrypted, xored into the data), then the loop's pointer update, compare and branch.
pub fn run_batch<F: Flavor, S: Sink>(
    m: &mut Machine<S>,
    ldm: &mut Ldm,
    plan: &LdmPlan,
    shape: CipherShape,
    word: usize,
    counter: &mut Counter,
) {
    if shape.ctr {
        for block in 0..BATCH_BLOCKS {
            let slot = plan.scratch_word + 4 * block;
            let high = m.alu(counter.high, counter.high, |x, _| x.swap_bytes());
            m.store_long(ldm, slot, high);
            let low = m.alu(counter.low, counter.low, |x, _| x.swap_bytes());
            m.store_long(ldm, slot + 2, low);
            let next = m.alu(counter.low, Scalar::imm(1), u64::wrapping_add);
            let carry = m.alu(next, counter.low, |x, y| u64::from(x < y));
            counter.high = m.alu(counter.high, carry, u64::wrapping_add);
            counter.low = next;
        }
        cipher_batch::<F, S>(m, ldm, plan, shape, plan.scratch_word);
        m.step();
        for i in (0..BATCH_WORDS).step_by(F::WORDS) {
            let keystream = F::load(m, ldm, plan.scratch_word + i);
            let data = F::load(m, ldm, word + i);
            let out = F::W::xor(m, keystream, data);
            F::store(m, ldm, word + i, out);
        }
    } else {
        cipher_batch::<F, S>(m, ldm, plan, shape, word);
    }
    let pointer = m.alu(
        Scalar::imm(word as u64),
        Scalar::imm(BATCH_BYTES as u64),
        |x, y| x + y,
    );
    let more = m.alu(pointer, Scalar::imm(0), |x, y| u64::from(x != y));
    m.branch(more);
}

/// Records the instruction stream of one batch (data-independent; run on a zeroed LDM).
pub fn record_batch<F: Flavor>(plan: &LdmPlan, shape: CipherShape) -> Trace {
    let mut ldm = Ldm::new(plan.total_bytes);
    let mut machine = Machine::new(Trace::default());
    let mut counter = Counter::new(0);
    run_batch::<F, Trace>(
        &mut machine,
        &mut ldm,
        plan,
        shape,
        plan.buffer_words[0],
        &mut counter,
    );
    machine.sink
}

/// Records the instruction stream of the batch of `variant` (pipelined: two interleaved batches).
pub fn record_variant(
    variant: Variant,
    plan: &LdmPlan,
    shape: CipherShape,
    params: &crate::params::Params,
) -> Trace {
    match variant {
        Variant::Original => record_batch::<ScalarFlavor>(plan, shape),
        Variant::Simd => record_batch::<ExtractFlavor>(plan, shape),
        Variant::Selldw => record_batch::<SelldwFlavor>(plan, shape),
        Variant::Pipelined => {
            let one = record_batch::<SelldwFlavor>(plan, shape);
            crate::schedule::interleave(&one, &one, params)
        }
    }
}
