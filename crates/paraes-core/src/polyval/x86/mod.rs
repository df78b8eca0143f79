//! What POLYVAL's x86-64 paths share: the one-block multiply [`dot`] and its reduction, the
//! dot-powers, and the aggregated hash [`hash`], generic over the register ([`Lanes`]: 1, 2 or 4
//! blocks) so that the AVX-512, AVX2 and PCLMULQDQ paths (`avx512`, `avx2`, `clmul`, each a
//! `#[target_feature]` entry point) run the same group and tail logic.
//!
//! A group of `REGS` registers is multiplied block-wise by the dot-powers H^group .. H^1 (the
//! running hash folded into its first block), summed unreduced ([`Sum`]) and reduced once; each
//! product takes four 64-bit multiplies on the AVX-512 path and three (Karatsuba) on the
//! narrower ones, where the multiplier is the bound ([`Lanes::KARATSUBA`]). The
//! blocks after the last whole group, the zero-padded partial block and the trailer are staged
//! right-aligned in a zeroed stack buffer, whole registers of it, so that they take the right
//! suffix of the same powers: the zero blocks in front add nothing.
//!
//! Constant time: carry-less multiplies and shuffles only; branches and indices depend on
//! lengths alone.

use core::arch::x86_64::*;

use zeroize::Zeroize;

mod avx2;
mod avx512;
mod clmul;

pub(super) use avx2::hash as hash_avx2;
pub(super) use avx512::hash as hash_avx512;
pub(super) use clmul::hash as hash_clmul;

/// The running sum of the stitched AES-GCM kernel (`crate::aes::gcm_x86`): 4-block registers.
pub(crate) type Wide = Sum<__m512i>;

/// dot(a, b) = a * b * x^-128, one block (Gueron's GCM-SIV reduction).
#[inline(always)]
pub(crate) unsafe fn dot(a: __m128i, b: __m128i) -> __m128i {
    // SAFETY: register arithmetic; the caller runs with pclmulqdq and sse2 enabled.
    unsafe {
        let lo = _mm_clmulepi64_si128(a, b, 0x00);
        let hi = _mm_clmulepi64_si128(a, b, 0x11);
        let mid = _mm_xor_si128(
            _mm_clmulepi64_si128(a, b, 0x10),
            _mm_clmulepi64_si128(a, b, 0x01),
        );
        reduce(lo, mid, hi)
    }
}

/// Reduces the 256-bit product with 64-bit halves `hi`, `mid` (straddling), `lo` to dot form.
#[inline(always)]
unsafe fn reduce(lo: __m128i, mid: __m128i, hi: __m128i) -> __m128i {
    // SAFETY: register arithmetic; the caller runs with pclmulqdq and sse2 enabled.
    unsafe {
        let lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
        let hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
        let poly = _mm_set_epi64x(0xc200_0000_0000_0000_u64 as i64, 1);
        let t = _mm_clmulepi64_si128(lo, poly, 0x10);
        let lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 78), t);
        let t = _mm_clmulepi64_si128(lo, poly, 0x10);
        let lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 78), t);
        _mm_xor_si128(hi, lo)
    }
}

/// The dot-powers H^N .. H^1 of the key `h` (`powers[j]` = H^(N - j)).
#[target_feature(enable = "pclmulqdq,sse2")]
pub(super) unsafe fn powers<const N: usize>(h: &[u8; 16]) -> [[u8; 16]; N] {
    // SAFETY: the loads and stores touch the 16 bytes of `h` and of each `slot`; `dot` needs
    // the features this function enables, which the caller guarantees the CPU has.
    unsafe {
        let h = _mm_loadu_si128(h.as_ptr().cast());
        let mut out = [[0u8; 16]; N];
        let mut power = h;
        for slot in out.iter_mut().rev() {
            _mm_storeu_si128(slot.as_mut_ptr().cast(), power);
            power = dot(power, h);
        }
        out
    }
}

