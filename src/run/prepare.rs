//! A plan made concrete: the input opened, the keys read (a passphrase asked for), a new
//! container header sealed or the existing one read and opened, the output prepared. Every
//! runner starts from a [`Prepared`] job.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::cobblestone::Variant;
use paraes_core::container::{
    self, Argon2Params, BodyAccess, ContainerError, IgnoredSlot, Opened, Recipient, Unlock,
    UnverifiedHeader,
};
pub use paraes_core::stream::Stream;
use paraes_core::stream::StreamError;
use paraes_core::{Direction, Key, Mode};

use crate::keys::Warn;
use crate::plan::{CryptPlan, FileTask, Format, OutputTarget};
use paraes_files::{Input, Output, OutputOptions, Reach};

/// A job of `enc` or `dec`, ready to run on any runner: the stream and both ends, opened.
pub struct Prepared {
    /// The stream's parameters and keys.
    pub stream: Stream,
    /// Where the stream comes from (after the header when decrypting a container).
    pub input: Input,
    /// Where it goes.
    pub output: Output,
    /// A warning about this file for the user (a stanza slot that opening ignored), left to
    /// the caller to print: a many-file run prints it in the file's place in the report.
    pub warning: Option<String>,
}

impl Prepared {
    /// Prints the file's warning, if any, now (a run of one file).
    pub fn say_warning(&mut self) {
        if let Some(warning) = self.warning.take() {
            eprintln!("{warning}");
        }
    }
}

/// A failure that has already been reported to the user: by another process of the same job
/// (MPI rank 0 speaks for all ranks), or on the line of the one file of a run that failed.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the job failed (reported above)")
    }
}

impl std::error::Error for Reported {}

/// A warning printer that --quiet silences.
pub fn warner(quiet: bool) -> impl Fn(&str) {
    move |message: &str| {
        if !quiet {
            eprintln!("paraes: warning: {message}");
        }
    }
}

/// Tells the user that opening `name` ignored a stanza slot (`Opened::ignored_slot`), in one
/// line. A v2 file's slot is ignored only because the user overrode the refusal, and its other
/// recipients may see other content: said even under `--quiet`. A v3 file's is a warning.
pub fn tell_ignored_slot(quiet: bool, name: &str, ignored: &IgnoredSlot) {
    if let Some(line) = ignored_slot_warning(quiet, name, ignored) {
        eprintln!("{line}");
    }
}

/// The line [`tell_ignored_slot`] prints, or `None` when `quiet` silences it.
fn ignored_slot_warning(quiet: bool, name: &str, ignored: &IgnoredSlot) -> Option<String> {
    (!quiet || ignored.version < container::VERSION).then(|| {
        format!(
            "paraes: warning: {}: {}",
            crate::advice::one_line(name),
            ignored.warning()
        )
    })
}

/// The secrets a run needs, each read once whatever the number of files (a passphrase is
/// asked for once) and on first use, so that `dec` says a file is not a container before it
/// asks for a passphrase: a raw stream's key, enc's recipients, or what dec tries the stanzas
/// with.
pub struct Credentials<'a> {
    plan: &'a CryptPlan,
    raw_key: Mutex<Option<Key>>,
    recipients: Mutex<Option<Arc<Vec<Recipient>>>>,
    unlock: Mutex<Option<Arc<Unlock>>>,
    /// The seal's warnings about the recipients, said once per run (every file of a many-file
    /// run is sealed for the same recipients).
    seal_warnings_said: std::sync::Once,
}

impl<'a> Credentials<'a> {
    /// Credentials read when a file first needs them.
    pub fn on_first_use(plan: &'a CryptPlan) -> Self {
        Credentials {
            plan,
            raw_key: Mutex::new(None),
            recipients: Mutex::new(None),
            unlock: Mutex::new(None),
            seal_warnings_said: std::sync::Once::new(),
        }
    }

