//! The subcommands: option checks, then glue between keys, engine, container and pipeline.

use std::ffi::OsStr;
use std::fs;
use std::io::{IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use paraes_core::container::{
    self, Argon2Params, ContainerError, ContainerKeys, Header, KeySource, UnverifiedHeader,
    MAX_CHUNK_SIZE, MIN_CHUNK_SIZE,
};
use paraes_core::pipeline::{self, PipelineError, StreamSpec, DEFAULT_CHUNK_SIZE};
use paraes_core::{Direction, Key, KeySize, Mode};

use crate::backend;
use crate::cli::{BackendArg, Command, CryptArgs, InfoArgs, KeygenArgs, ModeArg};
use crate::keys::{self, Secret};
use crate::output::{Input, Output};

/// Inputs at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN: u64 = 64 << 20;

/// Runs one subcommand.
pub fn run(command: Command) -> Result<()> {
    match command {
        Command::Enc(args) => crypt(&args, Direction::Encrypt),
        Command::Dec(args) => crypt(&args, Direction::Decrypt),
        Command::Keygen(args) => keygen(&args),
        Command::Info(args) => info(&args),
        Command::Bench(args) => crate::bench::run(&args),
        Command::WatchOutput { path } => crate::output::watch_output(&path),
    }
}

/// Refuses option combinations that make no sense, naming the fix.
pub fn check_options(args: &CryptArgs, direction: Direction) -> Result<()> {
    let ecb = args.mode == Some(ModeArg::Ecb);
    if args.iv.is_some() && !args.raw {
        bail!("--iv works only with --raw (a container makes its own random counter): add --raw or drop --iv");
    }
    if args.no_pad && !args.raw {
        bail!("--no-pad works only with --raw (containers always pad ECB): add --raw or drop --no-pad");
    }
    if args.no_pad && !ecb {
        bail!("--no-pad applies only to --mode ecb (CTR never pads)");
    }
    if args.raw && ecb && args.iv.is_some() {
        bail!("ECB takes no --iv: drop it, or use --mode ctr");
    }
    if args.raw && !ecb && args.iv.is_none() {
        bail!("--raw --mode ctr needs --iv HEX (32 hex digits: the initial counter block)");
    }
    if args.raw && (args.passphrase || args.passphrase_file.is_some()) {
        bail!("--raw needs a key (--key-file or --key): a raw stream has no header to keep a passphrase's salt");
    }
    if direction == Direction::Decrypt && !args.raw {
        if args.chunk_size.is_some() {
            bail!("dec reads the chunk size from the container header: drop --chunk-size");
        }
        if args.bits.is_some() {
            bail!("dec reads the key size from the container header: drop --bits");
        }
    }
    if let Some(size) = args.chunk_size {
        if !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&size) || !size.is_multiple_of(16) {
            bail!("--chunk-size must be a multiple of 16 bytes from 4KiB to 64MiB");
        }
    }
    Ok(())
}

/// The output path: `-o`, or derived from the input name; `None` is standard output.
fn output_path(args: &CryptArgs, direction: Direction) -> Result<Option<PathBuf>> {
    if let Some(out) = &args.output {
        return Ok((out != Path::new("-")).then(|| out.clone()));
    }
    let Some(input) = args.input.as_ref().filter(|p| *p != Path::new("-")) else {
        return Ok(None);
    };
    // `enc /dev/zero` must not create /dev/zero.paraes (and fill /dev with it).
    if fs::metadata(input)
        .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_block_device())
    {
        bail!(
            "cannot name the output after {}, a device: give -o PATH (or -o - for standard output)",
            input.display()
        );
    }
    match direction {
        Direction::Encrypt => {
            let mut name = input.clone().into_os_string();
            name.push(".paraes");
            Ok(Some(name.into()))
        }
        // On bytes, so that names that are not UTF-8 work too.
        Direction::Decrypt => match input.as_os_str().as_bytes().strip_suffix(b".paraes") {
            Some(stem) if !stem.is_empty() && !stem.ends_with(b"/") => {
                Ok(Some(PathBuf::from(OsStr::from_bytes(stem))))
            }
            _ => bail!(
                "cannot name the output: {} does not end in .paraes; give -o PATH (or -o - for standard output)",
                input.display()
            ),
        },
    }
}

