//! Containers (format v3, as `paraes enc` writes them) from Python: whole files
//! (`encrypt_file`, `decrypt_file`), a writable stream that produces a container (`Writer`), and
//! a readable, seekable view of a container's plaintext (`Reader`, over the core's
//! `SeekableReader`: a read authenticates and decrypts only the chunks it touches).
//!
//! Outputs named by a path are written to a temporary in the destination's directory (mode
//! 0600) that takes the destination's name only when everything succeeded, durably (the file
//! and then its directory are synced), so a failure never leaves a partial file behind: an
//! unnamed `O_TMPFILE` linked into place where the file system has one, so that not even
//! SIGKILL leaves anything; elsewhere a hidden `.NAME.XXXXXXXXXXXX.paraes-tmp` beside it (the
//! CLI's name, which `paraes info` reports as a leftover if a killed process leaves it). An
//! existing destination is replaced only with `overwrite=True`, as the CLI's `--force`, and
//! only if it is a regular file: a FIFO, device or directory there is refused (a decrypted
//! file must not reach a reader before it is whole, and a rename would replace the FIFO).
//! Inputs may be FIFOs or devices: they are read as streams (the CLI's rule).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use paraes_core::container::{
    self, BodyAccess, Opened, Recipient, SeekableReader, UnverifiedHeader,
};
use paraes_core::pipeline::{self, Chunk, Segment, Stages};
use paraes_core::{Direction, KeySize};
use pyo3::exceptions::{
    PyFileExistsError, PyIsADirectoryError, PyMemoryError, PyRuntimeError, PyTypeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use tempfile::TempPath;

use crate::errors;
use crate::keys;
use crate::raw::Exported;

/// Containers of at least this many bytes run on the pipeline's threads (reader, engine,
/// tags, writer) with the engine's threads; smaller ones run the same steps in turn on the
/// calling thread, so a small file pays for no thread fan-out. Bare messages use it too.
pub const THREADED_FROM: usize = 1 << 20;

/// Plaintext bytes per pipeline chunk of the bodies written (as `paraes enc`'s default).
const BATCH: usize = pipeline::DEFAULT_CHUNK_SIZE;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(decrypt_file, m)?)?;
    m.add_class::<Writer>()?;
    m.add_class::<Reader>()?;
    m.add("THREADED_FROM", THREADED_FROM)?;
    Ok(())
}

/// The body key size of `bits`.
fn key_size(bits: u32) -> PyResult<KeySize> {
    match bits {
        128 => Ok(KeySize::Aes128),
        256 => Ok(KeySize::Aes256),
        other => Err(PyValueError::new_err(format!(
            "a container's body key is 128 or 256 bits, not {other}"
        ))),
    }
}

