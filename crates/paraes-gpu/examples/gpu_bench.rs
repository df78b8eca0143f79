//! gpu_bench: the GPU engine's device benchmark, in one run: correctness against the CPU
//! engine (every mode, key size, direction and CTR variant), kernel-only rates with CUDA
//! events (device memory in and out), pinned host<->device and device<->device bandwidth,
//! and end-to-end host-memory-to-host-memory throughput of the GPU engine next to the CPU
//! engine from 1 MiB to 4 GiB. Prints tables and writes JSON.
//!
//! Build here: `cargo build --release -p paraes-gpu --example gpu_bench`
//! Run there:  `target/release/examples/gpu_bench --json $OUT/gpu_bench.json`
//! Options:    `--max-bytes N` (largest end-to-end size, default 4 GiB), `--reps N` (kernel
//!             and copy repetitions, default 20), `--quick` (small sizes, for a smoke run).
//! Exit status: 0 all correct, 1 a mismatch, 2 no usable GPU.

use std::time::Instant;

use paraes_core::seeded::SplitMix64;
use paraes_core::{CpuEngine, Direction, Engine, ExpandedKey, Job, Key, KeySize, Mode};
use paraes_gpu::{CopyDirection, CtrVariant, GpuEngine, GpuOptions, KernelKind};
use rayon::prelude::*;
use serde_json::{json, Value};

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

struct Args {
    json: Option<String>,
    max_bytes: usize,
    reps: usize,
    quick: bool,
}

fn args() -> Args {
    let mut args = Args {
        json: None,
        max_bytes: 4 * GIB,
        reps: 20,
        quick: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .unwrap_or_else(|| die(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--json" => args.json = Some(value("--json")),
            "--max-bytes" => {
                args.max_bytes = value("--max-bytes")
                    .parse()
                    .unwrap_or_else(|_| die("bad --max-bytes"))
            }
            "--reps" => {
                args.reps = value("--reps")
                    .parse()
                    .unwrap_or_else(|_| die("bad --reps"))
            }
            "--quick" => args.quick = true,
            "-h" | "--help" => {
                println!("usage: gpu_bench [--json PATH] [--max-bytes N] [--reps N] [--quick]");
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other:?} (try --help)")),
        }
    }
    if args.quick {
        args.max_bytes = args.max_bytes.min(64 * MIB);
        args.reps = args.reps.min(5);
    }
    args
}

fn die(message: &str) -> ! {
    eprintln!("gpu_bench: {message}");
    std::process::exit(2)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Pseudo-random bytes (never time on zeros), filled on all cores.
fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    buf.par_chunks_mut(MIB).enumerate().for_each(|(i, chunk)| {
        SplitMix64::new(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)).fill(chunk);
    });
    buf
}

