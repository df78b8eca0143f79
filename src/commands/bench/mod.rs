//! `paraes bench`: checks the options and the output paths, lists the engines, runs the
//! measurements of paraes-bench and the openssl reference with a progress bar, and writes the
//! table, JSON, CSV and plot, each saying what measured on what machine; or, with --from-json,
//! summarises a earlier run.

use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use paraes_bench::bounds;
use paraes_bench::machine::{load_average, utc_now};
use paraes_bench::measure::{e2e_op, engine_op, gcm_op, EngineBuffer, GcmBody};
use paraes_bench::mode::GCM_NOTE;
use paraes_bench::openssl::{self, OpensslError};
use paraes_bench::report::{self, format_size, Row};
use paraes_bench::timing::{time_interleaved, Op};
use paraes_bench::{
    fill_speedups, plot, summary, BenchMode, Document, Machine, Paraes, Stats, Timing,
};
use paraes_core::pipeline::{self, DEFAULT_CHUNK_SIZE};
use paraes_core::{AesImpl, Engine, Key};
use paraes_files::{Output, OutputOptions};

use crate::cli::BenchArgs;
use crate::engines::{self, BenchEngine};
use crate::progress::print_out;
use crate::usage::UsageError;

mod choices;
mod work;

use choices::*;
use work::*;

/// Sizes without --sizes.
const DEFAULT_SIZES: &str = "1KiB..256MiB";
/// Sizes with --quick and without --sizes.
const QUICK_SIZES: &str = "1KiB..1MiB";
/// Smallest file the --e2e rows use.
const E2E_MIN: usize = 1 << 20;
/// Seconds of each `openssl speed` measurement (`-seconds`; one per size, cipher and thread
/// count).
const OPENSSL_SECONDS: u32 = 1;
/// The commit the binary was built from (build.rs).
const COMMIT: &str = env!("PARAES_GIT_COMMIT");

/// The command line of this run, for the documents (arguments with spaces quoted).
fn command_line() -> String {
    let mut words = vec!["paraes".to_string()];
    for arg in std::env::args_os().skip(1) {
        let arg = arg.to_string_lossy().into_owned();
        if arg.is_empty() || arg.contains(char::is_whitespace) {
            words.push(format!("'{arg}'"));
        } else {
            words.push(arg);
        }
    }
    words.join(" ")
}

