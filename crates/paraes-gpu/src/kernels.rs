//! The kernels of kernels/aes.cu by what they do: the one vocabulary the driver (which loads
//! them by name), the variants (which name them), the engine (which launches them) and the
//! CPU model of the kernel (which runs the Stream-counter kinds) share. A leaf module: it
//! depends on nothing else in the crate.

/// The six kernels of kernels/aes.cu (each in an AES-128, -192 and -256 version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// `aesN_ecb_encrypt`.
    EcbEncrypt,
    /// `aesN_ecb_decrypt`.
    EcbDecrypt,
    /// `aesN_ctr_fused`: out = in XOR keystream.
    CtrFused,
    /// `aesN_ctr_keystream`: out = keystream.
    CtrKeystream,
    /// `aesN_ctr_fused_gcm`: [`KernelKind::CtrFused`] with GCM chunk counters (a tag's room
    /// comes out as it went in).
    CtrFusedGcm,
    /// `aesN_ctr_keystream_gcm`: [`KernelKind::CtrKeystream`] with GCM chunk counters (zeros
    /// in a tag's room).
    CtrKeystreamGcm,
}

impl KernelKind {
    /// All six.
    pub const ALL: [KernelKind; 6] = [
        KernelKind::EcbEncrypt,
        KernelKind::EcbDecrypt,
        KernelKind::CtrFused,
        KernelKind::CtrKeystream,
        KernelKind::CtrFusedGcm,
        KernelKind::CtrKeystreamGcm,
    ];

    /// The kernel name's suffix, e.g. `ctr_fused`.
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::EcbEncrypt => "ecb_encrypt",
            KernelKind::EcbDecrypt => "ecb_decrypt",
            KernelKind::CtrFused => "ctr_fused",
            KernelKind::CtrKeystream => "ctr_keystream",
            KernelKind::CtrFusedGcm => "ctr_fused_gcm",
            KernelKind::CtrKeystreamGcm => "ctr_keystream_gcm",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Whether the kernel writes keystream (the host XORs it) rather than the result.
    pub fn is_keystream(self) -> bool {
        matches!(self, KernelKind::CtrKeystream | KernelKind::CtrKeystreamGcm)
    }

    /// Whether the kernel takes GCM chunk counters (the `_gcm` kernels, with one parameter
    /// more: `struct GcmLayout`, [`crate::plan::GcmLayout`]).
    pub fn is_gcm(self) -> bool {
        matches!(self, KernelKind::CtrFusedGcm | KernelKind::CtrKeystreamGcm)
    }

    /// The same CTR kernel with GCM chunk counters; ECB kinds (and the GCM ones) unchanged.
    pub fn with_gcm_counters(self) -> KernelKind {
        match self {
            KernelKind::CtrFused => KernelKind::CtrFusedGcm,
            KernelKind::CtrKeystream => KernelKind::CtrKeystreamGcm,
            other => other,
        }
    }

    /// Bytes the kernel moves through device memory per byte of data (read + write).
    pub fn device_bytes_per_byte(self) -> u32 {
        if self.is_keystream() {
            1
        } else {
            2
        }
    }
}

/// The GCM records kernels of kernels/aes.cu (`run_records`: CTR, each chunk's GHASH in
/// constant time and its tag, for Cobblestone-128 and -256; docs/GPU.md, "GCM records on the
/// device"). The engine's records job launches them by name, whatever the kernel variant
/// (`Engine::process_records`, engine/records.rs); tests/gcm_records_on_cpu.rs runs their
/// source on the CPU emulator and tests/gcm_records_engine.rs the engine's job on the stand-in.
pub const RECORDS_KERNELS: [&str; 6] = [
    "aes128_gcm_seal",
    "aes128_gcm_verify",
    "aes128_gcm_open",
    "aes256_gcm_seal",
    "aes256_gcm_verify",
    "aes256_gcm_open",
];
