//! The selectable kernel variants and host synchronisation modes, so that one GPU run can
//! A/B every change the static review proposed (docs/GPU.md, "Kernel variants"). Which
//! kernel of kernels/aes.cu a (key size, kind, variant) runs is decided here, and only here.

use std::str::FromStr;

use crate::kernels::KernelKind;

/// A kernel variant of kernels/aes.cu. Variants other than `Base` exist for AES-128 only
/// (the headline figure) and for Stream counters only; AES-192/256, the GCM chunk kernels and
/// the kinds a variant does not change run the base kernel, which
/// [`KernelVariant::kernel_name`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum KernelVariant {
    /// One lane-interleaved T-table (32 KiB), three rotations per column.
    #[default]
    Base,
    /// Two interleaved tables (T0, T1; 64 KiB, +8 KiB to decrypt), the entry address made
    /// by one PRMT, one rotation per column. All four kinds.
    Pair,
    /// CTR round 1 from the launch-constant counter words (12 of 16 lookups once per
    /// launch). CTR kinds; ECB runs the base kernel.
    R1,
    /// `Pair` and `R1` together (ECB runs the `Pair` kernel).
    PairR1,
    /// `__launch_bounds__(256, 5)` on the fused CTR kernel (48 registers, 40 warps per SM);
    /// at most 256 threads per block. Other kinds run the base kernel.
    Lb5,
}

impl KernelVariant {
    /// Every variant.
    pub const ALL: [KernelVariant; 5] = [
        KernelVariant::Base,
        KernelVariant::Pair,
        KernelVariant::R1,
        KernelVariant::PairR1,
        KernelVariant::Lb5,
    ];

    /// `base`, `pair`, `r1`, `pair-r1` or `lb5`.
    pub fn name(self) -> &'static str {
        match self {
            KernelVariant::Base => "base",
            KernelVariant::Pair => "pair",
            KernelVariant::R1 => "r1",
            KernelVariant::PairR1 => "pair-r1",
            KernelVariant::Lb5 => "lb5",
        }
    }

    /// The suffix of the kernel this variant runs for `kind` at AES-`bits`, "" for the base.
    fn suffix(self, bits: usize, kind: KernelKind) -> &'static str {
        // The GCM chunk kernels exist in the base form only (until a GPU run picks a variant).
        if bits != 128 || kind.is_gcm() {
            return "";
        }
        let ctr = matches!(kind, KernelKind::CtrFused | KernelKind::CtrKeystream);
        match self {
            KernelVariant::Base => "",
            KernelVariant::Pair => "_pair",
            KernelVariant::R1 if ctr => "_r1",
            KernelVariant::R1 => "",
            KernelVariant::PairR1 if ctr => "_pair_r1",
            KernelVariant::PairR1 => "_pair",
            KernelVariant::Lb5 if kind == KernelKind::CtrFused => "_lb5",
            KernelVariant::Lb5 => "",
        }
    }

    /// The entry point in kernels/aes.cu for AES-`bits` (128, 192, 256) and `kind`.
    pub fn kernel_name(self, bits: usize, kind: KernelKind) -> String {
        format!("aes{bits}_{}{}", kind.name(), self.suffix(bits, kind))
    }
}

/// Dynamic shared memory a kernel needs at launch: the PAIR tables (64 KiB, plus the 8 KiB
/// packed inverse S-box to decrypt); 0 for the others (their tables are static).
pub(crate) fn dynamic_shared_bytes(kernel_name: &str) -> u32 {
    if !kernel_name.contains("_pair") {
        0
    } else if kernel_name.contains("_ecb_decrypt") {
        (2 * 256 * 32 + 64 * 32) * 4
    } else {
        2 * 256 * 32 * 4
    }
}

/// The largest thread block a kernel was compiled for (`__launch_bounds__`).
pub(crate) fn max_threads(kernel_name: &str) -> u32 {
    if kernel_name.ends_with("_lb5") {
        256
    } else {
        crate::MAX_THREADS_PER_BLOCK
    }
}

impl std::fmt::Display for KernelVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KernelVariant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KernelVariant::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("unknown kernel variant {s:?}: expected base, pair, r1, pair-r1 or lb5")
            })
    }
}

/// How the host waits for a stream's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SyncMode {
    /// `cuStreamSynchronize` under the driver's default scheduling (it spin-waits, holding a
    /// core, while the context has fewer active threads than there are cores).
    #[default]
    Spin,
    /// An event made with `CU_EVENT_BLOCKING_SYNC` recorded after the piece and waited on
    /// (the pinned buffer's own event, recorded after the piece's last copy): the waiting
    /// thread sleeps, leaving the core to the host XOR and copies.
    Blocking,
}

impl SyncMode {
    /// `spin` or `blocking`.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Spin => "spin",
            SyncMode::Blocking => "blocking",
        }
    }
}

