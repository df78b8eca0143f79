//! Section 4: end-to-end host-memory-to-host-memory throughput of the GPU engine next to the
//! CPU engine from 1 MiB to --max-bytes, other keys and ECB at one large size, and an A/B of
//! the engine's settings (sync mode, piece size, CTR variant, kernel variant).

use std::time::Instant;

use paraes_core::{CpuEngine, Direction, Engine, Job, KeySize, Mode};
use paraes_gpu::{CtrVariant, GpuEngine, GpuOptions, KernelVariant, SyncMode};
use serde_json::{json, Value};

use crate::args::{die, Args};
use crate::common::{gb_s, make_key, median, random, save, GIB, MIB};

/// Times the engines end to end and the settings A/B, prints the tables, and records them in
/// `report` (saved after each); `h2d` and `d2h` are the pinned copy rates (GB/s) the
/// largest size is measured against.
pub(crate) fn end_to_end(
    args: &Args,
    report: &mut Value,
    gpu: &GpuEngine,
    cpu: &CpuEngine,
    h2d: f64,
    d2h: f64,
) {
    let mut sizes = vec![MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, GIB, 4 * GIB];
    sizes.retain(|&s| s <= args.max_bytes);
    say!("\nend to end, host memory to host memory, AES-128-CTR, median wall time:");
    say!(
        "{:>9} {:>14} {:>14} {:>14} {:>16} {:>10}",
        "size",
        "gpu keystream",
        "gpu fused",
        "cpu",
        "gpu ks, 1MiB calls",
        "best/cpu"
    );
    let key = make_key(KeySize::Aes128, 400);
    let iv = [0x5au8; 16];
    let job = Job::ctr(&key, iv, 0);
    let fused_engine = GpuEngine::new(GpuOptions {
        ctr_variant: CtrVariant::Fused,
        ..GpuOptions::default()
    })
    .unwrap_or_else(|e| die(&e.to_string()));
    let mut e2e = Vec::new();
    let mut crossover = None;
    for &size in &sizes {
        let mut buf = random(size, size as u64);
        let reps = (256 * MIB / size).clamp(3, 20);
        let mut time = |f: &mut dyn FnMut(&mut [u8])| {
            f(&mut buf); // warm-up (allocations, page faults)
            median(
                (0..reps)
                    .map(|_| {
                        let t = Instant::now();
                        f(&mut buf);
                        t.elapsed().as_secs_f64()
                    })
                    .collect(),
            )
        };
        let ks = time(&mut |b| gpu.process_with(&job, b, CtrVariant::Keystream).unwrap());
        let fu = time(&mut |b| {
            fused_engine
                .process_with(&job, b, CtrVariant::Fused)
                .unwrap()
        });
        let cp = time(&mut |b| cpu.process(&job, b).unwrap());
        let calls = time(&mut |b| {
            for (i, chunk) in b.chunks_mut(MIB).enumerate() {
                gpu.process_with(
                    &job.advanced((i * MIB) as u64),
                    chunk,
                    CtrVariant::Keystream,
                )
                .unwrap();
            }
        });
        let best = ks.min(fu);
        if best < cp && crossover.is_none() {
            crossover = Some(size);
        }
        say!(
            "{:>7}Mi {:>9.2} GB/s {:>9.2} GB/s {:>9.2} GB/s {:>11.2} GB/s {:>9.2}x",
            size / MIB,
            gb_s(size, ks),
            gb_s(size, fu),
            gb_s(size, cp),
            gb_s(size, calls),
            cp / best
        );
        e2e.push(json!({
            "bytes": size, "reps": reps,
            "gpu_keystream_s": ks, "gpu_fused_s": fu, "cpu_s": cp, "gpu_keystream_1mib_calls_s": calls,
            "gpu_keystream_gb_s": gb_s(size, ks), "gpu_fused_gb_s": gb_s(size, fu), "cpu_gb_s": gb_s(size, cp),
            "keystream_vs_d2h": gb_s(size, ks) / d2h, "fused_vs_min_h2d_d2h": gb_s(size, fu) / h2d.min(d2h),
        }));
    }
    match crossover {
        Some(s) => say!(
            "crossover: the GPU engine beats the CPU engine from {} MiB",
            s / MIB
        ),
        None => say!(
            "crossover: the GPU engine never beat the CPU engine up to {} MiB",
            sizes.last().unwrap_or(&0) / MIB
        ),
    }
    if let Some(last) = e2e.last() {
        say!(
            "largest size: keystream at {:.0}% of pinned D2H ({d2h:.1} GB/s), fused at {:.0}% of min(H2D, D2H) ({:.1} GB/s)",
            100.0 * last["keystream_vs_d2h"].as_f64().unwrap_or(f64::NAN),
            100.0 * last["fused_vs_min_h2d_d2h"].as_f64().unwrap_or(f64::NAN),
            h2d.min(d2h)
        );
    }
    // Other keys and ECB at one large size.
    let big = sizes
        .iter()
        .copied()
        .filter(|&s| s <= GIB)
        .max()
        .unwrap_or(MIB);
    let mut others = Vec::new();
    for (size, mode, direction) in [
        (KeySize::Aes256, Mode::Ctr, Direction::Encrypt),
        (KeySize::Aes128, Mode::Ecb, Direction::Encrypt),
        (KeySize::Aes128, Mode::Ecb, Direction::Decrypt),
    ] {
        let key = make_key(size, 500);
        let job = Job::new(mode, direction, &key, iv, 0);
        let mut buf = random(big, 9);
        let run = |engine: &dyn Engine, buf: &mut [u8]| {
            engine.process(&job, buf).unwrap();
            median(
                (0..3)
                    .map(|_| {
                        let t = Instant::now();
                        engine.process(&job, buf).unwrap();
                        t.elapsed().as_secs_f64()
                    })
                    .collect(),
            )
        };
        let g = run(gpu, &mut buf);
        let c = run(cpu, &mut buf);
        say!(
            "AES-{} {mode:?} {direction:?} {} MiB: gpu {:.2} GB/s, cpu {:.2} GB/s",
            size.bits(),
            big / MIB,
            gb_s(big, g),
            gb_s(big, c)
        );
        others.push(json!({ "key_bits": size.bits(), "mode": format!("{mode:?}"), "direction": format!("{direction:?}"), "bytes": big, "gpu_s": g, "cpu_s": c }));
    }
    report["end_to_end"] = json!({ "aes128_ctr": e2e, "crossover_bytes": crossover, "others": others, "auto_choice": gpu.ctr_variant().name() });
    save(args, report);
    report["engine_ab"] = engine_ab(big, &job);
    save(args, report);
}

