//! Arguments into a validated plan (the "high-level" arguments): the one place that owns every
//! rule between options. Commands consume a plan and rely on it: what it holds is consistent.
//!
//! A rule broken by the options alone is a [`UsageError`] (exit status 2); a rule that needs the
//! file system (an output that is a file this command reads) is an ordinary error (status 1).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use paraes_core::container::{MAX_CHUNK_SIZE, MIN_CHUNK_SIZE};
use paraes_core::engine::GCM_CHUNK_LEN;
use paraes_core::pipeline::DEFAULT_CHUNK_SIZE;
use paraes_core::{Direction, KeySize, Mode};
use paraes_gpu::CtrVariant;
use paraes_sunway_sim::SimConfig;
use zeroize::Zeroizing;

use crate::cli::{
    BackendArg, BenchArgs, Command, DecArgs, EncArgs, EngineArgs, FileListArgs, FormatArg,
    InfoArgs, KeyArgs, KeygenArgs, MessageArgs, MpiIoArg, RankEngineArg, RecipientArgs, RekeyArgs,
    StatsFormat, UiArgs, UnlockArgs, UpgradeArgs, VerifyArgs,
};
use crate::files::{self, Found, Skipped};

/// An option rule broken by the command line itself: exit status 2, like clap's own errors.
#[derive(Debug)]
pub struct UsageError {
    /// What is wrong and what to do.
    pub message: String,
    /// The subcommand whose help describes the options.
    pub command: &'static str,
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}

/// Fails with a [`UsageError`] of `command`.
macro_rules! usage {
    ($command:expr, $($message:tt)+) => {
        return Err(anyhow::Error::new(UsageError {
            message: format!($($message)+),
            command: $command,
        }))
    };
}

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
    /// `man`.
    Man,
}

/// Where a symmetric key comes from.
pub enum KeySource {
    /// A key file (a regular file, a pipe such as `<(...)`, a device).
    File(PathBuf),
    /// `-k -`: standard input.
    Stdin,
    /// `--key-fd N`.
    Fd(u32),
    /// `--key-env VAR`: hex text in an environment variable.
    Env(String),
    /// `--key HEX`.
    Hex(Zeroizing<String>),
}

impl KeySource {
    /// A key file given on the command line: `-` is standard input.
    fn from_path(path: &Path) -> Self {
        if path == Path::new("-") {
            KeySource::Stdin
        } else {
            KeySource::File(path.to_path_buf())
        }
    }
}

/// Where a passphrase comes from.
pub enum PassphraseSource {
    /// Asked on the terminal.
    Prompt,
    /// The first line of a file.
    File(PathBuf),
    /// The first line of standard input.
    Stdin,
}

impl PassphraseSource {
    /// A passphrase file given on the command line: `-` is standard input.
    fn from_path(path: &Path) -> Self {
        if path == Path::new("-") {
            PassphraseSource::Stdin
        } else {
            PassphraseSource::File(path.to_path_buf())
        }
    }
}

/// Every key option of one command.
#[derive(Default)]
pub struct KeyPlan {
    /// Symmetric keys, in command-line order.
    pub keys: Vec<KeySource>,
    /// A passphrase.
    pub passphrase: Option<PassphraseSource>,
    /// `-r` recipients (enc, rekey's new set).
    pub recipients: Vec<String>,
    /// `-R` recipient files.
    pub recipients_files: Vec<PathBuf>,
    /// `-i` identity files (dec, rekey).
    pub identities: Vec<PathBuf>,
    /// The Argon2id cap for opening (MiB x passes).
    pub max_kdf_mib: u64,
    /// `--allow-unverified-slot`: open despite a second slot the file key does not verify.
    pub allow_unverified_slot: bool,
}

impl KeyPlan {
    fn new(keys: &KeyArgs) -> Self {
        let mut plan = KeyPlan {
            max_kdf_mib: paraes_core::container::DEFAULT_MAX_KDF_MIB,
            ..KeyPlan::default()
        };
        plan.keys
            .extend(keys.key_file.iter().map(|p| KeySource::from_path(p)));
        if let Some(fd) = keys.key_fd {
            plan.keys.push(KeySource::Fd(fd));
        }
        if let Some(var) = &keys.key_env {
            plan.keys.push(KeySource::Env(var.clone()));
        }
        if let Some(hex) = &keys.key {
            plan.keys.push(KeySource::Hex(Zeroizing::new(hex.clone())));
        }
        plan.passphrase = match &keys.passphrase_file {
            Some(path) => Some(PassphraseSource::from_path(path)),
            None if keys.passphrase => Some(PassphraseSource::Prompt),
            None => None,
        };
        plan
    }

    fn with_recipients(mut self, recipients: &RecipientArgs) -> Self {
        self.recipients = recipients.recipient.clone();
        self.recipients_files = recipients.recipients_file.clone();
        self
    }

    fn with_unlock(mut self, unlock: &UnlockArgs) -> Self {
        self.identities = unlock.identity.clone();
        if let Some(cap) = unlock.max_kdf_mib {
            self.max_kdf_mib = cap;
        }
        self.allow_unverified_slot = unlock.allow_unverified_slot;
        self
    }

