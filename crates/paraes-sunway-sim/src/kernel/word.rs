//! The register types the row-form AES steps run on: a 256-bit vector (eight states, the SIMD
//! variants) or a 64-bit scalar (the lane-extraction lookup), behind one trait so every step is
//! written once.

use crate::machine::{Machine, Scalar, Sink, V256};

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
