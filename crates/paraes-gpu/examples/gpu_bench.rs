//! gpu_bench: the GPU engine's device benchmark, in one run: correctness against the CPU
//! engine (every mode, key size, direction and CTR variant), the kernel image loaded and the
//! cold PTX JIT time, kernel-only rates with CUDA events (device memory in and out) of every
//! kernel and, for AES-128, of every kernel variant at 128/256/512 threads with registers,
//! blocks per SM and SM-clocks per AES block; pinned host<->device bandwidth one way and both
//! ways at once, device<->device bandwidth; end-to-end host-memory-to-host-memory throughput
//! of the GPU engine next to the CPU engine from 1 MiB to 4 GiB; an A/B of sync mode, piece
//! size and CTR variant; and, with `--paraes PATH`, the real tool (`paraes enc`, container
//! mode, files in /dev/shm) from 1 MiB to 8 GiB, GPU beside CPU, with round trips checked.
//! Prints tables and writes JSON. Nothing here has run on a GPU yet (docs/GPU.md).
//!
//! Build here: `cargo build --release -p paraes-gpu --example gpu_bench`
//! Run there:  `target/release/examples/gpu_bench --json $OUT/gpu_bench.json --paraes ./paraes`
//! Options:    `--max-bytes N` (largest in-memory end-to-end size, default 4 GiB), `--reps N`
//!             (kernel and copy repetitions, default 20), `--quick` (small sizes, a smoke
//!             run), `--paraes PATH` (the tool to time), `--tool-max-bytes N` (default 8 GiB),
//!             `--shm DIR` (default /dev/shm), `--skip-tool`, `--tool-only` (only the
//!             tool table; runs without a GPU, the GPU rows then show the error),
//!             `--tool-backend B` (the backend in the tool table's "gpu" column, default
//!             gpu; `cpu` checks the table's own plumbing where there is no GPU), `--probe`
//!             (start the engine, print the device, driver and kernel image, exit: the
//!             device run's first step, under a second where the engine starts).
//! On the CUDA stand-in of the tests (PARAES_CUDA_STANDIN; not a GPU) every line and the
//! JSON say "CUDA stand-in (not a GPU)".
//! Exit status: 0 all correct, 1 a mismatch, 2 no usable GPU.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use paraes_core::seeded::SplitMix64;
use paraes_core::{Counters, CpuEngine, Direction, Engine, ExpandedKey, Job, Key, KeySize, Mode};
use paraes_gpu::{
    CopyDirection, CtrVariant, GpuEngine, GpuOptions, ImageChoice, KernelKind, KernelVariant,
    SyncMode,
};
use rayon::prelude::*;
use serde_json::{json, Value};

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

/// Set when the figures come from the CUDA stand-in of the tests (no GPU): every line and
/// JSON then says so.
static STANDIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn on_standin() -> bool {
    STANDIN.load(std::sync::atomic::Ordering::Relaxed)
}

/// `println!`, with " [CUDA stand-in (not a GPU)]" at the end of each line measured on the
/// stand-in.
macro_rules! say {
    () => { println!() };
    ($($arg:tt)*) => {{
        let text = format!($($arg)*);
        if on_standin() {
            let tag = format!(" [{}]", paraes_gpu::STANDIN_NAME);
            println!("{}", text.replace('\n', &format!("{tag}\n")) + &tag);
        } else {
            println!("{text}");
        }
    }};
}

struct Args {
    json: Option<String>,
    max_bytes: usize,
    reps: usize,
    quick: bool,
    paraes: Option<PathBuf>,
    tool_max_bytes: usize,
    shm: PathBuf,
    tool_only: bool,
    tool_backend: String,
    probe: bool,
}

