//! `paraes bench`: checks the options and the output paths, lists the engines, runs the
//! measurements of paraes-bench and the openssl reference with a progress bar, and writes the
//! table, JSON, CSV and plot, each saying what measured on what machine; or, with --from-json,
//! summarises a earlier run.

use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use paraes_bench::machine::{load_average, utc_now};
use paraes_bench::mode::GCM_NOTE;
use paraes_bench::openssl::{self, OpensslError};
use paraes_bench::report::{self, format_size, Row};
use paraes_bench::{
    fill_speedups, measure_e2e, measure_engine, measure_gcm, plot, summary, BenchMode, Document,
    Machine, Paraes, Stats, Timing,
};
use paraes_core::pipeline::DEFAULT_CHUNK_SIZE;
use paraes_core::{AesImpl, Engine, Key};

use crate::cli::BenchArgs;
use crate::engines::{self, BenchEngine};
use crate::usage::UsageError;

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

/// A usage error of `bench` (exit status 2).
fn usage(message: String) -> anyhow::Error {
    anyhow::Error::new(UsageError {
        message,
        command: "bench",
    })
}

fn parse_modes(list: &str) -> Result<Vec<BenchMode>> {
    let mut modes = Vec::new();
    for item in list.split(',') {
        let mode: BenchMode = item.parse().map_err(|e| usage(format!("--mode: {e}")))?;
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

/// The key sizes of `mode` among `bits`: all of them, except 192 for gcm (format v3's body,
/// C2SP Cobblestone-128 and -256, has no 192-bit key).
fn mode_bits(mode: BenchMode, bits: &[u32]) -> Vec<u32> {
    bits.iter()
        .copied()
        .filter(|&b| mode.has_key_bits(b))
        .collect()
}

/// gcm with `--bits`: 192 is skipped for gcm (returns the note saying so) while gcm keeps 128
/// or 256; a `--bits` list that leaves gcm no key size is a usage error.
fn check_gcm_bits(modes: &[BenchMode], bits: &[u32]) -> Result<Option<String>> {
    if !modes.contains(&BenchMode::Gcm) || !bits.contains(&192) {
        return Ok(None);
    }
    if mode_bits(BenchMode::Gcm, bits).is_empty() {
        return Err(usage(
            "--mode gcm has 128 and 256-bit keys only (format v3's body, C2SP Cobblestone), \
             and --bits 192 leaves it nothing to measure: add 128 or 256 to --bits, or take gcm \
             out of --mode"
                .to_string(),
        ));
    }
    let others: Vec<&str> = modes
        .iter()
        .filter(|m| **m != BenchMode::Gcm)
        .map(|m| m.lower())
        .collect();
    let rest = if others.is_empty() {
        String::new()
    } else {
        let verb = if others.len() == 1 { "is" } else { "are" };
        format!(" ({} {verb} measured at 192)", others.join(" and "))
    };
    Ok(Some(format!(
        "gcm: no 192-bit rows: GCM has 128 and 256-bit keys only{rest}"
    )))
}

/// A fixed key of `bits` (benchmarks need no secret).
fn bench_key(bits: u32) -> Key {
    let bytes: Vec<u8> = (0u8..32)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    Key::new(&bytes[..bits as usize / 8]).expect("16, 24 or 32 bytes")
}

/// Whether and how the openssl reference is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Baseline {
    /// `--baseline openssl`: fail without openssl.
    Required,
    /// The default of a full run: take it when openssl is installed.
    IfInstalled,
    /// `--baseline none`, or the default of `--quick`.
    Off,
}

/// The `--impl` list: the CPU AES implementations to measure (empty: the default). Refused when
/// `--backend` has no cpu engine, or where this CPU lacks one.
fn parse_impls(list: &[String], backends: &[&str], backend_arg: &str) -> Result<Vec<AesImpl>> {
    if list.is_empty() {
        return Ok(Vec::new());
    }
    if !backends.contains(&"cpu") {
        return Err(usage(format!(
            "--impl picks the CPU's AES implementation, but --backend {backend_arg} measures no \
             cpu engine: add cpu to --backend or drop --impl"
        )));
    }
    let available: Vec<&str> = AesImpl::available().iter().map(|i| i.name()).collect();
    let mut impls = Vec::new();
    for item in list.iter().map(|i| i.trim()) {
        let chosen = if item.eq_ignore_ascii_case("all") {
            AesImpl::available()
        } else {
            let imp = AesImpl::from_name(item).ok_or_else(|| {
                usage(format!(
                    "--impl: unknown AES implementation '{item}': choose aesni, vaes256, \
                     vaes512, portable or all"
                ))
            })?;
            if !imp.is_available() {
                let lacks = if cfg!(target_arch = "x86_64") {
                    format!("lacks {}", imp.missing_features().join(", "))
                } else {
                    "is not an x86-64 CPU".to_string()
                };
                return Err(usage(format!(
                    "--impl {imp}: this CPU {lacks}: use {}",
                    available.join(", ")
                )));
            }
            vec![imp]
        };
        for imp in chosen {
            if !impls.contains(&imp) {
                impls.push(imp);
            }
        }
    }
    Ok(impls)
}

/// Fails unless `path` (of option `flag`) can be written, before anything is measured: an
/// existing file is opened for writing without truncating it, a new one is created and removed
/// again, so a failed check leaves nothing behind.
fn check_output(flag: &str, path: &Path) -> Result<()> {
    let existed = path.symlink_metadata().is_ok();
    let opened = if existed {
        OpenOptions::new().write(true).open(path)
    } else {
        OpenOptions::new().write(true).create_new(true).open(path)
    };
    match opened {
        Ok(file) => {
            drop(file);
            if !existed {
                std::fs::remove_file(path).with_context(|| {
                    format!("{flag}: could not remove the test file {}", path.display())
                })?;
            }
            Ok(())
        }
        Err(e) => bail!(
            "{flag}: cannot write {} ({e}): choose a path in a writable folder; nothing was \
             measured",
            path.display()
        ),
    }
}

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
    print!("{}", summary::markdown(&doc, 4));
    if let Some(out) = &args.csv {
        write_file(out, &doc.csv())?;
    }
    if let Some(out) = &args.plot {
        plot::svg(&doc.rows, out).map_err(|e| anyhow!(e))?;
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
    write_reports(
        args,
        &choices,
        &doc,
        &present,
        &absent,
        openssl_version.as_deref(),
    )
}

/// What `bench`'s options ask for, checked (usage errors exit 2).
struct Choices {
    modes: Vec<BenchMode>,
    bits: Vec<u32>,
    /// Why gcm has no 192-bit rows, when 192 was asked for beside other sizes.
    gcm_192_note: Option<String>,
    sizes: Vec<usize>,
    names: Vec<&'static str>,
    impls: Vec<AesImpl>,
    baseline: Baseline,
    timing: Timing,
    json_to_stdout: bool,
}

impl Choices {
    fn from_args(args: &BenchArgs) -> Result<Self> {
        let modes = parse_modes(&args.mode)?;
        let bits = parse_bits(&args.bits)?;
        let gcm_192_note = check_gcm_bits(&modes, &bits)?;
        let default_sizes = if args.quick {
            QUICK_SIZES
        } else {
            DEFAULT_SIZES
        };
        let sizes =
            paraes_bench::parse_sizes(args.sizes.as_deref().unwrap_or(default_sizes), |text| {
                crate::units::parse_size(text).map(|n| n as usize)
            })
            .map_err(|e| usage(format!("--sizes: {e}")))?;
        if modes.contains(&BenchMode::Ecb) {
            if let Some(bad) = sizes.iter().find(|s| !s.is_multiple_of(16)) {
                return Err(usage(format!("ECB works on whole 16-byte blocks, but --sizes has {bad} bytes: use multiples of 16")));
            }
        }
        let names = engines::bench_engine_names(&args.backend)?;
        let impls = parse_impls(&args.aes_impl, &names, &args.backend)?;
        // clap accepts only "openssl" and "none".
        let baseline = match args.baseline.as_deref() {
            Some("openssl") => Baseline::Required,
            Some(_) => Baseline::Off,
            None if args.quick => Baseline::Off,
            None => Baseline::IfInstalled,
        };
        let mut timing = if args.quick {
            Timing::QUICK
        } else {
            Timing::FULL
        };
        if let Some(repeat) = args.repeat {
            timing.repeats = repeat as usize;
        }
        let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
        for (flag, path) in [
            ("--json", &args.json),
            ("--csv", &args.csv),
            ("--plot", &args.plot),
        ] {
            match path {
                Some(path) if !(flag == "--json" && json_to_stdout) => check_output(flag, path)?,
                _ => {}
            }
        }
        Ok(Choices {
            modes,
            bits,
            gcm_192_note,
            sizes,
            names,
            impls,
            baseline,
            timing,
            json_to_stdout,
        })
    }
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

/// The measurements of one run: which engines measure which mode, sizes, and the baseline.
struct Work<'a> {
    choices: &'a Choices,
    present: &'a [(&'a str, &'a str, &'a dyn Engine)],
    /// Engines that model another machine (no gcm rows: a GCM body's tags run on this host).
    modelled: Vec<&'a str>,
    e2e_sizes: Vec<usize>,
    openssl_version: Option<&'a str>,
    /// openssl runs as many processes as each CPU engine has threads.
    openssl_threads: Vec<usize>,
}

