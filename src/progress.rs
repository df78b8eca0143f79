//! What a running job shows and what it reports when done: a progress bar for files, a
//! spinner with bytes and rate for pipes (a bar with `--size`), drawn by only one paraes per
//! terminal (the first to take a lock on it: `paraes enc | paraes dec` draws once); and the
//! final summary (`-v`: a line; `--stats json`: one JSON object), both on standard error.

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rustix::fs::FlockOperation;
use rustix::io::Errno;

use crate::plan::Ui;
use crate::units::format_bytes;

/// Inputs at least this large get a progress display (when stderr is a terminal).
const PROGRESS_MIN: u64 = 64 << 20;

/// The progress display of one job.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    /// Why a line for standard output could not be written.
    out_failed: Mutex<Option<anyhow::Error>>,
}

impl Progress {
    /// Starts the display for an input of `size` bytes (`None`: unknown, a pipe), if it is
    /// worth drawing and no other paraes draws on this terminal.
    pub fn start(ui: &Ui, size: Option<u64>) -> Progress {
        let total = size.or(ui.size_hint);
        let worth = total.is_none_or(|len| len >= PROGRESS_MIN);
        let draw = !ui.quiet && worth && std::io::stderr().is_terminal() && own_terminal();
        let bar = if !draw {
            ProgressBar::hidden()
        } else if let Some(total) = total {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bytes}/{total_bytes} {binary_bytes_per_sec} {wide_bar} {eta}",
                )
                .expect("a valid template"),
            );
            bar
        } else {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {elapsed}")
                    .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        };
        Progress {
            bar,
            started: Instant::now(),
            out_failed: Mutex::new(None),
        }
    }

    /// The display of a many-file run: one bar for all `files` (of `size` bytes in all),
    /// with the files done beside the bytes.
    pub fn start_many(ui: &Ui, size: u64, files: usize) -> Progress {
        let draw = !ui.quiet && std::io::stderr().is_terminal() && own_terminal();
        let bar = if draw {
            let bar = ProgressBar::new(size);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} files {bytes}/{total_bytes} {binary_bytes_per_sec} {wide_bar} {eta}",
                )
                .expect("a valid template"),
            );
            bar.set_message(format!("0/{files}"));
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        } else {
            ProgressBar::hidden()
        };
        bar.set_length(size);
        Progress {
            bar,
            started: Instant::now(),
            out_failed: Mutex::new(None),
        }
    }

    /// Bytes of input done so far.
    pub fn set(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Bytes of input done so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// `bytes` more of input done.
    pub fn add(&self, bytes: u64) {
        self.bar.inc(bytes);
    }

    /// Says how many of the `total` files are done.
    pub fn files_done(&self, done: usize, total: usize) {
        self.bar.set_message(format!("{done}/{total}"));
    }

    /// Prints `line` on standard output without tearing the display. Once a line could not
    /// be written (a full disk, a reader that left), the rest are dropped and the failure is
    /// kept for [`Progress::output_failure`].
    pub fn println_out(&self, line: &str) {
        let mut failure = self.out_failed.lock().unwrap_or_else(|e| e.into_inner());
        if failure.is_none() {
            *failure = self.bar.suspend(|| print_out(format!("{line}\n"))).err();
        }
    }

    /// Why standard output could not be written, if a line of [`Progress::println_out`] failed.
    pub fn output_failure(&self) -> Option<anyhow::Error> {
        self.out_failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Prints `line` on standard error without tearing the display.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Clears the display; returns the seconds since the start.
    pub fn finish(self) -> f64 {
        self.bar.finish_and_clear();
        self.started.elapsed().as_secs_f64()
    }
}

/// Writes `text` to standard output: a full disk or a reader that left (`| head`) is an error
/// to report (main ends a broken pipe quietly), never a panic as `print!` makes it.
pub fn print_out(text: impl AsRef<[u8]>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_ref())
        .and_then(|()| out.flush())
        .context("writing standard output failed")
}

/// Takes a lock on the terminal behind stderr, held until this process ends. POSIX record
/// locks belong to a process (not to the shared open file), so of two paraes processes
/// writing to one terminal only the first gets it.
fn own_terminal() -> bool {
    match rustix::fs::fcntl_lock(
        std::io::stderr().as_fd(),
        FlockOperation::NonBlockingLockExclusive,
    ) {
        Ok(()) => true,
        Err(Errno::AGAIN | Errno::ACCESS) => false,
        // A terminal that cannot be locked (opened read-only, say): draw anyway.
        Err(_) => true,
    }
}