/// A register of [`Lanes::BLOCKS`] 16-byte blocks and the lane-wise operations the aggregated
/// hash needs. The methods are `#[inline(always)]` register arithmetic whose CPU features the
/// caller's `#[target_feature]` entry point enables (that is each method's safety contract).
pub(crate) trait Lanes: Copy {
    /// Blocks per register.
    const BLOCKS: usize;
    /// Whether [`fold`] makes each product's middle term with one Karatsuba multiply instead of
    /// two ([`Sum::mul_add_karatsuba`]).
    const KARATSUBA: bool;
    /// The zero register.
    unsafe fn zero() -> Self;
    /// The `16 * BLOCKS` bytes at `p`, which must be readable.
    unsafe fn load(p: *const u8) -> Self;
    /// Each block's 16 bytes reversed (GHASH's byte order to POLYVAL's).
    unsafe fn reverse_blocks(self) -> Self;
    /// `block` in the first lane, zeros in the others.
    unsafe fn first(block: __m128i) -> Self;
    /// Lane-wise xor.
    unsafe fn xor(self, other: Self) -> Self;
    /// Lane-wise 64x64-bit carry-less products; `IMM` picks the halves as PCLMULQDQ does.
    unsafe fn clmul<const IMM: i32>(self, other: Self) -> Self;
    /// Each lane's 64-bit halves swapped.
    unsafe fn swap_halves(self) -> Self;
    /// The xor of the lanes.
    unsafe fn fold_lanes(self) -> __m128i;
}

/// Unreduced sums of lane-wise products of blocks by dot-powers, reduced once at the end (the
/// linearity the module docs describe). The stitched AES-GCM kernel uses it as [`Wide`].
#[derive(Clone, Copy)]
pub(crate) struct Sum<V> {
    lo: V,
    mid: V,
    hi: V,
}

impl<V: Lanes> Sum<V> {
    /// The empty sum.
    #[inline(always)]
    pub(crate) unsafe fn new() -> Self {
        // SAFETY: register arithmetic; the caller enables `V`'s features.
        unsafe {
            Sum {
                lo: V::zero(),
                mid: V::zero(),
                hi: V::zero(),
            }
        }
    }

    /// Adds the lane-wise carry-less products of `x` and `k` (schoolbook: four multiplies).
    #[inline(always)]
    pub(crate) unsafe fn mul_add(&mut self, x: V, k: V) {
        // SAFETY: register arithmetic; the caller enables `V`'s features.
        unsafe {
            self.lo = self.lo.xor(x.clmul::<0x00>(k));
            self.hi = self.hi.xor(x.clmul::<0x11>(k));
            self.mid = self.mid.xor(x.clmul::<0x10>(k));
            self.mid = self.mid.xor(x.clmul::<0x01>(k));
        }
    }

    /// Adds the lane-wise carry-less products of `x` and `k` with three multiplies (Karatsuba):
    /// the middle term is (x_lo + x_hi)(k_lo + k_hi), which still holds the low and high
    /// products, taken out once in [`Sum::reduce_karatsuba`]. `k_halves` is `k` xor its halves
    /// swapped.
    #[inline(always)]
    unsafe fn mul_add_karatsuba(&mut self, x: V, k: V, k_halves: V) {
        // SAFETY: register arithmetic; the caller enables `V`'s features.
        unsafe {
            self.lo = self.lo.xor(x.clmul::<0x00>(k));
            self.hi = self.hi.xor(x.clmul::<0x11>(k));
            let x_halves = x.xor(x.swap_halves());
            self.mid = self.mid.xor(x_halves.clmul::<0x00>(k_halves));
        }
    }

    /// The three unreduced sums, for code that must name their registers (the stitched
    /// kernel's scheduling barrier).
    #[inline(always)]
    pub(crate) fn parts(&mut self) -> [&mut V; 3] {
        [&mut self.lo, &mut self.mid, &mut self.hi]
    }

    /// The sum of the lanes, reduced to dot form.
    #[inline(always)]
    pub(crate) unsafe fn reduce(self) -> __m128i {
        // SAFETY: register arithmetic; the caller enables `V`'s features and pclmulqdq.
        unsafe {
            reduce(
                self.lo.fold_lanes(),
                self.mid.fold_lanes(),
                self.hi.fold_lanes(),
            )
        }
    }

    /// The sum of the lanes of a sum made by [`Sum::mul_add_karatsuba`], reduced to dot form.
    #[inline(always)]
    unsafe fn reduce_karatsuba(self) -> __m128i {
        // SAFETY: register arithmetic; the caller enables `V`'s features and pclmulqdq.
        unsafe {
            let (lo, hi) = (self.lo.fold_lanes(), self.hi.fold_lanes());
            let mid = _mm_xor_si128(self.mid.fold_lanes(), _mm_xor_si128(lo, hi));
            reduce(lo, mid, hi)
        }
    }
}

