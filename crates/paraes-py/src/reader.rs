//! `paraes.Reader`: a readable, seekable view of a container's plaintext (over the core's
//! `SeekableReader`: a read authenticates and decrypts only the chunks it touches).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Mutex;

use paraes_core::container::{Opened, SeekableReader};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::Exported;
use crate::containers;
use crate::errors;
use crate::keys::UnlockArgs;

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

/// Refuses an ASCII-armored container, which has no offsets to read at, saying what reads it.
fn refuse_armor(file: &File, name: &str) -> PyResult<()> {
    let armored = paraes_files::file_looks_armored(file)
        .map_err(|e| errors::os_error(&e, &format!("reading {name} failed")))?;
    if armored {
        return Err(PyValueError::new_err(format!(
            "{name} is an ASCII-armored container, which is read in order, not at offsets: decrypt it whole with paraes.decrypt_file (or paraes dec), or write it without armor"
        )));
    }
    Ok(())
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (src, *, keys = None, identities = None, passphrase = None, ssh_passphrase = None, max_kdf_mib = None, allow_unverified_slot = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        src: PathBuf,
        keys: Option<&Bound<'_, PyAny>>,
        identities: Option<&Bound<'_, PyAny>>,
        passphrase: Option<&Bound<'_, PyAny>>,
        ssh_passphrase: Option<&Bound<'_, PyAny>>,
        max_kdf_mib: Option<u64>,
        allow_unverified_slot: bool,
    ) -> PyResult<Self> {
        let unlock = UnlockArgs {
            keys,
            identities,
            passphrase,
            ssh_passphrase,
            max_kdf_mib,
            allow_unverified_slot,
        }
        .unlock()?;
        let engine = crate::engine()?;
        let name = src.display().to_string();
        let cell = py.detach(|| {
            // A regular file only, opened without ever waiting on a FIFO: the reader reads at
            // offsets.
            let file = paraes_files::open_regular_file(&src).map_err(errors::file)?;
            refuse_armor(&file, &name)?;
            let opened = containers::open_file(&file, &name, &unlock)?;
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