/// What a finished job did.
pub struct Summary {
    /// `enc` or `dec`.
    pub command: &'static str,
    /// Bytes read (after a container's header).
    pub bytes_in: u64,
    /// Bytes written (with a container's header), when this process saw them all.
    pub bytes_out: Option<u64>,
    /// Wall time of the data's pass.
    pub seconds: f64,
    /// The engine's name.
    pub engine: String,
    /// Its workers (threads, ranks).
    pub workers: usize,
    /// Where the engine's thread count came from (`engines::threads_from`), for an engine
    /// that takes `--threads`.
    pub threads_from: Option<String>,
    /// The runner: `local` or `mpi`.
    pub runner: &'static str,
    /// A many-file run: files done and failed.
    pub files: Option<FileCount>,
    /// How a file's chunks were read and written, where many were in flight.
    pub io: Option<IoMode>,
    /// The hybrid engine's bytes on each engine (`None` for every other engine).
    pub split: Option<paraes_core::Split>,
}

/// The most memory this process has held in RAM so far (`VmHWM`, Linux), for `--stats json`:
/// README's bound on it is 64 MiB + 8 MiB per worker.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// How a file's chunks were read and written where many were in flight (paraes-files').
pub use paraes_files::IoMode;

/// The files of a many-file run.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileCount {
    /// Files that succeeded.
    pub done: usize,
    /// Files that failed.
    pub failed: usize,
}

impl Summary {
    /// Input bytes per second, when the time is measurable.
    fn bytes_per_second(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.bytes_in as f64 / self.seconds)
    }

    /// Prints the summary as `ui` asks: a line for `-v`, a JSON object for `--stats json`.
    pub fn report(&self, ui: &Ui) {
        if ui.verbose {
            eprintln!(
                "paraes: {}: {} in, {} out in {:.3} s ({}) on {} ({} runner)",
                self.command,
                format_bytes(self.bytes_in),
                self.bytes_out.map_or("-".to_owned(), format_bytes),
                self.seconds,
                self.bytes_per_second()
                    .map_or("-".to_owned(), |rate| format!(
                        "{}/s",
                        format_bytes(rate as u64)
                    )),
                self.engine,
                self.runner
            );
            if let Some(from) = &self.threads_from {
                eprintln!("paraes: {}: thread count set by {from}", self.command);
            }
            if let Some(io) = self.io {
                let (read, write) = io.ends();
                eprintln!(
                    "paraes: {}: {} workers; input read as {read}, output written as {write}{}",
                    self.command,
                    io.workers,
                    if io.records_in_place {
                        "; records sealed or opened in place"
                    } else {
                        ""
                    }
                );
            }
            if let Some(split) = &self.split {
                eprintln!(
                    "paraes: {}: split: {} on the CPU, {} on the GPU{}",
                    self.command,
                    format_bytes(split.cpu_bytes),
                    format_bytes(split.gpu_bytes),
                    if split.gpu_failure.is_some() {
                        " (until it failed)"
                    } else {
                        ""
                    }
                );
            }
            if let Some(files) = self.files {
                eprintln!(
                    "paraes: {}: {} file(s) done, {} failed",
                    self.command, files.done, files.failed
                );
            }
        }
        if ui.stats_json {
            let json = serde_json::json!({
                "command": self.command,
                "bytes_in": self.bytes_in,
                "bytes_out": self.bytes_out,
                "seconds": self.seconds,
                "bytes_per_second": self.bytes_per_second(),
                "engine": self.engine,
                "workers": self.workers,
                "runner": self.runner,
                "threads_from": self.threads_from,
                "files": self.files.map(|f| f.done + f.failed),
                "files_failed": self.files.map(|f| f.failed),
                "peak_rss_bytes": peak_rss_bytes(),
                "split": self.split.as_ref().map(|split| serde_json::json!({
                    "cpu_bytes": split.cpu_bytes,
                    "gpu_bytes": split.gpu_bytes,
                    "gpu_failure": split.gpu_failure,
                })),
                "io": self.io.map(|io| {
                    let (read, write) = io.ends();
                    serde_json::json!({
                        "read": read,
                        "write": write,
                        "workers": io.workers,
                        "records_in_place": io.records_in_place,
                    })
                }),
            });
            eprintln!("{json}");
        }
    }
}
