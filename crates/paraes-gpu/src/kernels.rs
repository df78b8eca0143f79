//! The kernels of kernels/aes.cu by what they do: the vocabulary the driver (which loads them
//! by name), the variants (which name them) and the engine (which launches them) share. A leaf
//! module: it depends on nothing else in the crate.

/// The four kernels of kernels/aes.cu (each in an AES-128, -192 and -256 version).
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
}

impl KernelKind {
    /// All four.
    pub const ALL: [KernelKind; 4] = [
        KernelKind::EcbEncrypt,
        KernelKind::EcbDecrypt,
        KernelKind::CtrFused,
        KernelKind::CtrKeystream,
    ];

    /// The kernel name's suffix, e.g. `ctr_fused`.
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::EcbEncrypt => "ecb_encrypt",
            KernelKind::EcbDecrypt => "ecb_decrypt",
            KernelKind::CtrFused => "ctr_fused",
            KernelKind::CtrKeystream => "ctr_keystream",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Bytes the kernel moves through device memory per byte of data (read + write).
    pub fn device_bytes_per_byte(self) -> u32 {
        match self {
            KernelKind::CtrKeystream => 1,
            _ => 2,
        }
    }
}