    /// How many of the sources read standard input: `-`, `--key-fd 0`, or a path that is
    /// standard input under another name (`/dev/stdin`, `/proc/self/fd/0`, the same pipe).
    fn stdin_readers(&self) -> usize {
        let stdin = fd_id(0);
        let by_path = |path: &Path| stdin.is_some() && path_id(path) == stdin;
        self.keys
            .iter()
            .filter(|k| match k {
                KeySource::Stdin | KeySource::Fd(0) => true,
                KeySource::File(path) => by_path(path),
                _ => false,
            })
            .count()
            + usize::from(match &self.passphrase {
                Some(PassphraseSource::Stdin) => true,
                Some(PassphraseSource::File(path)) => by_path(path),
                _ => false,
            })
    }

    /// The open descriptors these sources read (`-` is 0, `--key-fd N` is N).
    fn descriptors(&self) -> Vec<(&'static str, u32)> {
        let mut fds: Vec<(&'static str, u32)> = self
            .keys
            .iter()
            .filter_map(|k| match k {
                KeySource::Stdin => Some(("the key on standard input", 0)),
                KeySource::Fd(fd) => Some(("the key on that file descriptor", *fd)),
                _ => None,
            })
            .collect();
        if let Some(PassphraseSource::Stdin) = self.passphrase {
            fds.push(("the passphrase on standard input", 0));
        }
        fds
    }

    /// Every file these sources read, and what it is (to keep the output off them).
    pub fn paths(&self) -> Vec<(&'static str, &Path)> {
        let mut paths: Vec<(&'static str, &Path)> = self
            .keys
            .iter()
            .filter_map(|k| match k {
                KeySource::File(path) => Some(("the key file", path.as_path())),
                _ => None,
            })
            .collect();
        if let Some(PassphraseSource::File(path)) = &self.passphrase {
            paths.push(("the passphrase file", path));
        }
        paths.extend(
            self.recipients_files
                .iter()
                .map(|p| ("the recipients file", p.as_path())),
        );
        paths.extend(
            self.identities
                .iter()
                .map(|p| ("the identity file", p.as_path())),
        );
        paths
    }

    fn has_public_keys(&self) -> bool {
        !(self.recipients.is_empty() && self.recipients_files.is_empty())
    }
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

/// The engine that runs AES in each process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// The GPU when usable, else the CPU.
    Auto,
    /// All CPU cores (or `threads`).
    Cpu,
    /// A CUDA GPU.
    Gpu,
    /// The Sunway simulator.
    SunwaySim,
}

/// An engine and its settings.
#[derive(Clone, Debug)]
pub struct EngineChoice {
    /// Which engine.
    pub kind: EngineKind,
    /// CPU worker threads (GPU: host threads); `None`: all cores.
    pub threads: Option<usize>,
    /// GPU: the CTR variant.
    pub gpu_ctr: CtrVariant,
    /// GPU: the CUDA device.
    pub gpu_device: usize,
    /// The simulator's configuration.
    pub sim: SimConfig,
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
pub struct FileJob {
    /// The input file; `None` is standard input.
    pub input: Option<PathBuf>,
    /// The output.
    pub output: OutputTarget,
}

/// The files of an `enc` or `dec`.
pub enum Files {
    /// One input (a file or standard input), run by itself.
    One(FileJob),
    /// Many input files (or --output-dir, --files-from, --recursive): run concurrently in one
    /// process; a file that fails is reported and the others go on.
    Many {
        /// Every input file and its output file.
        jobs: Vec<FileJob>,
        /// The directory the outputs go to (created when missing), if any.
        output_dir: Option<PathBuf>,
        /// Inputs refused while planning (no output name), with the reason: reported as
        /// failures of the run.
        refused: Vec<(PathBuf, String)>,
    },
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

/// A validated `rekey`.
pub struct RekeyPlan {
    /// The container.
    pub file: PathBuf,
    /// What opens it now.
    pub open: KeyPlan,
    /// What will open it.
    pub new: KeyPlan,
    /// No messages.
    pub quiet: bool,
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
        Command::Man => Plan::Man,
    })
}

fn enc(args: &EncArgs) -> Result<CryptPlan> {
    const C: &str = "enc";
    let keys = KeyPlan::new(&args.keys).with_recipients(&args.recipients);
    let message = message_format(C, &args.message, &keys)?;
    if message.is_some() {
        if args.mode.is_some() {
            usage!(C, "--mode does not apply to --format cobblestone (a message is always AES-GCM): drop --mode");
        }
        if args.iv.is_some() || args.no_pad {
            usage!(
                C,
                "--iv and --no-pad apply to --raw only, not to --format cobblestone"
            );
        }
        if args.bits == Some(KeySize::Aes192) {
            usage!(
                C,
                "--format cobblestone takes 128- or 256-bit keys (Cobblestone-128/256), not 192"
            );
        }
    }
    let format = match (message, args.raw) {
        (Some(context), _) => Format::Message {
            context,
            key_size: args.bits,
        },
        (None, raw) => match raw {
            Some(mode) => {
                raw_rules(C, &keys)?;
                let iv = args.iv.as_deref().map(|t| parse_iv(C, t)).transpose()?;
                if mode == Mode::Ecb && iv.is_some() {
                    usage!(C, "ECB takes no --iv: drop it, or use --raw ctr");
                }
                if mode == Mode::Ctr && args.no_pad {
                    usage!(C, "--no-pad applies only to --raw ecb (CTR never pads)");
                }
                Format::Raw {
                    mode,
                    iv,
                    padding: !args.no_pad,
                    key_size: args.bits,
                }
            }
            None => {
                if args.iv.is_some() {
                    usage!(C, "--iv works only with --raw ctr (a container makes its own random counter): add --raw ctr or drop --iv");
                }
                if args.no_pad {
                    usage!(
                        C,
                        "--no-pad works only with --raw ecb: add --raw ecb or drop --no-pad"
                    );
                }
                if args.mode == Some(Mode::Ecb) {
                    usage!(C, "containers are authenticated AES-GCM (C2SP chunked encryption), which has no ECB: drop --mode ecb. `--raw ecb` writes an unauthenticated ECB stream under your key itself, for interoperability only");
                }
                if args.bits == Some(KeySize::Aes192) {
                    usage!(C, "a container's body is Cobblestone-128 or Cobblestone-256 (AES-128-GCM or AES-256-GCM): give --bits 128 or 256, not 192 (192-bit keys work with --raw)");
                }
                Format::Container(Some(args.bits.unwrap_or(KeySize::Aes256)))
            }
        },
    };
    let chunk_size = match args.chunk_size {
        None => DEFAULT_CHUNK_SIZE,
        Some(size) => {
            if !(MIN_CHUNK_SIZE as u64..=MAX_CHUNK_SIZE as u64).contains(&size)
                || !size.is_multiple_of(16)
            {
                usage!(C, "--chunk-size must be a multiple of 16 bytes from 4KiB to 64MiB, not {size} bytes");
            }
            if !matches!(format, Format::Raw { .. }) && !size.is_multiple_of(GCM_CHUNK_LEN as u64) {
                usage!(C, "for a container or a --format cobblestone message, --chunk-size is how many 16 KiB AES-GCM chunks go through the pipeline at once (the format's chunks are always 16 KiB): give a multiple of 16KiB, not {size} bytes");
            }
            size as usize
        }
    };
    finish(CryptInputs {
        command: C,
        direction: Direction::Encrypt,
        inputs: &args.input,
        list: &args.list,
        output: args.output.output.as_deref(),
        output_dir: args.output.output_dir.as_deref(),
        force: args.output.force,
        range: None,
        keys,
        format,
        chunk_size,
        show_data_key: false,
        force_raw: false,
        engine: &args.engine,
        ui: &args.ui,
    })
}

fn dec(args: &DecArgs) -> Result<CryptPlan> {
    const C: &str = "dec";
    let keys = KeyPlan::new(&args.keys).with_unlock(&args.unlock);
    let message = message_format(C, &args.message, &keys)?;
    if message.is_some() {
        if args.unlock.max_kdf_mib.is_some() || args.unlock.allow_unverified_slot {
            usage!(C, "--max-kdf-mib and --allow-unverified-slot apply to containers, not to --format cobblestone");
        }
        if args.show_data_key {
            usage!(
                C,
                "--show-data-key applies to containers; a message's key is the one you gave"
            );
        }
        if args.iv.is_some() || args.no_pad || args.force_raw {
            usage!(
                C,
                "--iv, --no-pad and --force-raw apply to --raw only, not to --format cobblestone"
            );
        }
    }
    let format = match (message, args.raw) {
        (Some(context), _) => Format::Message {
            context,
            key_size: None,
        },
        (None, raw) => match raw {
            Some(mode) => {
                raw_rules(C, &keys)?;
                if args.unlock.max_kdf_mib.is_some() {
                    usage!(
                        C,
                        "--max-kdf-mib applies to passphrase containers, not to --raw"
                    );
                }
                if args.show_data_key {
                    usage!(
                    C,
                    "--show-data-key applies to containers; a raw stream's key is the one you gave"
                );
                }
                let iv = args.iv.as_deref().map(|t| parse_iv(C, t)).transpose()?;
                match mode {
                Mode::Ecb if iv.is_some() => usage!(C, "ECB takes no --iv: drop it"),
                Mode::Ctr if iv.is_none() => usage!(C, "dec --raw ctr needs --iv HEX (32 hex digits: the initial counter block the stream was made with)"),
                Mode::Ctr if args.no_pad => {
                    usage!(C, "--no-pad applies only to --raw ecb (CTR never pads)")
                }
                _ => {}
            }
                Format::Raw {
                    mode,
                    iv,
                    padding: !args.no_pad,
                    key_size: None,
                }
            }
            None => {
                if args.iv.is_some() {
                    usage!(C, "--iv works only with --raw ctr (a container keeps its counter in its header): drop --iv");
                }
                if args.no_pad {
                    usage!(
                    C,
                    "--no-pad works only with --raw ecb (containers always pad ECB): drop --no-pad"
                );
                }
                if args.force_raw {
                    usage!(C, "--force-raw works only with --raw");
                }
                Format::Container(None)
            }
        },
    };
    let range = args
        .range
        .as_deref()
        .map(|text| parse_range(C, text))
        .transpose()?;
    if range.is_some() && args.raw.is_some() {
        usage!(C, "--range needs a container (its chunk tags say which bytes are authentic); a raw stream has none: drop --raw or --range");
    }
    finish(CryptInputs {
        command: C,
        direction: Direction::Decrypt,
        inputs: &args.input,
        list: &args.list,
        output: args.output.output.as_deref(),
        output_dir: args.output.output_dir.as_deref(),
        force: args.output.force,
        range,
        keys,
        format,
        chunk_size: DEFAULT_CHUNK_SIZE,
        show_data_key: args.show_data_key,
        force_raw: args.force_raw,
        engine: &args.engine,
        ui: &args.ui,
    })
}

/// `--format cobblestone`'s context (its bytes), after its rules: only one symmetric key (a
/// message is under the key itself), and `--context`/`--context-hex` only with it. `None` for
/// a container or raw stream.
fn message_format(
    command: &'static str,
    args: &MessageArgs,
    keys: &KeyPlan,
) -> Result<Option<Vec<u8>>> {
    if args.format != Some(FormatArg::Cobblestone) {
        if args.context.is_some() || args.context_hex.is_some() {
            usage!(
                command,
                "--context and --context-hex apply to --format cobblestone only"
            );
        }
        return Ok(None);
    }
    if keys.passphrase.is_some() || keys.has_public_keys() || !keys.identities.is_empty() {
        usage!(command, "--format cobblestone needs one 16- or 32-byte random key (-k, --key, --key-fd or --key-env): a bare message has no header for passphrases, recipients or identities (use a container for those)");
    }
    if keys.keys.len() != 1 {
        usage!(command, "--format cobblestone uses exactly one key");
    }
    let context = match (&args.context, &args.context_hex) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(hex_text)) => match hex::decode(hex_text.trim()) {
            Ok(bytes) => bytes,
            Err(_) => usage!(
                command,
                "--context-hex needs hex digits (an even number of them)"
            ),
        },
        (None, None) => Vec::new(),
    };
    Ok(Some(context))
}

