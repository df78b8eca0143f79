//! A plan made concrete: the input opened, the keys read (a passphrase asked for), a new
//! container header sealed or the existing one read and opened, the output prepared. Every
//! runner starts from a [`Prepared`] job.

use std::io::Read;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use paraes_core::cobblestone::{self, ChunkCipher, MessageKeys, Variant};
use paraes_core::container::{
    self, Argon2Params, BodyAccess, ContainerError, Opened, Recipient, Unlock, UnverifiedHeader,
};
use paraes_core::pipeline::{StreamSpec, Tags};
use paraes_core::{Direction, Engine, ExpandedKey, Key, Mode};

use crate::keys::Warn;
use crate::output::{Input, Output, Reach};
use crate::plan::{CryptPlan, FileJob, Format, OutputTarget};

/// A job of `enc` or `dec`, ready to run on any runner: the stream and both ends, opened.
pub struct Prepared {
    /// The stream's parameters and keys.
    pub stream: Stream,
    /// Where the stream comes from (after the header when decrypting a container).
    pub input: Input,
    /// Where it goes.
    pub output: Output,
}

/// A stream's parameters and keys.
pub struct Stream {
    /// Mode of operation.
    pub mode: Mode,
    /// The initial counter block: raw CTR's IV, or a container's counter from its header.
    pub counter: [u8; 16],
    /// Plaintext bytes per chunk.
    pub chunk_size: usize,
    /// PKCS#7 padding of ECB's final block.
    pub padding: bool,
    /// The keys.
    pub keys: Keys,
}

/// A raw stream's key, or an opened container.
pub enum Keys {
    /// The user's key itself (`--raw`) and its schedule.
    Raw {
        /// The key (MPI ranks receive it).
        #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
        key: Key,
        /// Its round keys.
        schedule: Box<ExpandedKey>,
    },
    /// A bare C2SP chunked-encryption message under the user's key: its salt and commitment
    /// (written by enc, read and checked by dec) and its chunk cipher.
    Message {
        /// Salt and key commitment, the 56 bytes before the first chunk.
        header: Vec<u8>,
        /// The message's AES-GCM chunk cipher.
        cipher: Box<ChunkCipher>,
        /// The user's key (MPI ranks receive it and derive the cipher themselves).
        #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
        key: Key,
        /// The message's context (MPI ranks receive it).
        #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
        context: Vec<u8>,
    },
    /// A container: its header bytes (written by enc, read by dec) and its verified keys.
    Container {
        /// The exact header bytes.
        header: Vec<u8>,
        /// The opened header (the body and chunk keys).
        opened: Box<Opened>,
    },
}

impl Stream {
    /// The stream's description for the pipeline, on `engine`.
    pub fn spec<'a>(&'a self, engine: &'a dyn Engine, direction: Direction) -> StreamSpec<'a> {
        match &self.keys {
            Keys::Container { opened, .. } => opened.stream_spec(engine, direction),
            Keys::Message { cipher, .. } => {
                StreamSpec::message(engine, direction, cipher, self.chunk_size)
            }
            Keys::Raw { schedule, .. } => StreamSpec {
                engine,
                mode: self.mode,
                direction,
                key: schedule,
                counter: self.counter,
                chunk_size: self.chunk_size,
                padding: self.padding,
                tags: Tags::None,
            },
        }
    }