    /// Credentials read now (many files: a key that cannot be read ends the run at once).
    pub fn read_now(plan: &'a CryptPlan) -> Result<Self> {
        let credentials = Self::on_first_use(plan);
        match (&plan.format, plan.direction) {
            (Format::Raw { .. } | Format::Message { .. }, _) => drop(credentials.raw_key()?),
            (Format::Container(_), Direction::Encrypt) => drop(credentials.recipients()?),
            (Format::Container(_), Direction::Decrypt) => drop(credentials.unlock()?),
        }
        Ok(credentials)
    }

    /// The one key of a raw stream.
    fn raw_key(&self) -> Result<Key> {
        let key_size = match &self.plan.format {
            Format::Raw { key_size, .. } | Format::Message { key_size, .. } => *key_size,
            Format::Container(_) => None,
        };
        cached(&self.raw_key, || {
            self.plan
                .keys
                .raw_key(key_size, &warner(self.plan.ui.quiet))
        })
    }

    /// enc's recipients.
    fn recipients(&self) -> Result<Arc<Vec<Recipient>>> {
        cached(&self.recipients, || {
            Ok(Arc::new(
                self.plan.keys.recipients(&warner(self.plan.ui.quiet))?,
            ))
        })
    }

    /// dec's keys, passphrase and identities.
    fn unlock(&self) -> Result<Arc<Unlock>> {
        cached(&self.unlock, || {
            Ok(Arc::new(
                self.plan.keys.unlock(&warner(self.plan.ui.quiet))?,
            ))
        })
    }
}

/// The value in `slot`, read by `read` on first use (the lock keeps two files of a run from
/// prompting at once; a failed read is tried again by the next file).
fn cached<T: Clone>(slot: &Mutex<Option<T>>, read: impl FnOnce() -> Result<T>) -> Result<T> {
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(value) = slot.as_ref() {
        return Ok(value.clone());
    }
    let value = read()?;
    *slot = Some(value.clone());
    Ok(value)
}

/// What a run does with an ASCII-armored container to decrypt.
#[derive(Clone, Copy)]
pub enum ArmoredInput {
    /// Decodes it in order (the runs that read the input from its start to its end).
    Decoded,
    /// Refuses it, with the line `why` makes of the input's name: the runs that read a binary
    /// container at its chunks' offsets (`--range`, MPI ranks). Refused before any key is
    /// tried, so a passphrase's KDF is not spent on a run that cannot go on.
    Refused(fn(&str) -> String),
}