/// A raw stream has no header: only one symmetric key can make it.
fn raw_rules(command: &'static str, keys: &KeyPlan) -> Result<()> {
    if keys.passphrase.is_some() {
        usage!(command, "--raw needs a key (-k, --key, --key-fd or --key-env): a raw stream has no header to keep a passphrase's salt");
    }
    if keys.has_public_keys() || !keys.identities.is_empty() {
        usage!(command, "--raw needs a key (-k, --key, --key-fd or --key-env): public-key recipients and identities need a container");
    }
    if keys.keys.len() != 1 {
        usage!(
            command,
            "--raw uses exactly one key: a raw stream has no header to hold more"
        );
    }
    Ok(())
}

fn parse_iv(command: &'static str, text: &str) -> Result<[u8; 16]> {
    match hex::decode(text.trim())
        .ok()
        .and_then(|bytes| <[u8; 16]>::try_from(bytes).ok())
    {
        Some(iv) => Ok(iv),
        None => usage!(command, "--iv needs exactly 32 hex digits (16 bytes)"),
    }
}

/// The parts of `enc` and `dec` that the rest of the rules need.
struct CryptInputs<'a> {
    command: &'static str,
    direction: Direction,
    inputs: &'a [PathBuf],
    list: &'a FileListArgs,
    output: Option<&'a Path>,
    output_dir: Option<&'a Path>,
    force: bool,
    range: Option<ByteRange>,
    keys: KeyPlan,
    format: Format,
    chunk_size: usize,
    show_data_key: bool,
    force_raw: bool,
    engine: &'a EngineArgs,
    ui: &'a UiArgs,
}

