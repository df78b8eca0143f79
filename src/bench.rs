//! `paraes bench`: checks the options, lists the engines, runs the measurements of paraes-bench
//! with a progress bar, and writes the table, JSON, CSV and plot.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use paraes_bench::report::{self, format_size, Row};
use paraes_bench::{fill_speedups, measure_e2e, measure_engine, openssl, plot, Timing};
use paraes_core::pipeline::DEFAULT_CHUNK_SIZE;
use paraes_core::{Engine, Key, Mode};

use crate::cli::BenchArgs;
use crate::engines::{self, BenchEngine};
use crate::plan::UsageError;

/// Sizes without --sizes.
const DEFAULT_SIZES: &str = "1KiB..256MiB";
/// Sizes with --quick and without --sizes.
const QUICK_SIZES: &str = "1KiB..1MiB";
/// Smallest file the --e2e rows use.
const E2E_MIN: usize = 1 << 20;
/// Buffer size of the --baseline openssl comparison (`openssl speed -bytes`).
const OPENSSL_BYTES: usize = 16 << 10;

/// A usage error of `bench` (exit status 2).
fn usage(message: String) -> anyhow::Error {
    anyhow::Error::new(UsageError {
        message,
        command: "bench",
    })
}

fn parse_modes(list: &str) -> Result<Vec<Mode>> {
    let mut modes = Vec::new();
    for item in list.split(',') {
        let mode: Mode = item.parse().map_err(|e| usage(format!("--mode: {e}")))?;
        if !modes.contains(&mode) {
            modes.push(mode);
        }
    }
    Ok(modes)
}

fn parse_bits(list: &str) -> Result<Vec<u32>> {
    let mut all = Vec::new();
    for item in list.split(',').map(str::trim) {
        match item.parse::<u32>() {
            Ok(bits @ (128 | 192 | 256)) if !all.contains(&bits) => all.push(bits),
            Ok(128 | 192 | 256) => {}
            _ => {
                return Err(usage(format!(
                    "--bits takes 128, 192 or 256 (comma-separated), not '{item}'"
                )))
            }
        }
    }
    Ok(all)
}

/// A fixed key of `bits` (benchmarks need no secret).
fn bench_key(bits: u32) -> Key {
    let bytes: Vec<u8> = (0u8..32)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    Key::new(&bytes[..bits as usize / 8]).expect("16, 24 or 32 bytes")
}

