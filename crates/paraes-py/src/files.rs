//! Whole files to and from containers (format v3, as `paraes enc` writes them):
//! `encrypt_file` and `decrypt_file`. Inputs are paraes-files' [`Input`] (a regular file, or a
//! FIFO or device read as a stream); outputs are made by [`containers::create_output`] and
//! appear only when complete.

use std::path::{Path, PathBuf};

use paraes_core::pipeline::{self, Segment};
use paraes_core::Direction;
use paraes_files::{Input, InputKinds};
use pyo3::prelude::*;

use crate::containers;
use crate::errors;
use crate::keys::{SealArgs, UnlockArgs};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(decrypt_file, m)?)?;
    Ok(())
}

/// Opens the input `src` for a job that writes `dst`: a regular file, FIFO or device, never
/// the file `dst` names.
fn open_input(src: &Path, dst: &Path) -> PyResult<Input> {
    let input = Input::open(Some(src), InputKinds::FilesAndStreams).map_err(errors::file)?;
    input.refuse_as_output(dst).map_err(errors::file)?;
    Ok(input)
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
    let key_size = containers::key_size(bits)?;
    let args = SealArgs {
        keys,
        recipients,
        passphrase,
    };
    let read = args.files_read()?;
    let recipients = args.recipients()?;
    let engine = crate::engine()?;
    py.detach(|| {
        let mut input = open_input(&src, &dst)?;
        let mut output = containers::create_output(&dst, overwrite, &read)?;
        let (header, opened) = containers::seal(key_size, &recipients)?;
        containers::write_out(&mut output, &header)?;
        let spec = opened.stream_spec(engine, Direction::Encrypt);
        let (input_name, output_name) = (input.name(), output.name());
        pipeline::run_segment(
            &spec,
            Segment::WHOLE,
            containers::stages(input.len()),
            &mut input,
            &mut output.writer(),
            &|_| {},
        )
        .map_err(|e| errors::pipeline(e, &input_name, &output_name))?;
        output.commit().map_err(errors::file)
    })
}

/// Decrypts the container `src` into `dst`; every chunk is authenticated before its plaintext
/// is written, and `dst` appears only when the whole container was authentic. `src` may be a
/// FIFO or device (read as a stream); `dst` is a regular file. `ssh_passphrase` unlocks the SSH
/// private keys among `identities` that have a passphrase (nothing is ever prompted for);
/// `max_kdf_mib` caps the Argon2id work (MiB x passes) a file's passphrase stanzas may ask
/// (default 3072, the CLI's `--max-kdf-mib`); `allow_unverified_slot` opens a format v2 file
/// whose second stanza slot the opening key does not authenticate, with a `UserWarning` (the
/// CLI's `--allow-unverified-slot`).
#[pyfunction]
#[pyo3(signature = (src, dst, *, keys = None, identities = None, passphrase = None, ssh_passphrase = None, max_kdf_mib = None, allow_unverified_slot = false, overwrite = false))]
#[allow(clippy::too_many_arguments)]
fn decrypt_file(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    keys: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    ssh_passphrase: Option<&Bound<'_, PyAny>>,
    max_kdf_mib: Option<u64>,
    allow_unverified_slot: bool,
    overwrite: bool,
) -> PyResult<()> {
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
    py.detach(|| {
        let mut input = open_input(&src, &dst)?;
        // Refused before anything is read: the output's checks come first.
        let mut output = containers::create_output(&dst, overwrite, &read)?;
        let (input_name, output_name) = (input.name(), output.name());
        let len = input.len();
        let (opened, ahead) = match input.file().filter(|_| len.is_some()) {
            Some(file) => (
                containers::open_file(file, &input_name, &unlock)?,
                Vec::new(),
            ),
            None => containers::open_stream(&mut input, &input_name, &unlock)?,
        };
        let spec = opened.stream_spec(engine, Direction::Decrypt);
        pipeline::run_segment(
            &spec,
            Segment::WHOLE,
            containers::stages(len),
            &mut input.replaying(ahead),
            &mut output.writer(),
            &|_| {},
        )
        .map_err(|e| errors::pipeline(e, &input_name, &output_name))?;
        output.commit().map_err(errors::file)
    })
}
