//! v3 container files to and from device memory: [`load_container`] (and
//! [`load_container_into`] a caller's buffer) decrypts a container's body straight into device
//! memory, so the plaintext never exists in host memory; [`save_container`] seals device
//! memory into a new container file; [`upload_body_only`] is the loader with decryption turned
//! off, a benchmark's baseline. The header is read and the file key unwrapped by
//! paraes-core's container API exactly as every other reader does (`UnverifiedHeader::read`,
//! `open` with an [`Unlock`]); new containers are sealed by `container::seal`; the output file is
//! paraes-files' [`Output`], which takes its name only when whole.
//!
//! The body goes up in pieces of whole records (the engine's piece size), read by the host (1
//! MiB reads in parallel, on every core) into one of two pinned buffers while the device
//! verifies and decrypts the other; the tags' verdicts stay on the device until the last piece
//! is in, then every one is checked. If any
//! fails, or anything else fails once decryption began, the device buffer is zeroed before the
//! error returns, so no unauthenticated plaintext is left to use.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use paraes_core::cobblestone::{CHUNK_LEN, RECORD_LEN};
use paraes_core::container::{self, BodyAccess, Opened, Recipient, Unlock, UnverifiedHeader};
use paraes_core::KeySize;
use paraes_files::{Output, OutputOptions};
use rayon::prelude::*;

use super::records::{ChunkSpan, RecordsRun};
use super::{DeviceMemory, DeviceMemoryError, GpuStream};
use crate::driver::{DeviceBuffer, PinnedBuffer, RecordsKind};
use crate::engine::GpuEngine;
use crate::error::GpuError;

/// What [`load_container`] and [`load_container_into`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// Plaintext bytes written to the device buffer, from its first byte.
    pub plaintext_len: usize,
    /// A warning for the user, as every front end gives it: a stanza slot that parses but
    /// that the file key does not authenticate was ignored.
    pub warning: Option<String>,
}

/// What [`save_container`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    /// Bytes of the container written (header and body).
    pub container_len: u64,
    /// The sealing's warnings about the recipients, for the user.
    pub warnings: Vec<String>,
}

/// A v3 container opened for reading its body at offsets.
struct OpenedFile {
    file: File,
    name: String,
    opened: Opened,
    body_start: u64,
    records_len: u64,
}

impl OpenedFile {
    /// Opens the container `path` with `unlock` (the header read, the file key unwrapped and
    /// checked against the body by paraes-core), refusing all but a binary v3 container.
    fn open(path: &Path, unlock: &Unlock) -> Result<OpenedFile, DeviceMemoryError> {
        let name = path.display().to_string();
        let file = paraes_files::open_regular_file(path)?;
        let io = |what: &str, source| DeviceMemoryError::Io {
            what: format!("{what} {name}"),
            source,
        };
        if paraes_files::file_looks_armored(&file).map_err(|e| io("reading", e))? {
            return Err(DeviceMemoryError::Layout(format!(
                "{name} is ASCII armor: decrypt it into device memory from its binary form \
                 (dearmor it first)"
            )));
        }
        let container = |source| DeviceMemoryError::Container {
            name: name.clone(),
            source,
        };
        let header = UnverifiedHeader::read(&mut &file).map_err(container)?;
        let opened = header
            .open(unlock, BodyAccess::File(&file))
            .map_err(container)?;
        if opened.message_cipher().is_none() {
            return Err(DeviceMemoryError::Layout(format!(
                "{name} is a format v{} container: only v3 bodies (Cobblestone) open on the \
                 device; upgrade it to format v3 first",
                opened.info().version
            )));
        }
        let body_start = opened.header_bytes().len() as u64;
        let file_len = file.metadata().map_err(|e| io("reading", e))?.len();
        Ok(OpenedFile {
            records_len: file_len.saturating_sub(body_start),
            body_start,
            file,
            name,
            opened,
        })
    }

    /// The body's span: the whole message, from chunk 0.
    fn span(&self) -> ChunkSpan<'_> {
        ChunkSpan {
            cipher: self
                .opened
                .message_cipher()
                .expect("checked to be v3 when opened"),
            first_index: 0,
            last: true,
        }
    }

    fn loaded(&self, plaintext_len: usize) -> Loaded {
        Loaded {
            plaintext_len,
            warning: self
                .opened
                .ignored_slot()
                .map(|slot| format!("{}: {}", self.name, slot.warning())),
        }
    }
}

