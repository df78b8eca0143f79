//! POLYVAL (RFC 8452), the universal hash of the v2 container's chunk MAC and, through RFC 8452
//! appendix A, of GCM's GHASH ([`crate::ghash`]): an AVX-512 VPCLMULQDQ path that folds 64
//! blocks per reduction (byte-reflecting each block on the fly for GHASH), and the
//! constant-time RustCrypto `polyval` crate everywhere else.
//!
//! POLYVAL(H, X_1..X_n) = S_n with S_0 = 0 and S_j = dot(S_{j-1} xor X_j, H), where
//! dot(a, b) = a * b * x^-128 in GF(2^128) mod x^128 + x^127 + x^126 + x^121 + 1. Since the
//! reduction is linear, 64 blocks are multiplied by the dot-powers H^64..H^1, summed unreduced,
//! and reduced once, so the latency of the reduction is paid once per 64 blocks.

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::features::fast_polyval_available;

/// Blocks folded per reduction on the fast path: 16 registers of 4 blocks. Measured on Zen 4
/// (criterion `mac` bench, one core): 16 blocks 17.5 GB/s, 32 blocks 23.7, 64 blocks 26.8, as the
/// reduction's latency is spread over more multiplies.
pub(crate) const GROUP: usize = 64;

/// A POLYVAL instance for one hash key H.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Polyval {
    h: [u8; 16],
    /// `powers[j]` = H^(GROUP - j) (dot-powers), present when the fast path runs on this CPU.
    powers: Option<[[u8; 16]; GROUP]>,
}

impl Polyval {
    /// POLYVAL keyed with the 16-byte hash key `h`.
    pub fn new(h: &[u8; 16]) -> Self {
        let powers = fast_polyval_available().then(|| {
            // SAFETY: fast_polyval_available checked the CPU features the function needs.
            unsafe { x86::powers(h) }
        });
        Polyval { h: *h, powers }
    }

    /// The dot-powers H^64 .. H^1 of the fast path (`None` where it does not run here): the
    /// stitched AES-GCM kernel (`crate::aes::gcm_x86`) hashes with them.
    pub(crate) fn powers(&self) -> Option<&[[u8; 16]; GROUP]> {
        self.powers.as_ref()
    }

    /// The same key on the portable path only (tests compare the paths).
    #[cfg(test)]
    pub(crate) fn portable(&self) -> Self {
        Polyval {
            h: self.h,
            powers: None,
        }
    }

    /// POLYVAL of `data` zero-padded to whole blocks, followed by the block `trailer`.
    pub fn hash(&self, data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
        self.hash_in::<false>(data, trailer)
    }

    /// POLYVAL of the byte-reversed blocks of `data` (zero-padded to whole blocks first), then
    /// of the reversed `trailer`, byte-reversed: GHASH, when this instance is keyed with
    /// mulX_POLYVAL(ByteReverse(H)) (RFC 8452 appendix A; [`crate::ghash`] does that).
    pub(crate) fn hash_reflected(&self, data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
        let mut out = self.hash_in::<true>(data, trailer);
        out.reverse();
        out
    }

