//! The options of `bench` as clap parses them (moved out of `cli.rs`, which holds every other
//! subcommand's, to keep that file short).

use std::path::PathBuf;

use clap::Args;

use super::{GpuArgs, SimArgs};

/// The options of `bench`. The lists are checked by `bench.rs`, as usage errors.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Engines to measure, comma-separated: cpu, gpu, mpi, hybrid, sunway-sim, or all. Engines absent
    /// from this build are reported as absent.
    #[arg(short, long, value_name = "LIST", default_value = "all")]
    pub backend: String,

    /// Modes, comma-separated: ctr, ecb, gcm (gcm: format v3's body, 16 KiB AES-GCM chunks;
    /// 128 and 256 bits only).
    #[arg(short, long, value_name = "LIST", default_value = "ctr")]
    pub mode: String,

    /// Key sizes, comma-separated: 128, 192, 256.
    #[arg(long, value_name = "LIST", default_value = "128")]
    pub bits: String,

    /// Buffer sizes: FROM..TO (powers of 4 from FROM to TO, inclusive) or a comma-separated
    /// list. Default 1KiB..256MiB (--quick: 1KiB..1MiB).
    #[arg(long, value_name = "RANGE|LIST")]
    pub sizes: Option<String>,

    /// Threads of the parallel CPU engine (default: all cores); the one-thread engine, the
    /// speedup baseline, is always measured too.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,

    /// Timed samples per measurement (default 11; --quick: 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub repeat: Option<u32>,

    /// The reference measured in the same run (rows `openssl`, by `openssl speed` at every size
    /// and thread count): openssl (required: fail without it) or none. Default: openssl when it
    /// is installed, except with --quick.
    #[arg(long, value_name = "NAME", value_parser = ["openssl", "none"])]
    pub baseline: Option<String>,

    /// CPU AES implementations to measure, comma-separated or repeated: aesni, vaes256, vaes512,
    /// portable, or all (every one this CPU has). Default: the fastest this CPU has.
    #[arg(long = "impl", value_name = "LIST", value_delimiter = ',')]
    pub aes_impl: Vec<String>,

    /// Measure nothing: read a document written by --json and print its markdown summary (and
    /// redraw --plot, rewrite --csv).
    #[arg(long, value_name = "FILE")]
    pub from_json: Option<PathBuf>,

    /// Write the rows as JSON to PATH ("-": standard output, and the table goes to stderr).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Write the rows as CSV to PATH.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// Draw throughput vs size as an SVG plot at PATH.
    #[arg(long, value_name = "PATH.svg")]
    pub plot: Option<PathBuf>,

    /// Fewer sizes, samples and warm-up: done in well under a minute.
    #[arg(long)]
    pub quick: bool,

    /// The GPU engine's options.
    #[command(flatten)]
    pub gpu: GpuArgs,

    /// The Sunway simulator's options.
    #[command(flatten)]
    pub sim: SimArgs,

    /// Also time the whole enc pipeline (container, chunk tags, temporary files) for sizes of at
    /// least 1 MiB (rows `ENGINE-e2e`).
    #[arg(long)]
    pub e2e: bool,
}
