//! Section 2: kernel-only rates with CUDA events (device memory in and out) of every kernel,
//! and, for AES-128, of every kernel variant at 128/256/512 threads with registers, blocks
//! per SM and SM-clocks per AES block.

use paraes_core::KeySize;
use paraes_gpu::{DeviceInfo, GpuEngine, KernelKind, KernelVariant};
use serde_json::{json, Value};

use crate::args::Args;
use crate::common::{gb_s, gbps, make_key, median, save, MIB};

/// Times the kernels on `kernel_bytes` of device memory, prints the tables, and records them
/// in `report` (saved).
pub(crate) fn kernel_only(
    args: &Args,
    report: &mut Value,
    gpu: &GpuEngine,
    info: &DeviceInfo,
    kernel_bytes: usize,
) {
    say!(
        "\nkernel only, {} MiB in device memory, median of {} (CUDA events), {} threads/block:",
        kernel_bytes / MIB,
        args.reps,
        gpu.options().threads_per_block
    );
    say!(
        "{:<10} {:<18} {:>10} {:>12} {:>14}",
        "key",
        "kernel",
        "ms",
        "Gbps",
        "device GB/s"
    );
    let mut kernels = Vec::new();
    for (k, size) in KeySize::ALL.into_iter().enumerate() {
        let key = make_key(size, 200 + k as u64);
        for kind in [
            KernelKind::CtrKeystream,
            KernelKind::CtrFused,
            KernelKind::EcbEncrypt,
            KernelKind::EcbDecrypt,
            KernelKind::CtrKeystreamGcm,
            KernelKind::CtrFusedGcm,
        ] {
            match gpu.time_kernel(&key, kind, kernel_bytes, args.reps) {
                Ok(times) => {
                    let t = median(times.clone());
                    let dev = gb_s(kernel_bytes * kind.device_bytes_per_byte() as usize, t);
                    say!(
                        "AES-{:<6} {:<18} {:>10.3} {:>12.1} {:>14.1}",
                        size.bits(),
                        kind.name(),
                        t * 1e3,
                        gbps(kernel_bytes, t),
                        dev
                    );
                    kernels.push(json!({ "key_bits": size.bits(), "kernel": kind.name(), "bytes": kernel_bytes, "median_s": t, "gbps": gbps(kernel_bytes, t), "device_gb_s": dev, "times_s": times }));
                }
                Err(e) => say!("AES-{} {}: {e}", size.bits(), kind.name()),
            }
        }
    }
    // Every AES-128 kernel variant at 128/256/512 threads: which of the review's changes
    // pay, and how far from the ALU bound (SM-clocks per AES block at the peak SM clock;
    // dmon.txt has the clock under load).
    let key128 = make_key(KeySize::Aes128, 300);
    let clock_hz = f64::from(info.sm_clock_khz) * 1e3;
    say!(
        "\nAES-128 kernel variants, {} MiB, median of {}; clocks/block = SMs x peak SM clock / AES blocks per s:",
        kernel_bytes / MIB,
        args.reps
    );
    say!(
        "{:<30} {:>7} {:>5} {:>8} {:>9} {:>10} {:>13}",
        "kernel",
        "threads",
        "regs",
        "blk/SM",
        "ms",
        "Gbps",
        "clocks/block"
    );
    let mut sweep = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for kind in [
        KernelKind::CtrKeystream,
        KernelKind::CtrFused,
        KernelKind::EcbEncrypt,
        KernelKind::EcbDecrypt,
    ] {
        for variant in KernelVariant::ALL {
            if !seen.insert(variant.kernel_name(128, kind)) {
                continue; // this variant runs the same kernel as an earlier one for this kind
            }
            for threads in [128u32, 256, 512] {
                match gpu.time_kernel_with(&key128, kind, variant, threads, kernel_bytes, args.reps)
                {
                    Ok(t) => {
                        let med = median(t.seconds.clone());
                        let blocks_per_s = (kernel_bytes / 16) as f64 / med;
                        let clocks = f64::from(info.sms) * clock_hz / blocks_per_s;
                        say!(
                            "{:<30} {threads:>7} {:>5} {:>8} {:>9.3} {:>10.1} {:>13.1}",
                            t.kernel,
                            t.registers,
                            t.resident_per_sm,
                            med * 1e3,
                            gbps(kernel_bytes, med),
                            clocks
                        );
                        sweep.push(json!({ "kernel": t.kernel, "variant": variant.name(), "kind": kind.name(), "threads_per_block": threads,
                            "registers": t.registers, "blocks_per_sm": t.resident_per_sm, "grid": t.grid, "bytes": kernel_bytes,
                            "median_s": med, "gbps": gbps(kernel_bytes, med), "sm_clocks_per_aes_block_at_peak_clock": clocks, "times_s": t.seconds }));
                    }
                    Err(e) => say!("{} {threads}: {e}", variant.kernel_name(128, kind)),
                }
            }
        }
    }
    report["kernel_only"] = json!({ "rows": kernels, "variants": sweep });
    save(args, report);
}
