//! The SIMD-friendly data layout of Fig. 3 and back: shuffles that gather one column of eight
//! states per register, and the lane-wise 4x4 byte transpose that turns columns into rows.

use crate::kernel::word::Word;
use crate::machine::{Machine, Sink, V256};

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
