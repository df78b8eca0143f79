//! Issue 38's section: format v3's body (Cobblestone chunk records) on the GPU. Kernel only,
//! in device memory (rows `cobblestone{128,256}_{seal,open}`, and `ghash_only` / `aes_ctr_only`
//! per key size to show which side binds); the records job end to end, host memory to host
//! memory, on the GPU engine at two piece sizes beside the CPU engine, as a share of the same
//! run's copies both ways at once; and a container loaded into device memory beside the same
//! loader with decryption turned off, and beside the pinned host-to-device copy rate. Each
//! figure is checked before it is printed: the kernel timings check their results, the end to
//! end rows compare the GPU's bytes with the CPU's, the loaded plaintext is compared with what
//! was saved.

use std::time::Instant;

use paraes_core::cobblestone::{MessageKeys, Variant, CHUNK_LEN};
use paraes_core::container::{Identity, Recipient, Unlock};
use paraes_core::engine::RecordsJob;
use paraes_core::{CpuEngine, Direction, Engine, Key, KeySize};
use paraes_gpu::device_memory::{load_container, save_container, upload_body_only};
use paraes_gpu::{DeviceMemory, GpuEngine, GpuOptions, RecordsStep};
use serde_json::{json, Value};

use crate::args::Args;
use crate::common::{free_bytes, gb_s, gbps, median, random, save, GIB, MIB};

/// The kernel-only targets, Tbps: Cobblestone-128 and -256, seal and open.
fn target_tbps(bits: usize) -> f64 {
    if bits == 128 {
        1.1
    } else {
        1.0
    }
}

/// A Cobblestone chunk cipher of `variant` from pseudo-random keys.
fn cipher(variant: Variant, seed: u64) -> paraes_core::cobblestone::ChunkCipher {
    let bytes = random(56, seed);
    let salt: [u8; 24] = bytes[32..].try_into().expect("24 bytes");
    MessageKeys::derive(
        variant,
        &bytes[..variant.key_size().bytes()],
        &salt,
        b"gpu_bench",
    )
    .expect("a key of the variant's size")
    .chunks()
}

/// Runs the section; returns the number of failed checks. `report["bandwidth"]` holds the
/// copies section's rates (the shares are of those).
pub(crate) fn cobblestone(
    args: &Args,
    report: &mut Value,
    gpu: &GpuEngine,
    cpu: &CpuEngine,
    kernel_bytes: usize,
) -> usize {
    let mut failures = 0;
    let mut section = json!({});
    say!(
        "\nCobblestone records kernels, {} MiB of plaintext in device memory, median of {} (CUDA events):",
        kernel_bytes / MIB,
        args.reps
    );
    say!(
        "{:<22} {:<34} {:>9} {:>9} {:>8}",
        "row",
        "kernels",
        "ms",
        "Tbps",
        "target"
    );
    let mut rows = Vec::new();
    for (variant, bits) in [
        (Variant::Cobblestone128, 128),
        (Variant::Cobblestone256, 256),
    ] {
        let cipher = cipher(variant, 500 + bits as u64);
        for step in RecordsStep::ALL {
            let (row, target) = match step {
                RecordsStep::Seal => (format!("cobblestone{bits}_seal"), target_tbps(bits)),
                RecordsStep::Open => (format!("cobblestone{bits}_open"), target_tbps(bits)),
                RecordsStep::VerifyOnly => ("ghash_only".to_string(), f64::NAN),
                RecordsStep::CtrOnly => ("aes_ctr_only".to_string(), f64::NAN),
            };
            match gpu.time_records(&cipher, step, kernel_bytes, args.reps) {
                Ok(t) => {
                    let bytes = kernel_bytes / CHUNK_LEN * CHUNK_LEN;
                    let s = median(t.seconds.clone());
                    let tbps = gbps(bytes, s) / 1000.0;
                    let mark = if target.is_nan() {
                        String::new()
                    } else if tbps >= target {
                        format!(">= {target} met")
                    } else {
                        format!("< {target} MISSED")
                    };
                    say!(
                        "{row:<22} {:<34} {:>9.3} {tbps:>9.3} {mark:>8}",
                        t.kernel,
                        s * 1e3
                    );
                    rows.push(json!({ "row": row, "key_bits": bits, "kernels": t.kernel, "plaintext_bytes": bytes,
                        "median_s": s, "tbps": tbps, "target_tbps": if target.is_nan() { Value::Null } else { json!(target) },
                        "threads_per_block": t.threads, "grid": t.grid, "registers": t.registers,
                        "resident_per_sm": t.resident_per_sm, "times_s": t.seconds }));
                }
                Err(e) => {
                    failures += 1;
                    say!("{row}: FAILED: {e}");
                    rows.push(json!({ "row": row, "key_bits": bits, "error": e.to_string() }));
                }
            }
        }
    }
    section["kernels"] = json!(rows);
    report["cobblestone"] = section.clone();
    save(args, report);

    failures += end_to_end(args, report, &mut section, cpu, kernel_bytes);
    report["cobblestone"] = section.clone();
    save(args, report);

    failures += load(args, report, &mut section, gpu);
    report["cobblestone"] = section;
    save(args, report);
    failures
}