/// A warning printer that --quiet silences.
fn warner(quiet: bool) -> impl Fn(&str) {
    move |message: &str| {
        if !quiet {
            eprintln!("paraes: warning: {message}");
        }
    }
}

fn key_size_from_bits(bits: &str) -> Result<KeySize> {
    Ok(KeySize::from_bits(bits.parse().context("--bits")?)?)
}

fn parse_iv(text: &str) -> Result<[u8; 16]> {
    hex::decode(text.trim())
        .ok()
        .and_then(|bytes| <[u8; 16]>::try_from(bytes).ok())
        .context("--iv needs exactly 32 hex digits (16 bytes)")
}

/// A job of `enc` or `dec`, ready to run on any runner: the stream's parameters, the key, the
/// container header (`None`: a raw stream), and both ends, opened.
pub struct Prepared {
    /// Mode of operation.
    pub mode: Mode,
    /// The AES key.
    pub key: Key,
    /// Raw CTR's initial counter block (a container's is in its header).
    pub iv: [u8; 16],
    /// Plaintext bytes per chunk.
    pub chunk_size: usize,
    /// PKCS#7 padding of ECB's final block.
    pub padding: bool,
    /// The container header: to write (enc) or read and verified (dec); `None` for --raw.
    pub header: Option<Header>,
    /// Where the stream comes from (after the header when decrypting a container).
    pub input: Input,
    /// Where it goes.
    pub output: Output,
}

impl Prepared {
    /// The container's keys, its sealed header bytes and its chunk authenticator.
    pub fn container(&self) -> Option<(ContainerKeys, Vec<u8>, container::Authenticator)> {
        self.header.as_ref().map(|header| {
            let keys = ContainerKeys::derive(&self.key);
            let (bytes, auth) = header.seal(&keys);
            (keys, bytes, auth)
        })
    }
}