/// `paraes bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    let modes = parse_modes(&args.mode)?;
    let bits = parse_bits(&args.bits)?;
    let default_sizes = if args.quick {
        QUICK_SIZES
    } else {
        DEFAULT_SIZES
    };
    let sizes = paraes_bench::parse_sizes(args.sizes.as_deref().unwrap_or(default_sizes), |text| {
        crate::units::parse_size(text).map(|n| n as usize)
    })
    .map_err(|e| usage(format!("--sizes: {e}")))?;
    if modes.contains(&Mode::Ecb) {
        if let Some(bad) = sizes.iter().find(|s| !s.is_multiple_of(16)) {
            return Err(usage(format!("ECB works on whole 16-byte blocks, but --sizes has {bad} bytes: use multiples of 16")));
        }
    }
    // clap accepts only "openssl".
    let openssl_baseline = args.baseline.is_some();
    let mut timing = if args.quick {
        Timing::QUICK
    } else {
        Timing::FULL
    };
    if let Some(repeat) = args.repeat {
        timing.repeats = repeat as usize;
    }
    let engines = engines::bench_engines(
        &args.backend,
        args.threads.map(|t| t as usize),
        &args.engine,
    )?;
    let present: Vec<(&str, &dyn Engine)> = engines
        .iter()
        .filter_map(|e| match e {
            BenchEngine::Present { label, engine } => Some((*label, engine.as_ref())),
            BenchEngine::Absent { .. } => None,
        })
        .collect();
    let absent: Vec<(String, String)> = engines
        .iter()
        .filter_map(|e| match e {
            BenchEngine::Absent { label, reason } => Some((label.to_string(), reason.clone())),
            BenchEngine::Present { .. } => None,
        })
        .collect();
    for (label, reason) in &absent {
        eprintln!("paraes: bench: {label}: absent: {reason}");
    }
    let e2e_sizes: Vec<usize> = if args.e2e {
        sizes.iter().copied().filter(|&s| s >= E2E_MIN).collect()
    } else {
        Vec::new()
    };
    if args.e2e && e2e_sizes.is_empty() {
        eprintln!("paraes: bench: --e2e: no size of at least 1 MiB, so no whole-pipeline rows");
    }

    let steps = modes.len() * bits.len() * present.len() * (sizes.len() + e2e_sizes.len());
    let bar = if std::io::stderr().is_terminal() && steps > 0 {
        let bar = ProgressBar::new(steps as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
            )
            .expect("valid template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };

    let mut rows = Vec::new();
    for &mode in &modes {
        for &bits in &bits {
            let key = bench_key(bits);
            let expanded = key.expand();
            let cipher = format!("AES-{bits}-{mode}");
            let runs = sizes.iter().map(|&size| (size, false));
            for (size, e2e) in runs.chain(e2e_sizes.iter().map(|&size| (size, true))) {
                for &(label, engine) in &present {
                    let label = if e2e {
                        format!("{label}-e2e")
                    } else {
                        label.to_string()
                    };
                    bar.set_message(format!(
                        "{label} x{} {cipher} {}",
                        engine.workers(),
                        format_size(size as u64)
                    ));
                    let before = engine.modelled();
                    let stats = if e2e {
                        measure_e2e(engine, mode, &key, size, DEFAULT_CHUNK_SIZE, &timing)
                            .map_err(|e| anyhow!("{label} on {cipher}: {e}"))?
                    } else {
                        measure_engine(engine, mode, &expanded, size, &timing)
                            .with_context(|| format!("{} on {cipher}", engine.name()))?
                    };
                    let mut row =
                        Row::new(&label, mode, bits, size as u64, engine.workers(), stats);
                    // A simulator also reports the modelled machine's time for one buffer.
                    if let (Some(before), Some(after)) = (before, engine.modelled()) {
                        let work = after.since(&before);
                        if work.bytes > 0 {
                            row.sim_seconds = Some(work.seconds * size as f64 / work.bytes as f64);
                            row.sim_gbps = Some(work.gbps());
                        }
                    }
                    rows.push(row);
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    fill_speedups(&mut rows);

    let mut text = String::new();
    for (label, engine) in &present {
        text.push_str(&format!(
            "{label} x{}: {}\n",
            engine.workers(),
            engine.name()
        ));
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&report::table(&rows, &absent));
    if openssl_baseline {
        text.push_str(&openssl_lines(&modes, &bits, &rows, &present, &timing)?);
    }

    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    if json_to_stdout {
        print!("{}", report::json(&rows));
        eprint!("{text}");
    } else {
        print!("{text}");
        if let Some(path) = &args.json {
            write_file(path, &report::json(&rows))?;
        }
    }
    if let Some(path) = &args.csv {
        write_file(path, &report::csv(&rows))?;
    }
    if let Some(path) = &args.plot {
        plot::svg(&rows, path).map_err(|e| anyhow!(e))?;
    }
    Ok(())
}

/// `openssl speed -evp` for each cipher at 16 KiB, beside the single-thread CPU engine at the
/// same size (measured now if the sweep did not include 16 KiB).
fn openssl_lines(
    modes: &[Mode],
    bits: &[u32],
    rows: &[Row],
    present: &[(&str, &dyn Engine)],
    timing: &Timing,
) -> Result<String> {
    let mut text = format!(
        "\nbaseline: openssl speed -evp, {} buffers, 1 second each, one thread\n",
        format_size(OPENSSL_BYTES as u64)
    );
    let single = present
        .iter()
        .find(|(label, engine)| *label == report::BASELINE_ENGINE && engine.workers() == 1);
    for &mode in modes {
        for &b in bits {
            let cipher = openssl::cipher_name(mode, b);
            let theirs = match openssl::speed(mode, b, OPENSSL_BYTES, 1) {
                Ok(gb) => gb,
                Err(e) => {
                    eprintln!("paraes: bench: {e}");
                    text.push_str(&format!("| {cipher} | openssl: {e} |\n"));
                    continue;
                }
            };
            let ours = rows
                .iter()
                .find(|r| {
                    r.engine == report::BASELINE_ENGINE
                        && r.threads == 1
                        && r.mode == report::mode_name(mode)
                        && r.bits == b
                        && r.bytes == OPENSSL_BYTES as u64
                })
                .map(|r| r.gb_per_s);
            let ours = match (ours, single) {
                (Some(gb), _) => Some(gb),
                (None, Some((_, engine))) => {
                    let key = bench_key(b).expand();
                    let stats = measure_engine(*engine, mode, &key, OPENSSL_BYTES, timing)?;
                    Some(OPENSSL_BYTES as f64 / stats.median / 1e9)
                }
                (None, None) => None,
            };
            match ours {
                Some(ours) => text.push_str(&format!(
                    "| {cipher} | openssl {theirs:.2} GB/s | paraes cpu x1 {ours:.2} GB/s | paraes / openssl {:.2}x |\n",
                    ours / theirs
                )),
                None => text.push_str(&format!(
                    "| {cipher} | openssl {theirs:.2} GB/s | (no cpu engine measured) |\n"
                )),
            }
        }
    }
    Ok(text)
}

fn write_file(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}