/// Opens the input, seals or opens the container and prepares the output of one file of
/// `plan`, which `reach` says who must be able to open, made in the directory `within` holds
/// open where one is given (see `OutputOptions::within`); `armored` says whether an armored
/// container may be decrypted.
pub fn prepare(
    plan: &CryptPlan,
    credentials: &Credentials<'_>,
    file: &FileTask,
    reach: Reach,
    within: Option<Arc<OwnedFd>>,
    armored: ArmoredInput,
) -> Result<Prepared> {
    let warn = warner(plan.ui.quiet);
    let mut input = Input::open(file.input.as_deref(), plan.files.input_kinds())?;
    let dest = match &file.output {
        OutputTarget::Stdout => None,
        OutputTarget::Path { path, .. } => Some(path.as_path()),
    };
    let options = OutputOptions {
        replace: matches!(file.output, OutputTarget::Path { force: true, .. }),
        binary: plan.direction == Direction::Encrypt && !plan.armor,
        reach,
        derived_name: matches!(file.output, OutputTarget::Path { derived: true, .. }),
        stream_into_special_files: true,
        within,
    };

    let key_size = match &plan.format {
        Format::Raw {
            mode, iv, padding, ..
        } => {
            let mode = *mode;
            if plan.direction == Direction::Decrypt && !plan.force_raw {
                refuse_container_as_raw(&mut input)?;
            }
            let key = credentials.raw_key()?;
            if mode == Mode::Ecb && plan.direction == Direction::Encrypt {
                warn_ecb(&warn);
            }
            let iv = match (iv, mode, plan.direction) {
                (Some(iv), _, Direction::Encrypt) => {
                    if iv.iter().all(|&b| b == iv[0]) {
                        warn("this IV looks hand-picked: CTR under one key must never reuse a counter block; drop --iv to get a random one");
                    }
                    *iv
                }
                (Some(iv), _, Direction::Decrypt) => *iv,
                (None, Mode::Ctr, Direction::Encrypt) => fresh_iv()?,
                (None, _, _) => [0; 16],
            };
            let output = Output::create(dest, &options)?;
            return Ok(Prepared {
                stream: Stream::raw(key, mode, iv, *padding, plan.chunk_size),
                input,
                output,
                warning: None,
            });
        }
        Format::Message { context, .. } => {
            let key = credentials.raw_key()?;
            let stream = message_stream(plan, key, context, &mut input)?;
            let output = Output::create(dest, &options)?;
            return Ok(Prepared {
                stream,
                input,
                output,
                warning: None,
            });
        }
        Format::Container(key_size) => key_size.unwrap_or(paraes_core::KeySize::Aes256),
    };

    let mut warning = None;
    let opened = match plan.direction {
        Direction::Encrypt => {
            let recipients = credentials.recipients()?;
            let has_passphrase = recipients
                .iter()
                .any(|r| matches!(r, Recipient::Passphrase(..)));
            let _turn = has_passphrase.then(kdf_turn);
            let opened = container::seal(key_size, &fresh_salts(&recipients)?)?.1;
            credentials.seal_warnings_said.call_once(|| {
                for warning in opened.warnings() {
                    warn(&warning.to_string());
                }
            });
            opened
        }
        Direction::Decrypt => {
            input = match armored {
                ArmoredInput::Decoded => input.dearmored()?,
                // Refused from its first line: the whole armor is not read first.
                ArmoredInput::Refused(why) => match input.starts_armored()? {
                    (input, true) => bail!("{}", why(&input.name())),
                    (input, false) => input,
                },
            };
            let unverified = read_header(&mut input)?;
            let unlock = credentials.unlock()?;
            let _turn = unlock.has_passphrase().then(kdf_turn);
            let (opened, rest) = open_body(unverified, &unlock, input)?;
            input = rest;
            warning = opened
                .ignored_slot()
                .and_then(|ignored| ignored_slot_warning(plan.ui.quiet, &input.name(), ignored));
            if plan.show_data_key {
                // A run of one file: its warning first, as it was found.
                if let Some(line) = warning.take() {
                    eprintln!("{line}");
                }
                show_data_key(&opened)?;
            }
            opened
        }
    };
    let output = Output::create(dest, &options)?;
    let output = if plan.armor { output.armored() } else { output };
    Ok(Prepared {
        // A v3 body goes through the pipeline in batches of --chunk-size (MPI ranks split the
        // body at its multiples); a v1/v2 body one format chunk at a time.
        stream: Stream::container(opened, plan.chunk_size),
        input,
        output,
        warning,
    })
}

/// Opens the container whose header `unverified` was read from `input` with `unlock`, and
/// checks its body as docs/FORMAT.md says: a regular file's length and last chunk (and v2's
/// first chunk) are read at their offsets before anything is written; v3's key commitment was
/// read with the header. On a stream, v2's first record is read ahead, checked, and then served
/// again (the input given back), for the pipeline, which checks every chunk as it goes.
pub fn open_body(
    unverified: UnverifiedHeader,
    unlock: &Unlock,
    mut input: Input,
) -> Result<(Opened, Input)> {
    if input.len().is_some() {
        let Input::File(file, _) = &input else {
            unreachable!("only a regular file has a length")
        };
        let opened = unverified.open(unlock, BodyAccess::File(file))?;
        return Ok((opened, input));
    }
    if unverified.info().is_message() {
        let opened = unverified.open(unlock, BodyAccess::Stream { first: &[] })?;
        return Ok((opened, input));
    }
    let record = unverified.info().params.chunk_size + container::TAG_LEN;
    let mut first = Vec::new();
    (&mut input)
        .take(record as u64)
        .read_to_end(&mut first)
        .with_context(|| format!("reading {} failed", input.name()))?;
    let opened = unverified.open(unlock, BodyAccess::Stream { first: &first })?;
    Ok((opened, input.replaying(first)))
}

