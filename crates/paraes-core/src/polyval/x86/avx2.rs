//! POLYVAL's AVX2 path, for CPUs with VPCLMULQDQ but without AVX-512 (Zen 3 and 4, Alder Lake
//! and later): 256-bit registers of two blocks, 16 registers (32 blocks) per reduction.

use core::arch::x86_64::*;

use super::Lanes;

/// Registers per group: 32 blocks per reduction.
const REGS: usize = 16;

impl Lanes for __m256i {
    const BLOCKS: usize = 2;
    /// Three multiplies per product: on Zen 4 the carry-less multiplier bounds this path, and
    /// Karatsuba measured ~1.25x faster than four multiplies (criterion-free timing, 1 MiB).
    const KARATSUBA: bool = true;

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: register arithmetic; the caller enables avx.
        unsafe { _mm256_setzero_si256() }
    }

    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller passes 32 readable bytes and enables avx.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }

    #[inline(always)]
    unsafe fn reverse_blocks(self) -> Self {
        // SAFETY: register arithmetic; the caller enables avx2.
        unsafe {
            let reverse = _mm256_broadcastsi128_si256(_mm_set_epi8(
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            ));
            _mm256_shuffle_epi8(self, reverse)
        }
    }

    #[inline(always)]
    unsafe fn first(block: __m128i) -> Self {
        // SAFETY: register arithmetic; the caller enables avx.
        unsafe { _mm256_zextsi128_si256(block) }
    }

    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: register arithmetic; the caller enables avx2.
        unsafe { _mm256_xor_si256(self, other) }
    }

    #[inline(always)]
    unsafe fn clmul<const IMM: i32>(self, other: Self) -> Self {
        // SAFETY: register arithmetic; the caller enables avx and vpclmulqdq.
        unsafe { _mm256_clmulepi64_epi128(self, other, IMM) }
    }

    #[inline(always)]
    unsafe fn swap_halves(self) -> Self {
        // SAFETY: register arithmetic; the caller enables avx2.
        unsafe { _mm256_shuffle_epi32(self, 0x4e) }
    }

    #[inline(always)]
    unsafe fn fold_lanes(self) -> __m128i {
        // SAFETY: register arithmetic; the caller enables avx2.
        unsafe {
            _mm_xor_si128(
                _mm256_castsi256_si128(self),
                _mm256_extracti128_si256(self, 1),
            )
        }
    }
}

/// POLYVAL of `data` (zero-padded) then `trailer` with the dot-powers `powers` (H^N .. H^1),
/// every block byte-reversed first when `REFLECT`.
#[target_feature(enable = "pclmulqdq,sse2,ssse3,avx,avx2,vpclmulqdq")]
pub(in crate::polyval) unsafe fn hash<const REFLECT: bool, const N: usize>(
    powers: &[[u8; 16]; N],
    data: &[u8],
    trailer: &[u8; 16],
) -> [u8; 16] {
    // SAFETY: the caller guarantees the CPU has the features this function enables, which are
    // all that `__m256i`'s `Lanes` and the shared code use.
    unsafe { super::hash::<__m256i, REGS, REFLECT, N>(powers, data, trailer) }
}