/// The rules shared by `enc` and `dec`: standard input used once, engine options that apply,
/// and outputs that are none of the files this command reads.
fn finish(parts: CryptInputs<'_>) -> Result<CryptPlan> {
    let command = parts.command;
    let many = parts.inputs.len() > 1
        || parts.list.files_from.is_some()
        || parts.list.recursive
        || parts.output_dir.is_some();
    let list_on_stdin = parts.list.files_from.as_deref() == Some(Path::new("-"));
    let data_on_stdin = !many && parts.inputs.first().is_none_or(|p| p == Path::new("-"));
    let stdin_readers =
        parts.keys.stdin_readers() + usize::from(data_on_stdin) + usize::from(list_on_stdin);
    if stdin_readers > 1 {
        usage!(command, "standard input can feed only one thing: the data (or the file list) comes from standard input, so give the key or passphrase another way (-k FILE, --key-fd N, --key-env VAR, --passphrase-file FILE), or give the data as a file");
    }
    let (engine, runner) = engine_and_runner(command, parts.engine)?;
    let files = if many {
        // A FIFO or device among many inputs would block or never end the run.
        crate::output::regular_inputs_only();
        many_files(&parts, runner)?
    } else {
        let input = parts
            .inputs
            .first()
            .filter(|p| *p != Path::new("-"))
            .cloned();
        if parts.ui.size.is_some() && input.is_some() {
            usage!(
                command,
                "--size is for input from a pipe; a file's size is known: drop --size"
            );
        }
        if parts.range.is_some() && (input.is_none() || runner != Runner::Local) {
            usage!(command, "--range reads a container file at the chunks it needs: give the file (not standard input), without --backend mpi");
        }
        let output = output_target(parts.direction, input.as_deref(), parts.output, parts.force)?;
        check_not_read(&output, input.as_deref(), &parts.keys)?;
        Files::One(FileJob { input, output })
    };
    Ok(CryptPlan {
        direction: parts.direction,
        files,
        range: parts.range,
        keys: parts.keys,
        format: parts.format,
        chunk_size: parts.chunk_size,
        show_data_key: parts.show_data_key,
        force_raw: parts.force_raw,
        engine,
        runner,
        ui: Ui {
            quiet: parts.ui.quiet,
            verbose: parts.ui.verbose,
            stats_json: parts.ui.stats == Some(StatsFormat::Json),
            size_hint: parts.ui.size,
        },
    })
}