impl std::fmt::Display for SyncMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SyncMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "spin" => Ok(SyncMode::Spin),
            "blocking" => Ok(SyncMode::Blocking),
            _ => Err(format!(
                "unknown sync mode {s:?}: expected spin or blocking"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel any (key size, kind, variant) selects is in the PTX (and so, by
    /// kernels/check-ptx.sh and image.rs's test, in both cubins), and every kernel in the
    /// PTX is selectable, or is one of the records kernels, which the engine's records job
    /// launches by name whatever the variant ([`crate::kernels::RECORDS_KERNELS`]): no variant
    /// is unreachable, none names a missing kernel.
    #[test]
    fn every_selection_names_a_kernel_and_every_kernel_is_selectable() {
        let in_ptx: std::collections::BTreeSet<String> = crate::PTX
            .lines()
            .filter_map(|l| l.strip_prefix(".visible .entry "))
            .map(|l| l[..l.find('(').unwrap()].to_string())
            .collect();
        let mut selected = std::collections::BTreeSet::new();
        for bits in [128, 192, 256] {
            for kind in KernelKind::ALL {
                for v in KernelVariant::ALL {
                    let name = v.kernel_name(bits, kind);
                    assert!(in_ptx.contains(&name), "{v} selects {name}, not in the PTX");
                    selected.insert(name);
                }
            }
        }
        for name in crate::kernels::RECORDS_KERNELS {
            assert!(in_ptx.contains(name), "{name} is not in the PTX");
            selected.insert(name.to_string());
        }
        assert_eq!(selected, in_ptx);
    }

    #[test]
    fn selection_examples() {
        use KernelKind::*;
        use KernelVariant::*;
        let examples = [
            (Base, 128, CtrFused, "aes128_ctr_fused"),
            (Pair, 128, EcbDecrypt, "aes128_ecb_decrypt_pair"),
            (Pair, 256, CtrFused, "aes256_ctr_fused"),
            (R1, 128, EcbEncrypt, "aes128_ecb_encrypt"),
            (PairR1, 128, CtrKeystream, "aes128_ctr_keystream_pair_r1"),
            (PairR1, 128, EcbEncrypt, "aes128_ecb_encrypt_pair"),
            (Lb5, 128, CtrFused, "aes128_ctr_fused_lb5"),
            (Lb5, 128, CtrKeystream, "aes128_ctr_keystream"),
            (PairR1, 128, CtrFusedGcm, "aes128_ctr_fused_gcm"),
            (Lb5, 256, CtrKeystreamGcm, "aes256_ctr_keystream_gcm"),
        ];
        for (variant, bits, kind, name) in examples {
            assert_eq!(
                variant.kernel_name(bits, kind),
                name,
                "{variant}, {bits} bits, {kind:?}"
            );
        }
        assert_eq!(dynamic_shared_bytes("aes128_ctr_fused_pair_r1"), 65536);
        assert_eq!(dynamic_shared_bytes("aes128_ctr_fused_gcm"), 0);
        assert_eq!(dynamic_shared_bytes("aes128_ecb_decrypt_pair"), 73728);
        assert_eq!(dynamic_shared_bytes("aes128_ctr_fused"), 0);
        assert_eq!(max_threads("aes128_ctr_fused_lb5"), 256);
        assert_eq!(max_threads("aes128_ctr_fused"), 512);
    }

    #[test]
    fn names_round_trip() {
        for v in KernelVariant::ALL {
            assert_eq!(v.name().parse::<KernelVariant>().unwrap(), v);
        }
        for s in [SyncMode::Spin, SyncMode::Blocking] {
            assert_eq!(s.name().parse::<SyncMode>().unwrap(), s);
        }
        assert!("x".parse::<KernelVariant>().is_err());
        assert!("x".parse::<SyncMode>().is_err());
    }

    /// The PTX's static tables and the host's dynamic sizes agree with kernels/aes.cu:
    /// PAIR kernels declare no static table (theirs is the dynamic one the host sizes).
    #[test]
    fn pair_kernels_use_dynamic_shared_memory_only() {
        let ptx = crate::PTX;
        assert!(ptx.contains(".extern .shared .align 16 .b8 dynamic_shared[];"));
        let mut count = 0;
        for (at, _) in ptx.match_indices(".visible .entry ") {
            let name_end = at + ptx[at..].find('(').unwrap();
            let name = &ptx[at + 16..name_end];
            let body_end = ptx[at..].find("\n}\n").map_or(ptx.len(), |e| at + e);
            let body = &ptx[at..body_end];
            let dynamic = body.contains("dynamic_shared");
            assert_eq!(dynamic, dynamic_shared_bytes(name) > 0, "{name}");
            count += usize::from(dynamic);
        }
        assert_eq!(count, 6);
    }
}