fn make_key(size: KeySize, seed: u64) -> ExpandedKey {
    let bytes = random(32, seed);
    Key::new(&bytes[..size.bytes()]).unwrap().expand()
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn gbps(bytes: usize, seconds: f64) -> f64 {
    bytes as f64 * 8.0 / seconds / 1e9
}

fn gb_s(bytes: usize, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e9
}

fn main() {
    let args = args();
    let started = Instant::now();
    let info = paraes_gpu::probe().unwrap_or_else(|e| die(&e.to_string()));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("device: {info}");
    println!("host:   {} ({threads} threads)", cpu_model());
    let gpu = GpuEngine::new(GpuOptions::default()).unwrap_or_else(|e| die(&e.to_string()));
    let cpu = CpuEngine::new(None).unwrap_or_else(|e| die(&e.to_string()));
    println!("engines: {} | {}", gpu.name(), cpu.name());
    let mut report = json!({
        "device": {
            "name": info.name, "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            "sms": info.sms, "total_memory": info.total_memory, "driver_cuda_version": info.driver_version,
            "shared_memory_per_sm": info.shared_memory_per_sm,
        },
        "host": { "cpu": cpu_model(), "threads": threads },
        "engines": { "gpu": gpu.name(), "cpu": cpu.name() },
        "options": format!("{:?}", gpu.options()),
    });

    // 1. Correctness: the GPU engine against the CPU engine.
    let mut failures = 0;
    let mut checks = 0;
    let lens: &[usize] = if args.quick {
        &[1, 17, MIB + 3]
    } else {
        &[1, 17, 4096 + 5, MIB + 3, 64 * MIB + 5]
    };
    for (k, size) in KeySize::ALL.into_iter().enumerate() {
        let key = make_key(size, 100 + k as u64);
        for &len in lens {
            for (mode, direction, variant) in [
                (Mode::Ecb, Direction::Encrypt, CtrVariant::Auto),
                (Mode::Ecb, Direction::Decrypt, CtrVariant::Auto),
                (Mode::Ctr, Direction::Encrypt, CtrVariant::Fused),
                (Mode::Ctr, Direction::Decrypt, CtrVariant::Keystream),
            ] {
                let len = if mode == Mode::Ecb {
                    len / 16 * 16
                } else {
                    len
                };
                let offset = if mode == Mode::Ecb {
                    16 * 12345
                } else {
                    12345 * 16 + 7
                };
                let iv: [u8; 16] = random(16, len as u64).try_into().unwrap();
                let job = Job {
                    mode,
                    direction,
                    key: &key,
                    iv,
                    offset,
                };
                let data = random(len, 7 + len as u64);
                let mut want = data.clone();
                cpu.process(&job, &mut want).unwrap();
                let mut got = data;
                let ok = gpu
                    .process_with(&job, &mut got, variant)
                    .map(|_| got == want);
                checks += 1;
                if !matches!(ok, Ok(true)) {
                    failures += 1;
                    println!(
                        "MISMATCH: AES-{} {mode:?} {direction:?} CTR {variant} len {len}: {ok:?}",
                        size.bits()
                    );
                }
            }
        }
    }
    println!(
        "correctness: {}/{checks} checks identical to the CPU engine",
        checks - failures
    );
    report["correctness"] = json!({ "checks": checks, "failures": failures });

    // 2. Kernel-only rates (device memory in and out, CUDA events, median).
    let kernel_bytes = if args.quick { 64 * MIB } else { GIB };
    println!(
        "\nkernel only, {} MiB in device memory, median of {} (CUDA events), {} threads/block:",
        kernel_bytes / MIB,
        args.reps,
        gpu.options().threads_per_block
    );
    println!(
        "{:<10} {:<14} {:>10} {:>12} {:>14}",
        "key", "kernel", "ms", "Gbps", "device GB/s"
    );
    let mut kernels = Vec::new();
    for (k, size) in KeySize::ALL.into_iter().enumerate() {
        let key = make_key(size, 200 + k as u64);
        for kind in [
            KernelKind::CtrKeystream,
            KernelKind::CtrFused,
            KernelKind::EcbEncrypt,
            KernelKind::EcbDecrypt,
        ] {
            match gpu.time_kernel(&key, kind, kernel_bytes, args.reps) {
                Ok(times) => {
                    let t = median(times.clone());
                    let dev =
                        kernel_bytes as f64 * f64::from(kind.device_bytes_per_byte()) / t / 1e9;
                    println!(
                        "AES-{:<6} {:<14} {:>10.3} {:>12.1} {:>14.1}",
                        size.bits(),
                        kind.name(),
                        t * 1e3,
                        gbps(kernel_bytes, t),
                        dev
                    );
                    kernels.push(json!({ "key_bits": size.bits(), "kernel": kind.name(), "bytes": kernel_bytes, "median_s": t, "gbps": gbps(kernel_bytes, t), "device_gb_s": dev, "times_s": times }));
                }
                Err(e) => println!("AES-{} {}: {e}", size.bits(), kind.name()),
            }
        }
    }
    // Threads per block: does the default leave rate on the table?
    let key128 = make_key(KeySize::Aes128, 300);
    let mut sweep = Vec::new();
    for threads_per_block in [128u32, 256, 512] {
        let engine = match GpuEngine::new(GpuOptions {
            threads_per_block,
            ..GpuOptions::default()
        }) {
            Ok(e) => e,
            Err(e) => {
                println!("threads {threads_per_block}: {e}");
                continue;
            }
        };
        for kind in [KernelKind::CtrKeystream, KernelKind::EcbEncrypt] {
            if let Ok(times) = engine.time_kernel(&key128, kind, kernel_bytes, args.reps) {
                let t = median(times);
                println!(
                    "AES-128 {:<14} {threads_per_block:>4} threads/block: {:>8.1} Gbps",
                    kind.name(),
                    gbps(kernel_bytes, t)
                );
                sweep.push(json!({ "threads_per_block": threads_per_block, "kernel": kind.name(), "median_s": t, "gbps": gbps(kernel_bytes, t) }));
            }
        }
    }
    report["kernel_only"] = json!({ "rows": kernels, "threads_sweep": sweep });

    // 3. Bus and device-memory bandwidth, same run.
    let copy_bytes = if args.quick { 64 * MIB } else { 256 * MIB };
    let mut bandwidth = serde_json::Map::new();
    println!("\ncopies, median of {}:", args.reps);
    for (name, direction, bytes, factor) in [
        ("h2d_pinned", CopyDirection::HostToDevice, copy_bytes, 1.0),
        ("d2h_pinned", CopyDirection::DeviceToHost, copy_bytes, 1.0),
        ("d2d", CopyDirection::DeviceToDevice, kernel_bytes, 2.0),
    ] {
        match gpu.time_copy(direction, bytes, args.reps) {
            Ok(times) => {
                let t = median(times);
                let rate = bytes as f64 * factor / t / 1e9;
                println!(
                    "{name:<11} {:>6} MiB: {rate:>8.1} GB/s{}",
                    bytes / MIB,
                    if factor > 1.0 { " (read + write)" } else { "" }
                );
                bandwidth.insert(
                    name.into(),
                    json!({ "bytes": bytes, "median_s": t, "gb_s": rate }),
                );
            }
            Err(e) => println!("{name}: {e}"),
        }
    }
    let rate = |name: &str| {
        bandwidth
            .get(name)
            .and_then(|v| v["gb_s"].as_f64())
            .unwrap_or(f64::NAN)
    };
    let (h2d, d2h) = (rate("h2d_pinned"), rate("d2h_pinned"));
    report["bandwidth"] = Value::Object(bandwidth.clone());

    // 4. End to end, host memory to host memory, GPU engine vs CPU engine.
    let mut sizes = vec![MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, GIB, 4 * GIB];
    sizes.retain(|&s| s <= args.max_bytes);
    println!("\nend to end, host memory to host memory, AES-128-CTR, median wall time:");
    println!(
        "{:>9} {:>14} {:>14} {:>14} {:>16} {:>10}",
        "size", "gpu keystream", "gpu fused", "cpu", "gpu ks, 1MiB calls", "best/cpu"
    );
    let key = make_key(KeySize::Aes128, 400);
    let iv = [0x5au8; 16];
    let job = Job {
        mode: Mode::Ctr,
        direction: Direction::Encrypt,
        key: &key,
        iv,
        offset: 0,
    };
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
        println!(
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
        Some(s) => println!(
            "crossover: the GPU engine beats the CPU engine from {} MiB",
            s / MIB
        ),
        None => println!(
            "crossover: the GPU engine never beat the CPU engine up to {} MiB",
            sizes.last().unwrap_or(&0) / MIB
        ),
    }
    if let Some(last) = e2e.last() {
        println!(
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
        let job = Job {
            mode,
            direction,
            key: &key,
            iv,
            offset: 0,
        };
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
        let g = run(&gpu, &mut buf);
        let c = run(&cpu, &mut buf);
        println!(
            "AES-{} {mode:?} {direction:?} {} MiB: gpu {:.2} GB/s, cpu {:.2} GB/s",
            size.bits(),
            big / MIB,
            gb_s(big, g),
            gb_s(big, c)
        );
        others.push(json!({ "key_bits": size.bits(), "mode": format!("{mode:?}"), "direction": format!("{direction:?}"), "bytes": big, "gpu_s": g, "cpu_s": c }));
    }
    report["end_to_end"] = json!({ "aes128_ctr": e2e, "crossover_bytes": crossover, "others": others, "auto_choice": gpu.ctr_variant().name() });
    report["wall_seconds"] = json!(started.elapsed().as_secs_f64());

    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report).unwrap())
            .unwrap_or_else(|e| die(&format!("writing {path}: {e}")));
        println!("\nwrote {path}");
    }
    println!(
        "done in {:.0} s; correctness: {}",
        started.elapsed().as_secs_f64(),
        if failures == 0 { "PASS" } else { "FAIL" }
    );
    std::process::exit(if failures == 0 { 0 } else { 1 });
}