fn args() -> Args {
    let mut args = Args {
        json: None,
        max_bytes: 4 * GIB,
        reps: 20,
        quick: false,
        paraes: None,
        tool_max_bytes: 8 * GIB,
        shm: PathBuf::from("/dev/shm"),
        tool_only: false,
        tool_backend: "gpu".into(),
        probe: false,
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
            "--paraes" => args.paraes = Some(PathBuf::from(value("--paraes"))),
            "--skip-tool" => args.paraes = None,
            "--tool-only" => args.tool_only = true,
            "--probe" => args.probe = true,
            "--tool-backend" => args.tool_backend = value("--tool-backend"),
            "--shm" => args.shm = PathBuf::from(value("--shm")),
            "--tool-max-bytes" => {
                args.tool_max_bytes = value("--tool-max-bytes")
                    .parse()
                    .unwrap_or_else(|_| die("bad --tool-max-bytes"))
            }
            "-h" | "--help" => {
                say!(
                    "usage: gpu_bench [--json PATH] [--max-bytes N] [--reps N] [--quick] \
                     [--paraes PATH] [--tool-max-bytes N] [--shm DIR] [--skip-tool] [--tool-only] [--tool-backend B] [--probe]"
                );
                std::process::exit(0);
            }
            other => die(&format!("unknown argument {other:?} (try --help)")),
        }
    }
    if args.quick {
        args.max_bytes = args.max_bytes.min(64 * MIB);
        args.tool_max_bytes = args.tool_max_bytes.min(64 * MIB);
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
    paraes_core::Throughput::new(bytes as u64, seconds).gbps()
}

fn gb_s(bytes: usize, seconds: f64) -> f64 {
    paraes_core::Throughput::new(bytes as u64, seconds).gb_per_s()
}

/// Writes the report so far (each section, and each row of the tool table, saves, so a run cut
/// off by its time limit still leaves every finished figure). A failed write is reported and
/// the run goes on: the printed tables still hold the figures.
fn save(args: &Args, report: &Value) {
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(report).unwrap_or_else(|e| e.to_string());
        if let Err(e) = std::fs::write(path, text) {
            say!("gpu_bench: could not save {path}: {e} (the figures above are all there is)");
        }
    }
}

/// `--probe`: starts the engine as the benchmark would and prints what it found, or the
/// reason it cannot start with what the loader and driver say (exit status 2).
fn probe() -> ! {
    let started = Instant::now();
    match GpuEngine::new(GpuOptions::default()) {
        Ok(gpu) => {
            let info = gpu.device_info();
            say!("device: {info}");
            say!(
                "driver: CUDA {} ({})",
                info.driver_cuda(),
                info.driver_version
            );
            say!("kernels: {}", gpu.module_report());
            say!("engine: {}", gpu.name());
            say!(
                "probe: the engine started in {:.3} s",
                started.elapsed().as_secs_f64()
            );
            std::process::exit(0)
        }
        Err(e) => {
            say!("probe: the GPU engine cannot start: {e}");
            say!(
                "probe: libcuda loadable: {}; LD_LIBRARY_PATH={:?}",
                paraes_gpu::driver_installed(),
                std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
            );
            std::process::exit(2)
        }
    }
}

