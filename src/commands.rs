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
    self, Access, BodyParams, ContainerError, Opened, Rekey, SecretIdentity, StanzaKind,
    UnverifiedHeader, V1KeySource, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE,
};
use paraes_core::pipeline::{self, PipelineError, StreamSpec, DEFAULT_CHUNK_SIZE};
use paraes_core::{Direction, Key, KeySize, Mode};

use crate::backend;
use crate::cli::{BackendArg, Command, CryptArgs, InfoArgs, KeygenArgs, ModeArg, RekeyArgs};
use crate::keys::KeySources;
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
        Command::Rekey(args) => rekey(&args),
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
    if args.raw && !ecb && args.iv.is_none() && direction == Direction::Decrypt {
        bail!("dec --raw --mode ctr needs --iv HEX (32 hex digits: the initial counter block the stream was made with)");
    }
    if args.raw && (args.passphrase.passphrase || args.passphrase.passphrase_file.is_some()) {
        bail!("--raw needs a key (--key-file or --key): a raw stream has no header to keep a passphrase's salt");
    }
    if args.raw
        && !(args.recipient.is_empty()
            && args.recipients_file.is_empty()
            && args.identity.is_empty())
    {
        bail!("--raw needs a key (--key-file or --key): public-key recipients and identities need a container");
    }
    if direction == Direction::Encrypt && !args.identity.is_empty() {
        bail!("enc encrypts to recipients (-r RECIPIENT, -R FILE), not identities: -i is for dec; print an identity's recipient with `paraes keygen -y FILE`");
    }
    if direction == Direction::Decrypt
        && !(args.recipient.is_empty() && args.recipients_file.is_empty())
    {
        bail!("dec opens with identities (-i FILE), not recipients: drop -r/-R");
    }
    if direction == Direction::Encrypt && args.show_data_key {
        bail!("--show-data-key is for dec: it prints the key of an existing container");
    }
    if args.raw && args.show_data_key {
        bail!("--show-data-key applies to containers; a raw stream's key is the one you gave");
    }
    if direction == Direction::Decrypt && !args.raw {
        if args.chunk_size.is_some() {
            bail!("dec reads the chunk size from the container header: drop --chunk-size");
        }
        if args.bits.is_some() {
            bail!("dec reads the key size from the container header: drop --bits");
        }
    }
    if args.raw && args.key_file.len() > 1 {
        bail!("--raw uses exactly one key: give one --key-file");
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

/// A job of `enc` or `dec`, ready to run on any runner: the stream's parameters, its keys
/// (a raw key, or an opened container and its header bytes), and both ends, opened.
pub struct Prepared {
    /// Mode of operation.
    pub mode: Mode,
    /// Raw streams: the user's key (a container's keys are in `container`).
    pub raw_key: Option<Key>,
    /// Raw CTR's initial counter block (a container's is in its header).
    pub iv: [u8; 16],
    /// Plaintext bytes per chunk.
    pub chunk_size: usize,
    /// PKCS#7 padding of ECB's final block.
    pub padding: bool,
    /// A container: its header bytes (written by enc, read by dec) and its verified keys.
    pub container: Option<(Vec<u8>, Opened)>,
    /// Where the stream comes from (after the header when decrypting a container).
    pub input: Input,
    /// Where it goes.
    pub output: Output,
}

/// The key options of `enc`/`dec`.
fn key_sources(args: &CryptArgs) -> KeySources<'_> {
    KeySources {
        key_files: &args.key_file,
        key: args.key.as_deref(),
        passphrase: &args.passphrase,
        identities: &args.identity,
        recipients: &args.recipient,
        recipients_files: &args.recipients_file,
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
    let spec = match &job.container {
        Some((header_bytes, opened)) => {
            if direction == Direction::Encrypt {
                job.output
                    .writer()
                    .write_all(header_bytes)
                    .with_context(|| format!("writing {} failed", job.output.name()))?;
            }
            opened.stream_spec(engine.as_ref(), direction)
        }
        None => {
            expanded = job.raw_key.as_ref().expect("a raw job has a key").expand();
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

/// A random raw CTR IV, printed on stderr so the stream can be decrypted.
fn fresh_iv() -> Result<[u8; 16]> {
    let mut iv = [0u8; 16];
    container::random_bytes(&mut iv)?;
    eprintln!("iv: {}", hex::encode(iv));
    Ok(iv)
}

/// Whether an IV looks chosen by hand: all zero, or one byte repeated.
fn iv_looks_hand_picked(iv: &[u8; 16]) -> bool {
    iv.iter().all(|&b| b == iv[0])
}

/// After [`check_options`]: opens the input, gets the keys (asking for a passphrase if need
/// be), seals a new container header or reads and opens the existing one, and prepares the
/// output.
pub fn prepare(args: &CryptArgs, direction: Direction) -> Result<Prepared> {
    let warn = warner(args.quiet);
    let mut input = Input::open(args.input.as_deref())?;
    let dest = output_path(args, direction)?;
    let sources = key_sources(args);

    if args.raw {
        let key = sources.raw_key(&warn)?;
        if let Some(bits) = &args.bits {
            check_key_bits(&key, key_size_from_bits(bits)?)?;
        }
        let mode = mode_of(args.mode);
        if mode == Mode::Ecb && direction == Direction::Encrypt {
            warn_ecb(&warn);
        }
        let iv = match (&args.iv, mode, direction) {
            (Some(text), _, _) => {
                let iv = parse_iv(text)?;
                if direction == Direction::Encrypt && iv_looks_hand_picked(&iv) {
                    warn("this IV looks hand-picked: CTR under one key must never reuse a counter block; drop --iv to get a random one");
                }
                iv
            }
            (None, Mode::Ctr, Direction::Encrypt) => fresh_iv()?,
            (None, _, _) => [0; 16],
        };
        let binary_output = direction == Direction::Encrypt;
        let output = Output::create(dest.as_deref(), args.force, &input, binary_output)?;
        return Ok(Prepared {
            mode,
            raw_key: Some(key),
            iv,
            chunk_size: args.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE),
            padding: !args.no_pad,
            container: None,
            input,
            output,
        });
    }

    let (header_bytes, opened) = match direction {
        Direction::Encrypt => {
            let mode = mode_of(args.mode);
            if mode == Mode::Ecb {
                warn_ecb(&warn);
            }
            let recipients = sources.recipients(&warn)?;
            let params = BodyParams {
                mode,
                key_size: key_size_from_bits(args.bits.as_deref().unwrap_or("256"))?,
                chunk_size: args.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE),
            };
            container::seal(params, &recipients)?
        }
        Direction::Decrypt => {
            let mut tee = Tee {
                inner: &mut input,
                seen: Vec::new(),
            };
            let unverified = read_header(&mut tee)?;
            let header_bytes = tee.seen;
            let info = unverified.info();
            if let Some(mode) = args.mode {
                if mode_of(Some(mode)) != info.params.mode {
                    bail!(
                        "this container is {}, not {}: drop --mode (dec reads it from the header)",
                        mode_name(info.params.mode),
                        mode_name(mode_of(Some(mode)))
                    );
                }
            }
            let unlock = sources.unlock(args.max_kdf_mib, &warn)?;
            let opened = unverified.open(&unlock).map_err(explain_open_error)?;
            if args.show_data_key {
                show_data_key(&opened);
            }
            (header_bytes, opened)
        }
    };
    let output = Output::create(
        dest.as_deref(),
        args.force,
        &input,
        direction == Direction::Encrypt,
    )?;
    let info = opened.info().clone();
    Ok(Prepared {
        mode: info.params.mode,
        raw_key: None,
        iv: info.counter,
        chunk_size: info.params.chunk_size,
        padding: true,
        container: Some((header_bytes, opened)),
        input,
        output,
    })
}

/// `--show-data-key`: the body key and counter on stderr, and how to use them.
fn show_data_key(opened: &Opened) {
    let info = opened.info();
    let key = zeroize::Zeroizing::new(hex::encode(opened.body_key().as_bytes()));
    eprintln!("paraes: warning: showing this file's data key: anyone who sees it can read this file (but not forge it)");
    eprintln!("data key:   {}", key.as_str());
    eprintln!("counter:    {}", hex::encode(info.counter));
    eprintln!(
        "decrypt the body with: openssl enc -d -aes-{}-{} -K <data key> {}(the body is the file from byte {} with the {}-byte tag after every {}-byte chunk removed)",
        info.params.key_size.bits(),
        mode_name(info.params.mode).to_lowercase(),
        if info.params.mode == Mode::Ctr { "-iv <counter> " } else { "" },
        info.header_len,
        container::TAG_LEN,
        info.params.chunk_size
    );
}

/// Adds what to do to a container open failure.
fn explain_open_error(e: ContainerError) -> anyhow::Error {
    match e {
        ContainerError::KdfTooCostly { cost_mib, .. } => anyhow::Error::new(e).context(format!(
            "refusing the passphrase stanza: if you trust this file, allow it with --max-kdf-mib {cost_mib}"
        )),
        other => other.into(),
    }
}

/// A reader that keeps a copy of what it read (the exact header bytes, for MPI ranks).
struct Tee<'a, R> {
    inner: &'a mut R,
    seen: Vec<u8>,
}

impl<R: std::io::Read> std::io::Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// Reads a container header; a read error names the input file.
fn read_header(input: &mut Tee<'_, Input>) -> Result<UnverifiedHeader> {
    UnverifiedHeader::read(input).map_err(|e| match e {
        ContainerError::Io(io) => anyhow::Error::new(io).context(format!(
            "reading the container header of {} failed",
            input.inner.name()
        )),
        ContainerError::NotAContainer => anyhow::anyhow!(
            "{} is not a paraes container (no paraes header): to decrypt a raw stream made with enc --raw, add --raw",
            input.inner.name()
        ),
        other => other.into(),
    })
}

/// How users name a mode.
fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Ctr => "CTR",
        Mode::Ecb => "ECB",
    }
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

