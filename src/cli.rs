//! The command line: clap definitions of `paraes enc|dec|keygen|info|bench` and their options.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use paraes_gpu::CtrVariant;
use paraes_sunway_sim::{Buffering, Variant};

const EXAMPLES: &str = "\
Examples:
  paraes keygen -o my.key                         make a random 256-bit key (mode 0600)
  paraes enc -k my.key big.dat                    -> big.dat.paraes (CTR, authenticated)
  paraes dec -k my.key big.dat.paraes             -> big.dat
  tar c dir | paraes enc -k my.key > dir.tar.paraes
  paraes dec -k my.key dir.tar.paraes -o - | tar x
  paraes enc -p notes.txt                         passphrase from the terminal (Argon2id)
  paraes keygen --x25519 -o me.id                 an X25519 identity; its recipient on stderr
  paraes enc -r paraes1... -k team.key big.dat    for a public key and a key file at once
  paraes dec -i me.id big.dat.paraes              open with an identity file
  paraes rekey -k old.key --new-key-file new.key big.dat.paraes
                                                  new keys, body untouched
  paraes enc --raw --mode ctr -k my.key f -o f.ctr
                                                  bare CTR stream (random IV, printed), as openssl enc
  paraes info big.dat.paraes                      show a container's header
  paraes bench --quick                            engine throughput on this machine, in a minute";

/// Encrypt and decrypt files with AES (CTR or ECB) as fast as the machine allows.
#[derive(Parser, Debug)]
#[command(name = "paraes", version, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Encrypt INPUT (or standard input) into an authenticated container or a raw stream.
    Enc(CryptArgs),
    /// Decrypt a container (or, with --raw, a raw stream).
    Dec(CryptArgs),
    /// Write a random key as hex text (to standard output, or a new file with mode 0600).
    Keygen(KeygenArgs),
    /// Print the header fields of a container.
    Info(InfoArgs),
    /// Replace who can open a container (its stanzas) without re-encrypting its body.
    Rekey(RekeyArgs),
    /// Measure engine throughput across buffer sizes (table, JSON, CSV, SVG plot).
    Bench(BenchArgs),
    /// (internal) Remove the unfinished output PATH if the process that writes it dies: waits
    /// for its standard input to close, then removes PATH if it is still there.
    #[command(hide = true)]
    WatchOutput {
        /// The temporary output to watch.
        path: PathBuf,
    },
}

/// The options of `enc` and `dec`.
#[derive(Args, Debug)]
#[command(group(
    clap::ArgGroup::new("key_source")
        .required(true)
        .multiple(true)
        .args(["key_file", "key", "passphrase", "passphrase_file", "recipient", "recipients_file", "identity"])
))]
pub struct CryptArgs {
    /// Input file; absent or "-" reads standard input.
    pub input: Option<PathBuf>,

    /// Output file; "-" is standard output. Default: INPUT + ".paraes" for enc, INPUT minus
    /// ".paraes" for dec, standard output when reading standard input.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Mode of operation (enc; dec reads it from the container header).
    #[arg(short, long, value_enum)]
    pub mode: Option<ModeArg>,

    /// Engine that runs AES: auto picks the fastest one present.
    #[arg(short, long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,

    /// Key file: 16/24/32 raw bytes, or the same as hex text (repeatable: enc wraps the file's
    /// key for each, dec tries each).
    #[arg(short = 'k', long, value_name = "PATH")]
    pub key_file: Vec<PathBuf>,

    /// Key as hex (visible to other users in the process list: prefer --key-file).
    #[arg(long, value_name = "HEX", conflicts_with = "key_file")]
    pub key: Option<String>,

    #[command(flatten)]
    pub passphrase: PassphraseArgs,

    /// enc: encrypt to this public key (paraes1... or paraespq1...; repeatable). Anyone can
    /// encrypt to a recipient: a recipient proves nothing about who wrote a file.
    #[arg(short = 'r', long, value_name = "RECIPIENT")]
    pub recipient: Vec<String>,

    /// enc: encrypt to the recipients listed in FILE, one per line (repeatable).
    #[arg(short = 'R', long, value_name = "FILE")]
    pub recipients_file: Vec<PathBuf>,

    /// dec: open with the identities (secret keys) in FILE (repeatable).
    #[arg(short = 'i', long, value_name = "FILE")]
    pub identity: Vec<PathBuf>,

    /// dec: the most Argon2id work (memory in MiB x passes) a passphrase header may ask for.
    #[arg(long, value_name = "MIB", default_value_t = paraes_core::container::DEFAULT_MAX_KDF_MIB)]
    pub max_kdf_mib: u64,