fn main() {
    let args = args();
    let started = Instant::now();
    if std::env::var_os(paraes_gpu::STANDIN_ENV).is_some_and(|v| !v.is_empty()) {
        STANDIN.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if args.probe {
        probe();
    }
    if args.tool_only {
        // Only the tool table (no GPU needed to run it: GPU rows then show the error).
        let paraes = args
            .paraes
            .clone()
            .unwrap_or_else(|| die("--tool-only needs --paraes PATH"));
        let table = tool_table(&paraes, &args, &mut |table| save(&args, table));
        save(&args, &table);
        let failed = table["round_trip_failures"].as_array().map_or(0, Vec::len);
        std::process::exit(i32::from(failed > 0));
    }
    let info = paraes_gpu::probe().unwrap_or_else(|e| die(&e.to_string()));
    if info.is_standin() {
        STANDIN.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    say!("device: {info}");
    say!("host:   {} ({threads} threads)", cpu_model());
    let gpu = GpuEngine::new(GpuOptions::default()).unwrap_or_else(|e| die(&e.to_string()));
    let cpu = CpuEngine::new(None).unwrap_or_else(|e| die(&e.to_string()));
    say!("engines: {} | {}", gpu.name(), cpu.name());
    let module = gpu.module_report();
    say!("kernels: {module}; JIT info log: {:?}", module.info_log);
    // The PTX, JIT-compiled now (run with CUDA_CACHE_DISABLE=1 for a cold JIT): its load
    // time is what the cubins save on every cold start.
    let ptx_load = match GpuEngine::new(GpuOptions {
        image: ImageChoice::Ptx,
        ..GpuOptions::default()
    }) {
        Ok(e) => {
            say!("PTX for comparison: {}", e.module_report());
            json!({ "load_s": e.module_report().load_seconds, "jit_wall_ms": e.module_report().jit_wall_ms, "info_log": e.module_report().info_log })
        }
        Err(e) => {
            say!("PTX for comparison: FAILED to load: {e}");
            json!({ "error": e.to_string() })
        }
    };
    let mut report = json!({
        "measured_on_gpu": !info.is_standin(),
        "note": if info.is_standin() { paraes_gpu::STANDIN_NAME } else { "" },
        "device": {
            "name": info.name, "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            "sms": info.sms, "total_memory": info.total_memory, "driver_cuda_version": info.driver_version,
            "shared_memory_per_sm": info.shared_memory_per_sm, "max_sm_clock_khz": info.sm_clock_khz,
        },
        "module": { "image": module.image.name(), "load_s": module.load_seconds, "jit_wall_ms": module.jit_wall_ms,
                    "info_log": module.info_log, "cubin_refused": module.cubin_refused, "ptx_for_comparison": ptx_load },
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
            // GCM chunk counters (format v3 bodies): records with a tag's room.
            let gcm = Counters::GcmChunks {
                base_nonce: random(12, len as u64 ^ 0x6c).try_into().unwrap(),
                stride: paraes_core::engine::GCM_CHUNK_LEN + 16,
            };
            for (mode, direction, variant, counters) in [
                (
                    Mode::Ecb,
                    Direction::Encrypt,
                    CtrVariant::Auto,
                    Counters::Stream,
                ),
                (
                    Mode::Ecb,
                    Direction::Decrypt,
                    CtrVariant::Auto,
                    Counters::Stream,
                ),
                (
                    Mode::Ctr,
                    Direction::Encrypt,
                    CtrVariant::Fused,
                    Counters::Stream,
                ),
                (
                    Mode::Ctr,
                    Direction::Decrypt,
                    CtrVariant::Keystream,
                    Counters::Stream,
                ),
                (Mode::Ctr, Direction::Encrypt, CtrVariant::Fused, gcm),
                (Mode::Ctr, Direction::Decrypt, CtrVariant::Keystream, gcm),
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
                    counter: iv,
                    offset,
                    counters,
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
                    say!(
                        "MISMATCH: AES-{} {mode:?} {direction:?} CTR {variant} {counters:?} len {len}: {ok:?}",
                        size.bits()
                    );
                }
            }
        }
    }
    say!(
        "correctness: {}/{checks} checks identical to the CPU engine",
        checks - failures
    );
    report["correctness"] = json!({ "checks": checks, "failures": failures });
    save(&args, &report);

    // 2. Kernel-only rates (device memory in and out, CUDA events, median).
    let kernel_bytes = if args.quick { 64 * MIB } else { GIB };
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
    save(&args, &report);

    // 3. Bus and device-memory bandwidth, same run.
    let copy_bytes = if args.quick { 64 * MIB } else { 256 * MIB };
    let mut bandwidth = serde_json::Map::new();
    say!("\ncopies, median of {}:", args.reps);
    for (name, direction, bytes, factor) in [
        ("h2d_pinned", CopyDirection::HostToDevice, copy_bytes, 1.0),
        ("d2h_pinned", CopyDirection::DeviceToHost, copy_bytes, 1.0),
        ("d2d", CopyDirection::DeviceToDevice, kernel_bytes, 2.0),
    ] {
        match gpu.time_copy(direction, bytes, args.reps) {
            Ok(times) => {
                let t = median(times);
                let rate = factor * gb_s(bytes, t);
                say!(
                    "{name:<11} {:>6} MiB: {rate:>8.1} GB/s{}",
                    bytes / MIB,
                    if factor > 1.0 { " (read + write)" } else { "" }
                );
                bandwidth.insert(
                    name.into(),
                    json!({ "bytes": bytes, "median_s": t, "gb_s": rate }),
                );
            }
            Err(e) => say!("{name}: {e}"),
        }
    }
    match gpu.time_copy_both_ways(copy_bytes, args.reps) {
        Ok(times) => {
            let t = median(times);
            let rate = gb_s(2 * copy_bytes, t);
            say!(
                "h2d+d2h at once {:>3} MiB each way: {rate:>8.1} GB/s total ({:.1} GB/s per direction)",
                copy_bytes / MIB,
                rate / 2.0
            );
            bandwidth.insert(
                "h2d_d2h_simultaneous".into(),
                json!({ "bytes_each_way": copy_bytes, "median_s": t, "gb_s_total": rate, "gb_s_per_direction": rate / 2.0 }),
            );
        }
        Err(e) => say!("h2d+d2h at once: {e}"),
    }
    let rate = |name: &str| {
        bandwidth
            .get(name)
            .and_then(|v| v["gb_s"].as_f64())
            .unwrap_or(f64::NAN)
    };
    let (h2d, d2h) = (rate("h2d_pinned"), rate("d2h_pinned"));
    report["bandwidth"] = Value::Object(bandwidth.clone());
    save(&args, &report);

    // 4. End to end, host memory to host memory, GPU engine vs CPU engine.
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
    let job = Job {
        mode: Mode::Ctr,
        direction: Direction::Encrypt,
        key: &key,
        counter: iv,
        offset: 0,
        counters: Counters::Stream,
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
        let job = Job {
            mode,
            direction,
            key: &key,
            counter: iv,
            offset: 0,
            counters: Counters::Stream,
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
    save(&args, &report);
    report["engine_ab"] = engine_ab(big, &job);
    save(&args, &report);
    report["tool"] = match args.paraes.clone() {
        Some(paraes) => {
            let mut partial = report.clone();
            tool_table(&paraes, &args, &mut |table| {
                partial["tool"] = table.clone();
                save(&args, &partial);
            })
        }
        None => {
            say!("\n*** the end-to-end table through the paraes tool did NOT run: pass --paraes PATH ***");
            json!(null)
        }
    };
    failures += report["tool"]["round_trip_failures"]
        .as_array()
        .map_or(0, Vec::len);
    report["wall_seconds"] = json!(started.elapsed().as_secs_f64());

    save(&args, &report);
    if let Some(path) = &args.json {
        say!("\nwrote {path}");
    }
    say!(
        "done in {:.0} s; correctness: {}",
        started.elapsed().as_secs_f64(),
        if failures == 0 { "PASS" } else { "FAIL" }
    );
    std::process::exit(if failures == 0 { 0 } else { 1 });
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

/// A settings case for the tool: label, extra arguments, environment.
type ToolCase = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// One `paraes` run: wall seconds, or the error (with its stderr).
fn run_tool(paraes: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<f64, String> {
    let start = Instant::now();
    let out = Command::new(paraes)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", paraes.display()))?;
    let t = start.elapsed().as_secs_f64();
    if out.status.success() {
        Ok(t)
    } else {
        Err(format!(
            "paraes {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The real tool end to end: `paraes enc --mode ctr` (container mode, AES-128 key file) on
/// files in tmpfs, GPU and CPU engines from 1 MiB to --tool-max-bytes, each output decrypted
/// once and compared with the input; then, at 1 GiB, the GPU's settings A/B'd through the
/// tool (chunk size, PARAES_GPU_* overrides). Output files are fresh tmpfs pages each run
/// for both engines alike (ANCHORS.md: fresh tmpfs pages are costly). The largest size is cut
/// to what the free space of the folder holds (input, output and round trip: 3x), `saved` gets
/// the table after every row, and a file that cannot be written ends the table with a row
/// saying why.
fn tool_table(paraes: &Path, args: &Args, saved: &mut dyn FnMut(&Value)) -> Value {
    let dir = args
        .shm
        .join(format!("paraes-gpu-bench-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        say!("tool table: cannot create {}: {e}", dir.display());
        return json!({ "error": e.to_string() });
    }
    let key = dir.join("key");
    if let Err(e) = std::fs::write(&key, random(16, 77)) {
        say!("tool table: cannot write {}: {e}", key.display());
        return json!({ "error": format!("writing the key file: {e}") });
    }
    let free = free_bytes(&args.shm);
    let max_bytes = match free {
        Some(free) if free / 10 * 3 < args.tool_max_bytes as u64 => {
            let fits = (free / 10 * 3) as usize / MIB * MIB; // 3 files and 10% to spare
            say!(
                "tool table: {} has {} MiB free, so the largest size is {} MiB instead of {} MiB",
                args.shm.display(),
                free >> 20,
                fits / MIB,
                args.tool_max_bytes / MIB
            );
            fits.max(MIB)
        }
        _ => args.tool_max_bytes,
    };
    let (input, output, back) = (dir.join("in"), dir.join("out.paraes"), dir.join("back"));
    let p = |p: &Path| p.to_string_lossy().into_owned();
    let (key_s, in_s, out_s, back_s) = (p(&key), p(&input), p(&output), p(&back));
    let enc = |backend: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "enc",
            "--mode",
            "ctr",
            "--backend",
            backend,
            "--key-file",
            &key_s,
            "-o",
            &out_s,
            "-f",
            "-q",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v.push(in_s.clone());
        v
    };
    let time = |argv: &[String], env: &[(&str, &str)], reps: usize| -> Result<f64, String> {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        run_tool(paraes, &argv, env)?; // warm-up: page cache, driver, module load
        let mut t = Vec::new();
        for _ in 0..reps {
            let _ = std::fs::remove_file(&output);
            t.push(run_tool(paraes, &argv, env)?);
        }
        Ok(median(t))
    };
    say!(
        "\nthe paraes tool end to end (enc --mode ctr, container, AES-128, files in {}), median wall time:",
        args.shm.display()
    );
    say!(
        "{:>9} {:>12} {:>12} {:>9} {:>10}",
        "size",
        "gpu",
        "cpu",
        "gpu/cpu",
        "round trip"
    );
    let mut rows = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let table = |rows: &[Value], ab: &[Value], failures: &[String], complete: bool| {
        json!({ "paraes": paraes.display().to_string(), "dir": args.shm.display().to_string(),
            "free_bytes": free, "max_bytes": max_bytes, "rows": rows, "settings_ab": ab,
            "round_trip_failures": failures, "complete": complete,
            "note": if on_standin() { paraes_gpu::STANDIN_NAME } else { "" } })
    };
    let mut size = MIB;
    while size <= max_bytes {
        let reps = if size <= 64 * MIB {
            5
        } else if size <= GIB {
            3
        } else {
            2
        };
        if let Err(e) = write_input(&input, size, 1000) {
            say!("{:>7}Mi cannot write the input: {e}", size / MIB);
            rows.push(json!({ "bytes": size, "error": format!("writing the input: {e}") }));
            let _ = std::fs::remove_file(&input);
            saved(&table(&rows, &[], &failures, false));
            break;
        }
        let g = time(&enc(&args.tool_backend, &[]), &[], reps);
        // Round trip of the GPU's output through the CPU engine.
        let trip = g.as_ref().ok().map(|_| {
            run_tool(
                paraes,
                &[
                    "dec",
                    "--backend",
                    "cpu",
                    "--key-file",
                    &key_s,
                    "-o",
                    &back_s,
                    "-f",
                    "-q",
                    &out_s,
                ],
                &[],
            )
            .and_then(|_| {
                let same = files_equal(&input, &back);
                if same {
                    Ok(())
                } else {
                    Err("decrypted output differs from the input".into())
                }
            })
        });
        let c = time(&enc("cpu", &[]), &[], reps);
        let _ = std::fs::remove_file(&back);
        let fmt = |r: &Result<f64, String>| match r {
            Ok(t) => format!("{:.2} GB/s", gb_s(size, *t)),
            Err(_) => "FAILED".into(),
        };
        let trip_text = match &trip {
            Some(Ok(())) => "ok".to_string(),
            Some(Err(e)) => {
                failures.push(format!("{} MiB: {e}", size / MIB));
                "MISMATCH".to_string()
            }
            None => "-".to_string(),
        };
        let ratio = match (&g, &c) {
            (Ok(g), Ok(c)) => format!("{:.2}x", c / g),
            _ => "-".into(),
        };
        say!(
            "{:>7}Mi {:>12} {:>12} {:>9} {:>10}",
            size / MIB,
            fmt(&g),
            fmt(&c),
            ratio,
            trip_text
        );
        for r in [&g, &c] {
            if let Err(e) = r {
                say!("  {e}");
            }
        }
        rows.push(json!({ "bytes": size, "reps": reps,
            "gpu_s": g.as_ref().ok(), "cpu_s": c.as_ref().ok(),
            "gpu_gb_s": g.as_ref().ok().map(|t| gb_s(size, *t)), "cpu_gb_s": c.as_ref().ok().map(|t| gb_s(size, *t)),
            "gpu_error": g.as_ref().err(), "cpu_error": c.as_ref().err(),
            "round_trip_ok": trip.as_ref().map(|r| r.is_ok()) }));
        saved(&table(&rows, &[], &failures, false));
        size *= 4;
        if size > max_bytes && size / 4 < max_bytes {
            size = max_bytes; // end exactly at the largest size (8 GiB by default)
        }
    }
    // Settings A/B through the tool at 1 GiB (or the largest size below it).
    let ab_size = GIB.min(max_bytes);
    let _ = std::fs::remove_file(&input);
    let mut ab = Vec::new();
    if let Err(e) = write_input(&input, ab_size, 5000) {
        say!(
            "tool table: cannot write the {} MiB input of the settings A/B: {e}",
            ab_size / MIB
        );
        ab.push(json!({ "bytes": ab_size, "error": format!("writing the input: {e}") }));
        let _ = std::fs::remove_dir_all(&dir);
        return table(&rows, &ab, &failures, false);
    }
    say!(
        "\nthe tool at {} MiB, GPU settings A/B (median of 3):",
        ab_size / MIB
    );
    let cases: [ToolCase; 10] = [
        ("gpu default", &[], &[]),
        ("gpu --chunk-size 16MiB", &["--chunk-size", "16MiB"], &[]),
        ("gpu --chunk-size 64MiB", &["--chunk-size", "64MiB"], &[]),
        (
            "gpu 64MiB chunks, blocking sync",
            &["--chunk-size", "64MiB"],
            &[("PARAES_GPU_SYNC", "blocking")],
        ),
        (
            "gpu 64MiB chunks, 32MiB pieces",
            &["--chunk-size", "64MiB"],
            &[("PARAES_GPU_PIECE", "33554432")],
        ),
        ("gpu --gpu-ctr fused", &["--gpu-ctr", "fused"], &[]),
        ("gpu --gpu-ctr keystream", &["--gpu-ctr", "keystream"], &[]),
        (
            "gpu kernels pair-r1",
            &[],
            &[
                ("PARAES_GPU_KERNEL", "pair-r1"),
                ("PARAES_GPU_THREADS", "512"),
            ],
        ),
        (
            "gpu PTX image (JIT each run)",
            &[],
            &[("PARAES_GPU_IMAGE", "ptx"), ("CUDA_CACHE_DISABLE", "1")],
        ),
        ("cpu", &[], &[]),
    ];
    for (label, extra, env) in cases {
        let backend = if label == "cpu" {
            "cpu"
        } else {
            &args.tool_backend
        };
        let r = time(&enc(backend, extra), env, 3);
        match &r {
            Ok(t) => say!("{label:<36} {:>8.2} GB/s", gb_s(ab_size, *t)),
            Err(e) => say!("{label:<36} FAILED: {e}"),
        }
        ab.push(json!({ "case": label, "args": extra, "env": env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
            "bytes": ab_size, "median_s": r.as_ref().ok(), "gb_s": r.as_ref().ok().map(|t| gb_s(ab_size, *t)), "error": r.as_ref().err() }));
        saved(&table(&rows, &ab, &failures, false));
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !failures.is_empty() {
        say!("TOOL ROUND TRIP FAILURES: {failures:?}");
    }
    table(&rows, &ab, &failures, true)
}

/// Writes `size` pseudo-random bytes to `path` in 64 MiB pieces (8 GiB never sits in memory
/// twice).
fn write_input(path: &Path, size: usize, seed: u64) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut left = size;
    let mut i = 0;
    while left > 0 {
        let n = left.min(64 * MIB);
        f.write_all(&random(n, seed + i))?;
        left -= n;
        i += 1;
    }
    f.flush()
}

/// Free bytes in the file system of `dir` (`df`; None where it cannot tell).
fn free_bytes(dir: &Path) -> Option<u64> {
    let out = Command::new("df")
        .args(["-P", "-k"])
        .arg(dir)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Whether two files hold the same bytes (read in 64 MiB pieces).
fn files_equal(a: &Path, b: &Path) -> bool {
    use std::io::Read as _;
    let (Ok(mut fa), Ok(mut fb)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let (mut ba, mut bb) = (vec![0u8; 64 * MIB], vec![0u8; 64 * MIB]);
    loop {
        let na = read_full(&mut fa, &mut ba);
        let nb = read_full(&mut fb, &mut bb);
        if na != nb || ba[..na] != bb[..nb] {
            return false;
        }
        if na == 0 {
            return true;
        }
    }
    fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        n
    }
}