    /// A container's header bytes (none for a raw stream).
    pub fn header(&self) -> Option<&[u8]> {
        match &self.keys {
            Keys::Container { header, .. } | Keys::Message { header, .. } => Some(header),
            Keys::Raw { .. } => None,
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

/// The secrets a run needs, each read once whatever the number of files (a passphrase is
/// asked for once) and on first use, so that `dec` says a file is not a container before it
/// asks for a passphrase: a raw stream's key, enc's recipients, or what dec tries the stanzas
/// with.
pub struct Credentials<'a> {
    plan: &'a CryptPlan,
    raw_key: Mutex<Option<Key>>,
    recipients: Mutex<Option<Arc<Vec<Recipient>>>>,
    unlock: Mutex<Option<Arc<Unlock>>>,
}

impl<'a> Credentials<'a> {
    /// Credentials read when a file first needs them.
    pub fn on_first_use(plan: &'a CryptPlan) -> Self {
        Credentials {
            plan,
            raw_key: Mutex::new(None),
            recipients: Mutex::new(None),
            unlock: Mutex::new(None),
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

/// Opens the input, seals or opens the container and prepares the output of one file of
/// `plan`, which `reach` says who must be able to open.
pub fn prepare(
    plan: &CryptPlan,
    credentials: &Credentials<'_>,
    file: &FileJob,
    reach: Reach,
) -> Result<Prepared> {
    let warn = warner(plan.ui.quiet);
    let mut input = Input::open(file.input.as_deref())?;
    let dest = match &file.output {
        OutputTarget::Stdout => None,
        OutputTarget::Path { path, .. } => Some(path.as_path()),
    };
    let force = matches!(file.output, OutputTarget::Path { force: true, .. });
    let derived = matches!(file.output, OutputTarget::Path { derived: true, .. });
    let binary_output = plan.direction == Direction::Encrypt;

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
            let output = Output::create(dest, force, binary_output, reach, derived)?;
            return Ok(Prepared {
                stream: Stream {
                    mode,
                    counter: iv,
                    chunk_size: plan.chunk_size,
                    padding: *padding,
                    keys: Keys::Raw {
                        schedule: Box::new(key.expand()),
                        key,
                    },
                },
                input,
                output,
            });
        }
        Format::Message { context, .. } => {
            let key = credentials.raw_key()?;
            let stream = message_stream(plan, &key, context, &mut input)?;
            let output = Output::create(dest, force, binary_output, reach, derived)?;
            return Ok(Prepared {
                stream,
                input,
                output,
            });
        }
        Format::Container(key_size) => key_size.unwrap_or(paraes_core::KeySize::Aes256),
    };

    let (header_bytes, opened) = match plan.direction {
        Direction::Encrypt => {
            let recipients = credentials.recipients()?;
            let has_passphrase = recipients
                .iter()
                .any(|r| matches!(r, Recipient::Passphrase(..)));
            let _turn = has_passphrase.then(kdf_turn);
            container::seal(key_size, &fresh_salts(&recipients)?)?
        }
        Direction::Decrypt => {
            let mut tee = Tee {
                inner: &mut input,
                seen: Vec::new(),
            };
            let unverified = read_header(&mut tee)?;
            let header_bytes = tee.seen;
            let unlock = credentials.unlock()?;
            let _turn = unlock.has_passphrase().then(kdf_turn);
            // The body check (docs/FORMAT.md): a regular file's length and last chunk (and
            // v2's first chunk) are read at their offsets before anything is written; v3's key
            // commitment was read with the header. On a stream, v2's first record is read
            // ahead, checked, and then served again to the pipeline, which checks every chunk
            // as it goes.
            let opened = if input.len().is_some() {
                let Input::File(file, _) = &input else {
                    unreachable!("only a regular file has a length")
                };
                unverified.open(&unlock, BodyAccess::File(file))?
            } else if unverified.info().is_message() {
                unverified.open(&unlock, BodyAccess::Stream { first: &[] })?
            } else {
                let record = unverified.info().params.chunk_size + container::TAG_LEN;
                let mut first = Vec::new();
                (&mut input)
                    .take(record as u64)
                    .read_to_end(&mut first)
                    .with_context(|| format!("reading {} failed", input.name()))?;
                let opened = unverified.open(&unlock, BodyAccess::Stream { first: &first })?;
                input = input.replaying(first);
                opened
            };
            if plan.show_data_key {
                show_data_key(&opened)?;
            }
            (header_bytes, opened)
        }
    };
    let mut opened = opened;
    opened.set_batch(plan.chunk_size);
    let output = Output::create(dest, force, binary_output, reach, derived)?;
    let info = opened.info().clone();
    Ok(Prepared {
        stream: Stream {
            mode: info.params.mode,
            counter: info.counter,
            // The pipeline's chunk: a v3 body's batch (MPI ranks split the body at its
            // multiples), or a v1/v2 body's format chunk.
            chunk_size: if info.is_message() {
                plan.chunk_size
            } else {
                info.params.chunk_size
            },
            padding: true,
            keys: Keys::Container {
                header: header_bytes,
                opened: Box::new(opened),
            },
        },
        input,
        output,
    })
}

/// A bare message's stream under `key`: enc draws a fresh salt; dec reads the salt and the
/// commitment from `input` and checks the commitment before any chunk is read.
fn message_stream(
    plan: &CryptPlan,
    key: &Key,
    context: &[u8],
    input: &mut Input,
) -> Result<Stream> {
    let Some(variant) = Variant::for_key_size(key.size()) else {
        return Err(anyhow::Error::new(crate::plan::UsageError {
            message: "--format cobblestone takes a 16- or 32-byte key (Cobblestone-128/256), not a 24-byte one: make one with `paraes keygen`".into(),
            command: plan.command(),
        }));
    };
    let mut header = vec![0u8; cobblestone::PREFIX_LEN];
    let salt: [u8; cobblestone::SALT_LEN] = match plan.direction {
        Direction::Encrypt => {
            let mut salt = [0u8; cobblestone::SALT_LEN];
            container::random_bytes(&mut salt)?;
            salt
        }
        Direction::Decrypt => {
            input.read_exact(&mut header).map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => anyhow::anyhow!(
                    "{} is not a Cobblestone message: it ends before its 24-byte salt and 32-byte key commitment",
                    input.name()
                ),
                _ => anyhow::Error::new(e).context(format!("reading {} failed", input.name())),
            })?;
            header[..cobblestone::SALT_LEN]
                .try_into()
                .expect("24 bytes")
        }
    };
    let keys = MessageKeys::derive(variant, key.as_bytes(), &salt, context)?;
    let cipher = keys.chunks();
    match plan.direction {
        Direction::Encrypt => {
            header[..cobblestone::SALT_LEN].copy_from_slice(&salt);
            header[cobblestone::SALT_LEN..].copy_from_slice(keys.commitment());
        }
        Direction::Decrypt => {
            if !keys.commits_to(&header[cobblestone::SALT_LEN..]) {
                bail!(
                    "the key or context does not match {} (its key commitment differs): check -k and --context, or it is not a Cobblestone message",
                    input.name()
                );
            }
            check_message_end(input, &cipher)?;
        }
    }
    Ok(Stream {
        mode: Mode::Ctr,
        counter: [0; 16],
        chunk_size: plan.chunk_size,
        padding: false,
        keys: Keys::Message {
            header,
            cipher: Box::new(cipher),
            key: key.clone(),
            context: context.to_vec(),
        },
    })
}

/// A bare message in a regular file is checked at its end before anything is written, as a
/// v3 container's body is when it is opened: its length must be one a writer makes (the last
/// record holds 16 to 16,399 bytes) and its last chunk's tag must verify, so a message cut at a
/// chunk boundary, or with a damaged last chunk, releases nothing. (From a pipe the end is
/// only seen at the end.)
fn check_message_end(input: &Input, cipher: &ChunkCipher) -> Result<()> {
    let (Some(len), Input::File(file, _)) = (input.len(), input) else {
        return Ok(());
    };
    let chunks_start = cobblestone::PREFIX_LEN as u64;
    let Some((chunks, last_len)) = cobblestone::chunk_count(len.saturating_sub(chunks_start))
    else {
        bail!(
            "{} is truncated: a Cobblestone message ends in a chunk shorter than 16 KiB, and this one does not",
            input.name()
        );
    };
    let (last, record) = (chunks - 1, cobblestone::RECORD_LEN as u64);
    let mut record_bytes = vec![0u8; last_len as usize + cobblestone::TAG_LEN];
    use std::os::unix::fs::FileExt;
    file.read_exact_at(&mut record_bytes, chunks_start + last * record)
        .with_context(|| format!("reading {} failed", input.name()))?;
    let (data, tag) = record_bytes.split_at(record_bytes.len() - cobblestone::TAG_LEN);
    if !cipher.verify(last, data, tag) {
        bail!(
            "chunk {last} (the last) of {} failed authentication: the message was damaged, cut or extended; nothing was written",
            input.name()
        );
    }
    Ok(())
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

/// `dec --raw` of a file that starts with the container magic is almost surely a mistake
/// (its plaintext would be garbage): refused unless --force-raw. Only regular files are
/// looked at (a pipe's bytes cannot be put back).
fn refuse_container_as_raw(input: &mut Input) -> Result<()> {
    let Input::File(file, path) = input else {
        return Ok(());
    };
    use std::os::unix::fs::FileExt;
    let mut start = [0u8; container::MAGIC.len()];
    let whole = file.read_exact_at(&mut start, 0).is_ok();
    if whole && start == container::MAGIC {
        bail!(
            "{} is a paraes container, not a raw stream: drop --raw to decrypt it (--force-raw if it really is a raw stream)",
            path.display()
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

/// A reader that keeps a copy of what it read (the exact header bytes, for MPI ranks).
pub struct Tee<'a, R> {
    /// The reader.
    pub inner: &'a mut R,
    /// Everything read so far.
    pub seen: Vec<u8>,
}

impl<R: Read> Read for Tee<'_, R> {
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
            "{} is not a paraes container (no paraes header): to decrypt a raw stream made with enc --raw MODE, add --raw MODE; a bare message made with --format cobblestone, add --format cobblestone",
            input.inner.name()
        ),
        other => other.into(),
    })
}
