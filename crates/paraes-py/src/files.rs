//! Containers (format v3, as `paraes enc` writes them) from Python: whole files
//! (`encrypt_file`, `decrypt_file`), a writable stream that produces a container (`Writer`), and
//! a readable, seekable view of a container's plaintext (`Reader`, over the core's
//! `SeekableReader`: a read authenticates and decrypts only the chunks it touches).
//!
//! Outputs named by a path are written to a temporary file in the destination's directory
//! (mode 0600) that takes the destination's name only when everything succeeded, so a failure
//! never leaves a partial file behind; an existing destination is replaced only with
//! `overwrite=True`, as the CLI's `--force`.

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
use pyo3::exceptions::{PyFileExistsError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use tempfile::NamedTempFile;

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

/// An output file being written beside its destination, which gets its name on commit.
struct Output {
    tmp: NamedTempFile,
    dst: PathBuf,
    overwrite: bool,
}

impl Output {
    /// Refuses an existing destination unless `overwrite`; refuses `input` as the destination.
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

    /// A temporary file beside `dst` (after [`Output::check`]).
    fn create(dst: &Path, overwrite: bool, input: Option<&File>) -> PyResult<Self> {
        Self::check(dst, overwrite, input)?;
        let dir = match dst.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".paraes-")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(|e| {
                errors::os_error(&e, &format!("cannot create a file in {}", shown(&dir)))
            })?;
        Ok(Output {
            tmp,
            dst: dst.to_path_buf(),
            overwrite,
        })
    }

    fn name(&self) -> String {
        shown(&self.dst)
    }

    /// Syncs the file and gives it its name.
    fn commit(self) -> PyResult<()> {
        let name = self.name();
        self.tmp
            .as_file()
            .sync_all()
            .map_err(|e| errors::os_error(&e, &format!("writing {name} failed")))?;
        let persisted = if self.overwrite {
            self.tmp.persist(&self.dst)
        } else {
            self.tmp.persist_noclobber(&self.dst)
        };
        persisted.map_err(|e| errors::os_error(&e.error, &format!("cannot create {name}")))?;
        Ok(())
    }
}

/// EEXIST, for `FileExistsError`.
fn libc_eexist() -> i32 {
    io::Error::from(io::ErrorKind::AlreadyExists)
        .raw_os_error()
        .unwrap_or(17)
}

fn open_input(src: &Path) -> PyResult<(File, u64)> {
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
    Ok((file, meta.len()))
}

fn stages(len: u64) -> Stages {
    if len >= THREADED_FROM as u64 {
        Stages::Threaded
    } else {
        Stages::InTurn
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
/// with any of `keys`, `recipients` or `passphrase`.
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
        let mut file = output.tmp.as_file();
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
    opened.set_batch(BATCH);
    Ok(opened)
}

/// Decrypts the container `src` into `dst`; every chunk is authenticated before its plaintext
/// is written, and `dst` appears only when the whole container was authentic.
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
        let opened = open_container(&mut input, &shown(&src), &unlock)?;
        let output = Output::create(&dst, overwrite, Some(&input))?;
        let name = output.name();
        let mut file = output.tmp.as_file();
        let spec = opened.stream_spec(engine, Direction::Decrypt);
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
                    .tmp
                    .as_file()
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
            None => at = data.len(),
        }
    }
    Ok(())
}

/// A stream that encrypts what is written to it into a container (format v3). Nothing reaches
/// a destination path until `close()` succeeds; `abort()` (or an error) leaves nothing.
#[pyclass(module = "paraes._paraes")]
pub struct Writer {
    state: Mutex<Option<WriterState>>,
}

impl Writer {
    fn lock(&self) -> MutexGuard<'_, Option<WriterState>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
                    .tmp
                    .as_file()
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
            state: Mutex::new(Some(state)),
        })
    }

    /// Encrypts and writes `data` (any bytes-like object); returns its length.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let exported = Exported::new(data, "data")?;
        let bytes = exported.bytes();
        let mut guard = self.lock();
        let state = guard
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("write to a closed paraes.Writer"))?;
        let result = if bytes.len() >= crate::raw::DETACH_FROM {
            py.detach(|| state.add(bytes))
        } else {
            state.add(bytes)
        };
        let to_send = match result {
            Ok(v) => v,
            Err(e) => {
                *guard = None;
                return Err(e);
            }
        };
        if let Sink::Python(sink) = &state.sink {
            let sink = sink.clone_ref(py);
            for piece in to_send {
                if let Err(e) = send(py, &sink, &piece) {
                    *guard = None;
                    return Err(e);
                }
            }
        }
        Ok(bytes.len())
    }

    /// Seals the last chunk and commits: a destination path gets its name now.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(mut state) = self.lock().take() else {
            return Ok(());
        };
        let sealed = py.detach(|| state.seal_pending(true))?;
        match state.sink {
            Sink::File(output) => {
                py.detach(|| {
                    output.tmp.as_file().write_all(&sealed).map_err(|e| {
                        errors::os_error(&e, &format!("writing {} failed", state.name))
                    })?;
                    output.commit()
                })
            }
            Sink::Python(sink) => {
                send(py, &sink, &sealed)?;
                if sink.bind(py).hasattr("flush")? {
                    sink.bind(py).call_method0("flush")?;
                }
                Ok(())
            }
        }
    }

    /// Drops everything: a destination path is left untouched (its temporary file removed).
    fn abort(&self) {
        self.lock().take();
    }

    /// Whether the writer was closed or aborted.
    #[getter]
    fn closed(&self) -> bool {
        self.lock().is_none()
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
            let (mut file, _) = open_input(&src)?;
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

    /// Reads up to `size` bytes (all that is left when negative or None).
    #[pyo3(signature = (size = -1))]
    fn read<'py>(&self, py: Python<'py>, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let position = self.tell()?;
        let left = self.len.saturating_sub(position);
        let want = match size {
            Some(n) if n >= 0 => (n as u64).min(left),
            _ => left,
        } as usize;
        let mut data = vec![0u8; want];
        let name = &self.name;
        let n = py.detach(|| self.with(|reader| fill(reader, &mut data, name)))?;
        Ok(PyBytes::new(py, &data[..n]))
    }

    /// Moves to `offset` from the start (`whence` 0), the current position (1) or the end (2).
    #[pyo3(signature = (offset, whence = 0))]
    fn seek(&self, offset: i64, whence: i32) -> PyResult<u64> {
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
        self.with(|reader| {
            reader
                .seek(to)
                .map_err(|_| PyValueError::new_err("negative seek position"))
        })
    }

    /// The current position in the plaintext.
    fn tell(&self) -> PyResult<u64> {
        self.with(|reader| {
            reader
                .stream_position()
                .map_err(|e| errors::os_error(&e, "tell failed"))
        })
    }

    /// Closes the container file.
    fn close(&self) {
        self.cell.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Whether the reader was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.cell
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}
