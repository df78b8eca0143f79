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

/// Whether the CPU has the AVX-512 carry-less multiplier of the fast POLYVAL path
/// (`crate::polyval`), and the portable paths are not forced.
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
