//! What the container calls share (`encrypt_file`, `decrypt_file`, `Writer`, `Reader`): sealing
//! a new container, opening one from a file or a stream, and outputs made by paraes-files with
//! Python's rules.
//!
//! Outputs named by a path are paraes-files' [`Output`]: written to an unnamed temporary in the
//! destination's directory (mode 0600; a hidden `.NAME.XXXXXXXXXXXX.paraes-tmp` where the file
//! system has no `O_TMPFILE`) that takes the destination's name only when everything
//! succeeded, durably, so a failure never leaves a partial file behind. An existing destination
//! is replaced only with `overwrite=True`, as the CLI's `--force`, and only if it is a regular
//! file: a FIFO, device or directory there is refused (a decrypted file must not reach a reader
//! before it is whole, and a rename would replace the FIFO). Inputs may be FIFOs or devices:
//! they are read as streams (the CLI's rule).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use paraes_core::container::{self, BodyAccess, Opened, Recipient, Unlock, UnverifiedHeader};
use paraes_core::pipeline;
use paraes_core::KeySize;
use paraes_files::{FilesRead, Output, OutputOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors;

/// Plaintext bytes per pipeline chunk of the bodies written (as `paraes enc`'s default).
pub const BATCH: usize = pipeline::DEFAULT_CHUNK_SIZE;

/// The body key size of `bits`.
pub fn key_size(bits: u32) -> PyResult<KeySize> {
    match bits {
        128 => Ok(KeySize::Aes128),
        256 => Ok(KeySize::Aes256),
        other => Err(PyValueError::new_err(format!(
            "a container's body key is 128 or 256 bits, not {other}"
        ))),
    }
}

/// The output `dst` by Python's rules: a regular file only (never a stream into a FIFO or
/// device), replaced only with `overwrite`, and never one of the files the call reads (`read`:
/// its key, identity or recipients files), even with `overwrite`.
pub fn create_output(dst: &Path, overwrite: bool, read: &FilesRead) -> PyResult<Output> {
    read.refuse_as_output_path(dst).map_err(errors::file)?;
    let options = OutputOptions {
        replace: overwrite,
        stream_into_special_files: false,
        ..OutputOptions::default()
    };
    Output::create(Some(dst), &options).map_err(errors::file)
}

/// Writes `bytes` to `output`.
pub fn write_out(output: &mut Output, bytes: &[u8]) -> PyResult<()> {
    output
        .writer()
        .write_all(bytes)
        .map_err(|e| errors::os_error(&e, &format!("writing {} failed", output.name())))
}

/// Seals a new container for `recipients` (Argon2id runs here for a passphrase), saying the
/// core's warnings about them as `UserWarning`s.
pub fn seal(key_size: KeySize, recipients: &[Recipient]) -> PyResult<(Vec<u8>, Opened)> {
    let (header, mut opened) =
        container::seal(key_size, recipients).map_err(|e| errors::container(e, "the container"))?;
    // The core's warnings about these recipients, before anything is written: a filter that
    // makes warnings errors leaves no output.
    for warning in opened.warnings() {
        errors::warn(&warning.to_string())?;
    }
    opened.set_batch(BATCH);
    Ok((header, opened))
}

/// Reads and opens the container header at the start of the regular file `file` (named
/// `name`) with `unlock`; the body is checked at offsets, and the file's offset is left after
/// the header.
pub fn open_file(file: &File, name: &str, unlock: &Unlock) -> PyResult<Opened> {
    let header = UnverifiedHeader::read(&mut &*file).map_err(|e| errors::container(e, name))?;
    let opened = header
        .open(unlock, BodyAccess::File(file))
        .map_err(|e| errors::container(e, name))?;
    ready(opened, name)
}

/// Reads and opens the container header of a stream (a FIFO or device) with `unlock`, as the
/// CLI does: a v3 body is checked chunk by chunk as it goes (its key commitment is in the
/// header); an older body's first record is read ahead, checked, and must be served again.
/// Returns the opened container and the bytes read ahead.
pub fn open_stream(
    input: &mut impl Read,
    name: &str,
    unlock: &Unlock,
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
    let opened = header
        .open(unlock, BodyAccess::Stream { first: &first })
        .map_err(|e| errors::container(e, name))?;
    Ok((ready(opened, name)?, first))
}

/// An opened container, its ignored stanza slot told (the core's rule, as the CLI: always in
/// v3, in v2 only when allowed) as a `UserWarning` in the CLI's words, set to write the
/// pipeline's chunks.
fn ready(mut opened: Opened, name: &str) -> PyResult<Opened> {
    if let Some(ignored) = opened.ignored_slot() {
        errors::warn(&format!("{name}: {}", ignored.warning()))?;
    }
    opened.set_batch(BATCH);
    Ok(opened)
}