/// `enc` and `dec` on one machine.
fn crypt(args: &CryptArgs, direction: Direction) -> Result<()> {
    if args.backend == BackendArg::Mpi {
        return crate::mpi::crypt(args, direction);
    }
    check_options(args, direction)?;
    let engine = backend::select(args.backend, args.threads, &args.engine)?;
    let mut job = prepare(args, direction)?;
    let expanded;
    let container = job.container();
    let spec = match &container {
        Some((keys, header_bytes, auth)) => {
            if direction == Direction::Encrypt {
                job.output
                    .writer()
                    .write_all(header_bytes)
                    .with_context(|| format!("writing {} failed", job.output.name()))?;
            }
            let header = job.header.as_ref().expect("a container has a header");
            StreamSpec::for_container(engine.as_ref(), header, keys, auth, direction)
        }
        None => {
            expanded = job.key.expand();
            StreamSpec {
                engine: engine.as_ref(),
                mode: job.mode,
                direction,
                key: &expanded,
                iv: job.iv,
                chunk_size: job.chunk_size,
                padding: job.padding,
                auth: None,
            }
        }
    };
    let started = std::time::Instant::now();
    stream(&spec, &mut job.input, &mut job.output, args.quiet)?;
    job.output.commit()?;
    if let (Some(modelled), false) = (engine.modelled(), args.quiet) {
        eprintln!(
            "paraes: {}: {} bytes in {:.6} s simulated ({:.2} Gbps); {:.3} s on this host",
            engine.name(),
            modelled.bytes,
            modelled.seconds,
            modelled.gbps(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// After [`check_options`]: opens the input, gets the key (asking for a passphrase if need be), makes
/// or reads and verifies the container header, and prepares the output.
pub fn prepare(args: &CryptArgs, direction: Direction) -> Result<Prepared> {
    let warn = warner(args.quiet);
    let mut input = Input::open(args.input.as_deref())?;
    let dest = output_path(args, direction)?;

    if args.raw {
        let Secret::Key(key) = keys::secret(args, false, &warn)? else {
            unreachable!("check_options refuses --raw with a passphrase")
        };
        if let Some(bits) = &args.bits {
            check_key_bits(&key, key_size_from_bits(bits)?)?;
        }
        let mode = mode_of(args.mode);
        if mode == Mode::Ecb && direction == Direction::Encrypt {
            warn_ecb(&warn);
        }
        let iv = args
            .iv
            .as_deref()
            .map(parse_iv)
            .transpose()?
            .unwrap_or_default();
        let binary_output = direction == Direction::Encrypt;
        let output = Output::create(dest.as_deref(), args.force, &input, binary_output)?;
        return Ok(Prepared {
            mode,
            key,
            iv,
            chunk_size: args.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE),
            padding: !args.no_pad,
            header: None,
            input,
            output,
        });
    }

    let (key, header) = match direction {
        Direction::Encrypt => {
            let mode = mode_of(args.mode);
            if mode == Mode::Ecb {
                warn_ecb(&warn);
            }
            let (key, key_source) = match keys::secret(args, true, &warn)? {
                Secret::Key(key) => {
                    if let Some(bits) = &args.bits {
                        check_key_bits(&key, key_size_from_bits(bits)?)?;
                    }
                    (key, KeySource::RawKey)
                }
                Secret::Passphrase(passphrase) => {
                    let size = key_size_from_bits(args.bits.as_deref().unwrap_or("256"))?;
                    let params = Argon2Params::recommended()?;
                    (
                        params.derive_key(&passphrase, size)?,
                        KeySource::Passphrase(params),
                    )
                }
            };
            let chunk_size = args.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE);
            let header = Header::new(mode, key.size(), chunk_size, key_source)?;
            (key, header)
        }
        Direction::Decrypt => {
            let unverified = read_header(&mut input)?;
            let header = unverified.header;
            if let Some(mode) = args.mode {
                if mode_of(Some(mode)) != header.mode {
                    bail!(
                        "this container is {:?}, not {mode:?}: drop --mode (dec reads it from the header)",
                        header.mode
                    );
                }
            }
            let key = match (keys::secret(args, false, &warn)?, &header.key_source) {
                (Secret::Key(key), KeySource::RawKey) => {
                    check_key_bits(&key, header.key_size)?;
                    key
                }
                (Secret::Passphrase(passphrase), KeySource::Passphrase(params)) => {
                    params.derive_key(&passphrase, header.key_size)?
                }
                (Secret::Key(_), KeySource::Passphrase(_)) => bail!(
                    "this container was encrypted with a passphrase: use -p or --passphrase-file"
                ),
                (Secret::Passphrase(_), KeySource::RawKey) => bail!(
                    "this container was encrypted with a key, not a passphrase: use --key-file"
                ),
            };
            unverified.verify(&ContainerKeys::derive(&key))?;
            (key, header)
        }
    };
    let output = Output::create(
        dest.as_deref(),
        args.force,
        &input,
        direction == Direction::Encrypt,
    )?;
    Ok(Prepared {
        mode: header.mode,
        key,
        iv: header.nonce,
        chunk_size: header.chunk_size,
        padding: true,
        header: Some(header),
        input,
        output,
    })
}

/// Reads a container header; a read error names the input file.
fn read_header(input: &mut Input) -> Result<UnverifiedHeader> {
    Header::read(input).map_err(|e| match e {
        ContainerError::Io(io) => anyhow::Error::new(io).context(format!(
            "reading the container header of {} failed",
            input.name()
        )),
        other => other.into(),
    })
}

fn mode_of(arg: Option<ModeArg>) -> Mode {
    match arg {
        Some(ModeArg::Ecb) => Mode::Ecb,
        Some(ModeArg::Ctr) | None => Mode::Ctr,
    }
}

fn warn_ecb(warn: &dyn Fn(&str)) {
    warn("ECB leaks patterns (equal 16-byte blocks encrypt equally): prefer --mode ctr unless you need ECB");
}

fn check_key_bits(key: &Key, wanted: KeySize) -> Result<()> {
    if key.size() != wanted {
        bail!(
            "the key is {} bits but {} bits are needed: use a key of that size",
            key.size().bits(),
            wanted.bits()
        );
    }
    Ok(())
}

/// Runs the pipeline with a progress bar when it is worth watching.
fn stream(
    spec: &StreamSpec<'_>,
    input: &mut Input,
    output: &mut Output,
    quiet: bool,
) -> Result<()> {
    let size = input.len();
    let watch =
        !quiet && std::io::stderr().is_terminal() && size.is_none_or(|len| len >= PROGRESS_MIN);
    let bar = if watch {
        let bar = size.map_or_else(ProgressBar::new_spinner, ProgressBar::new);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {bytes}/{total_bytes} {binary_bytes_per_sec} {wide_bar} {eta}",
            )
            .expect("valid template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let result = pipeline::run(spec, input, &mut output.writer(), &|n| bar.set_position(n));
    bar.finish_and_clear();
    // Name the file that failed (the pipeline only knows "the input" and "the output").
    result.map_err(|e| match e {
        PipelineError::Read(io) => {
            anyhow::Error::new(io).context(format!("reading {} failed", input.name()))
        }
        PipelineError::Write(io) => {
            anyhow::Error::new(io).context(format!("writing {} failed", output.name()))
        }
        other => other.into(),
    })?;
    Ok(())
}

/// `keygen`.
fn keygen(args: &KeygenArgs) -> Result<()> {
    let size = key_size_from_bits(&args.bits)?;
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    container::random_bytes(&mut key[..size.bytes()])?;
    let text = zeroize::Zeroizing::new(format!("{}\n", hex::encode(&key[..size.bytes()])));
    match args.output.as_deref().filter(|p| *p != Path::new("-")) {
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing the key failed")?,
        Some(path) => {
            let shown = path.display();
            let mut options = fs::OpenOptions::new();
            options.write(true).mode(0o600);
            if args.force {
                options.create(true).truncate(true);
            } else {
                options.create_new(true);
            }
            let mut file = options.open(path).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => {
                    anyhow::anyhow!("{shown} already exists: use --force to overwrite it")
                }
                _ => anyhow::Error::new(e).context(format!("cannot create {shown}")),
            })?;
            // Opening an existing file (--force) keeps its mode: make it private first.
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .and_then(|()| file.write_all(text.as_bytes()))
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {shown} failed"))?;
        }
    }
    Ok(())
}

/// `info`.
fn info(args: &InfoArgs) -> Result<()> {
    let mut input = Input::open(Some(&args.file))?;
    let header = read_header(&mut input)?.header;
    let mode = match header.mode {
        Mode::Ctr => "CTR",
        Mode::Ecb => "ECB",
    };
    println!("format:       paraes container v{}", container::VERSION);
    println!("mode:         AES-{}-{mode}", header.key_size.bits());
    println!("chunk size:   {} bytes", header.chunk_size);
    let nonce_name = match header.mode {
        Mode::Ctr => "counter:",
        Mode::Ecb => "nonce:",
    };
    println!("{nonce_name:<14}{}", hex::encode(header.nonce));
    match header.key_source {
        KeySource::RawKey => println!("key:          raw key"),
        KeySource::Passphrase(p) => println!(
            "key:          passphrase, Argon2id m={} KiB t={} p={} salt={}",
            p.memory_kib,
            p.iterations,
            p.lanes,
            hex::encode(p.salt)
        ),
    }
    if let Some(len) = input.len() {
        let body = len.saturating_sub(header.encoded_len() as u64);
        let record = (header.chunk_size + container::TAG_LEN) as u64;
        let chunks = body.div_ceil(record).max(1);
        let payload = body.saturating_sub(chunks * container::TAG_LEN as u64);
        println!("chunks:       {chunks} ({payload} bytes of ciphertext)");
    }
    println!("authenticity: not checked (that needs the key: paraes dec)");
    Ok(())
}
