//! Whole files to and from containers (format v3, as `paraes enc` writes them):
//! `encrypt_file` and `decrypt_file`. Inputs are paraes-files' [`Input`] (a regular file, or a
//! FIFO or device read as a stream); outputs are made by [`containers::create_output`] and
//! appear only when complete. The body runs as the CLI's does, through the same code
//! ([`paraes_files::run_stream`]): many chunks in flight on [`paraes_files::chunk_workers`] of
//! the engine's threads, read at offsets from a regular input and written at offsets into the
//! unnamed output; a file under [`crate::THREADED_FROM`] bytes runs in turn on the calling
//! thread. Each call returns what ran, as the CLI's `--stats json` says it.

use std::path::{Path, PathBuf};

use paraes_core::pipeline::StreamSpec;
use paraes_core::{Direction, Engine};
use paraes_files::{Input, InputKinds, Moved, Output, Spread, SpreadError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::containers;
use crate::errors;
use crate::keys::{SealArgs, UnlockArgs};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(decrypt_file, m)?)?;
    Ok(())
}

/// Opens the input `src` for a job that writes `dst` (or takes the FIFO `fifo` opened there
/// already): a regular file, FIFO or device, never the file `dst` names.
fn open_input(src: &Path, fifo: Option<std::fs::File>, dst: &Path) -> PyResult<Input> {
    let input = match fifo {
        Some(file) => Input::File(file, src.to_path_buf()),
        None => Input::open(Some(src), InputKinds::FilesAndStreams).map_err(errors::file)?,
    };
    input.refuse_as_output(dst).map_err(errors::file)?;
    Ok(input)
}

/// Where `src` is a FIFO, opens it here, interruptibly (Ctrl-C raises `KeyboardInterrupt`
/// while no writer has it open): the standard library's open retries after a signal, so a call
/// blocked in it could not be interrupted. The job then reads this very descriptor.
fn open_fifo_interruptibly(py: Python<'_>, src: &Path) -> PyResult<Option<std::fs::File>> {
    use std::os::unix::fs::FileTypeExt;
    if !std::fs::metadata(src).is_ok_and(|m| m.file_type().is_fifo()) {
        return Ok(None);
    }
    let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC;
    loop {
        match py.detach(|| rustix::fs::open(src, flags, rustix::fs::Mode::empty())) {
            Ok(fd) => return Ok(Some(std::fs::File::from(fd))),
            Err(rustix::io::Errno::INTR) => py.check_signals()?,
            // Whatever else, the job's own open says it in its words.
            Err(_) => return Ok(None),
        }
    }
}

/// How a body of `len` bytes (`None`: a stream) runs on `engine`: in turn when small, else
/// many chunks in flight.
fn spread(len: Option<u64>, engine: &dyn Engine) -> Spread {
    match len {
        Some(len) if len < crate::THREADED_FROM as u64 => Spread::InTurn,
        _ => Spread::Workers(paraes_files::chunk_workers(engine.workers())),
    }
}

/// Runs the body `spec` from `input` to `output` (after the `header_len` bytes written there)
/// and commits the output.
fn run_body(
    spec: &StreamSpec<'_>,
    input: &mut Input,
    mut output: Output,
    header_len: u64,
) -> PyResult<(Moved, u64)> {
    let (input_name, output_name) = (input.name(), output.name());
    let spread = spread(input.len(), spec.engine);
    let moved = paraes_files::run_stream(spec, input, &mut output, spread, header_len, &|_| {})
        .map_err(|e| match e {
            SpreadError::File(e) => errors::file(e),
            SpreadError::Stream(e) => errors::pipeline(e, &input_name, &output_name),
        })?;
    output.commit().map_err(errors::file)?;
    Ok((moved, header_len))
}

/// What a call read and wrote, and how, as a dict with the keys of the CLI's `--stats json`:
/// `bytes_in` (bytes of the body read), `bytes_out` (bytes written, a container's header
/// included) and `io` (`None` where the file ran in turn on the calling thread, else
/// `{"read": "offsets" | "stream", "write": "offsets" | "stream", "workers": N,
/// "records_in_place": bool}`).
fn ran<'py>(py: Python<'py>, (moved, header_len): (Moved, u64)) -> PyResult<Bound<'py, PyDict>> {
    let stats = PyDict::new(py);
    stats.set_item("bytes_in", moved.ran.read)?;
    stats.set_item("bytes_out", header_len + moved.ran.written)?;
    let io = match moved.io {
        Some(io) => {
            let (read, write) = io.ends();
            let io_dict = PyDict::new(py);
            io_dict.set_item("read", read)?;
            io_dict.set_item("write", write)?;
            io_dict.set_item("workers", io.workers)?;
            io_dict.set_item("records_in_place", io.records_in_place)?;
            Some(io_dict)
        }
        None => None,
    };
    stats.set_item("io", io)?;
    Ok(stats)
}