impl<'a> Work<'a> {
    fn new(
        args: &BenchArgs,
        choices: &'a Choices,
        present: &'a [(&'a str, &'a str, &'a dyn Engine)],
        openssl_version: Option<&'a str>,
    ) -> Self {
        // An engine that models another machine (the simulator) times the engine's CTR in that
        // machine's time, but a GCM body's tags run on this host: no time of one machine covers
        // a gcm row, so such engines have none.
        let modelled: Vec<&str> = present
            .iter()
            .filter(|(.., engine)| engine.modelled().is_some())
            .map(|(label, ..)| *label)
            .collect();
        if choices.modes.contains(&BenchMode::Gcm) {
            for label in &modelled {
                eprintln!(
                    "paraes: bench: {label}: no gcm rows: it models another machine's AES, while \
                     a GCM body's tags run on this host"
                );
            }
        }
        let e2e_sizes: Vec<usize> = if args.e2e {
            choices
                .sizes
                .iter()
                .copied()
                .filter(|&s| s >= E2E_MIN)
                .collect()
        } else {
            Vec::new()
        };
        if args.e2e && e2e_sizes.is_empty() {
            eprintln!("paraes: bench: --e2e: no size of at least 1 MiB, so no whole-pipeline rows");
        }
        let mut openssl_threads: Vec<usize> = present
            .iter()
            .filter(|(label, ..)| *label == report::BASELINE_ENGINE)
            .map(|(.., engine)| engine.workers())
            .collect();
        openssl_threads.sort_unstable();
        openssl_threads.dedup();
        if openssl_threads.is_empty() {
            openssl_threads.push(1);
        }
        Work {
            choices,
            present,
            modelled,
            e2e_sizes,
            openssl_version,
            openssl_threads,
        }
    }

    /// The engines that measure `mode`.
    fn engines_for(&self, mode: BenchMode) -> Vec<(&'a str, &'a str, &'a dyn Engine)> {
        self.present
            .iter()
            .copied()
            .filter(|(label, ..)| mode != BenchMode::Gcm || !self.modelled.contains(label))
            .collect()
    }

    /// The whole-file sizes of `mode` at `bits`: `paraes enc` of a v3 container, whose body is
    /// AES-CTR with GHASH at 128 or 256 bits, listed under CTR only.
    fn e2e_sizes(&self, mode: BenchMode, bits: u32) -> &[usize] {
        if mode == BenchMode::Ctr && bits != 192 {
            &self.e2e_sizes
        } else {
            &[]
        }
    }

    /// Every row of the run, with a progress bar on a terminal.
    fn measure(&self) -> Result<Vec<Row>> {
        let choices = self.choices;
        let openssl_steps = if self.openssl_version.is_some() {
            choices.sizes.len() * self.openssl_threads.len()
        } else {
            0
        };
        let steps: usize = choices
            .modes
            .iter()
            .flat_map(|&mode| {
                mode_bits(mode, &choices.bits)
                    .into_iter()
                    .map(move |b| (mode, b))
            })
            .map(|(mode, bits)| {
                self.engines_for(mode).len()
                    * (choices.sizes.len() + self.e2e_sizes(mode, bits).len())
                    + openssl_steps
            })
            .sum();
        let bar = progress_bar(steps);
        let mut rows = Vec::new();
        for &mode in &choices.modes {
            for bits in mode_bits(mode, &choices.bits) {
                self.engine_rows(mode, bits, &bar, &mut rows)?;
                // The reference, after the engines so that they do not share the CPU with it.
                if let Some(version) = self.openssl_version {
                    self.openssl_rows(version, mode, bits, &bar, &mut rows)?;
                }
            }
        }
        bar.finish_and_clear();
        fill_speedups(&mut rows);
        Ok(rows)
    }

    /// The engines' rows of `mode` at `bits`: every size, then the whole-file sizes.
    fn engine_rows(
        &self,
        mode: BenchMode,
        bits: u32,
        bar: &ProgressBar,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        let key = bench_key(bits);
        let expanded = key.expand();
        let cipher = mode.cipher(bits);
        let timing = &self.choices.timing;
        let runs = self.choices.sizes.iter().map(|&size| (size, false));
        let e2e_runs = self.e2e_sizes(mode, bits).iter().map(|&size| (size, true));
        for (size, e2e) in runs.chain(e2e_runs) {
            for (label, implementation, engine) in self.engines_for(mode) {
                let label = if e2e {
                    format!("{label}-e2e")
                } else {
                    label.to_string()
                };
                bar.set_message(format!(
                    "{label} {implementation} x{} {cipher} {}",
                    engine.workers(),
                    format_size(size as u64)
                ));
                let before = engine.modelled();
                let stats = if e2e {
                    measure_e2e(engine, &key, size, DEFAULT_CHUNK_SIZE, timing)
                        .map_err(|e| anyhow!("{label} on {cipher}: {e}"))?
                } else if let Some(engine_mode) = mode.engine_mode() {
                    measure_engine(engine, engine_mode, &expanded, size, timing)
                        .with_context(|| format!("{} on {cipher}", engine.name()))?
                } else {
                    // gcm: format v3's body sealed in memory as the pipeline seals it, in
                    // `paraes enc`'s pipeline chunks, CTR on the engine.
                    measure_gcm(engine, &key, size, DEFAULT_CHUNK_SIZE, timing)
                        .map_err(|e| anyhow!("{} on {cipher}: {e}", engine.name()))?
                };
                let mut row = Row::new(
                    &label,
                    implementation,
                    mode,
                    bits,
                    size as u64,
                    engine.workers(),
                    stats,
                );
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
        Ok(())
    }

    /// openssl's rows of `mode` at `bits`: every size and process count.
    fn openssl_rows(
        &self,
        version: &str,
        mode: BenchMode,
        bits: u32,
        bar: &ProgressBar,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        let cipher = mode.cipher(bits);
        for &size in &self.choices.sizes {
            for &processes in &self.openssl_threads {
                bar.set_message(format!(
                    "openssl x{processes} {cipher} {}",
                    format_size(size as u64)
                ));
                match openssl::speed(mode, bits, size, processes, OPENSSL_SECONDS) {
                    Ok(rate) => {
                        let seconds = size as f64 / rate;
                        let stats = Stats {
                            median: seconds,
                            min: seconds,
                            max: seconds,
                        };
                        rows.push(Row::new(
                            report::OPENSSL_ENGINE,
                            version,
                            mode,
                            bits,
                            size as u64,
                            processes,
                            stats,
                        ));
                    }
                    Err(e) if self.choices.baseline == Baseline::Required => {
                        bail!("--baseline openssl: {e}")
                    }
                    Err(e) => bar.suspend(|| eprintln!("paraes: bench: {e}")),
                }
                bar.inc(1);
            }
        }
        Ok(())
    }
}

/// A progress bar of `steps` on a terminal, hidden otherwise.
fn progress_bar(steps: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() || steps == 0 {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(steps as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    bar
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
) -> Result<()> {
    let mut text = String::new();
    for (label, implementation, engine) in present {
        text.push_str(&format!(
            "{label} {implementation} x{}: {}\n",
            engine.workers(),
            engine.name()
        ));
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
        print!("{}", doc.json());
        eprint!("{text}");
    } else {
        print!("{text}");
        if let Some(path) = &args.json {
            write_file(path, &doc.json())?;
        }
    }
    if let Some(path) = &args.csv {
        write_file(path, &doc.csv())?;
    }
    if let Some(path) = &args.plot {
        plot::svg(&doc.rows, path).map_err(|e| anyhow!(e))?;
    }
    Ok(())
}

fn write_file(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_message(err: anyhow::Error) -> String {
        err.downcast::<UsageError>().expect("a usage error").message
    }

    #[test]
    fn modes_take_lists_with_gcm() {
        assert_eq!(
            parse_modes("ctr,ecb,gcm").unwrap(),
            [BenchMode::Ctr, BenchMode::Ecb, BenchMode::Gcm]
        );
        assert_eq!(parse_modes("GCM,gcm").unwrap(), [BenchMode::Gcm]);
        let message = usage_message(parse_modes("ctr,cbc").unwrap_err());
        assert!(message.contains("'cbc' is not a mode"), "{message}");
        assert!(message.contains("gcm"), "{message}");
    }

    /// 192 is skipped for gcm with a note while gcm keeps a key size, and refused when it
    /// would leave gcm none.
    #[test]
    fn gcm_skips_192_bits_or_refuses_a_list_of_192_alone() {
        let (ctr, gcm) = (BenchMode::Ctr, BenchMode::Gcm);
        assert_eq!(mode_bits(gcm, &[128, 192, 256]), [128, 256]);
        assert_eq!(mode_bits(ctr, &[128, 192, 256]), [128, 192, 256]);
        assert_eq!(check_gcm_bits(&[ctr], &[192]).unwrap(), None);
        assert_eq!(check_gcm_bits(&[gcm], &[128, 256]).unwrap(), None);
        let note = check_gcm_bits(&[ctr, gcm], &[192, 256]).unwrap().unwrap();
        assert!(note.contains("no 192-bit rows") && note.contains("(ctr is measured at 192)"));
        let note = check_gcm_bits(&[gcm], &[128, 192]).unwrap().unwrap();
        assert!(!note.contains("measured at 192"), "{note}");
        for modes in [&[gcm][..], &[ctr, gcm]] {
            let message = usage_message(check_gcm_bits(modes, &[192]).unwrap_err());
            assert!(message.contains("128 and 256-bit keys only"), "{message}");
            assert!(message.contains("--bits"), "{message}");
        }
    }
}