/// Decrypts the v3 container `path`, opened with `unlock` (keys, passphrases and identities as
/// the file API takes them), into new device memory on `stream`'s device that holds exactly its
/// plaintext. The plaintext never exists in host memory. Returns once the plaintext is whole
/// and every tag verified (so it may be read by anyone at once); a container that is damaged or
/// was tampered with is refused with an error that names the chunk, and the memory holding its
/// partial plaintext is zeroed and freed.
pub fn load_container(
    engine: &GpuEngine,
    path: &Path,
    unlock: &Unlock,
    stream: &GpuStream,
) -> Result<(DeviceMemory, Loaded), DeviceMemoryError> {
    let file = OpenedFile::open(path, unlock)?;
    let layout = file.span().records_layout(file.records_len)?;
    let mut memory = DeviceMemory::zeroed(stream, layout.plaintext_len() as usize)?;
    let loaded = decrypt_body(engine, &file, &mut memory, stream)?;
    Ok((memory, loaded))
}

/// As [`load_container`], into the first bytes of `memory` (the caller's, say), which must hold
/// the plaintext (refused, untouched, otherwise). On every failure once decryption began (a tag
/// that does not verify, a read or GPU error), all of `memory` is zeroed before the error
/// returns.
pub fn load_container_into(
    engine: &GpuEngine,
    path: &Path,
    unlock: &Unlock,
    memory: &mut DeviceMemory,
    stream: &GpuStream,
) -> Result<Loaded, DeviceMemoryError> {
    let file = OpenedFile::open(path, unlock)?;
    decrypt_body(engine, &file, memory, stream)
}

/// [`load_container`]'s reads and copies with decryption turned off: the body of `path` read
/// in the loader's pieces (by the same parallel reads) and copied up into its staging buffers,
/// nothing verified, decrypted or kept. The baseline a benchmark holds the loader's speed
/// against; returns the record bytes that went up.
pub fn upload_body_only(
    engine: &GpuEngine,
    path: &Path,
    unlock: &Unlock,
    stream: &GpuStream,
) -> Result<u64, DeviceMemoryError> {
    let file = OpenedFile::open(path, unlock)?;
    let layout = file.span().records_layout(file.records_len)?;
    let run = RecordsRun::new(engine, &stream.stream, &file.span(), layout);
    upload_body(&file, &run, stream, |_, _| Ok(()))?;
    stream.synchronize()?;
    Ok(layout.records_len())
}

/// Streams `file`'s body up and opens it into `memory` (module docs); zeroes `memory` on a
/// failure once decryption began.
fn decrypt_body(
    engine: &GpuEngine,
    file: &OpenedFile,
    memory: &mut DeviceMemory,
    stream: &GpuStream,
) -> Result<Loaded, DeviceMemoryError> {
    let span = file.span();
    let layout = span.records_layout(file.records_len)?;
    let plaintext_len = layout.plaintext_len() as usize;
    if memory.len() < plaintext_len {
        return Err(DeviceMemoryError::Layout(format!(
            "{} holds {plaintext_len} bytes of plaintext and the device buffer {}: allocate a \
             larger one",
            file.name,
            memory.len()
        )));
    }
    let run = RecordsRun::new(engine, &stream.stream, &span, layout);
    let result = (|| -> Result<Option<u64>, DeviceMemoryError> {
        let mut verdicts = run.verdicts()?;
        let output = memory.buffer_mut();
        upload_body(file, &run, stream, |(from, n), staging| {
            let index = from as usize;
            run.launch(
                RecordsKind::Verify,
                (from, n),
                (staging, 0),
                (&mut verdicts, index * 16),
            )?;
            run.launch(
                RecordsKind::Open,
                (from, n),
                (staging, 0),
                (&mut *output, index * CHUNK_LEN),
            )?;
            Ok(())
        })?;
        Ok(run.first_failure(&verdicts)?)
    })();
    let failure = match result {
        Ok(None) => return Ok(file.loaded(plaintext_len)),
        Ok(Some(chunk)) => DeviceMemoryError::Tampered {
            chunk,
            buffer: "the device buffer was zeroed",
        },
        Err(e) => e,
    };
    memory.zero(stream)?;
    stream.synchronize()?;
    Err(failure)
}

/// Bytes each of the parallel reads of a piece asks for.
const READ_LEN: usize = 1 << 20;