/// The records job end to end (host memory to host memory) on the GPU engine at 8 and 32 MiB
/// pieces and on the CPU engine, sealing and opening Cobblestone-256, 1 GiB (`--quick`: the
/// kernel rows' size); the GPU's records and plaintext compared with the CPU's.
fn end_to_end(
    args: &Args,
    report: &Value,
    section: &mut Value,
    cpu: &CpuEngine,
    kernel_bytes: usize,
) -> usize {
    let per_direction = report["bandwidth"]["h2d_d2h_simultaneous"]["gb_s_per_direction"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let size = if args.quick { kernel_bytes } else { GIB };
    let reps = if args.quick { 2 } else { 5 };
    say!(
        "\nv3 body end to end (records job, host memory to host memory), Cobblestone-256, {} MiB, median of {reps}; \
         share of the copies both ways at once ({per_direction:.1} GB/s per direction; target 80%):",
        size / MIB
    );
    let cipher = cipher(Variant::Cobblestone256, 600);
    let plaintext = random(size, 601);
    let chunks = size / CHUNK_LEN + 1;
    let records_len = RecordsJob::records_len(size, chunks).expect("a records length");
    let (seal, open) = (
        cipher.records_job(Direction::Encrypt, 0),
        cipher.records_job(Direction::Decrypt, 0),
    );
    let mut expect = vec![0u8; records_len];
    if let Err(e) = cpu.process_records(&seal, &plaintext, &mut expect) {
        say!("the CPU engine's records job failed: {e}");
        return 1;
    }
    let mut failures = 0;
    let mut rows = Vec::new();
    let gpus: Vec<(String, Result<GpuEngine, String>)> = [8, 32]
        .into_iter()
        .map(|piece| {
            let engine = GpuEngine::new(GpuOptions {
                max_piece: piece * MIB,
                ..GpuOptions::default()
            })
            .map_err(|e| e.to_string());
            (format!("gpu, {piece} MiB pieces"), engine)
        })
        .collect();
    let mut engines: Vec<(String, &dyn Engine)> = vec![("cpu, all cores".into(), cpu)];
    for (name, engine) in &gpus {
        match engine {
            Ok(engine) => engines.push((name.clone(), engine)),
            Err(e) => {
                failures += 1;
                say!("{name}: FAILED to start: {e}");
            }
        }
    }
    let mut records = vec![0u8; records_len];
    let mut opened = vec![0u8; size];
    for (name, engine) in engines {
        let time = |f: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
            f()?;
            let mut times = Vec::new();
            for _ in 0..reps {
                let t = Instant::now();
                f()?;
                times.push(t.elapsed().as_secs_f64());
            }
            Ok(median(times))
        };
        let sealed = time(&mut || {
            engine
                .process_records(&seal, &plaintext, &mut records)
                .map_err(|e| e.to_string())
        });
        let right_seal = records == expect;
        let opened_t = time(&mut || {
            engine
                .process_records(&open, &expect, &mut opened)
                .map_err(|e| e.to_string())
        });
        let right_open = opened == plaintext;
        for (what, t, right) in [("seal", sealed, right_seal), ("open", opened_t, right_open)] {
            match t {
                Ok(t) if right => {
                    let rate = gb_s(size, t);
                    say!(
                        "{name:<22} {what}: {rate:>7.1} GB/s ({:>5.1}% of a direction)",
                        100.0 * rate / per_direction
                    );
                    rows.push(json!({ "engine": name, "step": what, "bytes": size, "median_s": t, "gb_s": rate,
                        "share_of_copy_per_direction": rate / per_direction }));
                }
                Ok(_) => {
                    failures += 1;
                    say!("{name} {what}: WRONG BYTES (differ from the CPU engine's)");
                    rows.push(json!({ "engine": name, "step": what, "error": "wrong bytes" }));
                }
                Err(e) => {
                    failures += 1;
                    say!("{name} {what}: FAILED: {e}");
                    rows.push(json!({ "engine": name, "step": what, "error": e }));
                }
            }
        }
    }
    section["end_to_end"] = json!({ "copy_gb_s_per_direction": per_direction, "rows": rows });
    failures
}

