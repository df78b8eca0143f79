//! AES block implementations and the one place that picks among them at run time.
//!
//! Every implementation offers the same three whole-block operations (ECB encrypt, ECB decrypt,
//! CTR keystream XOR); the modes layer builds byte-granular, seekable ECB/CTR on top of them.
//! [`AesImpl::detect`] chooses the fastest one the CPU supports, unless the environment
//! variable [`FORCE_PORTABLE_ENV`] is set to `1`, which forces the portable constant-time path
//! (tests use it; users can too, to rule out a hardware path).

use std::fmt;

pub(crate) mod portable;
pub(crate) mod sbox;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::key::ExpandedKey;

/// Setting this environment variable to `1` makes [`AesImpl::detect`] pick the portable path.
pub const FORCE_PORTABLE_ENV: &str = "PARAES_FORCE_PORTABLE";

/// Calls the same-named whole-block operation of the implementation `$imp`.
macro_rules! dispatch {
    ($imp:expr, $op:ident($($arg:expr),*)) => {{
        $imp.assert_available();
        match $imp {
            AesImpl::Portable => portable::$op($($arg),*),
            // SAFETY: assert_available checked the CPU features these kernels are compiled for.
            #[cfg(target_arch = "x86_64")]
            AesImpl::AesNi => unsafe { x86::aesni::$op($($arg),*) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            AesImpl::Vaes256 => unsafe { x86::vaes256::$op($($arg),*) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            AesImpl::Vaes512 => unsafe { x86::vaes512::$op($($arg),*) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only the portable path exists on this architecture"),
        }
    }};
}

/// One AES block implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AesImpl {
    /// Bitsliced, constant-time, safe Rust; runs everywhere.
    Portable,
    /// x86-64 AES-NI on 128-bit registers.
    AesNi,
    /// x86-64 VAES on 256-bit AVX2 registers.
    Vaes256,
    /// x86-64 VAES on 512-bit AVX-512 registers.
    Vaes512,
}

impl AesImpl {
    /// Every implementation, slowest first.
    pub const ALL: [AesImpl; 4] = [
        AesImpl::Portable,
        AesImpl::AesNi,
        AesImpl::Vaes256,
        AesImpl::Vaes512,
    ];

    /// The implementation to use: the fastest available one, or the portable path when
    /// [`FORCE_PORTABLE_ENV`] is `1`.
    pub fn detect() -> Self {
        if portable_forced() {
            AesImpl::Portable
        } else {
            Self::fastest()
        }
    }

    /// The fastest implementation this CPU supports, ignoring [`FORCE_PORTABLE_ENV`].
    pub fn fastest() -> Self {
        *Self::available().last().unwrap_or(&AesImpl::Portable)
    }

    /// The implementations this CPU supports, slowest first (always includes `Portable`).
    pub fn available() -> Vec<Self> {
        Self::ALL
            .into_iter()
            .filter(|imp| imp.is_available())
            .collect()
    }

    /// Whether this CPU supports the implementation.
    pub fn is_available(self) -> bool {
        match self {
            AesImpl::Portable => true,
            #[cfg(target_arch = "x86_64")]
            AesImpl::AesNi => is_x86_feature_detected!("aes") && is_x86_feature_detected!("ssse3"),
            #[cfg(target_arch = "x86_64")]
            AesImpl::Vaes256 => {
                is_x86_feature_detected!("aes")
                    && is_x86_feature_detected!("vaes")
                    && is_x86_feature_detected!("avx2")
            }
            #[cfg(target_arch = "x86_64")]
            AesImpl::Vaes512 => {
                is_x86_feature_detected!("aes")
                    && is_x86_feature_detected!("vaes")
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// A short stable name (`portable`, `aesni`, `vaes256`, `vaes512`).
    pub fn name(self) -> &'static str {
        match self {
            AesImpl::Portable => "portable",
            AesImpl::AesNi => "aesni",
            AesImpl::Vaes256 => "vaes256",
            AesImpl::Vaes512 => "vaes512",
        }
    }

    /// Panics if the CPU lacks the implementation's features: reaching a hardware kernel on such a
    /// CPU would be undefined behaviour, and every constructor of a user of this type checks
    /// availability first, so this is a bug guard, not an error path.
    fn assert_available(self) {
        assert!(
            self.is_available(),
            "AES implementation {self} used on a CPU without it"
        );
    }

    /// ECB-encrypts whole 16-byte blocks in place.
    pub(crate) fn encrypt_blocks(self, key: &ExpandedKey, blocks: &mut [u8]) {
        debug_assert_eq!(blocks.len() % 16, 0);
        dispatch!(self, encrypt_blocks(key, blocks))
    }

    /// ECB-decrypts whole 16-byte blocks in place.
    pub(crate) fn decrypt_blocks(self, key: &ExpandedKey, blocks: &mut [u8]) {
        debug_assert_eq!(blocks.len() % 16, 0);
        dispatch!(self, decrypt_blocks(key, blocks))
    }

    /// XORs the CTR keystream for counter blocks `counter, counter + 1, ...` (128-bit big-endian,
    /// wrapping) into whole 16-byte blocks in place.
    pub(crate) fn ctr_blocks(self, key: &ExpandedKey, counter: u128, blocks: &mut [u8]) {
        debug_assert_eq!(blocks.len() % 16, 0);
        dispatch!(self, ctr_blocks(key, counter, blocks))
    }
}

/// Whether [`FORCE_PORTABLE_ENV`] asks for the portable paths.
fn portable_forced() -> bool {
    std::env::var(FORCE_PORTABLE_ENV).is_ok_and(|v| v == "1")
}

/// Whether the CPU has the AVX-512 carry-less multiplier of the fast POLYVAL path
/// (`crate::polyval`); detection of every CPU feature paraes uses lives in this file.
pub(crate) fn fast_polyval_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !portable_forced()
            && is_x86_feature_detected!("pclmulqdq")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("vpclmulqdq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

impl fmt::Display for AesImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
