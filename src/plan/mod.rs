//! Arguments into a validated plan (the "high-level" arguments): the one place that owns every
//! rule between options. Commands consume a plan and rely on it: what it holds is consistent.
//!
//! A rule broken by the options alone is a [`UsageError`] (exit status 2); a rule that needs the
//! file system (an output that is a file this command reads) is an ordinary error (status 1).

use std::path::{Path, PathBuf};

use anyhow::Result;
use paraes_core::{Direction, KeySize, Mode};

use crate::cli::{BenchArgs, Command, EngineArgs, FileListArgs, InfoArgs, KeygenArgs, UiArgs};
use crate::engines::EngineChoice;

pub use crate::usage::UsageError;

/// Fails with a [`UsageError`] of `command`.
macro_rules! usage {
    ($command:expr, $($message:tt)+) => {
        return Err(anyhow::Error::new($crate::usage::UsageError {
            message: format!($($message)+),
            command: $command,
        }))
    };
}

// After the macro, which the rules in these modules use.
mod containers;
mod crypt;
mod engine;
mod keys;
mod many;
mod naming;
mod rekey;

use containers::upgrade;
use containers::verify;
use crypt::dec;
use crypt::enc;
pub use engine::settings as engine_settings;
pub use keys::{KeyPlan, KeySource, PassphraseSource};
pub use naming::output_through_links;
use rekey::rekey;
pub use rekey::{RekeyChange, RekeyPlan};

/// What to run.
pub enum Plan {
    /// `enc` or `dec`.
    Crypt(Box<CryptPlan>),
    /// `verify`.
    Verify(VerifyPlan),
    /// `rekey`.
    Rekey(RekeyPlan),
    /// `upgrade`.
    Upgrade(UpgradePlan),
    /// `keygen` (its options are independent of each other beyond clap's conflicts).
    Keygen(KeygenArgs),
    /// `info`.
    Info(InfoArgs),
    /// `bench` (its lists are checked by `bench.rs`, as usage errors).
    Bench(BenchArgs),
    /// `completions SHELL`.
    Completions(clap_complete::Shell),
    /// `man`, with `--dir DIR` or to standard output.
    Man(Option<PathBuf>),
}

/// Container or raw stream.
pub enum Format {
    /// An authenticated container; for enc, the data key size of its v3 body (128 or 256
    /// bits; dec reads it from the header).
    Container(Option<KeySize>),
    /// A bare C2SP chunked-encryption message (Cobblestone-128/256 by the key's size) under
    /// the user's key itself.
    Message {
        /// The message's context (exact bytes).
        context: Vec<u8>,
        /// The size the key must have (enc --bits).
        key_size: Option<KeySize>,
    },
    /// A bare ECB/CTR stream under the user's key.
    Raw {
        /// Mode of operation.
        mode: Mode,
        /// CTR's initial counter block: given, or (enc) drawn at random when `None`.
        iv: Option<[u8; 16]>,
        /// ECB's PKCS#7 padding.
        padding: bool,
        /// The size the key must have (enc --bits).
        key_size: Option<KeySize>,
    },
}

/// Where the output goes.
pub enum OutputTarget {
    /// Standard output.
    Stdout,
    /// A path (a new file, or an existing FIFO or device written as a stream).
    Path {
        /// The final name.
        path: PathBuf,
        /// Whether an existing file may be replaced.
        force: bool,
        /// Whether paraes derived the name from the input's (then it is written only when it
        /// is free or a regular file: see `Output::create`).
        derived: bool,
    },
}

/// How MPI ranks get their chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpiIo {
    /// Every rank reads and writes its own ranges.
    Direct,
    /// Rank 0 reads and writes; chunks travel over MPI.
    Scatter,
}

/// Where the chunks flow: through this process's pipeline, or across MPI ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// One process: the threaded pipeline on the chosen engine.
    Local,
    /// MPI ranks, each running the chosen engine on its share.
    Mpi {
        /// The I/O strategy (`None`: direct for files, scatter for pipes).
        io: Option<MpiIo>,
    },
}

/// What the user sees.
#[derive(Clone, Debug, Default)]
pub struct Ui {
    /// No warnings, no progress.
    pub quiet: bool,
    /// A summary line at the end.
    pub verbose: bool,
    /// A JSON summary at the end.
    pub stats_json: bool,
    /// The expected input size, for the progress display of a pipe.
    pub size_hint: Option<u64>,
}

/// One input and where its output goes.
pub struct FileTask {
    /// The input file; `None` is standard input.
    pub input: Option<PathBuf>,
    /// The output.
    pub output: OutputTarget,
}