/// A bare message's stream under `key`: enc draws a fresh salt; dec reads the salt and the
/// commitment from `input` and checks the commitment before any chunk is read, and a whole
/// file's end (its length, its last chunk's tag) before anything is written.
fn message_stream(plan: &CryptPlan, key: Key, context: &[u8], input: &mut Input) -> Result<Stream> {
    if Variant::for_key_size(key.size()).is_none() {
        return Err(anyhow::Error::new(crate::usage::UsageError {
            message: "--format cobblestone takes a 16- or 32-byte key (Cobblestone-128/256), not a 24-byte one: make one with `paraes keygen`".into(),
            command: plan.command(),
        }));
    }
    let name = input.name();
    let stream = match plan.direction {
        Direction::Encrypt => Stream::new_message(key, context, plan.chunk_size),
        Direction::Decrypt => Stream::read_message(key, context, input, plan.chunk_size),
    };
    let stream = stream.map_err(|e| message_failure(e, &name))?;
    if let (Some(_), Input::File(file, _), Direction::Decrypt) =
        (input.len(), &*input, plan.direction)
    {
        stream
            .check_end(file)
            .map_err(|e| message_failure(e, &name))?;
    }
    Ok(stream)
}

/// A bare message that cannot be read, in one line that names it.
fn message_failure(e: StreamError, name: &str) -> anyhow::Error {
    match e {
        StreamError::NoPrefix => anyhow!(
            "{name} is not a Cobblestone message: it ends before its 24-byte salt and 32-byte key commitment"
        ),
        StreamError::CommitmentMismatch => anyhow!(
            "the key or context does not match {name} (its key commitment differs): check -k and --context, or it is not a Cobblestone message"
        ),
        StreamError::CutOrExtended => anyhow!(
            "{name} is truncated: a Cobblestone message ends in a chunk shorter than 16 KiB, and this one does not"
        ),
        StreamError::LastChunk(last) => anyhow!(
            "chunk {last} (the last) of {name} failed authentication: the message was damaged, cut or extended; nothing was written"
        ),
        StreamError::Container(ContainerError::Io(io)) => {
            anyhow::Error::new(io).context(format!("reading {name} failed"))
        }
        other => other.into(),
    }
}

/// Argon2id runs one at a time, whatever the number of files in flight (`dec`, `verify`): each
/// may take up to the cap's memory (a header of a file being decrypted chooses how much), so
/// the cap holds for the run, not per file.
static KDF_TURN: Mutex<()> = Mutex::new(());

/// Waits for the run's turn at Argon2id; the turn lasts while the guard lives.
pub fn kdf_turn() -> std::sync::MutexGuard<'static, ()> {
    KDF_TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The recipients of one more file: a passphrase gets a fresh Argon2id salt, so that no two
/// files share a wrap key (docs/FORMAT.md); the other recipients draw fresh randomness of
/// their own when sealed.
fn fresh_salts(recipients: &[Recipient]) -> Result<Vec<Recipient>> {
    recipients
        .iter()
        .map(|r| match r {
            Recipient::Passphrase(passphrase, params) => Ok(Recipient::Passphrase(
                passphrase.clone(),
                Argon2Params {
                    salt: Argon2Params::recommended()?.salt,
                    ..*params
                },
            )),
            other => Ok(other.clone()),
        })
        .collect()
}

