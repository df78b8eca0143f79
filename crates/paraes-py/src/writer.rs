//! `paraes.Writer`: a writable stream that encrypts what is written to it into a container
//! (format v3, or its ASCII armor), into a file named by a path (which gets its name only on
//! `close()`) or a Python binary file object. One call at a time; `abort()` and `closed` work at any time.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use paraes_core::container::Opened;
use paraes_core::pipeline::{self, Chunk};
use paraes_core::Direction;
use paraes_files::armor::ArmorWriter;
use paraes_files::Output;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::buffer::Exported;
use crate::containers::{self, BATCH};
use crate::errors;
use crate::keys::SealArgs;
use crate::DETACH_FROM;

/// Where a writer's container goes: a file named on commit, or a Python binary file object.
enum Sink {
    File(Output),
    Python(Py<PyAny>),
}

struct WriterState {
    opened: Opened,
    sink: Sink,
    /// For a Python sink written as ASCII armor: the armor, whose text is sent on as it comes
    /// (a file sink's [`Output`] is armored itself).
    armor: Option<ArmorWriter<Vec<u8>>>,
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
                containers::write_out(output, &sealed)?;
                sealed.clear();
                self.pending = sealed;
                Ok(None)
            }
            Sink::Python(_) => self.for_python(sealed).map(Some),
        }
    }

    /// What a Python sink is sent for the container's bytes `bytes`: them, or their armor's
    /// text so far (all of it but a line not yet full, so the sink gets what it would unarmored,
    /// and a sink that takes no bytes fails at once).
    fn for_python(&mut self, bytes: Vec<u8>) -> PyResult<Vec<u8>> {
        let Some(armor) = &mut self.armor else {
            return Ok(bytes);
        };
        armor
            .write_all(&bytes)
            .and_then(|()| armor.flush())
            .map_err(|e| errors::os_error(&e, "armoring the output"))?;
        Ok(std::mem::take(armor.get_mut()))
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
    #[pyo3(signature = (dst, *, keys = None, recipients = None, passphrase = None, bits = 256, armor = false, overwrite = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        recipients: Option<&Bound<'_, PyAny>>,
        passphrase: Option<&Bound<'_, PyAny>>,
        bits: u32,
        armor: bool,
        overwrite: bool,
    ) -> PyResult<Self> {
        let key_size = containers::key_size(bits)?;
        let args = SealArgs {
            keys,
            recipients,
            passphrase,
        };
        let read = args.files_read()?;
        let recipients = args.recipients()?;
        let is_path = dst.is_instance_of::<PyString>() || !dst.hasattr("write")?;
        let state = if is_path {
            let dst: PathBuf = dst.extract().map_err(|_| {
                PyTypeError::new_err("dst is a path (str or os.PathLike) or a binary file object")
            })?;
            py.detach(|| {
                let output = containers::create_output(&dst, overwrite, &read)?;
                let mut output = if armor { output.armored() } else { output };
                let (header, opened) = containers::seal(key_size, &recipients)?;
                let name = output.name();
                containers::write_out(&mut output, &header)?;
                Ok::<_, PyErr>(WriterState {
                    opened,
                    sink: Sink::File(output),
                    armor: None,
                    pending: Vec::new(),
                    index: 0,
                    name,
                })
            })?
        } else {
            let (header, opened) = py.detach(|| containers::seal(key_size, &recipients))?;
            let sink = dst.clone().unbind();
            let mut state = WriterState {
                opened,
                sink: Sink::Python(sink.clone_ref(py)),
                armor: armor.then(|| ArmorWriter::new(Vec::new())),
                pending: Vec::new(),
                index: 0,
                name: "the output stream".into(),
            };
            send(py, &sink, &state.for_python(header)?)?;
            state
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
        let result = if bytes.len() >= DETACH_FROM {
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
            Sink::File(mut output) => py.detach(|| {
                containers::write_out(&mut output, &sealed)?;
                if self.abort_requested() {
                    return Err(PyValueError::new_err(
                        "paraes.Writer was aborted (from another thread) during close(): the container was discarded",
                    ));
                }
                output.commit().map_err(errors::file)
            }),
            Sink::Python(ref sink) => {
                let sink = sink.clone_ref(py);
                send(py, &sink, &state.for_python(sealed)?)?;
                if let Some(armor) = state.armor.take() {
                    let end = armor
                        .finish()
                        .map_err(|e| errors::os_error(&e, "armoring the output"))?;
                    send(py, &sink, &end)?;
                }
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