/// The files of an `enc` or `dec`.
pub enum Files {
    /// One input (a file or standard input), run by itself.
    One(FileTask),
    /// Many input files (or --output-dir, --files-from, --recursive): run concurrently in one
    /// process; a file that fails is reported and the others go on.
    Many {
        /// Every input file and its output file.
        jobs: Vec<FileTask>,
        /// The directory the outputs go to (created when missing), if any.
        output_dir: Option<PathBuf>,
        /// Inputs refused while planning (no output name), with the reason: reported as
        /// failures of the run.
        refused: Vec<(PathBuf, String)>,
    },
}

impl Files {
    /// Which inputs the run opens: one input alone may be a FIFO or device, read as a
    /// stream; among many, a FIFO or device would block or never end the run.
    pub fn input_kinds(&self) -> paraes_files::InputKinds {
        match self {
            Files::One(_) => paraes_files::InputKinds::FilesAndStreams,
            Files::Many { .. } => paraes_files::InputKinds::RegularOnly,
        }
    }
}

/// `dec --range START..END`: plaintext bytes, END exclusive; open ends allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte; `None`: to the end.
    pub end: Option<u64>,
}

/// A validated `verify`.
pub struct VerifyPlan {
    /// The containers.
    pub files: Vec<PathBuf>,
    /// Inputs refused while planning (directories that could not be listed; FIFOs, devices
    /// and sockets among many inputs), and why: failures of the run.
    pub unlisted: Vec<(PathBuf, String)>,
    /// How to open them.
    pub keys: KeyPlan,
    /// Nothing printed for authentic files.
    pub quiet: bool,
}

/// A validated `upgrade`: the containers and their keys (as `verify` takes them), and the v3
/// body's key size.
pub struct UpgradePlan {
    /// The containers, how to open them, and quiet.
    pub containers: VerifyPlan,
    /// The v3 body's key size (128 or 256 bits).
    pub key_size: KeySize,
}

/// A validated `enc` or `dec`.
pub struct CryptPlan {
    /// enc or dec.
    pub direction: Direction,
    /// The inputs and their outputs.
    pub files: Files,
    /// dec --range: the plaintext bytes to decrypt (one container file).
    pub range: Option<ByteRange>,
    /// Keys.
    pub keys: KeyPlan,
    /// Container or raw.
    pub format: Format,
    /// Plaintext bytes per chunk (enc; dec of a container reads it from the header).
    pub chunk_size: usize,
    /// dec: print the data key.
    pub show_data_key: bool,
    /// dec --raw: go on although the input starts with the container magic.
    pub force_raw: bool,
    /// enc --armor: the container written as ASCII armor (a stream, in order).
    pub armor: bool,
    /// The engine of each process.
    pub engine: EngineChoice,
    /// Local or MPI.
    pub runner: Runner,
    /// Progress, warnings, summary.
    pub ui: Ui,
}

impl CryptPlan {
    /// The subcommand's name.
    pub fn command(&self) -> &'static str {
        match self.direction {
            Direction::Encrypt => "enc",
            Direction::Decrypt => "dec",
        }
    }
}

/// The parts of `enc` and `dec` that the rest of the rules need.
pub(super) struct CryptInputs<'a> {
    pub(super) command: &'static str,
    pub(super) direction: Direction,
    pub(super) inputs: &'a [PathBuf],
    pub(super) list: &'a FileListArgs,
    pub(super) output: Option<&'a Path>,
    pub(super) output_dir: Option<&'a Path>,
    pub(super) force: bool,
    pub(super) range: Option<ByteRange>,
    pub(super) keys: KeyPlan,
    pub(super) format: Format,
    pub(super) chunk_size: usize,
    pub(super) show_data_key: bool,
    pub(super) force_raw: bool,
    pub(super) armor: bool,
    pub(super) engine: &'a EngineArgs,
    pub(super) ui: &'a UiArgs,
}

/// Builds the plan of a parsed command line.
pub fn build(command: Command) -> Result<Plan> {
    Ok(match command {
        Command::Enc(args) => Plan::Crypt(Box::new(enc(&args)?)),
        Command::Dec(args) => Plan::Crypt(Box::new(dec(&args)?)),
        Command::Verify(args) => Plan::Verify(verify(&args)?),
        Command::Rekey(args) => Plan::Rekey(rekey(&args)?),
        Command::Upgrade(args) => Plan::Upgrade(upgrade(&args)?),
        Command::Keygen(args) => Plan::Keygen(args),
        Command::Info(args) => Plan::Info(args),
        Command::Bench(args) => Plan::Bench(args),
        Command::Completions { shell } => Plan::Completions(shell),
        Command::Man { dir } => Plan::Man(dir),
    })
}