/// Creates `path` for a secret (mode 0600; refusing an existing file unless `force`).
fn create_private(path: &Path, force: bool) -> Result<fs::File> {
    let shown = path.display();
    let mut options = fs::OpenOptions::new();
    options.write(true).mode(0o600);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!("{shown} already exists: use --force to overwrite it")
        }
        _ => anyhow::Error::new(e).context(format!("cannot create {shown}")),
    })?;
    // Opening an existing file (--force) keeps its mode: make it private first.
    file.set_permissions(fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {shown} private"))?;
    Ok(file)
}

/// Writes a secret `text` to `-o PATH` (mode 0600) or standard output.
fn write_secret(output: Option<&Path>, force: bool, text: &str) -> Result<()> {
    match output.filter(|p| *p != Path::new("-")) {
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing the key failed"),
        Some(path) => {
            let mut file = create_private(path, force)?;
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {} failed", path.display()))
        }
    }
}

/// `keygen`: a symmetric key, an identity (`--x25519`, `--pq`), or the recipients of an
/// identity file (`-y`).
fn keygen(args: &KeygenArgs) -> Result<()> {
    if let Some(path) = &args.recipient_of {
        for identity in crate::keys::read_identity_file(path, &warner(false))? {
            println!("{}", identity.recipient());
        }
        return Ok(());
    }
    if args.x25519 || args.pq {
        let identity = if args.pq {
            SecretIdentity::generate_hybrid()?
        } else {
            SecretIdentity::generate_x25519()?
        };
        let recipient = identity.recipient();
        let text = zeroize::Zeroizing::new(format!(
            "# paraes identity ({}); keep this file secret\n# recipient: {recipient}\n{}\n",
            if args.pq {
                "ML-KEM-768 + X25519"
            } else {
                "X25519"
            },
            identity.to_secret_text().as_str()
        ));
        write_secret(args.output.as_deref(), args.force, &text)?;
        eprintln!("recipient: {recipient}");
        return Ok(());
    }
    let size = key_size_from_bits(args.bits.as_deref().unwrap_or("256"))?;
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    container::random_bytes(&mut key[..size.bytes()])?;
    let text = zeroize::Zeroizing::new(format!("{}\n", hex::encode(&key[..size.bytes()])));
    write_secret(args.output.as_deref(), args.force, &text)
}