/// The files of a many-file run: every input with its output, checked as a whole (no two
/// inputs write one output, no output is a file the run reads).
fn many_files(parts: &CryptInputs<'_>, runner: Runner) -> Result<Files> {
    let command = parts.command;
    if parts.output.is_some() {
        usage!(command, "-o names one output, but this run has several inputs: drop -o (each output is named after its input), or use --output-dir DIR");
    }
    if matches!(parts.format, Format::Raw { .. }) {
        usage!(command, "--raw takes one input at a time (each raw stream needs its own counter block, and its IV is printed for it): run one paraes per file, or drop --raw for containers");
    }
    if parts.range.is_some() {
        usage!(command, "--range applies to one container file");
    }
    if parts.ui.size.is_some() {
        usage!(command, "--size is for input from a pipe: drop it");
    }
    if parts.show_data_key {
        usage!(command, "--show-data-key applies to one file at a time");
    }
    if parts.inputs.iter().any(|p| p == Path::new("-")) {
        usage!(
            command,
            "standard input cannot be one of several inputs: give files only (or one input alone)"
        );
    }
    if let (Runner::Mpi { .. }, Some(list)) = (runner, &parts.list.files_from) {
        if !fs::metadata(list).is_ok_and(|m| m.is_file()) {
            usage!(command, "with --backend mpi, --files-from needs a regular file every rank can read (not standard input, a pipe or <(...)): write the list to a file first");
        }
    }
    let mut names = parts.inputs.to_vec();
    if let Some(list) = &parts.list.files_from {
        names.extend(files::read_list(list, parts.list.null)?);
    }
    let direction = parts.direction;
    let wanted = move |path: &Path| {
        let container = path.as_os_str().as_bytes().ends_with(b".paraes");
        match direction {
            Direction::Encrypt => !container,
            Direction::Decrypt => container,
        }
    };
    let mut skipped = Skipped::default();
    let found = files::gather(names, parts.list.recursive, wanted, &mut skipped);
    say_skipped(&skipped, direction, parts.ui.quiet);
    if found.is_empty() && skipped.unlisted.is_empty() {
        bail!("no input files: nothing to do");
    }
    let mut jobs = Vec::with_capacity(found.len());
    let mut refused = std::mem::take(&mut skipped.unlisted);
    let list_id = parts.list.files_from.as_deref().and_then(path_id);
    let mut outputs: HashMap<PathBuf, PathBuf> = HashMap::new();
    let input_ids: HashMap<(u64, u64), &Path> = found
        .iter()
        .filter_map(|f| path_id(&f.path).map(|id| (id, f.path.as_path())))
        .collect();
    for Found { path, relative } in &found {
        let named = match parts.output_dir {
            Some(dir) => {
                default_name(direction, relative, NamingFix::RunAlone).map(|name| dir.join(name))
            }
            None => default_name(direction, path, NamingFix::RunAlone),
        };
        let out = match named {
            Ok(out) => out,
            Err(e) => {
                refused.push((path.clone(), format!("{e:#}")));
                continue;
            }
        };
        let key = std::path::absolute(&out).unwrap_or_else(|_| out.clone());
        if let Some(first) = outputs.insert(key, path.clone()) {
            bail!(
                "{} and {} would both be written to {}: rename one, or run them separately",
                first.display(),
                path.display(),
                out.display()
            );
        }
        if let Some(input) = path_id(&out).and_then(|id| input_ids.get(&id)) {
            bail!(
                "{} (the output of {}) is the input {} of this run: writing it would destroy it; run them separately or use --output-dir",
                out.display(),
                path.display(),
                input.display()
            );
        }
        if list_id.is_some() && path_id(&out) == list_id {
            bail!(
                "{} (the output of {}) is the file list this run reads: writing it would destroy it; choose another --output-dir",
                out.display(),
                path.display()
            );
        }
        let output = OutputTarget::Path {
            path: out,
            force: parts.force,
            derived: true,
        };
        check_not_read(&output, Some(path), &parts.keys)?;
        jobs.push(FileJob {
            input: Some(path.clone()),
            output,
        });
    }
    Ok(Files::Many {
        jobs,
        output_dir: parts.output_dir.map(Path::to_path_buf),
        refused,
    })
}

