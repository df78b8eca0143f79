//! Which CPU features this machine has, and the switch that forces the portable paths: a leaf
//! that both the AES implementations ([`crate::aes`]) and POLYVAL ([`crate::polyval`]) ask, so
//! neither depends on the other for it.

/// Setting this environment variable to `1` makes [`crate::aes::AesImpl::detect`] pick the
/// portable path, and POLYVAL (and so GHASH) its portable path too.
pub const FORCE_PORTABLE_ENV: &str = "PARAES_FORCE_PORTABLE";

/// Every CPU feature paraes looks at, with whether this CPU has it (x86 names as in
/// /proc/cpuinfo; empty off x86-64). Dispatch and reports (`paraes bench`) both read this.
pub fn cpu_features() -> Vec<(&'static str, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        vec![
            ("aes", is_x86_feature_detected!("aes")),
            ("ssse3", is_x86_feature_detected!("ssse3")),
            ("pclmulqdq", is_x86_feature_detected!("pclmulqdq")),
            ("avx2", is_x86_feature_detected!("avx2")),
            ("vaes", is_x86_feature_detected!("vaes")),
            ("vpclmulqdq", is_x86_feature_detected!("vpclmulqdq")),
            ("avx512f", is_x86_feature_detected!("avx512f")),
            ("avx512bw", is_x86_feature_detected!("avx512bw")),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    Vec::new()
}

/// Whether [`FORCE_PORTABLE_ENV`] asks for the portable paths.
pub(crate) fn portable_forced() -> bool {
    std::env::var(FORCE_PORTABLE_ENV).is_ok_and(|v| v == "1")
}

/// Whether the CPU has what POLYVAL's AVX-512 path (`crate::polyval`) needs: VPCLMULQDQ on
/// 512-bit registers, and AVX-512BW for the byte shuffle that reflects GHASH's blocks.
pub(crate) fn polyval_avx512_present() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("pclmulqdq")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("vpclmulqdq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the CPU has what POLYVAL's AVX2 path needs: VPCLMULQDQ on 256-bit registers (Zen 3
/// and 4, Alder Lake and later cores without AVX-512).
pub(crate) fn polyval_avx2_present() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("pclmulqdq")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("vpclmulqdq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the CPU has what POLYVAL's 128-bit path needs: PCLMULQDQ, and SSSE3 for the byte
/// shuffle (every AES-NI machine).
pub(crate) fn polyval_clmul_present() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("pclmulqdq") && is_x86_feature_detected!("ssse3")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether POLYVAL runs its AVX-512 path here (the CPU has it and the portable paths are not
/// forced): the stitched AES-GCM kernel, which hashes with that path's powers, asks this.
pub(crate) fn fast_polyval_available() -> bool {
    !portable_forced() && polyval_avx512_present()
}