/// `dec --raw` of a file that starts with the container magic, or with the begin line of a
/// container's ASCII armor, is almost surely a mistake (its plaintext would be garbage):
/// refused unless --force-raw. Only regular files are looked at (a pipe's bytes cannot be put
/// back).
fn refuse_container_as_raw(input: &mut Input) -> Result<()> {
    let Input::File(file, path) = input else {
        return Ok(());
    };
    use std::os::unix::fs::FileExt;
    let armor_begin = paraes_files::armor::BEGIN.as_bytes();
    let mut start = vec![0u8; armor_begin.len().max(container::MAGIC.len())];
    let seen = file.read_at(&mut start, 0).unwrap_or(0);
    let start = &start[..seen];
    let what = if start.starts_with(&container::MAGIC) {
        "a paraes container"
    } else if start.starts_with(armor_begin) {
        "a paraes container in ASCII armor"
    } else {
        return Ok(());
    };
    bail!(
        "{} is {what}, not a raw stream: drop --raw to decrypt it (--force-raw if it really is a raw stream)",
        path.display()
    );
}

/// A random raw CTR IV, printed on stderr so the stream can be decrypted (without it, no
/// stream is made: it could not be decrypted).
fn fresh_iv() -> Result<[u8; 16]> {
    let mut iv = [0u8; 16];
    container::random_bytes(&mut iv)?;
    writeln!(std::io::stderr(), "iv: {}", hex::encode(iv)).context(
        "cannot print the IV on standard error, which decrypting needs: give one with --iv",
    )?;
    Ok(iv)
}

/// Warns that ECB leaks patterns, once per run (not once per file).
fn warn_ecb(warn: Warn<'_>) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| warn("ECB leaks patterns (equal 16-byte blocks encrypt equally): prefer --mode ctr unless you need ECB"));
}

/// `--show-data-key`: the key that reads the body without paraes, on stderr, and how to use it.
/// v3: the message's input key IK and context (never D or a user key), for any C2SP
/// Cobblestone reader; v2: the body key and counter, for openssl. Refused for format v1, whose
/// body key is the user's own key K (it opens every file K opens).
fn show_data_key(opened: &Opened) -> Result<()> {
    let info = opened.info();
    if info.version == 1 {
        bail!("--show-data-key refuses format v1 files: their body key is your own key itself (it opens every file that key opens); decrypt this file and encrypt it again to get a file whose data key can be shown");
    }
    let key = zeroize::Zeroizing::new(hex::encode(opened.data_key().as_bytes()));
    if let Some(context) = opened.message_context() {
        eprintln!("paraes: warning: showing this file's data key: anyone who sees it can read this file, and can also write a different body that this file's header accepts, for every recipient");
        eprintln!("data key:   {}", key.as_str());
        eprintln!("context:    {}", hex::encode(context));
        eprintln!(
            "the body is a Cobblestone-{} message (C2SP chunked encryption) from byte {}: e.g. pyca/cryptography's Cobblestone{}Decryptor(data key, context), keeping the output only if finalize() succeeds (docs/FORMAT.md)",
            info.params.key_size, info.header_len, info.params.key_size
        );
        return Ok(());
    }
    eprintln!("paraes: warning: showing this file's data key: anyone who sees it can read this file (but not forge it)");
    eprintln!("data key:   {}", key.as_str());
    eprintln!("counter:    {}", hex::encode(info.counter));
    eprintln!(
        "decrypt the body with: openssl enc -d -aes-{}-{} -K <data key> {}(the body is the file from byte {} with the {}-byte tag after every {}-byte chunk removed)",
        info.params.key_size,
        info.params.mode.lower(),
        if info.params.mode == Mode::Ctr { "-iv <counter> " } else { "" },
        info.header_len,
        container::TAG_LEN,
        info.params.chunk_size
    );
    Ok(())
}

/// Reads a container header; a read error names the input file.
fn read_header(input: &mut Input) -> Result<UnverifiedHeader> {
    UnverifiedHeader::read(input).map_err(|e| match e {
        ContainerError::Io(io) => anyhow::Error::new(io).context(format!(
            "reading the container header of {} failed",
            input.name()
        )),
        ContainerError::NotAContainer => anyhow::anyhow!(
            "{} is not a paraes container (no paraes header): to decrypt a raw stream made with enc --raw MODE, add --raw MODE; a bare message made with --format cobblestone, add --format cobblestone",
            input.name()
        ),
        other => other.into(),
    })
}