/// An empty list for a key argument left out.
fn or_empty<'py>(py: Python<'py>, obj: Option<&Bound<'py, PyAny>>) -> Bound<'py, PyAny> {
    match obj {
        Some(obj) if !obj.is_none() => obj.clone(),
        _ => pyo3::types::PyTuple::empty(py).into_any(),
    }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// The temporary an output is written to.
enum Temporary {
    /// `O_TMPFILE`: no name until [`Output::commit`] links it.
    Anonymous(File),
    /// A named hidden file beside the destination (removed on drop unless committed).
    Named(File, TempPath),
}

/// An output file being written beside its destination, which gets its name on commit.
struct Output {
    temp: Temporary,
    dst: PathBuf,
    overwrite: bool,
}

/// The directory a destination lives in.
fn directory_of(dst: &Path) -> &Path {
    match dst.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// The hidden name of a temporary beside `dst`: `.NAME.XXXXXXXXXXXX.paraes-tmp`, the CLI's.
fn hidden_name(dst: &Path) -> io::Result<PathBuf> {
    let mut random = [0u8; 6];
    paraes_core::container::random_bytes(&mut random).map_err(io::Error::other)?;
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let name = dst.file_name().map(|n| n.to_string_lossy().into_owned());
    Ok(directory_of(dst).join(format!(".{}.{hex}.paraes-tmp", name.unwrap_or_default())))
}

/// An unnamed file in `dir`, or `None` when the file system cannot make one (or there is no
/// `/proc` to link it by later).
#[cfg(target_os = "linux")]
fn anonymous_in(dir: &Path) -> io::Result<Option<File>> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    use std::os::fd::AsRawFd;
    let opened = rustix::fs::open(
        dir,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    );
    let file = match opened {
        Ok(fd) => File::from(fd),
        // Kernels and file systems without O_TMPFILE answer one of these.
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOSYS) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let linkable = std::fs::metadata(format!("/proc/self/fd/{}", file.as_raw_fd())).is_ok();
    Ok(linkable.then_some(file))
}

#[cfg(not(target_os = "linux"))]
fn anonymous_in(_dir: &Path) -> io::Result<Option<File>> {
    Ok(None)
}

/// A hidden named file beside `dst`, mode 0600, removed when its `TempPath` drops.
fn named_beside(dst: &Path) -> io::Result<(File, TempPath)> {
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        let path = hidden_name(dst)?;
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                return match TempPath::try_from_path(&path) {
                    Ok(temp) => Ok((file, temp)),
                    Err(e) => {
                        let _ = std::fs::remove_file(&path);
                        Err(e)
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Renames `from` to `to` unless `to` exists (then `AlreadyExists`).
fn rename_noclobber(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{RenameFlags, CWD};
        use rustix::io::Errno;
        match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            // Older kernels and some file systems: the link-then-unlink below.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
    }
    std::fs::hard_link(from, to)?;
    let _ = std::fs::remove_file(from);
    Ok(())
}

/// Gives the unnamed `file` the name `dst`: linked directly when `dst` is free (refused if it
/// appeared meanwhile); with `overwrite` over an existing file, linked to a hidden name and
/// renamed over it (atomic for readers of `dst`).
#[cfg(target_os = "linux")]
fn link_anonymous(file: &File, dst: &Path, overwrite: bool) -> io::Result<()> {
    use rustix::fs::{AtFlags, CWD};
    use rustix::io::Errno;
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let link =
        |to: &Path| rustix::fs::linkat(CWD, proc_path.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW);
    match link(dst) {
        Ok(()) => return Ok(()),
        Err(Errno::EXIST) if overwrite => {}
        Err(e) => return Err(e.into()),
    }
    loop {
        let hidden = hidden_name(dst)?;
        match link(&hidden) {
            Ok(()) => {
                return std::fs::rename(&hidden, dst).inspect_err(|_| {
                    let _ = std::fs::remove_file(&hidden);
                })
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn link_anonymous(_file: &File, _dst: &Path, _overwrite: bool) -> io::Result<()> {
    unreachable!("no anonymous temporaries here")
}

/// Makes the names in `dir` durable (best effort: not every file system syncs a directory).
fn sync_directory(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

impl Output {
    /// Refuses `input` as the destination, a destination that is not a regular file (a
    /// directory, FIFO, device or socket), and an existing destination unless `overwrite`.
    fn check(dst: &Path, overwrite: bool, input: Option<&File>) -> PyResult<()> {
        if let Ok(meta) = std::fs::metadata(dst) {
            if let Some(Ok(src)) = input.map(File::metadata) {
                if src.dev() == meta.dev() && src.ino() == meta.ino() {
                    return Err(PyValueError::new_err(errors::one_line(&format!(
                        "{} is both the input and the output: write to another file",
                        shown(dst)
                    ))));
                }
            }
            if meta.is_dir() {
                return Err(PyIsADirectoryError::new_err((
                    io::Error::from(io::ErrorKind::IsADirectory)
                        .raw_os_error()
                        .unwrap_or(21),
                    errors::one_line(&format!(
                        "{} is a directory: give the output a file name",
                        shown(dst)
                    )),
                )));
            }
            if !meta.is_file() {
                return Err(PyValueError::new_err(errors::one_line(&format!(
                    "{} exists and is not a regular file (a FIFO, device or socket): outputs are \
                     regular files, replaced whole when complete; write to a file, or stream \
                     with paraes.Writer over an open file object",
                    shown(dst)
                ))));
            }
        }
        if !overwrite && std::fs::symlink_metadata(dst).is_ok() {
            return Err(PyFileExistsError::new_err((
                libc_eexist(),
                errors::one_line(&format!(
                    "{} exists: pass overwrite=True to replace it",
                    shown(dst)
                )),
            )));
        }
        Ok(())
    }

    /// A temporary in `dst`'s directory (after [`Output::check`]).
    fn create(dst: &Path, overwrite: bool, input: Option<&File>) -> PyResult<Self> {
        Self::check(dst, overwrite, input)?;
        let dir = directory_of(dst);
        let cannot = |e: io::Error| {
            errors::os_error(
                &e,
                &format!("cannot create {} in {}", shown(dst), shown(dir)),
            )
        };
        let temp = match anonymous_in(dir).map_err(cannot)? {
            Some(file) => Temporary::Anonymous(file),
            None => {
                let (file, path) = named_beside(dst).map_err(cannot)?;
                Temporary::Named(file, path)
            }
        };
        Ok(Output {
            temp,
            dst: dst.to_path_buf(),
            overwrite,
        })
    }

    fn name(&self) -> String {
        shown(&self.dst)
    }

    /// The temporary file, to write to.
    fn file(&self) -> &File {
        match &self.temp {
            Temporary::Anonymous(file) | Temporary::Named(file, _) => file,
        }
    }

    /// Syncs the file, gives it its name and syncs its directory.
    fn commit(self) -> PyResult<()> {
        let name = self.name();
        self.file()
            .sync_all()
            .map_err(|e| errors::os_error(&e, &format!("writing {name} failed")))?;
        let linked = match self.temp {
            Temporary::Anonymous(file) => link_anonymous(&file, &self.dst, self.overwrite),
            Temporary::Named(file, path) => {
                drop(file);
                let renamed = if self.overwrite {
                    std::fs::rename(&path, &self.dst)
                } else {
                    rename_noclobber(&path, &self.dst)
                };
                if renamed.is_ok() {
                    // The name is the destination's now: nothing to remove.
                    let _ = path.keep();
                }
                renamed
            }
        };
        linked.map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                PyFileExistsError::new_err((
                    libc_eexist(),
                    errors::one_line(&format!(
                        "cannot create {name}: it appeared while paraes was writing; nothing was \
                         written: pass overwrite=True to replace it"
                    )),
                ))
            } else {
                errors::os_error(&e, &format!("cannot create {name}"))
            }
        })?;
        sync_directory(directory_of(&self.dst));
        Ok(())
    }
}

/// EEXIST, for `FileExistsError`.
fn libc_eexist() -> i32 {
    io::Error::from(io::ErrorKind::AlreadyExists)
        .raw_os_error()
        .unwrap_or(17)
}

/// Opens an input: a regular file (its length given) or a FIFO or device, read as a stream
/// (no length).
fn open_input(src: &Path) -> PyResult<(File, Option<u64>)> {
    let file = File::open(src)
        .map_err(|e| errors::os_error(&e, &format!("cannot open {}", shown(src))))?;
    let meta = file
        .metadata()
        .map_err(|e| errors::os_error(&e, &format!("cannot read {}", shown(src))))?;
    if meta.is_dir() {
        return Err(PyValueError::new_err(errors::one_line(&format!(
            "{} is a directory, not a file",
            shown(src)
        ))));
    }
    Ok((file, meta.is_file().then_some(meta.len())))
}

/// Opens a regular file only, never waiting on a FIFO (for the seekable reader): looked at
/// before it is opened, opened without blocking, and looked at again through the descriptor.
fn open_regular(src: &Path) -> PyResult<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refuse = |meta: &std::fs::Metadata| -> PyResult<()> {
        if meta.is_dir() {
            return Err(PyValueError::new_err(errors::one_line(&format!(
                "{} is a directory, not a file",
                shown(src)
            ))));
        }
        if !meta.is_file() {
            return Err(PyValueError::new_err(errors::one_line(&format!(
                "{} is not a regular file (a FIFO, device or socket): paraes.Reader reads a \
                 container at offsets; decrypt a stream with decrypt_file",
                shown(src)
            ))));
        }
        Ok(())
    };
    let cannot_open = |e: io::Error| errors::os_error(&e, &format!("cannot open {}", shown(src)));
    refuse(&std::fs::metadata(src).map_err(cannot_open)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(src)
        .map_err(cannot_open)?;
    refuse(&file.metadata().map_err(cannot_open)?)?;
    Ok(file)
}

/// How a container of `len` bytes runs: on the pipeline's threads when large or of unknown
/// length (a stream), in turn on the calling thread when small.
fn stages(len: Option<u64>) -> Stages {
    match len {
        Some(len) if len < THREADED_FROM as u64 => Stages::InTurn,
        _ => Stages::Threaded,
    }
}
/// Seals a new container for `recipients` (Argon2id runs here for a passphrase).
fn seal(key_size: KeySize, recipients: &[Recipient]) -> PyResult<(Vec<u8>, Opened)> {
    let (header, mut opened) =
        container::seal(key_size, recipients).map_err(|e| errors::container(e, "the container"))?;
    opened.set_batch(BATCH);
    Ok((header, opened))
}

/// Encrypts the file `src` into a new container `dst` (format v3, as `paraes enc`), which opens
/// with any of `keys`, `recipients` or `passphrase`. `src` may be a FIFO or device (read as a
/// stream); `dst` is a regular file, which appears only when complete.
#[pyfunction]
#[pyo3(signature = (src, dst, *, keys = None, recipients = None, passphrase = None, bits = 256, overwrite = false))]
#[allow(clippy::too_many_arguments)]
fn encrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    keys: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    bits: u32,
    overwrite: bool,
) -> PyResult<()> {
    let key_size = key_size(bits)?;
    let recipients = keys::recipients(
        &or_empty(py, keys),
        &or_empty(py, recipients),
        passphrase.filter(|p| !p.is_none()),
    )?;
    let engine = crate::engine()?;
    py.detach(|| {
        let (mut input, len) = open_input(&src)?;
        let output = Output::create(&dst, overwrite, Some(&input))?;
        let (header, opened) = seal(key_size, &recipients)?;
        let name = output.name();
        let mut file = output.file();
        file.write_all(&header)
            .map_err(|e| errors::os_error(&e, &format!("writing {name} failed")))?;
        let spec = opened.stream_spec(engine, Direction::Encrypt);
        pipeline::run_segment(
            &spec,
            Segment::WHOLE,
            stages(len),
            &mut input,
            &mut file,
            &|_| {},
        )
        .map_err(|e| errors::pipeline(e, &shown(&src), &name))?;
        output.commit()
    })
}

/// Reads and opens the container header of `file` (named `name`) with `unlock`.
fn open_container(file: &mut File, name: &str, unlock: &container::Unlock) -> PyResult<Opened> {
    let header = UnverifiedHeader::read(file).map_err(|e| errors::container(e, name))?;
    let mut opened = header
        .open(unlock, BodyAccess::File(file))
        .map_err(|e| errors::container(e, name))?;
    warn_ignored_slot(&opened, name)?;
    opened.set_batch(BATCH);
    Ok(opened)
}

/// A stanza slot that opening ignored (the core's rule, as the CLI: always in v3, in v2 only
/// when asked) is told as a `UserWarning`, in the CLI's words.
fn warn_ignored_slot(opened: &Opened, name: &str) -> PyResult<()> {
    let Some(ignored) = opened.ignored_slot() else {
        return Ok(());
    };
    let text = std::ffi::CString::new(format!("{name}: {}", ignored.warning()))
        .unwrap_or_else(|_| c"a stanza slot was ignored".to_owned());
    Python::attach(|py| {
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        PyErr::warn(py, category.as_any(), &text, 1)
    })
}

/// Reads and opens the container header of a stream (a FIFO or device) with `unlock`, as the
/// CLI does: a v3 body is checked chunk by chunk as it goes (its key commitment is in the
/// header); an older body's first record is read ahead, checked, and served again. Returns
/// the opened container and the bytes read ahead.
fn open_stream(
    input: &mut File,
    name: &str,
    unlock: &container::Unlock,
) -> PyResult<(Opened, Vec<u8>)> {
    let header = UnverifiedHeader::read(&mut *input).map_err(|e| errors::container(e, name))?;
    let mut first = Vec::new();
    if !header.info().is_message() {
        let record = header.info().params.chunk_size + container::TAG_LEN;
        input
            .take(record as u64)
            .read_to_end(&mut first)
            .map_err(|e| errors::os_error(&e, &format!("reading {name} failed")))?;
    }
    let mut opened = header
        .open(unlock, BodyAccess::Stream { first: &first })
        .map_err(|e| errors::container(e, name))?;
    warn_ignored_slot(&opened, name)?;
    opened.set_batch(BATCH);
    Ok((opened, first))
}

/// Decrypts the container `src` into `dst`; every chunk is authenticated before its plaintext
/// is written, and `dst` appears only when the whole container was authentic. `src` may be a
/// FIFO or device (read as a stream); `dst` is a regular file.
#[pyfunction]
#[pyo3(signature = (src, dst, *, keys = None, identities = None, passphrase = None, overwrite = false))]
fn decrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    keys: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    overwrite: bool,
) -> PyResult<()> {
    let unlock = keys::unlock(
        &or_empty(py, keys),
        &or_empty(py, identities),
        passphrase.filter(|p| !p.is_none()),
    )?;
    let engine = crate::engine()?;
    py.detach(|| {
        let (mut input, len) = open_input(&src)?;
        // Refused before anything is read: the same checks as when the output is created.
        Output::check(&dst, overwrite, Some(&input))?;
        let (opened, ahead) = if len.is_some() {
            (
                open_container(&mut input, &shown(&src), &unlock)?,
                Vec::new(),
            )
        } else {
            open_stream(&mut input, &shown(&src), &unlock)?
        };
        let output = Output::create(&dst, overwrite, Some(&input))?;
        let name = output.name();
        let mut file = output.file();
        let spec = opened.stream_spec(engine, Direction::Decrypt);
        pipeline::run_segment(
            &spec,
            Segment::WHOLE,
            stages(len),
            &mut io::Cursor::new(ahead).chain(&mut input),
            &mut file,
            &|_| {},
        )
        .map_err(|e| errors::pipeline(e, &shown(&src), &name))?;
        output.commit()
    })
}

/// Where a writer's container goes: a file named on commit, or a Python binary file object.
enum Sink {
    File(Output),
    Python(Py<PyAny>),
}

struct WriterState {
    opened: Opened,
    sink: Sink,
    /// Plaintext not yet sealed: at most one batch, held until more data shows it is not
    /// the last.
    pending: Vec<u8>,
    index: u64,
    name: String,
}

impl WriterState {
    /// Seals `pending` as chunk `index` and returns its bytes (the engine runs without the GIL).
    fn seal_pending(&mut self, last: bool) -> PyResult<Vec<u8>> {
        let engine = crate::engine()?;
        let spec = self.opened.stream_spec(engine, Direction::Encrypt);
        let mut chunk = Chunk {
            index: self.index,
            last,
            data: std::mem::take(&mut self.pending),
        };
        pipeline::seal(&spec, &mut chunk)
            .map_err(|e| errors::pipeline(e, "the data written", &self.name))?;
        self.index += 1;
        Ok(chunk.data)
    }

    /// Sends sealed bytes to a file sink (no GIL needed); hands them back for a Python sink.
    fn emit_file(&mut self, mut sealed: Vec<u8>) -> PyResult<Option<Vec<u8>>> {
        match &mut self.sink {
            Sink::File(output) => {
                output
                    .file()
                    .write_all(&sealed)
                    .map_err(|e| errors::os_error(&e, &format!("writing {} failed", self.name)))?;
                sealed.clear();
                self.pending = sealed;
                Ok(None)
            }
            Sink::Python(_) => Ok(Some(sealed)),
        }
    }

    /// Adds `data`, sealing every batch that more data follows; returns what a Python sink must
    /// be sent.
    fn add(&mut self, mut data: &[u8]) -> PyResult<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        while !data.is_empty() {
            if self.pending.len() == BATCH {
                let sealed = self.seal_pending(false)?;
                out.extend(self.emit_file(sealed)?);
            }
            if self.pending.capacity() < BATCH {
                self.pending.reserve_exact(BATCH - self.pending.len());
            }
            let take = (BATCH - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        Ok(out)
    }
}

/// Sends `data` to a Python sink, again from where a partial write stopped. A write() that
/// returns `None` is an error: for a non-blocking raw stream it means that nothing was taken,
/// and a sink that says nothing cannot be trusted to have taken everything.
fn send(py: Python<'_>, sink: &Py<PyAny>, data: &[u8]) -> PyResult<()> {
    let mut at = 0;
    while at < data.len() {
        let written = sink
            .bind(py)
            .call_method1("write", (PyBytes::new(py, &data[at..]),))?;
        match written.extract::<Option<usize>>()? {
            Some(0) => {
                return Err(errors::Error::new_err(
                    "the output stream accepted no bytes (its write() returned 0)",
                ))
            }
            Some(n) => at += n.min(data.len() - at),
            None => {
                return Err(errors::Error::new_err(
                    "the output stream's write() returned None (a non-blocking stream with no \
                     room takes nothing): paraes.Writer needs a blocking binary file object \
                     whose write() returns how many bytes it took",
                ))
            }
        }
    }
    Ok(())
}

/// Where a writer stands. Its state is taken out of the slot for the length of one call, so
/// that no lock is ever held while the GIL is released or the sink's Python code runs (a
/// thread waiting on such a lock with the GIL would stop the interpreter).
enum Slot {
    /// Open and free.
    Idle(Box<WriterState>),
    /// A call is using the state; `abort` says that abort() came meanwhile (the call drops
    /// the state when it ends).
    Busy { abort: bool },
    /// Closed, aborted or failed.
    Closed,
}

/// Why a writer's state could not be had.
enum Refused {
    Busy,
    Closed,
}

impl Refused {
    fn error(self, closed: &str) -> PyErr {
        match self {
            Refused::Busy => PyRuntimeError::new_err(
                "paraes.Writer is in use by another thread or its own sink's write(): a writer \
                 takes one call at a time (abort() and closed work at any time)",
            ),
            Refused::Closed => PyValueError::new_err(closed.to_owned()),
        }
    }
}

/// A writer's state, out of its slot for one call. Dropped with its state, it puts it back
/// (or drops it, when abort() came meanwhile); without (an error, close), it leaves the
/// writer closed.
struct Lease<'a> {
    writer: &'a Writer,
    state: Option<Box<WriterState>>,
}

impl Lease<'_> {
    fn state(&mut self) -> &mut WriterState {
        self.state
            .as_mut()
            .expect("a lease holds its state until it ends")
    }

    /// Drops the state: the writer is closed (a path's temporary is removed).
    fn discard(&mut self) {
        self.state = None;
    }

    /// Ends the call: an error if abort() came meanwhile (the state is then dropped).
    fn finish(mut self) -> PyResult<()> {
        let aborted = self.writer.abort_requested();
        if aborted {
            self.discard();
            return Err(PyValueError::new_err(
                "paraes.Writer was aborted (from another thread) during this call: the container was discarded",
            ));
        }
        Ok(())
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let state = self.state.take();
        let dropped = {
            let mut slot = self.writer.slot();
            let aborted = matches!(*slot, Slot::Busy { abort: true });
            match state {
                Some(state) if !aborted => {
                    *slot = Slot::Idle(state);
                    None
                }
                state => {
                    *slot = Slot::Closed;
                    state
                }
            }
        };
        // Dropped out of the lock (a path's temporary is removed here).
        drop(dropped);
    }
}

/// A stream that encrypts what is written to it into a container (format v3). A destination
/// path gets nothing until `close()` succeeds, and `abort()` (or an error) leaves it untouched;
/// a file object keeps what was written to it (a container that fails as truncated). One call
/// at a time: a call while another runs (another thread, or the sink's own write()) raises
/// `RuntimeError`; `abort()` and `closed` work at any time, from any thread.
#[pyclass(module = "paraes._paraes")]
pub struct Writer {
    slot: Mutex<Slot>,
}

impl Writer {
    /// The slot; its lock is only ever held to look at or swap it.
    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the state out for one call.
    fn lease(&self) -> Result<Lease<'_>, Refused> {
        let mut slot = self.slot();
        match std::mem::replace(&mut *slot, Slot::Busy { abort: false }) {
            Slot::Idle(state) => Ok(Lease {
                writer: self,
                state: Some(state),
            }),
            other => {
                let refused = match other {
                    // Aborted: closed as soon as the call in progress ends.
                    Slot::Closed | Slot::Busy { abort: true } => Refused::Closed,
                    Slot::Busy { abort: false } | Slot::Idle(_) => Refused::Busy,
                };
                *slot = other;
                Err(refused)
            }
        }
    }

    /// Whether abort() came during the current call.
    fn abort_requested(&self) -> bool {
        matches!(*self.slot(), Slot::Busy { abort: true })
    }
}

#[pymethods]
impl Writer {
    #[new]
    #[pyo3(signature = (dst, *, keys = None, recipients = None, passphrase = None, bits = 256, overwrite = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        recipients: Option<&Bound<'_, PyAny>>,
        passphrase: Option<&Bound<'_, PyAny>>,
        bits: u32,
        overwrite: bool,
    ) -> PyResult<Self> {
        let key_size = key_size(bits)?;
        let recipients = keys::recipients(
            &or_empty(py, keys),
            &or_empty(py, recipients),
            passphrase.filter(|p| !p.is_none()),
        )?;
        let is_path = dst.is_instance_of::<PyString>() || !dst.hasattr("write")?;
        let state = if is_path {
            let dst: PathBuf = dst.extract().map_err(|_| {
                PyTypeError::new_err("dst is a path (str or os.PathLike) or a binary file object")
            })?;
            py.detach(|| {
                let output = Output::create(&dst, overwrite, None)?;
                let (header, opened) = seal(key_size, &recipients)?;
                let name = output.name();
                output
                    .file()
                    .write_all(&header)
                    .map_err(|e| errors::os_error(&e, &format!("writing {name} failed")))?;
                Ok::<_, PyErr>(WriterState {
                    opened,
                    sink: Sink::File(output),
                    pending: Vec::new(),
                    index: 0,
                    name,
                })
            })?
        } else {
            let (header, opened) = py.detach(|| seal(key_size, &recipients))?;
            let sink = dst.clone().unbind();
            send(py, &sink, &header)?;
            WriterState {
                opened,
                sink: Sink::Python(sink),
                pending: Vec::new(),
                index: 0,
                name: "the output stream".into(),
            }
        };
        Ok(Writer {
            slot: Mutex::new(Slot::Idle(Box::new(state))),
        })
    }

    /// Encrypts and writes `data` (any bytes-like object); returns its length. An error
    /// discards the container (the writer is closed).
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let exported = Exported::new(data, "data")?;
        let bytes = exported.bytes();
        let mut lease = self
            .lease()
            .map_err(|r| r.error("write to a closed paraes.Writer"))?;
        let state = lease.state();
        let result = if bytes.len() >= crate::raw::DETACH_FROM {
            py.detach(|| state.add(bytes))
        } else {
            state.add(bytes)
        };
        let to_send = result.inspect_err(|_| lease.discard())?;
        if let Sink::Python(sink) = &lease.state().sink {
            let sink = sink.clone_ref(py);
            for piece in to_send {
                send(py, &sink, &piece).inspect_err(|_| lease.discard())?;
            }
        }
        lease.finish()?;
        Ok(bytes.len())
    }

    /// Seals the last chunk and commits: a destination path gets its name now. The writer is
    /// closed afterwards, whatever happened; closing a closed writer does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut lease = match self.lease() {
            Ok(lease) => lease,
            Err(Refused::Closed) => return Ok(()),
            Err(busy) => return Err(busy.error("")),
        };
        // The lease ends without its state: the writer is closed whatever happens.
        let mut state = *lease.state.take().expect("a new lease holds its state");
        let sealed = py.detach(|| state.seal_pending(true))?;
        match state.sink {
            Sink::File(output) => py.detach(|| {
                output.file().write_all(&sealed).map_err(|e| {
                    errors::os_error(&e, &format!("writing {} failed", state.name))
                })?;
                if self.abort_requested() {
                    return Err(PyValueError::new_err(
                        "paraes.Writer was aborted (from another thread) during close(): the container was discarded",
                    ));
                }
                output.commit()
            }),
            Sink::Python(sink) => {
                send(py, &sink, &sealed)?;
                if sink.bind(py).hasattr("flush")? {
                    sink.bind(py).call_method0("flush")?;
                }
                Ok(())
            }
        }
    }

    /// Drops everything: a destination path is left untouched (its temporary removed). From
    /// another thread during a call, that call ends with an error and discards the container.
    fn abort(&self) {
        let dropped = {
            let mut slot = self.slot();
            match std::mem::replace(&mut *slot, Slot::Closed) {
                Slot::Idle(state) => Some(state),
                Slot::Busy { .. } => {
                    *slot = Slot::Busy { abort: true };
                    None
                }
                Slot::Closed => None,
            }
        };
        drop(dropped);
    }

    /// Whether the writer was closed or aborted (or failed).
    #[getter]
    fn closed(&self) -> bool {
        !matches!(*self.slot(), Slot::Idle(_) | Slot::Busy { abort: false })
    }
}

