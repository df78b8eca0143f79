//! POLYVAL (RFC 8452), the universal hash of the v2 container's chunk MAC and, through RFC 8452
//! appendix A, of GCM's GHASH ([`crate::ghash`]), on one of four paths chosen once per key
//! (`Path`): VPCLMULQDQ on AVX-512 (64 blocks per reduction) or on AVX2 (32), PCLMULQDQ alone
//! (8), each byte-reflecting blocks as it loads them for GHASH (`x86`), and the constant-time
//! RustCrypto `polyval` crate everywhere else (`portable`).
//!
//! POLYVAL(H, X_1..X_n) = S_n with S_0 = 0 and S_j = dot(S_{j-1} xor X_j, H), where
//! dot(a, b) = a * b * x^-128 in GF(2^128) mod x^128 + x^127 + x^126 + x^121 + 1. Since the
//! reduction is linear, a group of blocks is multiplied by the dot-powers H^group..H^1, summed
//! unreduced, and reduced once, so the latency of the reduction is paid once per group.

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::features::{
    polyval_avx2_present, polyval_avx512_present, polyval_clmul_present, portable_forced,
};

mod portable;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;

/// The dot-powers kept per key: the widest path's group (AVX-512: 16 registers of 4 blocks);
/// the narrower paths use its last ones. The stitched AES-GCM kernel hashes with them too.
pub(crate) const GROUP: usize = 64;

/// The implementation a [`Polyval`] runs, chosen once when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// VPCLMULQDQ on 512-bit registers.
    Avx512,
    /// VPCLMULQDQ on 256-bit registers.
    Avx2,
    /// PCLMULQDQ on 128-bit registers.
    Clmul,
    /// The RustCrypto `polyval` crate.
    Portable,
}

impl Path {
    /// Every path, fastest first.
    pub(crate) const ALL: [Path; 4] = [Path::Avx512, Path::Avx2, Path::Clmul, Path::Portable];

    /// The fastest path this CPU runs, or the portable one where
    /// [`crate::features::FORCE_PORTABLE_ENV`] asks for it.
    fn detect() -> Path {
        if portable_forced() {
            return Path::Portable;
        }
        Path::ALL
            .into_iter()
            .find(|path| path.on_this_cpu())
            .unwrap_or(Path::Portable)
    }

    /// Whether this CPU has the features the path needs (the portable one runs anywhere).
    pub(crate) fn on_this_cpu(self) -> bool {
        match self {
            Path::Avx512 => polyval_avx512_present(),
            Path::Avx2 => polyval_avx2_present(),
            Path::Clmul => polyval_clmul_present(),
            Path::Portable => true,
        }
    }
}

/// A POLYVAL instance for one hash key H.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct Polyval {
    h: [u8; 16],
    #[zeroize(skip)]
    path: Path,
    /// `powers[j]` = H^(GROUP - j) (dot-powers), present on the x86 paths.
    powers: Option<[[u8; 16]; GROUP]>,
}

impl Polyval {
    /// POLYVAL keyed with the 16-byte hash key `h`, on the fastest path this CPU runs.
    pub fn new(h: &[u8; 16]) -> Self {
        Self::on(h, Path::detect())
    }

    /// POLYVAL keyed with `h` on `path`, or `None` where this CPU lacks it (tests run each).
    #[cfg(test)]
    pub(crate) fn on_path(h: &[u8; 16], path: Path) -> Option<Self> {
        path.on_this_cpu().then(|| Self::on(h, path))
    }

    /// POLYVAL keyed with `h` on `path`, which this CPU runs (off x86-64 only the portable one
    /// does: `on_this_cpu` is false for the others there).
    fn on(h: &[u8; 16], path: Path) -> Self {
        #[cfg(target_arch = "x86_64")]
        let powers = (path != Path::Portable).then(|| {
            // SAFETY: every path but the portable one needs pclmulqdq and sse2, which
            // `powers` enables, and the caller checked the path runs on this CPU.
            unsafe { x86::powers::<GROUP>(h) }
        });
        #[cfg(not(target_arch = "x86_64"))]
        let powers = None;
        Polyval {
            h: *h,
            path,
            powers,
        }
    }

    /// The dot-powers H^64 .. H^1 of the AVX-512 path, `None` where that path does not run:
    /// the stitched AES-GCM kernel (`crate::aes::gcm_x86`), which needs AVX-512, hashes with
    /// them.
    pub(crate) fn powers(&self) -> Option<&[[u8; 16]; GROUP]> {
        self.powers.as_ref().filter(|_| self.path == Path::Avx512)
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
        #[cfg(target_arch = "x86_64")]
        if let Some(powers) = &self.powers {
            // SAFETY: `powers` are made only for a path other than the portable one, after
            // checking that this CPU has that path's features, which its entry point enables.
            unsafe {
                match self.path {
                    Path::Avx512 => {
                        return x86::hash_avx512::<REFLECT, GROUP>(powers, data, trailer)
                    }
                    Path::Avx2 => return x86::hash_avx2::<REFLECT, GROUP>(powers, data, trailer),
                    Path::Clmul => return x86::hash_clmul::<REFLECT, GROUP>(powers, data, trailer),
                    Path::Portable => {}
                }
            }
        }
        portable::hash::<REFLECT>(&self.h, data, trailer)
    }
}

#[cfg(test)]
mod tests;
