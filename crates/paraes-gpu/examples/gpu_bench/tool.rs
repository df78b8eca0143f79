//! The paraes tool end to end (`--paraes PATH`): `paraes enc` in container mode on files in
//! /dev/shm, GPU beside CPU, each output decrypted and compared, then the GPU's settings
//! A/B'd through the tool.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::args::Args;
use crate::common::{free_bytes, gb_s, median, random, GIB, MIB};
use crate::on_standin;

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
pub(crate) fn tool_table(paraes: &Path, args: &Args, saved: &mut dyn FnMut(&Value)) -> Value {
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
