//! The command line as clap parses it (the "low-level" arguments): one struct per subcommand,
//! holding only the options that subcommand uses. Nothing here is checked beyond its own
//! type: `plan.rs` turns these into a validated plan and owns every rule between options.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use paraes_core::{KeySize, Mode};
use paraes_gpu::CtrVariant;
use paraes_sunway_sim::{Buffering, Variant};

mod bench;
mod message;
mod rekey;
pub use bench::BenchArgs;
pub use message::{FormatArg, MessageArgs};
pub use rekey::RekeyArgs;

const EXAMPLES: &str = "\
Examples:
  paraes keygen -o my.key                         make a random 256-bit key (mode 0600)
  paraes enc -k my.key big.dat                    -> big.dat.paraes (CTR, authenticated)
  paraes dec -k my.key big.dat.paraes             -> big.dat
  tar c dir | paraes enc -k my.key > dir.tar.paraes
  paraes dec -k my.key dir.tar.paraes -o - | tar x
  paraes enc -p notes.txt                         passphrase from the terminal (Argon2id)
  pass show backup | paraes enc --passphrase-file - notes.txt
  paraes enc --key-fd 3 big.dat 3<my.key          key from an open file descriptor
  paraes keygen --x25519 -o me.id                 an X25519 identity; its recipient on stderr
  paraes enc -r paraes1... -k team.key big.dat    for a public key and a key file at once
  paraes dec -i me.id big.dat.paraes              open with an identity file
  paraes rekey -k my.key --add-recipient paraes1... big.dat.paraes
                                                  one more way in, body untouched
  paraes enc --raw ctr -k my.key f -o f.ctr       bare CTR stream (random IV, printed), as openssl enc
  paraes info big.dat.paraes                      show a container's header
  paraes enc -a -k my.key notes.txt -o -          the container as ASCII armor (text)
  paraes enc -k my.key --recursive dir --output-dir /backup
                                                  many files in one run
  paraes verify -k my.key /backup/dir/*.paraes    check every tag, write nothing
  paraes dec -k my.key big.dat.paraes --range 1GiB..1025MiB -o part
                                                  decrypt 1 MiB, reading only its chunks
  paraes bench --quick                            engine throughput on this machine, in a minute
  paraes completions bash > ~/.local/share/bash-completion/completions/paraes";

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
    Enc(EncArgs),
    /// Decrypt a container (or, with --raw, a raw stream).
    Dec(DecArgs),
    /// Check that containers are whole and authentic (every chunk tag), writing nothing.
    Verify(VerifyArgs),
    /// Write a random key as hex text (to standard output, or a new file with mode 0600).
    Keygen(KeygenArgs),
    /// Print the header fields of a container and check its length (no key needed).
    Info(InfoArgs),
    /// Change who can open a container (its stanzas) without re-encrypting its body: add ways
    /// in, remove them by name, or replace them all.
    Rekey(RekeyArgs),
    /// Re-encrypt format v2 containers as v3 under the same file key, keeping every stanza
    /// (so recipients who are not present still open them); each file is replaced only once
    /// its new copy reads back whole.
    Upgrade(UpgradeArgs),
    /// Measure engine throughput across buffer sizes (table, JSON, CSV, SVG plot).
    Bench(BenchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; view with `paraes man | man -l -`), or write every page.
    Man {
        /// Write paraes.1 and one page per subcommand (paraes-enc.1, ...) into DIR (created if
        /// missing; pages of those names are replaced) instead of printing paraes.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `-o` and `--force`, shared by `enc` and `dec`.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Output file (one input only); "-" is standard output. Default: INPUT + ".paraes" for
    /// enc, INPUT minus ".paraes" for dec, standard output when reading standard input.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Write each output into DIR (created if missing) under its default name; with
    /// --recursive, below the directory's own name, as `cp -r` does; a --files-from name below
    /// its whole path, as `rsync --files-from` does (data/x/c.txt -> DIR/data/x/c.txt.paraes; a
    /// leading / is dropped, a name with '..' is refused). Two inputs that would land on one
    /// output refuse the whole run before anything is written.
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    pub output_dir: Option<PathBuf>,

    /// Overwrite an existing output file.
    #[arg(short, long)]
    pub force: bool,
}

/// Symmetric key sources, shared by `enc`, `dec` and `rekey` (to open).
#[derive(Args, Debug, Default)]
pub struct KeyArgs {
    /// Key file: 16/24/32 raw bytes or the same as hex text; "-" reads standard input, and a
    /// pipe such as <(pass show key) works (repeatable: enc wraps the file's key for each, dec
    /// tries each).
    #[arg(short = 'k', long, value_name = "PATH")]
    pub key_file: Vec<PathBuf>,

    /// Key as hex (visible to other users in the process list: prefer --key-file,
    /// --key-fd or --key-env).
    #[arg(long, value_name = "HEX")]
    pub key: Option<String>,

    /// Read the key from this open file descriptor (e.g. `--key-fd 3 3<my.key`).
    #[arg(long, value_name = "FD")]
    pub key_fd: Option<u32>,

    /// Read the key, as hex, from this environment variable.
    #[arg(long, value_name = "VAR")]
    pub key_env: Option<String>,

    /// Ask for a passphrase on the terminal (twice for enc).
    #[arg(short = 'p', long)]
    pub passphrase: bool,

    /// Read the passphrase from a file's first line ("-": standard input).
    #[arg(long, value_name = "PATH", conflicts_with = "passphrase")]
    pub passphrase_file: Option<PathBuf>,
}

/// Public-key recipients of `enc`.
#[derive(Args, Debug, Default)]
pub struct RecipientArgs {
    /// Encrypt to this public key (paraes1..., paraespq1..., or an SSH key line
    /// "ssh-ed25519 AAAA..." / "ssh-rsa AAAA..."; repeatable). Anyone can encrypt to a
    /// recipient: a recipient proves nothing about who wrote a file.
    #[arg(short = 'r', long, value_name = "RECIPIENT")]
    pub recipient: Vec<String>,

    /// Encrypt to the recipients listed in FILE, one per line, SSH key lines as in
    /// authorized_keys included (repeatable).
    #[arg(short = 'R', long, value_name = "FILE")]
    pub recipients_file: Vec<PathBuf>,
}

/// Identities and the Argon2id cap, for opening a container (`dec`, `rekey`).
#[derive(Args, Debug)]
pub struct UnlockArgs {
    /// Open with the identities (secret keys) in FILE: paraes's, or an SSH private key
    /// (~/.ssh/id_ed25519, id_rsa), whose passphrase is asked on the terminal (repeatable).
    #[arg(short = 'i', long, value_name = "FILE")]
    pub identity: Vec<PathBuf>,

    /// The most Argon2id work (MiB x passes) a file's passphrase stanzas may ask [default: 3072]
    #[arg(long, value_name = "MIB")]
    pub max_kdf_mib: Option<u64>,

    /// Open a format v2 file whose second stanza slot the opening key does not authenticate
    /// (another recipient may see other content): it is ignored, and said so on every run.
    #[arg(long)]
    pub allow_unverified_slot: bool,
}

/// The group of the options of `dec` and `verify` that can open a container: at least one is
/// required.
fn unlock_sources() -> clap::ArgGroup {
    clap::ArgGroup::new("key_source")
        .required(true)
        .multiple(true)
        .args([
            "key_file",
            "key",
            "key_fd",
            "key_env",
            "passphrase",
            "passphrase_file",
            "identity",
        ])
}

/// Where the names of many inputs come from, shared by `enc`, `dec` and `verify`.
#[derive(Args, Debug, Default)]
pub struct FileListArgs {
    /// Also take input names from LIST, one per line ("-": standard input), for lists too
    /// long for a command line.
    #[arg(long, value_name = "LIST")]
    pub files_from: Option<PathBuf>,

    /// --files-from names end with NUL, not newline (as `find -print0` writes them).
    #[arg(long = "null", short = '0', requires = "files_from")]
    pub null: bool,

    /// Take the regular files inside directory inputs, at any depth. Symbolic links inside
    /// them are not followed and FIFOs, sockets and devices are skipped (each said once).
    #[arg(long)]
    pub recursive: bool,
}

/// The options of `enc`.
#[derive(Args, Debug)]
#[command(group(
    clap::ArgGroup::new("key_source")
        .required(true)
        .multiple(true)
        .args(["key_file", "key", "key_fd", "key_env", "passphrase", "passphrase_file", "recipient", "recipients_file"])
))]
pub struct EncArgs {
    /// Input files; none or "-" reads standard input. Several run concurrently in one process.
    pub input: Vec<PathBuf>,

    #[command(flatten)]
    pub list: FileListArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub recipients: RecipientArgs,

    /// Mode of the container's body: ctr, the default (a container's body is AES-GCM, i.e.
    /// AES-CTR with GHASH); ecb is refused for containers (`--raw ecb` writes unauthenticated
    /// ECB).
    #[arg(short, long, value_name = "MODE", value_parser = mode_parser())]
    pub mode: Option<Mode>,

    /// Key size of the file's data key, 128 or 256 [default: 256]; with --raw or --format
    /// cobblestone, the size the key must have.
    #[arg(long, value_name = "BITS", value_parser = key_size_parser())]
    pub bits: Option<KeySize>,

    /// Plaintext bytes the pipeline handles at once, e.g. 4MiB (2^20 bytes), 4MB (10^6); a
    /// multiple of 16KiB for containers and messages (whose AES-GCM chunks are always 16 KiB:
    /// the output does not depend on it), of 16 bytes for --raw; from 4KiB to 64MiB
    /// [default: 1MiB].
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_size)]
    pub chunk_size: Option<u64>,

    /// No container: the bare MODE stream (ctr or ecb) under your key itself, byte-compatible
    /// with `openssl enc -aes-N-ctr|-aes-N-ecb -K .. -iv .. -nosalt`. NOT authenticated.
    #[arg(long, value_name = "MODE", value_parser = mode_parser(), conflicts_with = "mode")]
    pub raw: Option<Mode>,

    /// With --raw ctr: the initial counter block, 32 hex digits (default: random, printed on
    /// standard error). Raw streams are NOT authenticated.
    #[arg(long, value_name = "HEX")]
    pub iv: Option<String>,

    /// With --raw ecb: no PKCS#7 padding (the length must be a multiple of 16).
    #[arg(long)]
    pub no_pad: bool,

    /// Write the container as ASCII armor (PEM-style text, 64-column base64 lines, see
    /// docs/FORMAT.md) to paste into an e-mail or a YAML file; dec, verify and info read it.
    #[arg(short, long, conflicts_with_all = ["raw", "format"])]
    pub armor: bool,

    #[command(flatten)]
    pub message: MessageArgs,

    #[command(flatten)]
    pub engine: EngineArgs,

    #[command(flatten)]
    pub ui: UiArgs,
}

/// The options of `dec`.
#[derive(Args, Debug)]
#[command(group(unlock_sources()))]
pub struct DecArgs {
    /// Input files; none or "-" reads standard input. Several run concurrently in one process.
    pub input: Vec<PathBuf>,

    #[command(flatten)]
    pub list: FileListArgs,

    /// Decrypt only plaintext bytes START..END (END exclusive; sizes with units such as 4MiB;
    /// either end may be left open: 1GiB.., ..4KiB). Reads and authenticates only the chunks
    /// that hold them, plus the last chunk (so the length is authentic), the whole chunks
    /// on many workers at their offsets.
    #[arg(long, value_name = "START..END")]
    pub range: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub unlock: UnlockArgs,

    /// Also print on stderr what reads this file's body without paraes: for format v3, its data
    /// key and context (for a Cobblestone reader such as pyca/cryptography); for v2, the body's
    /// AES key and counter block (for openssl enc); refused for v1 (whose body key is your own
    /// key). Still decrypts. Anyone with it can read this file.
    #[arg(long)]
    pub show_data_key: bool,

    /// The input is a bare MODE stream (ctr or ecb) made with enc --raw, not a container.
    /// NOT authenticated: a changed or truncated stream goes unnoticed.
    #[arg(long, value_name = "MODE", value_parser = mode_parser())]
    pub raw: Option<Mode>,

    /// With --raw ctr: the initial counter block the stream was made with, 32 hex digits.
    #[arg(long, value_name = "HEX")]
    pub iv: Option<String>,

    /// With --raw ecb: the stream has no PKCS#7 padding.
    #[arg(long)]
    pub no_pad: bool,

    /// With --raw: decrypt even though the input starts like a paraes container.
    #[arg(long)]
    pub force_raw: bool,

    #[command(flatten)]
    pub message: MessageArgs,

    #[command(flatten)]
    pub engine: EngineArgs,

    #[command(flatten)]
    pub ui: UiArgs,
}

/// The options of `verify`.
#[derive(Args, Debug)]
#[command(group(unlock_sources()))]
pub struct VerifyArgs {
    /// Containers to check.
    pub input: Vec<PathBuf>,

    #[command(flatten)]
    pub list: FileListArgs,

    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub unlock: UnlockArgs,

    /// Print nothing for authentic files (errors still go to standard error).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Engine and runner choice, shared by `enc` and `dec`. Every option is optional so that
/// the plan can tell an option given for an engine that does not read it (refused) from a
/// default. The engines and which option groups each reads are in the registry
/// (`engines/mod.rs`).
#[derive(Args, Debug, Clone, Default)]
pub struct EngineArgs {
    /// Engine that runs AES: auto picks the fastest one present; mpi runs the job across MPI
    /// ranks (mpiexec -n N paraes ...) [default: auto].
    #[arg(short, long, value_name = "BACKEND", value_parser = crate::engines::backend_values())]
    pub backend: Option<String>,

    /// Worker threads of the CPU engine (default: all cores; with --backend mpi, the node's
    /// cores divided among its ranks); with the GPU, its host threads.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,

    /// The GPU engine's options.
    #[command(flatten)]
    pub gpu: GpuArgs,

    /// The Sunway simulator's options.
    #[command(flatten)]
    pub sim: SimArgs,

    /// mpi: how chunks reach the ranks. direct: every rank reads and writes its own range of
    /// the files (needs a shared file system); scatter: rank 0 reads and writes, chunks travel
    /// over MPI [default: direct for files, scatter for pipes].
    #[arg(long, value_enum, value_name = "HOW")]
    pub mpi_io: Option<MpiIoArg>,

    /// mpi: the engine each rank runs [default: cpu].
    #[arg(long, value_name = "ENGINE", value_parser = crate::engines::rank_engine_values())]
    pub rank_engine: Option<String>,
}

/// The GPU engine's options (`enc`, `dec`, `bench`).
#[derive(Args, Debug, Clone, Default)]
pub struct GpuArgs {
    /// gpu, hybrid: how CTR uses the GPU. fused: data in, ciphertext out; keystream: the GPU writes only
    /// the keystream and CPU threads XOR it in; auto: times both and keeps the faster
    /// [default: auto].
    #[arg(long, value_name = "HOW", value_parser = clap::value_parser!(CtrVariant))]
    pub gpu_ctr: Option<CtrVariant>,

    /// gpu, hybrid: the CUDA device to use (with --backend mpi --rank-engine gpu: the first of the
    /// node's devices, which its ranks take in turn) [default: 0].
    #[arg(long, value_name = "N")]
    pub gpu_device: Option<usize>,
}

impl GpuArgs {
    /// The flags, for messages.
    pub const FLAGS: &'static str = "--gpu-ctr and --gpu-device";

    /// Whether any was given.
    pub fn given(&self) -> bool {
        self.gpu_ctr.is_some() || self.gpu_device.is_some()
    }
}

/// The Sunway simulator's options (`enc`, `dec`, `bench`).
#[derive(Args, Debug, Clone, Default)]
pub struct SimArgs {
    /// sunway-sim: the step of SW-AES's optimisation ladder to simulate: original, simd,
    /// selldw or pipelined [default: pipelined].
    #[arg(long, value_name = "VARIANT", value_parser = clap::value_parser!(Variant))]
    pub sw_variant: Option<Variant>,

    /// sunway-sim: DMA buffering in each CPE's local memory: single or double [default: double].
    #[arg(long, value_name = "HOW", value_parser = clap::value_parser!(Buffering))]
    pub sw_buffering: Option<Buffering>,

    /// sunway-sim: core groups of the simulated SW26010 to use, 1 to 4 [default: 4].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=4))]
    pub sw_cgs: Option<u8>,
}

impl SimArgs {
    /// The flags, for messages.
    pub const FLAGS: &'static str = "--sw-variant, --sw-buffering and --sw-cgs";

    /// Whether any was given.
    pub fn given(&self) -> bool {
        self.sw_variant.is_some() || self.sw_buffering.is_some() || self.sw_cgs.is_some()
    }
}

/// What the user sees while a job runs and after it.
#[derive(Args, Debug, Clone, Default)]
pub struct UiArgs {
    /// No warnings and no progress display.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// A summary line when done: bytes, time, rate and engine.
    #[arg(short, long)]
    pub verbose: bool,

    /// Print the summary as one JSON object on standard error when done, for scripts.
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub stats: Option<StatsFormat>,

    /// The input's size when it comes from a pipe (e.g. 20GiB), so the progress display can
    /// show a total and a time left.
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_size)]
    pub size: Option<u64>,
}

/// `--stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    /// One JSON object.
    Json,
}

/// The options of `upgrade`.
#[derive(Args, Debug)]
pub struct UpgradeArgs {
    /// The v2 containers to upgrade.
    pub input: Vec<PathBuf>,

    #[command(flatten)]
    pub list: FileListArgs,

    /// One key that opens each file.
    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub unlock: UnlockArgs,

    /// Key size of the v3 body, 128 or 256 [default: 256].
    #[arg(long, value_name = "BITS", value_parser = key_size_parser())]
    pub bits: Option<KeySize>,

    /// Print nothing for upgraded files (errors still go to standard error).
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

    /// Key size in bits (symmetric keys) [default: 256].
    #[arg(long, value_name = "BITS", value_parser = key_size_parser())]
    pub bits: Option<KeySize>,

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

    /// Print the header's facts as one JSON object (format, body_offset, each slot's
    /// stanzas; nothing in it is authenticated, so every slot says "authenticated": false).
    #[arg(long)]
    pub json: bool,
}

/// `--mpi-io`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MpiIoArg {
    /// Every rank reads and writes its own chunks in the shared files.
    Direct,
    /// Rank 0 reads and writes; chunks travel by Scatterv/Gatherv.
    Scatter,
}

/// `ctr` or `ecb` into the core's [`Mode`] (its `FromStr` is the one mapping).
fn mode_parser() -> impl TypedValueParser<Value = Mode> {
    PossibleValuesParser::new(Mode::ALL.map(Mode::lower)).try_map(|text| text.parse::<Mode>())
}

/// `128`, `192` or `256` into the core's [`KeySize`].
fn key_size_parser() -> impl TypedValueParser<Value = KeySize> {
    PossibleValuesParser::new(["128", "192", "256"]).try_map(|text| text.parse::<KeySize>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
