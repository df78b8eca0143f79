//! gpu_bench: the GPU engine's device benchmark, in one run: correctness against the CPU
//! engine (every mode, key size, direction and CTR variant), the kernel image loaded and the
//! cold PTX JIT time, kernel-only rates with CUDA events (device memory in and out) of every
//! kernel and, for AES-128, of every kernel variant at 128/256/512 threads with registers,
//! blocks per SM and SM-clocks per AES block; pinned host<->device bandwidth one way and both
//! ways at once, device<->device bandwidth; end-to-end host-memory-to-host-memory throughput
//! of the GPU engine next to the CPU engine from 1 MiB to 4 GiB; an A/B of sync mode, piece
//! size and CTR variant; format v3's body on the device (issue 38: the Cobblestone records
//! kernels, the records job end to end, a container loaded into device memory; `--cobblestone`
//! runs that section alone); and, with `--paraes PATH`, the real tool (`paraes enc`, container
//! mode, files in /dev/shm) from 1 MiB to 8 GiB, GPU beside CPU, with round trips checked.
//! Prints tables and writes JSON. The first sections ran on an H200 on 2026-11-26/27; the
//! Cobblestone section has not run on a GPU yet (docs/GPU.md).
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
//!             device run's first step, under a second where the engine starts),
//!             `--cobblestone` (the copies and the Cobblestone section alone),
//!             `--kernel-bytes N` (the kernel rows' size, default 1 GiB, `--quick` 64 MiB),
//!             `--load-bytes N` (the container loaded, default 16 GiB, `--quick` 256 MiB).
//! On the CUDA stand-in of the tests (PARAES_CUDA_STANDIN; not a GPU) every line and the
//! JSON say "CUDA stand-in (not a GPU)".
//! Exit status: 0 all correct, 1 a mismatch, 2 no usable GPU.
//!
//! The sections, one module each: `args` (the command line), `correctness` (1),
//! `kernels` (2), `copies` (3), `end_to_end` (4, and the engine's settings A/B),
//! `tool` (the paraes tool's table); `common` holds what they share.

use std::time::Instant;

use paraes_core::{CpuEngine, Engine};
use paraes_gpu::{GpuEngine, GpuOptions, ImageChoice};
use serde_json::json;

/// `println!`, with " [CUDA stand-in (not a GPU)]" at the end of each line measured on the
/// stand-in.
macro_rules! say {
    () => { println!() };
    ($($arg:tt)*) => {{
        let text = format!($($arg)*);
        if $crate::on_standin() {
            let tag = format!(" [{}]", paraes_gpu::STANDIN_NAME);
            println!("{}", text.replace('\n', &format!("{tag}\n")) + &tag);
        } else {
            println!("{text}");
        }
    }};
}

mod args;
mod cobblestone;
mod common;
mod copies;
mod correctness;
mod end_to_end;
mod kernels;
mod tool;

use args::{args, die};
use common::{cpu_model, save, GIB, MIB};
use tool::tool_table;

/// Set when the figures come from the CUDA stand-in of the tests (no GPU): every line and
/// JSON then says so.
static STANDIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn on_standin() -> bool {
    STANDIN.load(std::sync::atomic::Ordering::Relaxed)
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

    let default_kernel_bytes = if args.quick { 64 * MIB } else { GIB };
    let kernel_bytes = args.kernel_bytes.unwrap_or(default_kernel_bytes);
    if args.cobblestone_only {
        // Issue 38's run: the copies its shares are of, then the Cobblestone section alone.
        copies::bandwidth(&args, &mut report, &gpu, kernel_bytes);
        let failures = cobblestone::cobblestone(&args, &mut report, &gpu, &cpu, kernel_bytes);
        finish(&args, &mut report, started, failures);
    }

    // 1. Correctness: the GPU engine against the CPU engine.
    let mut failures = correctness::check(&args, &mut report, &gpu, &cpu);

    // 2. Kernel-only rates (device memory in and out, CUDA events, median).
    kernels::kernel_only(&args, &mut report, &gpu, &info, kernel_bytes);

    // 3. Bus and device-memory bandwidth, same run.
    let (h2d, d2h) = copies::bandwidth(&args, &mut report, &gpu, kernel_bytes);

    // 4. End to end, host memory to host memory, GPU engine vs CPU engine; then the engine's
    // settings A/B.
    end_to_end::end_to_end(&args, &mut report, &gpu, &cpu, h2d, d2h);

    // Format v3's body on the device (issue 38): kernels, end to end, loading a container
    // (after the older sections, whose figures a cut-off run then still has).
    failures += cobblestone::cobblestone(&args, &mut report, &gpu, &cpu, kernel_bytes);
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
    finish(&args, &mut report, started, failures);
}

/// Saves the report with the run's wall time, says where and whether every check passed, and
/// exits (0 all correct, 1 any failure).
fn finish(
    args: &args::Args,
    report: &mut serde_json::Value,
    started: Instant,
    failures: usize,
) -> ! {
    report["wall_seconds"] = json!(started.elapsed().as_secs_f64());
    save(args, report);
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
