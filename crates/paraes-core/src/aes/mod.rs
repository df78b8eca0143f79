//! AES block implementations and the one place that picks among them at run time.
//!
//! Every implementation offers the same three whole-block operations (ECB encrypt, ECB decrypt,
//! CTR keystream XOR); the modes layer builds byte-granular, seekable ECB/CTR on top of them.
//! [`AesImpl::detect`] chooses the fastest one the CPU supports, unless the environment
//! variable [`FORCE_PORTABLE_ENV`] is set to `1`, which forces the portable constant-time path
//! (tests use it; users can too, to rule out a hardware path).

use std::fmt;

#[cfg(target_arch = "x86_64")]
mod gcm_x86;
pub(crate) mod portable;
pub(crate) mod sbox;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use crate::features::{cpu_features, FORCE_PORTABLE_ENV};
use crate::features::{fast_polyval_available, portable_forced};
use crate::key::ExpandedKey;

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
    /// (Called on every dispatch, so it tests the features directly; a test checks that it
    /// agrees with [`AesImpl::missing_features`].)
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

    /// The CPU features the implementation needs (x86 names as in /proc/cpuinfo); none for
    /// `Portable`.
    pub fn required_features(self) -> &'static [&'static str] {
        match self {
            AesImpl::Portable => &[],
            AesImpl::AesNi => &["aes", "ssse3"],
            AesImpl::Vaes256 => &["aes", "vaes", "avx2"],
            AesImpl::Vaes512 => &["aes", "vaes", "avx512f", "avx512bw"],
        }
    }

    /// The features of [`AesImpl::required_features`] this CPU lacks (all of them off x86-64),
    /// for messages that say why an implementation cannot run.
    pub fn missing_features(self) -> Vec<&'static str> {
        let detected = cpu_features();
        self.required_features()
            .iter()
            .copied()
            .filter(|name| !detected.iter().any(|(n, on)| n == name && *on))
            .collect()
    }

    /// The implementation named `name` (`portable`, `aesni`, `vaes256`, `vaes512`), any case.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|imp| imp.name().eq_ignore_ascii_case(name.trim()))
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

/// The bytes of one GCM chunk a kernel call works on: in place, or its input and its output
/// apart (of one length).
#[derive(Debug)]
pub(crate) enum ChunkBytes<'a> {
    /// One buffer: the input comes in, the output goes out.
    InPlace(&'a mut [u8]),
    /// The input, and the output the same length.
    Apart(&'a [u8], &'a mut [u8]),
}

impl<'a> ChunkBytes<'a> {
    /// The input (for in place, the buffer as it is now).
    pub(crate) fn input(&self) -> &[u8] {
        match self {
            ChunkBytes::InPlace(data) => data,
            ChunkBytes::Apart(input, _) => input,
        }
    }

    /// The output (for in place, the buffer).
    pub(crate) fn output(&self) -> &[u8] {
        match self {
            ChunkBytes::InPlace(data) => data,
            ChunkBytes::Apart(_, output) => output,
        }
    }

    /// The output, to write.
    pub(crate) fn output_mut(&mut self) -> &mut [u8] {
        match self {
            ChunkBytes::InPlace(data) => data,
            ChunkBytes::Apart(_, output) => output,
        }
    }

    /// The output holding the input: apart, the input is copied to it first (for passes that
    /// work in place).
    pub(crate) fn into_output(self) -> &'a mut [u8] {
        match self {
            ChunkBytes::InPlace(data) => data,
            ChunkBytes::Apart(input, output) => {
                output.copy_from_slice(input);
                output
            }
        }
    }

    /// The same bytes, borrowed again.
    pub(crate) fn reborrow(&mut self) -> ChunkBytes<'_> {
        match self {
            ChunkBytes::InPlace(data) => ChunkBytes::InPlace(data),
            ChunkBytes::Apart(input, output) => ChunkBytes::Apart(input, output),
        }
    }
}

/// The stitched AES-GCM chunk kernel (CTR and GHASH in one pass, `gcm_x86`): a value exists
/// only where the CPU runs it, so holding one is the proof its entry points need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StitchedGcm {
    _checked: (),
}

impl StitchedGcm {
    /// The kernel, when `aes` is the VAES-512 path (so not forced portable) and the CPU also has
    /// the AVX-512 carry-less multiplier; `None` elsewhere (machines with AVX2 VAES only keep
    /// the unstitched CTR-then-GHASH path).
    pub(crate) fn detect(aes: AesImpl) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            let usable = aes == AesImpl::Vaes512
                && fast_polyval_available()
                && is_x86_feature_detected!("aes")
                && is_x86_feature_detected!("vaes")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("pclmulqdq")
                && is_x86_feature_detected!("vpclmulqdq");
            usable.then_some(StitchedGcm { _checked: () })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = aes;
            None
        }
    }

    /// Encrypts one GCM chunk (in place, or from its input to its output) with CTR from
    /// `nonce || be32(2)` and returns its tag (no associated data); `powers` are
    /// [`crate::ghash::Ghash::powers`] of `H = E(0^128)` under `key`.
    pub(crate) fn seal(
        self,
        key: &ExpandedKey,
        powers: &[[u8; 16]; crate::polyval::GROUP],
        nonce: &[u8; 12],
        data: ChunkBytes<'_>,
    ) -> [u8; 16] {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a StitchedGcm is only made by `detect`, after checking every feature the
        // kernel's `target_feature` attribute names.
        unsafe {
            gcm_x86::seal(key, powers, nonce, data)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (self, key, powers, nonce, data);
            unreachable!("no stitched kernel off x86-64")
        }
    }

    /// Decrypts one GCM chunk (in place, or from its input to its output) and returns the tag
    /// of the ciphertext it read (hashed in the same pass). The caller compares it with the
    /// chunk's tag and, when they differ, clears the output, so no unauthenticated plaintext
    /// leaves.
    pub(crate) fn open(
        self,
        key: &ExpandedKey,
        powers: &[[u8; 16]; crate::polyval::GROUP],
        nonce: &[u8; 12],
        data: ChunkBytes<'_>,
    ) -> [u8; 16] {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `seal`.
        unsafe {
            gcm_x86::open(key, powers, nonce, data)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (self, key, powers, nonce, data);
            unreachable!("no stitched kernel off x86-64")
        }
    }
}

impl fmt::Display for AesImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn availability_agrees_with_the_feature_report() {
        for imp in AesImpl::ALL {
            let missing = imp.missing_features();
            assert_eq!(imp.is_available(), missing.is_empty(), "{imp}: {missing:?}");
            assert_eq!(AesImpl::from_name(&imp.name().to_uppercase()), Some(imp));
        }
        assert_eq!(AesImpl::from_name("aes-ni"), None);
    }
}
