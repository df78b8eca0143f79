//! POLYVAL's 128-bit path, for AES-NI machines without VPCLMULQDQ: PCLMULQDQ on one block per
//! register, 8 blocks per reduction.

use core::arch::x86_64::*;

use super::Lanes;

/// Registers (blocks) per group.
const REGS: usize = 8;

impl Lanes for __m128i {
    const BLOCKS: usize = 1;
    /// Three multiplies per product, as on the AVX2 path (measured ~1.25x faster on Zen 4).
    const KARATSUBA: bool = true;

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: register arithmetic; sse2 is part of x86-64.
        unsafe { _mm_setzero_si128() }
    }

    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller passes 16 readable bytes.
        unsafe { _mm_loadu_si128(p.cast()) }
    }

    #[inline(always)]
    unsafe fn reverse_blocks(self) -> Self {
        // SAFETY: register arithmetic; the caller enables ssse3.
        unsafe {
            _mm_shuffle_epi8(
                self,
                _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            )
        }
    }

    #[inline(always)]
    unsafe fn first(block: __m128i) -> Self {
        block
    }

    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: register arithmetic; sse2 is part of x86-64.
        unsafe { _mm_xor_si128(self, other) }
    }

    #[inline(always)]
    unsafe fn clmul<const IMM: i32>(self, other: Self) -> Self {
        // SAFETY: register arithmetic; the caller enables pclmulqdq.
        unsafe { _mm_clmulepi64_si128(self, other, IMM) }
    }

    #[inline(always)]
    unsafe fn swap_halves(self) -> Self {
        // SAFETY: register arithmetic; the caller enables sse2.
        unsafe { _mm_shuffle_epi32(self, 0x4e) }
    }

    #[inline(always)]
    unsafe fn fold_lanes(self) -> __m128i {
        self
    }
}

/// POLYVAL of `data` (zero-padded) then `trailer` with the dot-powers `powers` (H^N .. H^1),
/// every block byte-reversed first when `REFLECT`.
#[target_feature(enable = "pclmulqdq,sse2,ssse3")]
pub(in crate::polyval) unsafe fn hash<const REFLECT: bool, const N: usize>(
    powers: &[[u8; 16]; N],
    data: &[u8],
    trailer: &[u8; 16],
) -> [u8; 16] {
    // SAFETY: the caller guarantees the CPU has the features this function enables, which are
    // all that `__m128i`'s `Lanes` and the shared code use.
    unsafe { super::hash::<__m128i, REGS, REFLECT, N>(powers, data, trailer) }
}