/// Reads `file`'s body up in `run`'s pieces of whole records, through two pinned buffers (the
/// host reads one piece, on every core, while the device works on the other), and after each
/// piece's copy up enqueues `then(piece, staging)`: the piece's chunks and the device buffer
/// that holds its records, on `stream`.
fn upload_body(
    file: &OpenedFile,
    run: &RecordsRun<'_>,
    stream: &GpuStream,
    mut then: impl FnMut((u64, u64), &DeviceBuffer) -> Result<(), DeviceMemoryError>,
) -> Result<(), DeviceMemoryError> {
    let (per, pieces) = run.pieces();
    let piece_len = run
        .sizes(RecordsKind::Verify, (0, per.min(run.layout.chunks)))
        .0;
    let ctx = stream.stream.context();
    let mut slots = Vec::with_capacity(2);
    for _ in 0..2 {
        let pinned = PinnedBuffer::new(ctx, piece_len)?;
        slots.push((pinned, DeviceBuffer::new(&stream.stream, piece_len)?));
    }
    for (p, (from, n)) in pieces.enumerate() {
        let (pinned, staging) = &mut slots[p % 2];
        let reads = run.sizes(RecordsKind::Verify, (from, n)).0;
        // Waits for this buffer's previous copy up, then reads the next records into it.
        let bytes = &mut pinned.bytes_mut()?[..reads];
        let at = file.body_start + from * RECORD_LEN as u64;
        bytes
            .par_chunks_mut(READ_LEN)
            .enumerate()
            .try_for_each(|(k, part)| file.file.read_exact_at(part, at + (k * READ_LEN) as u64))
            .map_err(|source| DeviceMemoryError::Io {
                what: format!("reading {}", file.name),
                source,
            })?;
        stream.stream.copy_to_device(staging, 0, pinned, reads)?;
        then((from, n), staging)?;
    }
    Ok(())
}

/// Seals all of `memory` (plaintext) into a new v3 container `dst` for `recipients` (keys,
/// passphrases and public keys as the file API takes them), with a `key_size` body key. The
/// plaintext never comes to the host: it is sealed on the device in pieces in `stream`'s order
/// (after everything already there), and only records come down. `dst` is written through
/// paraes-files' [`Output`] as a regular file that takes its name only when whole (`replace`:
/// whether an existing regular file there may be replaced); on any failure nothing is left
/// there. Returns once the file is in place.
pub fn save_container(
    engine: &GpuEngine,
    memory: &DeviceMemory,
    dst: &Path,
    replace: bool,
    (key_size, recipients): (KeySize, &[Recipient]),
    stream: &GpuStream,
) -> Result<Saved, DeviceMemoryError> {
    let name = dst.display().to_string();
    let options = OutputOptions {
        replace,
        stream_into_special_files: false,
        ..OutputOptions::default()
    };
    let mut output = Output::create(Some(dst), &options)?;
    let (header, opened) =
        container::seal(key_size, recipients).map_err(|source| DeviceMemoryError::Container {
            name: name.clone(),
            source,
        })?;
    let span = ChunkSpan {
        cipher: opened.message_cipher().ok_or_else(|| {
            GpuError::Internal("sealing a container gave no v3 message body".into())
        })?,
        first_index: 0,
        last: true,
    };
    let layout = span.plaintext_layout(memory.len() as u64)?;
    let write = |output: &mut Output, bytes: &[u8]| {
        output
            .writer()
            .write_all(bytes)
            .map_err(|source| DeviceMemoryError::Io {
                what: format!("writing {name}"),
                source,
            })
    };
    write(&mut output, &header)?;
    let run = RecordsRun::new(engine, &stream.stream, &span, layout);
    let (per, pieces) = run.pieces();
    let piece_len = run.sizes(RecordsKind::Seal, (0, per.min(layout.chunks))).1;
    let ctx = stream.stream.context();
    let mut slots = Vec::with_capacity(2);
    for _ in 0..2 {
        let pinned = PinnedBuffer::new(ctx, piece_len)?;
        slots.push((pinned, DeviceBuffer::new(&stream.stream, piece_len)?));
    }
    // Piece p is enqueued before piece p - 1 is written out, so the device seals one piece
    // while the host writes the other.
    let mut pending: Option<(usize, usize)> = None;
    for (p, (from, n)) in pieces.enumerate() {
        let slot = p % 2;
        let (pinned, staging) = &mut slots[slot];
        let input = (memory.buffer(), from as usize * CHUNK_LEN);
        run.launch(RecordsKind::Seal, (from, n), input, (staging, 0))?;
        let writes = run.sizes(RecordsKind::Seal, (from, n)).1;
        stream.stream.copy_to_host(pinned, (staging, 0), writes)?;
        if let Some((slot, len)) = pending.replace((slot, writes)) {
            write(&mut output, &slots[slot].0.bytes_mut()?[..len])?;
        }
    }
    if let Some((slot, len)) = pending {
        write(&mut output, &slots[slot].0.bytes_mut()?[..len])?;
    }
    output.commit()?;
    Ok(Saved {
        container_len: header.len() as u64 + layout.records_len(),
        warnings: opened.warnings().iter().map(|w| w.to_string()).collect(),
    })
}