/// The engine's host-path settings A/B'd on one buffer: sync mode x piece size x CTR variant,
/// and the kernel variants end to end (does a faster kernel show through the bus at all?).
fn engine_ab(size: usize, job: &Job<'_>) -> Value {
    say!(
        "\nA/B, host memory to host memory, AES-128-CTR, {} MiB, median of 3:",
        size / MIB
    );
    let mut rows = Vec::new();
    let mut buf = random(size, 11);
    let mut configs = Vec::new();
    for sync in [SyncMode::Spin, SyncMode::Blocking] {
        for piece in [2 * MIB, 8 * MIB, 32 * MIB] {
            for ctr in [CtrVariant::Keystream, CtrVariant::Fused] {
                configs.push((KernelVariant::Base, sync, piece, ctr));
            }
        }
    }
    for variant in [
        KernelVariant::Pair,
        KernelVariant::PairR1,
        KernelVariant::Lb5,
    ] {
        for ctr in [CtrVariant::Keystream, CtrVariant::Fused] {
            configs.push((variant, SyncMode::Spin, 8 * MIB, ctr));
        }
    }
    for (variant, sync, piece, ctr) in configs {
        let engine = match GpuEngine::new(GpuOptions {
            kernel_variant: variant,
            sync,
            max_piece: piece,
            threads_per_block: 256,
            ctr_variant: ctr,
            ..GpuOptions::default()
        }) {
            Ok(e) => e,
            Err(e) => {
                say!("{variant} {sync} {} MiB {ctr}: {e}", piece >> 20);
                continue;
            }
        };
        engine.process(job, &mut buf).unwrap();
        let t = median(
            (0..3)
                .map(|_| {
                    let t = Instant::now();
                    engine.process(job, &mut buf).unwrap();
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        );
        say!(
            "kernels {variant:<8} sync {sync:<8} piece {:>3} MiB CTR {ctr:<9}: {:>7.2} GB/s",
            piece >> 20,
            gb_s(size, t)
        );
        rows.push(json!({ "kernel_variant": variant.name(), "sync": sync.name(), "max_piece": piece, "ctr": ctr.name(),
            "bytes": size, "median_s": t, "gb_s": gb_s(size, t) }));
    }
    json!(rows)
}