    /// dec: print the body's AES key and counter block on stderr, so standard tools (openssl
    /// enc) can decrypt the body. Anyone with that key can read this file.
    #[arg(long)]
    pub show_data_key: bool,

    /// Key size of the file's data key for enc (default 256); with --raw, the key's size.
    #[arg(long, value_parser = ["128", "192", "256"])]
    pub bits: Option<String>,

    /// No container: the bare ECB/CTR stream under your key itself, byte-compatible with
    /// `openssl enc -aes-N-ctr|-aes-N-ecb -K .. -iv .. -nosalt`. NOT authenticated: dec --raw
    /// cannot tell a changed or truncated stream.
    #[arg(long)]
    pub raw: bool,

    /// Raw CTR initial counter block, 32 hex digits (enc: random and printed when absent; dec:
    /// required). Raw streams are NOT authenticated: a changed byte goes unnoticed.
    #[arg(long, value_name = "HEX")]
    pub iv: Option<String>,

    /// Raw ECB without PKCS#7 padding (the length must be a multiple of 16).
    #[arg(long)]
    pub no_pad: bool,

    /// Chunk size, e.g. 4MiB, 512KiB, 65536 (enc, or dec --raw).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub chunk_size: Option<usize>,

    /// Worker threads for the CPU engine (default: all cores; with --backend mpi, the cores
    /// of the node divided among its ranks).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// With --backend mpi: how chunks reach the ranks. direct: every rank reads and writes its
    /// own range of the files (needs a shared file system); scatter: rank 0 reads and writes,
    /// chunks travel over MPI. Default: direct for files, scatter for pipes.
    #[arg(long, value_enum, value_name = "HOW")]
    pub mpi_io: Option<MpiIoArg>,

    /// With --backend mpi: the engine each rank runs.
    #[arg(long, value_enum, default_value_t = RankEngineArg::Cpu)]
    pub rank_engine: RankEngineArg,

    /// Options of the GPU engine and the Sunway simulator.
    #[command(flatten)]
    pub engine: EngineArgs,

    /// Overwrite an existing output file.
    #[arg(short, long)]
    pub force: bool,

    /// No warnings and no progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

/// A passphrase from the terminal or a file.
#[derive(Args, Debug, Default)]
pub struct PassphraseArgs {
    /// Ask for a passphrase on the terminal (twice for enc).
    #[arg(short = 'p', long)]
    pub passphrase: bool,

    /// Read the passphrase from a file (its first line).
    #[arg(long, value_name = "PATH")]
    pub passphrase_file: Option<PathBuf>,
}

/// The options of `rekey`.
#[derive(Args, Debug)]
#[command(group(
    clap::ArgGroup::new("new_keys")
        .required(true)
        .multiple(true)
        .args(["new_key_file", "new_recipient", "new_recipients_file", "new_passphrase_file"])
))]
pub struct RekeyArgs {
    /// The container to rekey (changed in place when the new stanzas fit its header, else
    /// rewritten beside it and renamed over it; the body bytes never change).
    pub file: PathBuf,

    /// Open with this key file (repeatable).
    #[arg(short = 'k', long, value_name = "PATH")]
    pub key_file: Vec<PathBuf>,

    /// Open with this hex key.
    #[arg(long, value_name = "HEX")]
    pub key: Option<String>,

    #[command(flatten)]
    pub passphrase: PassphraseArgs,

    /// Open with the identities in FILE (repeatable).
    #[arg(short = 'i', long, value_name = "FILE")]
    pub identity: Vec<PathBuf>,

    /// The most Argon2id work (memory in MiB x passes) a passphrase header may ask for.
    #[arg(long, value_name = "MIB", default_value_t = paraes_core::container::DEFAULT_MAX_KDF_MIB)]
    pub max_kdf_mib: u64,

    /// New: a key file that opens the file (repeatable).
    #[arg(long, value_name = "PATH")]
    pub new_key_file: Vec<PathBuf>,

    /// New: a recipient that opens the file (repeatable).
    #[arg(long, value_name = "RECIPIENT")]
    pub new_recipient: Vec<String>,

    /// New: the recipients listed in FILE (repeatable).
    #[arg(long, value_name = "FILE")]
    pub new_recipients_file: Vec<PathBuf>,

    /// New: a passphrase from a file's first line.
    #[arg(long, value_name = "PATH")]
    pub new_passphrase_file: Option<PathBuf>,