/// Says once what a --recursive walk left out.
fn say_skipped(skipped: &Skipped, direction: Direction, quiet: bool) {
    if quiet {
        return;
    }
    if skipped.links > 0 {
        eprintln!(
            "paraes: note: skipped {} symbolic link(s) inside directories (not followed; name them as inputs to include them)",
            skipped.links
        );
    }
    if skipped.special > 0 {
        eprintln!(
            "paraes: note: skipped {} FIFO(s), socket(s) or device(s) inside directories",
            skipped.special
        );
    }
    if skipped.wrong_suffix > 0 {
        let what = match direction {
            Direction::Encrypt => "already ending in .paraes (not encrypted twice)",
            Direction::Decrypt => "not ending in .paraes",
        };
        eprintln!(
            "paraes: note: skipped {} file(s) inside directories {what}",
            skipped.wrong_suffix
        );
    }
}

/// Parses `START..END` (either end may be empty; sizes with units).
fn parse_range(command: &'static str, text: &str) -> Result<ByteRange> {
    let Some((start, end)) = text.split_once("..") else {
        usage!(command, "--range takes START..END (END exclusive, e.g. 1MiB..2MiB, 4096.., ..1KiB), not '{text}'");
    };
    let bound = |part: &str| -> Result<Option<u64>> {
        let part = part.trim();
        if part.is_empty() {
            return Ok(None);
        }
        match crate::units::parse_size(part) {
            Ok(n) => Ok(Some(n)),
            Err(e) => usage!(command, "--range: {e}"),
        }
    };
    let range = ByteRange {
        start: bound(start)?.unwrap_or(0),
        end: bound(end)?,
    };
    if let Some(end) = range.end {
        if end < range.start {
            usage!(
                command,
                "--range {text} ends before it starts: END is exclusive and must be at least START"
            );
        }
    }
    Ok(range)
}

/// Builds the plan of `verify`.
fn verify(args: &VerifyArgs) -> Result<VerifyPlan> {
    containers(
        "verify",
        &args.input,
        &args.list,
        KeyPlan::new(&args.keys).with_unlock(&args.unlock),
        args.quiet,
    )
}

/// Builds the plan of `upgrade`.
fn upgrade(args: &UpgradeArgs) -> Result<UpgradePlan> {
    const C: &str = "upgrade";
    let keys = KeyPlan::new(&args.keys).with_unlock(&args.unlock);
    if keys.keys.is_empty() && keys.passphrase.is_none() && keys.identities.is_empty() {
        usage!(C, "upgrade must open each file: give one key that opens it (-k, --key, --key-fd, --key-env, -p, --passphrase-file or -i)");
    }
    let key_size = args.bits.unwrap_or(KeySize::Aes256);
    if key_size == KeySize::Aes192 {
        usage!(
            C,
            "a v3 body is Cobblestone-128 or Cobblestone-256: give --bits 128 or 256, not 192"
        );
    }
    Ok(UpgradePlan {
        containers: containers(C, &args.input, &args.list, keys, args.quiet)?,
        key_size,
    })
}

/// The containers a `verify` or `upgrade` runs over (files only, never standard input), and
/// how to open them.
fn containers(
    command: &'static str,
    input: &[PathBuf],
    list: &crate::cli::FileListArgs,
    keys: KeyPlan,
    quiet: bool,
) -> Result<VerifyPlan> {
    let list_on_stdin = list.files_from.as_deref() == Some(Path::new("-"));
    if keys.stdin_readers() + usize::from(list_on_stdin) > 1 {
        usage!(command, "standard input can feed only one thing: give the key or passphrase another way (-k FILE, --key-fd N, --key-env VAR, --passphrase-file FILE)");
    }
    if input.iter().any(|p| p == Path::new("-")) {
        usage!(command, "{command} reads container files, not standard input: give the container's path (dec -o /dev/null checks a stream)");
    }
    let mut names = input.to_vec();
    if let Some(files_from) = &list.files_from {
        names.extend(files::read_list(files_from, list.null)?);
    }
    if names.is_empty() {
        usage!(
            command,
            "give the containers (FILE..., or --files-from LIST)"
        );
    }
    let mut skipped = Skipped::default();
    let found = files::gather(
        names,
        list.recursive,
        |p| p.as_os_str().as_bytes().ends_with(b".paraes"),
        &mut skipped,
    );
    say_skipped(&skipped, Direction::Decrypt, quiet);
    if found.is_empty() && skipped.unlisted.is_empty() {
        bail!("no containers to check: the directories hold no .paraes files (an empty backup does not verify)");
    }
    // Opening a FIFO among many inputs would block the run (a stat does not open it).
    let many = found.len() > 1 || list.recursive || list.files_from.is_some();
    let mut unlisted = skipped.unlisted;
    let mut files = Vec::with_capacity(found.len());
    for Found { path, .. } in found {
        let refused = many
            .then(|| fs::metadata(&path).ok())
            .flatten()
            .and_then(|meta| crate::output::not_regular(&path, &meta));
        match refused {
            Some(why) => unlisted.push((path, why)),
            None => files.push(path),
        }
    }
    Ok(VerifyPlan {
        files,
        unlisted,
        keys,
        quiet,
    })
}