/// A container of `--load-bytes` (cut to what the shm folder holds) saved from device memory,
/// then loaded into device memory, alternating with the loader with decryption turned off;
/// the first load compared with what was saved.
fn load(args: &Args, report: &Value, section: &mut Value, gpu: &GpuEngine) -> usize {
    let h2d = report["bandwidth"]["h2d_pinned"]["gb_s"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let free = free_bytes(&args.shm).unwrap_or(0);
    let size = args
        .load_bytes
        .min((free / 2).saturating_sub(GIB as u64) as usize);
    if size < MIB {
        say!(
            "\nload: skipped: {} has too little free space",
            args.shm.display()
        );
        section["load"] = json!({ "skipped": "too little free space" });
        return 0;
    }
    let rounds = if args.quick { 1 } else { 3 };
    say!(
        "\ncontainer loaded into device memory (paraes.cuda.load's Rust path), {} MiB from the page cache, \
         median of {rounds}; targets: at most 1.1x the loader with decryption off, which at least 50% of pinned H2D ({h2d:.1} GB/s):",
        size / MIB
    );
    let key_bytes = random(32, 700);
    let key = || Key::new(&key_bytes).expect("32 bytes");
    let unlock = Unlock {
        identities: vec![Identity::Key(key())],
        max_kdf_mib: 64,
        allow_unverified_slot: false,
    };
    let path = args
        .shm
        .join(format!("gpu_bench-load-{}.paraes", std::process::id()));
    let stream = gpu.default_stream();
    let result = (|| -> Result<Value, String> {
        // The error and its causes (a file error's system error is its source).
        let e = |e: &dyn std::error::Error| {
            let mut text = e.to_string();
            let mut cause = e.source();
            while let Some(c) = cause {
                text = format!("{text}: {c}");
                cause = c.source();
            }
            text
        };
        let mut source = DeviceMemory::zeroed(&stream, size).map_err(|x| e(&x))?;
        let piece = random(64 * MIB, 701);
        for at in (0..size).step_by(piece.len()) {
            let len = piece.len().min(size - at);
            source
                .write_from_host(&stream, at, &piece[..len])
                .map_err(|x| e(&x))?;
        }
        let t = Instant::now();
        save_container(
            gpu,
            &source,
            &path,
            true,
            (KeySize::Aes256, &[Recipient::Key(key())]),
            &stream,
        )
        .map_err(|x| e(&x))?;
        let save_s = t.elapsed().as_secs_f64();
        let (mut loads, mut baselines) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let t = Instant::now();
            let (loaded, _) = load_container(gpu, &path, &unlock, &stream).map_err(|x| e(&x))?;
            stream.synchronize().map_err(|x| e(&x))?;
            loads.push(t.elapsed().as_secs_f64());
            if round == 0 && !same(&stream, &source, &loaded)? {
                return Err("the loaded plaintext differs from what was saved".into());
            }
            drop(loaded);
            let t = Instant::now();
            upload_body_only(gpu, &path, &unlock, &stream).map_err(|x| e(&x))?;
            baselines.push(t.elapsed().as_secs_f64());
        }
        let (load_s, base_s) = (median(loads.clone()), median(baselines.clone()));
        let (load_rate, base_rate) = (gb_s(size, load_s), gb_s(size, base_s));
        say!(
            "load {load_s:.3} s ({load_rate:.1} GB/s); decryption off {base_s:.3} s ({base_rate:.1} GB/s): \
             {:.2}x the baseline (target <= 1.1), baseline {:.0}% of pinned H2D (target >= 50%); saving took {save_s:.3} s",
            load_s / base_s,
            100.0 * base_rate / h2d
        );
        Ok(
            json!({ "bytes": size, "load_median_s": load_s, "baseline_median_s": base_s, "load_gb_s": load_rate,
            "baseline_gb_s": base_rate, "ratio": load_s / base_s, "baseline_share_of_h2d": base_rate / h2d,
            "h2d_gb_s": h2d, "save_s": save_s, "load_times_s": loads, "baseline_times_s": baselines }),
        )
    })();
    let _ = std::fs::remove_file(&path);
    match result {
        Ok(v) => {
            section["load"] = v;
            0
        }
        Err(e) => {
            say!("load: FAILED: {e}");
            section["load"] = json!({ "error": e });
            1
        }
    }
}

/// Whether two device buffers of one length hold the same bytes (compared 64 MiB at a time on
/// the host).
fn same(
    stream: &paraes_gpu::GpuStream,
    a: &DeviceMemory,
    b: &DeviceMemory,
) -> Result<bool, String> {
    if a.len() != b.len() {
        return Ok(false);
    }
    let (mut x, mut y) = (vec![0u8; 64 * MIB], vec![0u8; 64 * MIB]);
    for at in (0..a.len()).step_by(64 * MIB) {
        let len = (64 * MIB).min(a.len() - at);
        stream.synchronize().map_err(|e| e.to_string())?;
        a.read_to_host(stream, at, &mut x[..len])
            .map_err(|e| e.to_string())?;
        b.read_to_host(stream, at, &mut y[..len])
            .map_err(|e| e.to_string())?;
        if x[..len] != y[..len] {
            return Ok(false);
        }
    }
    Ok(true)
}