    /// No warnings.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The options of `keygen`.
#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Make an X25519 identity (secret key) instead of a symmetric key; its recipient goes to
    /// standard error.
    #[arg(long, conflicts_with_all = ["pq", "recipient_of", "bits"])]
    pub x25519: bool,

    /// Make a post-quantum hybrid identity (ML-KEM-768 + X25519, X-Wing); its recipient goes
    /// to standard error.
    #[arg(long, conflicts_with_all = ["recipient_of", "bits"])]
    pub pq: bool,

    /// Print the recipients of the identities in FILE on standard output.
    #[arg(short = 'y', value_name = "FILE", conflicts_with_all = ["output", "force"])]
    pub recipient_of: Option<PathBuf>,

    /// Key size in bits (symmetric keys).
    #[arg(long, value_parser = ["128", "192", "256"])]
    pub bits: Option<String>,

    /// Output file (created with mode 0600); default or "-": standard output.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Overwrite an existing key file.
    #[arg(short, long)]
    pub force: bool,
}

/// The options of `info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The container to describe.
    pub file: PathBuf,
}

/// The options of `bench`. Lists are checked by the bench glue, so that a bad value is one
/// `paraes: error:` line with exit status 1.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Engines to measure, comma-separated: cpu, gpu, mpi, sunway-sim, or all. Engines absent
    /// from this build are reported as absent.
    #[arg(short, long, value_name = "LIST", default_value = "all")]
    pub backend: String,

    /// Modes, comma-separated: ctr, ecb.
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
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// Timed samples per measurement (default 11; --quick: 5).
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,

    /// Also run this reference in the same run and print the ratio (only: openssl).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,

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

    /// Options of the GPU engine and the Sunway simulator.
    #[command(flatten)]
    pub engine: EngineArgs,

    /// Also time the whole enc pipeline (container, chunk tags, temporary files) for sizes of at
    /// least 1 MiB (rows `ENGINE-e2e`).
    #[arg(long)]
    pub e2e: bool,
}

/// Options of the engines other than the CPU, shared by `enc`, `dec` and `bench`.
#[derive(Args, Debug, Clone)]
pub struct EngineArgs {
    /// GPU: how CTR uses the GPU. fused: data in, ciphertext out; keystream: the GPU writes
    /// only the keystream and CPU threads XOR it in (half the bus traffic); auto: times both on
    /// the first large buffer and keeps the faster.
    #[arg(long, value_name = "HOW", default_value = "auto", value_parser = clap::value_parser!(CtrVariant))]
    pub gpu_ctr: CtrVariant,

    /// GPU: the CUDA device to use (with --backend mpi --rank-engine gpu: the first of the
    /// node's devices, which its ranks take in turn).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub gpu_device: usize,

    /// sunway-sim: the step of SW-AES's optimisation ladder to simulate: original, simd,
    /// selldw or pipelined.
    #[arg(long, value_name = "VARIANT", default_value = "pipelined", value_parser = clap::value_parser!(Variant))]
    pub sw_variant: Variant,

    /// sunway-sim: DMA buffering in each CPE's local memory: single or double.
    #[arg(long, value_name = "HOW", default_value = "double", value_parser = clap::value_parser!(Buffering))]
    pub sw_buffering: Buffering,

    /// sunway-sim: core groups of the simulated SW26010 to use, 1 to 4.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=4))]
    pub sw_cgs: u8,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Counter mode (default).
    Ctr,
    /// Electronic codebook (leaks equal blocks).
    Ecb,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The fastest engine present.
    Auto,
    /// All CPU cores.
    Cpu,
    /// A CUDA GPU.
    Gpu,
    /// MPI ranks.
    Mpi,
    /// The Sunway SW26010 simulator.
    SunwaySim,
}

/// `--mpi-io`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MpiIoArg {
    /// Every rank reads and writes its own chunks in the shared files.
    Direct,
    /// Rank 0 reads and writes; chunks travel by Scatterv/Gatherv.
    Scatter,
}

/// `--rank-engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RankEngineArg {
    /// The CPU cores of the rank's share of its node.
    Cpu,
    /// The rank's GPU (ranks on a node take the node's GPUs in turn).
    Gpu,
}

/// Parses sizes such as `4MiB`, `512KiB`, `1M`, `65536` (binary multiples).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size: write e.g. 4MiB, 512KiB or 65536"))?;
    let multiplier: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => return Err(format!("unknown size unit '{other}': use KiB, MiB or GiB")),
    };
    number
        .checked_mul(multiplier)
        .ok_or_else(|| format!("'{text}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("4XB").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