/// Names a stanza kind list for `info`.
fn list_stanzas(stanzas: &[StanzaKind]) -> String {
    stanzas
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `info`.
fn info(args: &InfoArgs) -> Result<()> {
    let mut input = Input::open(Some(&args.file))?;
    let mut tee = Tee {
        inner: &mut input,
        seen: Vec::new(),
    };
    let header = UnverifiedHeader::read(&mut tee).map_err(|e| match e {
        ContainerError::NotAContainer => anyhow::anyhow!(
            "{} is not a paraes container (no paraes header; raw streams have no header to show)",
            args.file.display()
        ),
        other => other.into(),
    })?;
    let info = header.info();
    let mode = mode_name(info.params.mode);
    println!("format:       paraes container v{}", info.version);
    println!("mode:         AES-{}-{mode}", info.params.key_size.bits());
    println!("chunk size:   {} bytes", info.params.chunk_size);
    let nonce_name = match info.params.mode {
        Mode::Ctr => "counter:",
        Mode::Ecb => "nonce:",
    };
    println!("{nonce_name:<14}{}", hex::encode(info.counter));
    match &info.access {
        Access::V1(V1KeySource::RawKey) => println!("key:          raw key"),
        Access::V1(V1KeySource::Passphrase(p)) => println!(
            "key:          passphrase, Argon2id m={} KiB t={} p={} salt={}",
            p.memory_kib,
            p.iterations,
            p.lanes,
            hex::encode(p.salt)
        ),
        Access::V2 { stanzas, older } => {
            println!("opens with:   {}", list_stanzas(stanzas));
            if let Some(older) = older {
                println!(
                    "also:         {} (an older stanza set: a rekey was interrupted; rekey again to finish it)",
                    list_stanzas(older)
                );
            }
        }
    }
    if let Some(len) = input.len() {
        let body = len.saturating_sub(info.header_len as u64);
        let record = (info.params.chunk_size + container::TAG_LEN) as u64;
        let chunks = body.div_ceil(record).max(1);
        let payload = body.saturating_sub(chunks * container::TAG_LEN as u64);
        println!("chunks:       {chunks} ({payload} bytes of ciphertext)");
    }
    println!("authenticity: not checked (that needs the key: paraes dec)");
    Ok(())
}

/// `rekey`: new stanzas for the same file key; in place when they fit, else a rewritten file
/// renamed over the old one. The body bytes never change.
fn rekey(args: &RekeyArgs) -> Result<()> {
    let warn = warner(args.quiet);
    let shown = args.file.display();
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&args.file)
        .with_context(|| format!("cannot open {shown} for rekeying"))?;
    if !file.metadata()?.is_file() {
        bail!("{shown} is not a regular file");
    }
    let unverified = UnverifiedHeader::read(&mut std::io::BufReader::new(&file))
        .with_context(|| format!("{shown}"))?;
    let unlock = KeySources {
        key_files: &args.key_file,
        key: args.key.as_deref(),
        passphrase: &args.passphrase,
        identities: &args.identity,
        recipients: &[],
        recipients_files: &[],
    }
    .unlock(args.max_kdf_mib, &warn)?;
    if unlock.identities.is_empty() {
        bail!("rekey must open the file first: give its current key (-k, --key, -p, --passphrase-file or -i)");
    }
    let opened = unverified.open(&unlock).map_err(explain_open_error)?;
    let new_passphrase = crate::cli::PassphraseArgs {
        passphrase: false,
        passphrase_file: args.new_passphrase_file.clone(),
    };
    let recipients = KeySources {
        key_files: &args.new_key_file,
        key: None,
        passphrase: &new_passphrase,
        identities: &[],
        recipients: &args.new_recipient,
        recipients_files: &args.new_recipients_file,
    }
    .recipients(&warn)?;
    match opened.rekey(&recipients)? {
        Rekey::InPlace(writes) => {
            use std::os::unix::fs::FileExt;
            for write in writes {
                // Each write is durable before the next: at every instant the old or the new
                // stanzas open the file (docs/FORMAT.md).
                file.write_all_at(&write.bytes, write.offset)
                    .and_then(|()| file.sync_data())
                    .with_context(|| format!("writing the new header of {shown} failed (the file still opens with the old or the new keys)"))?;
            }
            if !args.quiet {
                eprintln!("paraes: rekeyed {shown} in place (body untouched)");
            }
        }
        Rekey::Rewrite {
            header,
            body_offset,
        } => {
            let dir = args
                .file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let mut temp = tempfile::Builder::new()
                .prefix(".paraes-rekey.")
                .tempfile_in(dir)
                .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
            let mode = file.metadata()?.permissions().mode();
            use std::io::{Seek, SeekFrom};
            let copied = temp
                .as_file()
                .set_permissions(fs::Permissions::from_mode(mode))
                .and_then(|()| temp.write_all(&header))
                .and_then(|()| file.seek(SeekFrom::Start(body_offset)))
                .and_then(|_| std::io::copy(&mut file, temp.as_file_mut()))
                .and_then(|_| temp.as_file().sync_all());
            copied.with_context(|| {
                format!("writing the rekeyed copy of {shown} failed ({shown} is unchanged)")
            })?;
            temp.persist(&args.file)
                .map_err(|e| e.error)
                .with_context(|| format!("replacing {shown} failed ({shown} is unchanged)"))?;
            if !args.quiet {
                eprintln!("paraes: rekeyed {shown} (the new stanzas needed a larger header: the body was copied unchanged)");
            }
        }
    }
    Ok(())
}