/// `--backend` and the options of each engine and runner, refusing those that would be
/// silently ignored.
fn engine_and_runner(command: &'static str, args: &EngineArgs) -> Result<(EngineChoice, Runner)> {
    let backend = args.backend.unwrap_or(BackendArg::Auto);
    let mpi = backend == BackendArg::Mpi;
    let kind = match (backend, args.rank_engine) {
        (BackendArg::Mpi, Some(RankEngineArg::Gpu)) => EngineKind::Gpu,
        (BackendArg::Mpi, _) => EngineKind::Cpu,
        (_, Some(_)) => {
            usage!(
                command,
                "--rank-engine applies only to --backend mpi: drop it, or add --backend mpi"
            )
        }
        // GPU options ask for the GPU: auto must not drop them silently for the CPU.
        (BackendArg::Auto, None) if args.gpu_ctr.is_some() || args.gpu_device.is_some() => {
            EngineKind::Gpu
        }
        (BackendArg::Auto, None) => EngineKind::Auto,
        (BackendArg::Cpu, None) => EngineKind::Cpu,
        (BackendArg::Gpu, None) => EngineKind::Gpu,
        (BackendArg::SunwaySim, None) => EngineKind::SunwaySim,
    };
    if args.mpi_io.is_some() && !mpi {
        usage!(
            command,
            "--mpi-io applies only to --backend mpi: drop it, or add --backend mpi"
        );
    }
    let gpu_given = args.gpu_ctr.is_some() || args.gpu_device.is_some();
    if gpu_given && !matches!(kind, EngineKind::Gpu | EngineKind::Auto) {
        usage!(command, "--gpu-ctr and --gpu-device apply only to the GPU engine (--backend gpu or auto; with mpi, --rank-engine gpu): drop them");
    }
    let sim_given =
        args.sw_variant.is_some() || args.sw_buffering.is_some() || args.sw_cgs.is_some();
    if sim_given && kind != EngineKind::SunwaySim {
        usage!(command, "--sw-variant, --sw-buffering and --sw-cgs apply only to --backend sunway-sim: drop them, or add --backend sunway-sim");
    }
    if args.threads.is_some() && kind == EngineKind::SunwaySim {
        usage!(command, "--threads does not apply to the Sunway simulator (it models its own 64 CPEs per core group; --sw-cgs picks core groups)");
    }
    let defaults = SimConfig::default();
    let engine = EngineChoice {
        kind,
        threads: args.threads.map(|t| t as usize),
        gpu_ctr: args.gpu_ctr.unwrap_or(CtrVariant::Auto),
        gpu_device: args.gpu_device.unwrap_or(0),
        sim: SimConfig::new(
            args.sw_variant.unwrap_or(defaults.variant),
            args.sw_buffering.unwrap_or(defaults.buffering),
            args.sw_cgs.map_or(defaults.cgs, usize::from),
        ),
    };
    let runner = if mpi {
        Runner::Mpi {
            io: args.mpi_io.map(|io| match io {
                MpiIoArg::Direct => MpiIo::Direct,
                MpiIoArg::Scatter => MpiIo::Scatter,
            }),
        }
    } else {
        Runner::Local
    };
    Ok((engine, runner))
}

/// `-o`, or a name derived from the input's.
fn output_target(
    direction: Direction,
    input: Option<&Path>,
    output: Option<&Path>,
    force: bool,
) -> Result<OutputTarget> {
    if let Some(out) = output {
        // `-o -`, or a name of standard output itself (`-o /dev/stdout`).
        let is_stdout = out == Path::new("-")
            || (path_id(out).is_some() && path_id(out) == fd_id(1) && is_fd_path(out));
        return Ok(if is_stdout {
            OutputTarget::Stdout
        } else {
            OutputTarget::Path {
                path: through_links(out)?,
                force,
                derived: false,
            }
        });
    }
    let Some(input) = input else {
        return Ok(OutputTarget::Stdout);
    };
    Ok(OutputTarget::Path {
        path: default_name(direction, input, NamingFix::GiveOutput)?,
        force,
        derived: true,
    })
}

/// What a user whose input cannot name its output can do instead: a one-file run takes `-o`; a
/// many-file run refuses `-o`, so that input has to run on its own.
#[derive(Clone, Copy)]
enum NamingFix {
    GiveOutput,
    RunAlone,
}

impl NamingFix {
    fn advice(self) -> &'static str {
        match self {
            NamingFix::GiveOutput => "give -o PATH (or -o - for standard output)",
            NamingFix::RunAlone => {
                "run it on its own with -o PATH (a run of several files, or one with --output-dir, names each output after its input)"
            }
        }
    }
}

/// The output named after `input`: `+ .paraes` for enc, `- .paraes` for dec; when there is
/// none, the error says `fix`.
fn default_name(direction: Direction, input: &Path, fix: NamingFix) -> Result<PathBuf> {
    // `enc /dev/zero` must not create /dev/zero.paraes (and fill /dev with it).
    if fs::metadata(input)
        .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_block_device())
    {
        bail!(
            "cannot name the output after {}, a device: {}",
            input.display(),
            fix.advice()
        );
    }
    Ok(match direction {
        Direction::Encrypt => {
            let mut name = input.as_os_str().to_owned();
            name.push(".paraes");
            PathBuf::from(name)
        }
        // On bytes, so that names that are not UTF-8 work too.
        Direction::Decrypt => match input.as_os_str().as_bytes().strip_suffix(b".paraes") {
            Some(stem) if !stem.is_empty() && !stem.ends_with(b"/") => {
                PathBuf::from(OsStr::from_bytes(stem))
            }
            Some(_) => bail!(
                "cannot name the output: {} without .paraes leaves no file name; {}",
                input.display(),
                fix.advice()
            ),
            None => bail!(
                "cannot name the output: {} does not end in .paraes; {}",
                input.display(),
                fix.advice()
            ),
        },
    })
}