/// `paraes bench --from-json FILE`: the markdown summary of an earlier run; --plot and --csv
/// redraw and rewrite it.
fn from_json(args: &BenchArgs, path: &Path) -> Result<()> {
    for (flag, out) in [("--plot", &args.plot), ("--csv", &args.csv)] {
        if let Some(out) = out {
            check_output(flag, out)?;
        }
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--from-json: cannot read {}", path.display()))?;
    let doc = Document::from_json(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    print_out(summary::markdown(&doc, 4))?;
    if let Some(out) = &args.csv {
        write_file("--csv", out, &doc.csv())?;
    }
    if let Some(out) = &args.plot {
        write_file(
            "--plot",
            out,
            &plot::svg(&doc.rows).map_err(|e| anyhow!(e))?,
        )?;
    }
    Ok(())
}

/// `paraes bench`.
pub fn run(args: &BenchArgs) -> Result<()> {
    if let Some(path) = &args.from_json {
        return from_json(args, path);
    }
    let date = utc_now();
    let mut machine = Machine::detect();
    let choices = Choices::from_args(args)?;
    let openssl_version = openssl_version(choices.baseline)?;
    // Built from the same settings, by the same registry, as a job's engine.
    let settings = crate::plan::engine_settings(args.threads, &args.gpu, &args.sim);
    let engines = engines::bench_engines(&choices.names, &settings, &choices.impls)?;
    let present: Vec<(&str, &str, &dyn Engine)> = engines
        .iter()
        .filter_map(|e| match e {
            BenchEngine::Present {
                label,
                implementation,
                engine,
            } => Some((*label, implementation.as_str(), engine.as_ref())),
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
    if let Some(note) = &choices.gcm_192_note {
        eprintln!("paraes: bench: {note}");
    }
    if let Some((_, _, gpu)) = present.iter().find(|(label, ..)| *label == "gpu") {
        machine.gpu = Some(gpu.name());
    }
    let work = Work::new(args, &choices, &present, openssl_version.as_deref());
    let rows = work.measure()?;
    machine.load_after = load_average();
    let doc = Document {
        paraes: Paraes {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: COMMIT.to_string(),
            date,
            command: command_line(),
        },
        machine,
        rows,
    };
    let cpu = engines::EngineChoice {
        entry: engines::find("cpu").expect("the CPU engine is registered"),
        settings,
    };
    write_reports(
        args,
        &choices,
        &doc,
        &present,
        &absent,
        openssl_version.as_deref(),
        engines::threads_from(&cpu).as_deref(),
    )
}

/// The openssl version for the baseline rows, if they run.
fn openssl_version(baseline: Baseline) -> Result<Option<String>> {
    Ok(match baseline {
        Baseline::Off => None,
        _ => match openssl::version() {
            Ok(version) => Some(version),
            Err(e) if baseline == Baseline::Required => {
                bail!("--baseline openssl: {e}, or leave out --baseline")
            }
            Err(OpensslError::Missing) => {
                eprintln!("paraes: bench: openssl is not installed: no baseline rows");
                None
            }
            Err(e) => {
                eprintln!("paraes: bench: no baseline rows: {e}");
                None
            }
        },
    })
}

/// The table on standard output (standard error when the JSON goes there), and the JSON, CSV
/// and plot files asked for.
fn write_reports(
    args: &BenchArgs,
    choices: &Choices,
    doc: &Document,
    present: &[(&str, &str, &dyn Engine)],
    absent: &[(String, String)],
    openssl_version: Option<&str>,
    threads_from: Option<&str>,
) -> Result<()> {
    let mut text = String::new();
    for (label, implementation, engine) in present {
        text.push_str(&format!(
            "{label} {implementation} x{}: {}\n",
            engine.workers(),
            engine.name()
        ));
    }
    if let Some(from) = threads_from {
        text.push_str(&format!("CPU thread count set by {from}\n"));
    }
    if let Some(version) = openssl_version {
        text.push_str(&format!(
            "openssl: {version}, `openssl speed -evp` for {OPENSSL_SECONDS} s per cell, \
             -multi N for N processes\n"
        ));
    }
    if choices.modes.contains(&BenchMode::Gcm) {
        text.push_str(&format!("{GCM_NOTE}\n"));
        if let Some(note) = &choices.gcm_192_note {
            text.push_str(&format!("{note}\n"));
        }
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&report::table(&doc.rows, absent));
    let beside = report::baseline_table(&doc.rows);
    if !beside.is_empty() {
        text.push_str(&format!("\nbaseline: paraes beside openssl\n\n{beside}"));
    }
    if choices.json_to_stdout {
        print_out(doc.json())?;
        eprint!("{text}");
    } else {
        print_out(&text)?;
        if let Some(path) = &args.json {
            write_file("--json", path, &doc.json())?;
        }
    }
    if let Some(path) = &args.csv {
        write_file("--csv", path, &doc.csv())?;
    }
    if let Some(path) = &args.plot {
        write_file(
            "--plot",
            path,
            &plot::svg(&doc.rows).map_err(|e| anyhow!(e))?,
        )?;
    }
    Ok(())
}

/// Writes the report `contents` to `path` (of option `flag`) as every output of paraes is
/// written: through its links as `-o` follows them (one another user planted in a shared
/// directory refused), and appearing whole or not at all (an existing file replaced).
fn write_file(flag: &str, path: &Path, contents: &str) -> Result<()> {
    let path = crate::plan::output_through_links(flag, path)?;
    let options = OutputOptions {
        replace: true,
        binary: false,
        ..OutputOptions::default()
    };
    let mut output = Output::create(Some(&path), &options)?;
    output
        .writer()
        .write_all(contents.as_bytes())
        .with_context(|| format!("{flag}: cannot write {}", path.display()))?;
    Ok(output.commit()?)
}