/// Folds the whole registers of `blocks` into the running hash `acc`: block `i` of the `n` is
/// multiplied by `keys`' H^(n - i) (`keys` holds one register of powers per register of
/// blocks, `halves` the xor of each power's halves), `acc` added to the first, and the sum
/// reduced once.
#[inline(always)]
unsafe fn fold<V: Lanes, const REFLECT: bool>(
    acc: __m128i,
    blocks: &[u8],
    keys: &[V],
    halves: &[V],
) -> __m128i {
    assert!(blocks.len() >= keys.len() * V::BLOCKS * 16);
    // SAFETY: register `r` reads `16 * BLOCKS` bytes from `r * 16 * BLOCKS`, inside `blocks`
    // by the assertion; the arithmetic needs `V`'s features, which the caller enables.
    unsafe {
        let mut sum = Sum::<V>::new();
        for (r, (&key, &key_halves)) in keys.iter().zip(halves).enumerate() {
            let mut x = V::load(blocks.as_ptr().add(r * V::BLOCKS * 16));
            if REFLECT {
                x = x.reverse_blocks();
            }
            if r == 0 {
                x = x.xor(V::first(acc));
            }
            if V::KARATSUBA {
                sum.mul_add_karatsuba(x, key, key_halves);
            } else {
                sum.mul_add(x, key);
            }
        }
        if V::KARATSUBA {
            sum.reduce_karatsuba()
        } else {
            sum.reduce()
        }
    }
}

/// POLYVAL of `data` (zero-padded) then `trailer`, every block byte-reversed first when
/// `REFLECT`, in groups of `REGS` registers of `V` with the last `REGS * V::BLOCKS` of the
/// dot-powers `powers` (H^N .. H^1).
#[inline(always)]
unsafe fn hash<V: Lanes, const REGS: usize, const REFLECT: bool, const N: usize>(
    powers: &[[u8; 16]; N],
    data: &[u8],
    trailer: &[u8; 16],
) -> [u8; 16] {
    let group = REGS * V::BLOCKS;
    const { assert!(N >= REGS * V::BLOCKS && REGS > 0) };
    // SAFETY: register `r` of `keys` reads the `16 * BLOCKS` bytes of powers[N - group +
    // r * BLOCKS ..], inside `powers` as the constant assertion bounds the group; `first` is
    // 16 bytes; `fold` checks its own bounds; the arithmetic needs `V`'s features, which the
    // caller enables.
    unsafe {
        let keys: [V; REGS] =
            core::array::from_fn(|r| V::load(powers[N - group + r * V::BLOCKS].as_ptr()));
        let halves: [V; REGS] = core::array::from_fn(|r| keys[r].xor(keys[r].swap_halves()));
        let mut acc = _mm_setzero_si128();
        let mut groups = data.chunks_exact(group * 16);
        for blocks in &mut groups {
            acc = fold::<V, REFLECT>(acc, blocks, &keys, &halves);
        }
        // The rest, padded, and the trailer: at most `group` blocks are staged, so a rest of
        // `group - 1` whole blocks and a partial one gives its first block to `dot` alone.
        let mut rest = groups.remainder();
        let mut count = rest.len().div_ceil(16) + 1;
        if count > group {
            let (first, later) = rest.split_at(16);
            let mut x = _mm_loadu_si128(first.as_ptr().cast());
            if REFLECT {
                x = __m128i::reverse_blocks(x);
            }
            acc = dot(
                _mm_xor_si128(acc, x),
                _mm_loadu_si128(powers[N - 1].as_ptr().cast()),
            );
            (rest, count) = (later, count - 1);
        }
        let regs = count.div_ceil(V::BLOCKS);
        let mut staging = [[0u8; 16]; N];
        let staged = staging[N - regs * V::BLOCKS..].as_flattened_mut();
        let lead = staged.len() - 16 * count;
        staged[lead..lead + rest.len()].copy_from_slice(rest);
        let end = staged.len();
        staged[end - 16..].copy_from_slice(trailer);
        // The running hash goes into the first staged block as that block's load will read it.
        let mut acc_bytes = [0u8; 16];
        _mm_storeu_si128(acc_bytes.as_mut_ptr().cast(), acc);
        if REFLECT {
            acc_bytes.reverse();
        }
        for (byte, a) in staged[lead..lead + 16].iter_mut().zip(&acc_bytes) {
            *byte ^= a;
        }
        let (keys, halves) = (&keys[REGS - regs..], &halves[REGS - regs..]);
        acc = fold::<V, REFLECT>(_mm_setzero_si128(), staged, keys, halves);
        staged.zeroize();
        acc_bytes.zeroize();
        let mut out = [0u8; 16];
        _mm_storeu_si128(out.as_mut_ptr().cast(), acc);
        out
    }
}