    /// [`Polyval::hash`], with every block byte-reversed first when `REFLECT`.
    fn hash_in<const REFLECT: bool>(&self, data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
        match &self.powers {
            // SAFETY: `powers` is only computed when the fast path's CPU features are present.
            Some(powers) => unsafe { x86::hash::<REFLECT>(&self.h, powers, data, trailer) },
            None => {
                use polyval::universal_hash::{KeyInit, UniversalHash};
                let mut mac = polyval::Polyval::new(&self.h.into());
                if REFLECT {
                    let block = |bytes: &[u8]| {
                        let mut block = [0u8; 16];
                        block[..bytes.len()].copy_from_slice(bytes);
                        block.reverse();
                        block.into()
                    };
                    for chunk in data.chunks(16) {
                        mac.update(&[block(chunk)]);
                    }
                    mac.update(&[block(trailer)]);
                } else {
                    mac.update_padded(data);
                    mac.update(&[(*trailer).into()]);
                }
                mac.finalize().into()
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! The VPCLMULQDQ path. Every function runs inside `#[target_feature]` code.
    use core::arch::x86_64::*;

    use zeroize::Zeroize;

    use super::GROUP;

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
            reduce(
                _mm_xor_si128(lo, _mm_slli_si128(mid, 8)),
                _mm_xor_si128(hi, _mm_srli_si128(mid, 8)),
            )
        }
    }

    /// Reduces the 256-bit product hi:lo to dot form.
    #[inline(always)]
    unsafe fn reduce(lo: __m128i, hi: __m128i) -> __m128i {
        // SAFETY: register arithmetic; the caller runs with pclmulqdq and sse2 enabled.
        unsafe {
            let poly = _mm_set_epi64x(0xc200_0000_0000_0000_u64 as i64, 1);
            let t = _mm_clmulepi64_si128(lo, poly, 0x10);
            let lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 78), t);
            let t = _mm_clmulepi64_si128(lo, poly, 0x10);
            let lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 78), t);
            _mm_xor_si128(hi, lo)
        }
    }

    /// The dot-powers H^GROUP .. H^1.
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) unsafe fn powers(h: &[u8; 16]) -> [[u8; 16]; GROUP] {
        // SAFETY: the loads and stores touch the 16 bytes of `h` and of each `slot`; `dot`
        // needs the features this function enables, which the caller guarantees the CPU has.
        unsafe {
            let h = _mm_loadu_si128(h.as_ptr().cast());
            let mut out = [[0u8; 16]; GROUP];
            let mut power = h;
            for slot in out.iter_mut().rev() {
                _mm_storeu_si128(slot.as_mut_ptr().cast(), power);
                power = dot(power, h);
            }
            out
        }
    }

    /// Reverses the bytes of each 128-bit lane of `x` when `REFLECT` (GHASH's byte order).
    #[inline(always)]
    unsafe fn lanes<const REFLECT: bool>(x: __m512i) -> __m512i {
        if !REFLECT {
            return x;
        }
        // SAFETY: register arithmetic; the caller (`hash`) runs with avx512bw enabled.
        unsafe {
            let reverse = _mm512_broadcast_i32x4(_mm_set_epi8(
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            ));
            _mm512_shuffle_epi8(x, reverse)
        }
    }

    /// Loads the 16 bytes at `p`, reversed when `REFLECT`.
    #[inline(always)]
    unsafe fn load<const REFLECT: bool>(p: *const u8) -> __m128i {
        // SAFETY: the caller passes a pointer to 16 readable bytes and runs with ssse3 enabled.
        unsafe {
            let x = _mm_loadu_si128(p.cast());
            if REFLECT {
                _mm_shuffle_epi8(
                    x,
                    _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                )
            } else {
                x
            }
        }
    }

    /// POLYVAL of `data` (zero-padded) then `trailer`, every block byte-reversed first when
    /// `REFLECT`.
    #[target_feature(enable = "pclmulqdq,sse2,ssse3,avx2,avx512f,avx512bw,vpclmulqdq")]
    pub(super) unsafe fn hash<const REFLECT: bool>(
        h: &[u8; 16],
        powers: &[[u8; 16]; GROUP],
        data: &[u8],
        trailer: &[u8; 16],
    ) -> [u8; 16] {
        // SAFETY: every load reads inside its slice (`h`, `trailer`, `padded` and `block` are 16
        // bytes, `powers[4 * r]` starts 64 bytes of `powers`, and `p.add(64 * r)` stays inside
        // the GROUP * 16-byte `group`); the helpers need the features this function enables,
        // which the caller guarantees the CPU has.
        unsafe {
            let h = _mm_loadu_si128(h.as_ptr().cast());
            let key: [__m512i; GROUP / 4] =
                core::array::from_fn(|r| _mm512_loadu_si512(powers[4 * r].as_ptr().cast()));
            let mut acc = _mm_setzero_si128();
            let mut groups = data.chunks_exact(GROUP * 16);
            for group in &mut groups {
                let p = group.as_ptr();
                let mut sum = Wide::new();
                for (r, k) in key.iter().enumerate() {
                    let mut x = lanes::<REFLECT>(_mm512_loadu_si512(p.add(64 * r).cast()));
                    if r == 0 {
                        x = _mm512_xor_si512(x, _mm512_zextsi128_si512(acc));
                    }
                    sum.mul_add(x, *k);
                }
                acc = sum.reduce();
            }
            let rest = groups.remainder();
            let mut blocks = rest.chunks_exact(16);
            for block in &mut blocks {
                acc = dot(_mm_xor_si128(acc, load::<REFLECT>(block.as_ptr())), h);
            }
            let tail = blocks.remainder();
            if !tail.is_empty() {
                let mut padded = [0u8; 16];
                padded[..tail.len()].copy_from_slice(tail);
                acc = dot(_mm_xor_si128(acc, load::<REFLECT>(padded.as_ptr())), h);
                padded.zeroize();
            }
            acc = dot(_mm_xor_si128(acc, load::<REFLECT>(trailer.as_ptr())), h);
            let mut out = [0u8; 16];
            _mm_storeu_si128(out.as_mut_ptr().cast(), acc);
            out
        }
    }

    /// Unreduced sums of products of 4-block registers by 4 dot-powers, reduced once at the
    /// end (the linearity the module docs describe). Shared with the stitched AES-GCM kernel
    /// (`crate::aes::gcm_x86`).
    #[derive(Clone, Copy)]
    pub(crate) struct Wide {
        lo: __m512i,
        mid: __m512i,
        hi: __m512i,
    }

    impl Wide {
        /// The empty sum.
        #[inline(always)]
        pub(crate) unsafe fn new() -> Self {
            // SAFETY: register arithmetic; the caller runs with avx512f enabled.
            unsafe {
                Wide {
                    lo: _mm512_setzero_si512(),
                    mid: _mm512_setzero_si512(),
                    hi: _mm512_setzero_si512(),
                }
            }
        }

        /// Adds the lane-wise carry-less products of `x` and `k` (schoolbook: four multiplies).
        #[inline(always)]
        pub(crate) unsafe fn mul_add(&mut self, x: __m512i, k: __m512i) {
            // SAFETY: register arithmetic; the caller runs with avx512f and vpclmulqdq enabled.
            unsafe {
                self.lo = _mm512_xor_si512(self.lo, _mm512_clmulepi64_epi128(x, k, 0x00));
                self.hi = _mm512_xor_si512(self.hi, _mm512_clmulepi64_epi128(x, k, 0x11));
                self.mid = _mm512_xor_si512(self.mid, _mm512_clmulepi64_epi128(x, k, 0x10));
                self.mid = _mm512_xor_si512(self.mid, _mm512_clmulepi64_epi128(x, k, 0x01));
            }
        }

        /// The three unreduced sums, for code that must name their registers (the stitched
        /// kernel's scheduling barrier).
        #[inline(always)]
        pub(crate) fn parts(&mut self) -> [&mut __m512i; 3] {
            [&mut self.lo, &mut self.mid, &mut self.hi]
        }

        /// The sum of the four lanes, reduced to dot form.
        #[inline(always)]
        pub(crate) unsafe fn reduce(self) -> __m128i {
            // SAFETY: register arithmetic; the caller runs with pclmulqdq, avx2 and avx512f
            // enabled.
            unsafe {
                let (lo, mid, hi) = (
                    fold_lanes(self.lo),
                    fold_lanes(self.mid),
                    fold_lanes(self.hi),
                );
                reduce(
                    _mm_xor_si128(lo, _mm_slli_si128(mid, 8)),
                    _mm_xor_si128(hi, _mm_srli_si128(mid, 8)),
                )
            }
        }
    }

    /// XOR of the four 128-bit lanes.
    #[inline(always)]
    unsafe fn fold_lanes(v: __m512i) -> __m128i {
        // SAFETY: register arithmetic; the caller (`hash`) runs with avx2 and avx512f enabled.
        unsafe {
            let halves =
                _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
            _mm_xor_si128(
                _mm256_castsi256_si128(halves),
                _mm256_extracti128_si256(halves, 1),
            )
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x86 {
    //! No fast path off x86-64 (`fast_polyval_available` is false there).
    pub(super) unsafe fn powers(_: &[u8; 16]) -> [[u8; 16]; super::GROUP] {
        unreachable!("no VPCLMULQDQ off x86-64")
    }
    pub(super) unsafe fn hash<const REFLECT: bool>(
        _: &[u8; 16],
        _: &[[u8; 16]; super::GROUP],
        _: &[u8],
        _: &[u8; 16],
    ) -> [u8; 16] {
        unreachable!("no VPCLMULQDQ off x86-64")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyval::universal_hash::{KeyInit, UniversalHash};

    fn oracle(h: &[u8; 16], data: &[u8], trailer: &[u8; 16]) -> [u8; 16] {
        let mut mac = polyval::Polyval::new(&(*h).into());
        mac.update_padded(data);
        mac.update(&[(*trailer).into()]);
        mac.finalize().into()
    }

    /// RFC 8452 appendix A: POLYVAL of two blocks.
    #[test]
    fn rfc8452_vector() {
        let h: [u8; 16] = hex::decode("25629347589242761d31f826ba4b757b")
            .unwrap()
            .try_into()
            .unwrap();
        let x1 = hex::decode("4f4f95668c83dfb6401762bb2d01a262").unwrap();
        let x2: [u8; 16] = hex::decode("d1a24ddd2721d006bbe45f20d3c9f362")
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(
            hex::encode(Polyval::new(&h).hash(&x1, &x2)),
            "f7a3b47b846119fae5b7866cf5e5b77e"
        );
    }

    #[test]
    fn matches_the_polyval_crate_at_every_length() {
        let h = [0x3cu8; 16];
        let trailer = [0xa5u8; 16];
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 131 + 7) as u8).collect();
        let ours = Polyval::new(&h);
        for len in (0..=600).chain([1023, 1024, 1025, 2000, 2048, 3072 + 17, 5000]) {
            assert_eq!(
                ours.hash(&data[..len], &trailer),
                oracle(&h, &data[..len], &trailer),
                "len {len} (fast path: {})",
                ours.powers.is_some()
            );
        }
    }
}