/// Whether `path` names an open descriptor (`/dev/stdout`, `/dev/fd/N`, `/proc/.../fd/N`)
/// rather than a file that merely is the same one.
fn is_fd_path(path: &Path) -> bool {
    let text = path.as_os_str().as_bytes();
    text.starts_with(b"/dev/std") || text.starts_with(b"/dev/fd/") || text.starts_with(b"/proc/")
}

/// An output path with its symbolic links resolved, so that the file is written where the link
/// points (as `cp` and `tee` do) and the link itself is never replaced: `-o /dev/stdout`
/// writes to whatever standard output is. A name must be a file name (not `dir/`).
fn through_links(path: &Path) -> Result<PathBuf> {
    if path.as_os_str().as_bytes().ends_with(b"/") || path.file_name().is_none() {
        bail!(
            "-o {} names a directory, not a file: give a file name",
            path.display()
        );
    }
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(path.to_path_buf());
    };
    if !meta.file_type().is_symlink() {
        return Ok(path.to_path_buf());
    }
    match fs::canonicalize(path) {
        Ok(target) => Ok(target),
        // A link to a pipe or terminal (/dev/stdout on a pipe): written in place, as a stream.
        Err(_) if fs::metadata(path).is_ok() => Ok(path.to_path_buf()),
        Err(_) => bail!(
            "-o {} is a symbolic link to nothing: give the path it should point to",
            path.display()
        ),
    }
}

/// The identity of a file (through links), when it exists.
fn file_id(meta: &fs::Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// Refuses an output that is a file this command reads: the input, a key, passphrase,
/// identity or recipients file (compared by device and inode, so links count too), or
/// standard output redirected onto one of them (`paraes enc f -o - >> f`).
fn check_not_read(output: &OutputTarget, input: Option<&Path>, keys: &KeyPlan) -> Result<()> {
    let out_meta = match output {
        OutputTarget::Path { path, .. } => fs::metadata(path).ok(),
        OutputTarget::Stdout => fs::metadata("/proc/self/fd/1").ok(),
    };
    let Some(out_meta) = out_meta.filter(|m| m.is_file()) else {
        // Nothing there yet, or a pipe, terminal or device: nothing to overwrite.
        return Ok(());
    };
    let out_id = Some(file_id(&out_meta));
    let out_name = match output {
        OutputTarget::Path { path, .. } => path.display().to_string(),
        OutputTarget::Stdout => "standard output".to_owned(),
    };
    let mut read: Vec<(String, Option<(u64, u64)>)> = Vec::new();
    match input {
        Some(path) => read.push(("the input".to_owned(), path_id(path))),
        // Data from standard input: `paraes enc < f >> f` would read what it writes.
        None => read.push(("the input (standard input)".to_owned(), fd_id(0))),
    }
    for (what, path) in keys.paths() {
        read.push((format!("{what} {}", path.display()), path_id(path)));
    }
    for (what, fd) in keys.descriptors() {
        read.push((what.to_owned(), fd_id(fd)));
    }
    for (what, id) in read {
        if id.is_some() && id == out_id {
            bail!("{out_name} is the same file as {what}, which this command reads: writing to it would destroy it; choose another output");
        }
    }
    Ok(())
}

/// The identity of the file at `path` (through links), if it exists.
fn path_id(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| file_id(&m))
}

/// The identity of what descriptor `fd` of this process is open on, if it is open.
fn fd_id(fd: u32) -> Option<(u64, u64)> {
    path_id(Path::new(&format!("/proc/self/fd/{fd}")))
}

/// Builds the plan of `rekey`.
fn rekey(args: &RekeyArgs) -> Result<RekeyPlan> {
    const C: &str = "rekey";
    let open = KeyPlan::new(&args.keys).with_unlock(&args.unlock);
    if open.keys.is_empty() && open.passphrase.is_none() && open.identities.is_empty() {
        usage!(C, "rekey must open the file first: give its current key (-k, --key, --key-fd, --key-env, -p, --passphrase-file or -i)");
    }

    let new = KeyPlan {
        keys: args
            .new_key_file
            .iter()
            .map(|p| KeySource::from_path(p))
            .collect(),
        passphrase: args
            .new_passphrase_file
            .as_deref()
            .map(PassphraseSource::from_path),
        recipients: args.new_recipient.clone(),
        recipients_files: args.new_recipients_file.clone(),
        ..KeyPlan::default()
    };
    if open.stdin_readers() + new.stdin_readers() > 1 {
        usage!(C, "standard input can feed only one key or passphrase");
    }
    let container = path_id(&args.file);
    for (_, path) in open.paths().into_iter().chain(new.paths()) {
        if container.is_some() && path_id(path) == container {
            bail!(
                "{} is the container being rekeyed, not a key: give its keys in other files",
                path.display()
            );
        }
    }
    Ok(RekeyPlan {
        file: args.file.clone(),
        open,
        new,
        quiet: args.quiet,
    })
}