/// Encrypts the file `src` into a new container `dst` (format v3, as `paraes enc`), which opens
/// with any of `keys`, `recipients` or `passphrase`; `armor` writes it as ASCII armor (as
/// `paraes enc -a`: written in order, as a stream). `src` may be a FIFO or device (read as a
/// stream); `dst` is a regular file, which appears only when complete. Returns what ran (see
/// [`ran`]).
#[pyfunction]
#[pyo3(signature = (src, dst, *, keys = None, recipients = None, passphrase = None, bits = 256, armor = false, overwrite = false))]
#[allow(clippy::too_many_arguments)]
fn encrypt_file<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    keys: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    bits: u32,
    armor: bool,
    overwrite: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let key_size = containers::key_size(bits)?;
    let args = SealArgs {
        keys,
        recipients,
        passphrase,
    };
    let read = args.files_read()?;
    let recipients = args.recipients()?;
    let engine = crate::engine()?;
    let fifo = open_fifo_interruptibly(py, &src)?;
    let done = py.detach(|| {
        let mut input = open_input(&src, fifo, &dst)?;
        let output = containers::create_output(&dst, overwrite, &read)?;
        let mut output = if armor { output.armored() } else { output };
        let (header, opened) = containers::seal(key_size, &recipients)?;
        containers::write_out(&mut output, &header)?;
        let spec = opened.stream_spec(engine, Direction::Encrypt);
        run_body(&spec, &mut input, output, header.len() as u64)
    })?;
    ran(py, done)
}

/// Decrypts the container `src` into `dst`; every chunk is authenticated before its plaintext
/// is written, and `dst` appears only when the whole container was authentic. `src` may be
/// ASCII-armored (told by its first line, as `paraes dec` does; a regular file's whole armor is
/// checked first), a FIFO or a device (read as a stream); `dst` is a regular file. `ssh_passphrase` unlocks the SSH
/// private keys among `identities` that have a passphrase (nothing is ever prompted for);
/// `max_kdf_mib` caps the Argon2id work (MiB x passes) a file's passphrase stanzas may ask
/// (default 3072, the CLI's `--max-kdf-mib`); `allow_unverified_slot` opens a format v2 file
/// whose second stanza slot the opening key does not authenticate, with a `UserWarning` (the
/// CLI's `--allow-unverified-slot`). Returns what ran (see [`ran`]).
#[pyfunction]
#[pyo3(signature = (src, dst, *, keys = None, identities = None, passphrase = None, ssh_passphrase = None, max_kdf_mib = None, allow_unverified_slot = false, overwrite = false))]
#[allow(clippy::too_many_arguments)]
fn decrypt_file<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    keys: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    ssh_passphrase: Option<&Bound<'_, PyAny>>,
    max_kdf_mib: Option<u64>,
    allow_unverified_slot: bool,
    overwrite: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let args = UnlockArgs {
        keys,
        identities,
        passphrase,
        ssh_passphrase,
        max_kdf_mib,
        allow_unverified_slot,
    };
    let read = args.files_read()?;
    let unlock = args.unlock()?;
    let engine = crate::engine()?;
    let fifo = open_fifo_interruptibly(py, &src)?;
    let done = py.detach(|| {
        let input = open_input(&src, fifo, &dst)?;
        // Refused before anything is read: the output's checks come first (before the first
        // bytes of a FIFO are waited for, or a file's whole armor is read).
        let output = containers::create_output(&dst, overwrite, &read)?;
        let mut input = input.dearmored().map_err(errors::file)?;
        let input_name = input.name();
        let (opened, mut input) = match input.file().filter(|_| input.len().is_some()) {
            // A regular file: its body is read at offsets from after the header.
            Some(file) => (containers::open_file(file, &input_name, &unlock)?, input),
            None => {
                let (opened, ahead) = containers::open_stream(&mut input, &input_name, &unlock)?;
                (opened, input.replaying(ahead))
            }
        };
        let spec = opened.stream_spec(engine, Direction::Decrypt);
        run_body(&spec, &mut input, output, 0)
    })?;
    ran(py, done)
}