type Seekable<'a> = SeekableReader<'a, File>;

self_cell::self_cell!(
    struct ReaderCell {
        owner: Opened,
        #[covariant]
        dependent: Seekable,
    }
);

/// A readable, seekable view of a container's plaintext: each read authenticates and decrypts
/// only the 16 KiB chunks it touches; the length is authentic from the start.
#[pyclass(module = "paraes._paraes")]
pub struct Reader {
    cell: Mutex<Option<ReaderCell>>,
    name: String,
    len: u64,
}

impl Reader {
    /// Runs `f` on the open reader.
    fn with<T>(&self, f: impl FnOnce(&mut Seekable<'_>) -> PyResult<T>) -> PyResult<T> {
        let mut guard = self.cell.lock().unwrap_or_else(|e| e.into_inner());
        let cell = guard
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("I/O operation on a closed paraes.Reader"))?;
        cell.with_dependent_mut(|_, reader| f(reader))
    }
}

fn fill(reader: &mut Seekable<'_>, buf: &mut [u8], name: &str) -> PyResult<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(errors::read_error(e, name)),
        }
    }
    Ok(filled)
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (src, *, keys = None, identities = None, passphrase = None))]
    fn new(
        py: Python<'_>,
        src: PathBuf,
        keys: Option<&Bound<'_, PyAny>>,
        identities: Option<&Bound<'_, PyAny>>,
        passphrase: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let unlock = keys::unlock(
            &or_empty(py, keys),
            &or_empty(py, identities),
            passphrase.filter(|p| !p.is_none()),
        )?;
        let engine = crate::engine()?;
        let name = shown(&src);
        let cell = py.detach(|| {
            let mut file = open_regular(&src)?;
            let opened = open_container(&mut file, &name, &unlock)?;
            ReaderCell::try_new(opened, |opened| {
                SeekableReader::new(opened, engine, file)
                    .map_err(|e| errors::pipeline(e, &name, "the reader"))
            })
        })?;
        let len = cell.borrow_dependent().plaintext_len();
        Ok(Reader {
            cell: Mutex::new(Some(cell)),
            name,
            len,
        })
    }

    /// The plaintext's length (authentic).
    #[getter]
    fn size(&self) -> u64 {
        self.len
    }

    /// Reads into a writable buffer; returns the bytes read (0 at the end).
    fn readinto(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut exported = Exported::new(buffer, "buffer")?;
        let buf = exported.bytes_mut("buffer")?;
        let name = &self.name;
        py.detach(|| self.with(|reader| fill(reader, buf, name)))
    }

    /// Reads up to `size` bytes (all that is left when negative or None). The bytes object is
    /// allocated first, by Python: a size beyond memory raises `MemoryError`.
    #[pyo3(signature = (size = -1))]
    fn read<'py>(&self, py: Python<'py>, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let position = self.tell(py)?;
        let left = self.len.saturating_sub(position);
        let want = match size {
            Some(n) if n >= 0 => (n as u64).min(left),
            _ => left,
        };
        if want > isize::MAX as u64 {
            return Err(PyMemoryError::new_err(format!(
                "cannot read {want} bytes at once: read in pieces"
            )));
        }
        let name = &self.name;
        let mut got = 0;
        let data = PyBytes::new_with(py, want as usize, |buf| {
            got = py.detach(|| self.with(|reader| fill(reader, buf, name)))?;
            Ok(())
        })?;
        if got < want as usize {
            return Ok(PyBytes::new(py, &data.as_bytes()[..got]));
        }
        Ok(data)
    }

    /// Moves to `offset` from the start (`whence` 0), the current position (1) or the end (2).
    #[pyo3(signature = (offset, whence = 0))]
    fn seek(&self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        let to = match whence {
            0 if offset < 0 => {
                return Err(PyValueError::new_err(format!(
                    "negative seek position {offset}"
                )))
            }
            0 => SeekFrom::Start(offset as u64),
            1 => SeekFrom::Current(offset),
            2 => SeekFrom::End(offset),
            other => {
                return Err(PyValueError::new_err(format!(
                    "invalid whence ({other}, should be 0, 1 or 2)"
                )))
            }
        };
        // Without the GIL: another thread's read may hold the reader for a while.
        py.detach(|| {
            self.with(|reader| {
                reader
                    .seek(to)
                    .map_err(|_| PyValueError::new_err("negative seek position"))
            })
        })
    }

    /// The current position in the plaintext.
    fn tell(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| {
            self.with(|reader| {
                reader
                    .stream_position()
                    .map_err(|e| errors::os_error(&e, "tell failed"))
            })
        })
    }

    /// Closes the container file.
    fn close(&self, py: Python<'_>) {
        let cell = py.detach(|| self.cell.lock().unwrap_or_else(|e| e.into_inner()).take());
        drop(cell);
    }

    /// Whether the reader was closed.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| {
            self.cell
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_none()
        })
    }
}
