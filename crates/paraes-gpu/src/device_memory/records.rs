//! Cobblestone-128 and -256 chunk records (C2SP chunked encryption, format v3's body) sealed
//! and opened in device memory by the records kernels, out of place and in place, on a given
//! stream: [`ChunkSpan`] says which chunks of which message, [`GpuEngine::seal_device`],
//! [`GpuEngine::open_device`], [`GpuEngine::seal_device_in_place`] and
//! [`GpuEngine::open_device_in_place`] run them. [`RecordsRun`] is the one launch path they and
//! the file calls share.
//!
//! Layout: plaintext back to back; records of 16 KiB of ciphertext and its 16-byte tag, the
//! last shorter. In place, the buffer holds the plaintext at its start and room for the
//! records: sealing goes from the last piece of chunks to the first (a piece's records land
//! at or after its own plaintext, never on an earlier piece's), opening from the first to the
//! last (a piece's plaintext lands at or before its own records), each piece through a scratch
//! buffer of one piece.

use paraes_core::cobblestone::{ChunkCipher, CHUNK_LEN, MAX_CHUNKS, RECORD_LEN, TAG_LEN};
use paraes_core::Direction;

use super::{DeviceMemory, DeviceMemoryError, GpuStream};
use crate::driver::{DeviceBuffer, GcmKeys, PinnedBuffer, RecordsKind, RecordsLaunch, Stream};
use crate::engine::{first_failure, GpuEngine};
use crate::error::GpuError;
use crate::plan::RoundKeyWords;

/// Which chunks of which message a call seals or opens: the message's chunk cipher
/// (`MessageKeys::chunks`, or an opened container's `message_cipher`), the GCM chunk index of
/// the first chunk, and whether the span ends the message.
#[derive(Clone, Copy, Debug)]
pub struct ChunkSpan<'a> {
    /// The message's keys.
    pub cipher: &'a ChunkCipher,
    /// The GCM chunk index of the span's first chunk: chunk `k` of the span is sealed with
    /// nonce `base_nonce XOR be96(first_index + k)`. The span must end by chunk 2^38, the
    /// spec's limit.
    pub first_index: u64,
    /// Whether the span ends the message: then its last chunk is shorter than 16 KiB (empty
    /// when the plaintext is whole chunks), as the spec's final chunk always is. Otherwise
    /// every chunk of the span is whole (16 KiB of plaintext, a 16400-byte record).
    pub last: bool,
}

/// A span's chunks: how many, and the plaintext bytes of the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) chunks: u64,
    pub(crate) last_len: u64,
}

impl Layout {
    /// Plaintext bytes.
    pub(crate) fn plaintext_len(self) -> u64 {
        self.chunks.saturating_sub(1) * CHUNK_LEN as u64
            + self.last_len * u64::from(self.chunks > 0)
    }

    /// Record bytes.
    pub(crate) fn records_len(self) -> u64 {
        self.plaintext_len() + self.chunks * TAG_LEN as u64
    }

    /// The bytes that `kind` writes: records to seal, plaintext to open.
    pub(crate) fn output_len(self, kind: RecordsKind) -> u64 {
        match kind {
            RecordsKind::Seal => self.records_len(),
            _ => self.plaintext_len(),
        }
    }

    /// The plaintext bytes of the last of chunks `from..from + n`.
    fn last_of(self, from: u64, n: u64) -> u64 {
        if from + n == self.chunks {
            self.last_len
        } else {
            CHUNK_LEN as u64
        }
    }
}

impl ChunkSpan<'_> {
    /// The chunks of `plaintext_len` bytes of plaintext.
    pub(crate) fn plaintext_layout(&self, plaintext_len: u64) -> Result<Layout, DeviceMemoryError> {
        let chunk = CHUNK_LEN as u64;
        let layout = if self.last {
            Layout {
                chunks: plaintext_len / chunk + 1,
                last_len: plaintext_len % chunk,
            }
        } else if plaintext_len.is_multiple_of(chunk) {
            Layout {
                chunks: plaintext_len / chunk,
                last_len: chunk,
            }
        } else {
            return Err(DeviceMemoryError::Layout(format!(
                "{plaintext_len} bytes of plaintext are not whole 16 KiB chunks: a span that does \
                 not end the message holds whole chunks (mark the message's last span as last)"
            )));
        };
        self.within_limit(layout)
    }

    /// The chunks of `records_len` bytes of chunk records.
    pub(crate) fn records_layout(&self, records_len: u64) -> Result<Layout, DeviceMemoryError> {
        let record = RECORD_LEN as u64;
        let tail = records_len % record;
        let layout = match (self.last, tail) {
            (true, tail) if tail >= TAG_LEN as u64 => Layout {
                chunks: records_len / record + 1,
                last_len: tail - TAG_LEN as u64,
            },
            (false, 0) => Layout {
                chunks: records_len / record,
                last_len: CHUNK_LEN as u64,
            },
            (true, _) => {
                return Err(DeviceMemoryError::Layout(format!(
                    "{records_len} bytes of records have no final chunk shorter than 16 KiB: the \
                     message was cut short, or this span does not end it (then it is not last)"
                )))
            }
            (false, _) => {
                return Err(DeviceMemoryError::Layout(format!(
                    "{records_len} bytes of records are not whole 16400-byte records: a span that \
                     does not end the message holds whole records (mark the last span as last)"
                )))
            }
        };
        self.within_limit(layout)
    }

    /// The chunks of `input_len` bytes that `kind` reads: plaintext to seal, records else.
    pub(crate) fn layout(
        &self,
        kind: RecordsKind,
        input_len: u64,
    ) -> Result<Layout, DeviceMemoryError> {
        match kind {
            RecordsKind::Seal => self.plaintext_layout(input_len),
            _ => self.records_layout(input_len),
        }
    }

    fn within_limit(&self, layout: Layout) -> Result<Layout, DeviceMemoryError> {
        match self.first_index.checked_add(layout.chunks) {
            Some(end) if end <= MAX_CHUNKS => Ok(layout),
            _ => Err(DeviceMemoryError::Layout(format!(
                "chunks {} to {} of a message: the spec allows chunk indices below 2^38",
                self.first_index,
                self.first_index.saturating_add(layout.chunks)
            ))),
        }
    }

    /// The record bytes that `plaintext_len` bytes of plaintext seal into (a buffer's size
    /// for [`GpuEngine::seal_device`]).
    pub fn sealed_len(&self, plaintext_len: usize) -> Result<usize, DeviceMemoryError> {
        Ok(self.plaintext_layout(plaintext_len as u64)?.records_len() as usize)
    }

    /// The plaintext bytes that `records_len` bytes of records open into.
    pub fn opened_len(&self, records_len: usize) -> Result<usize, DeviceMemoryError> {
        Ok(self.records_layout(records_len as u64)?.plaintext_len() as usize)
    }
}

/// One span's launches on one stream: the keys as the kernels take them (wiped on drop).
pub(crate) struct RecordsRun<'a> {
    engine: &'a GpuEngine,
    stream: &'a Stream,
    rounds: usize,
    keys: RoundKeyWords,
    gcm_keys: GcmKeys,
    first_index: u64,
    pub(crate) layout: Layout,
}

impl Drop for RecordsRun<'_> {
    fn drop(&mut self) {
        self.keys.wipe();
    }
}

impl<'a> RecordsRun<'a> {
    pub(crate) fn new(
        engine: &'a GpuEngine,
        stream: &'a Stream,
        span: &ChunkSpan<'_>,
        layout: Layout,
    ) -> Self {
        let job = span
            .cipher
            .records_job(Direction::Encrypt, span.first_index);
        RecordsRun {
            engine,
            stream,
            rounds: job.key.rounds(),
            keys: RoundKeyWords::new(job.key.enc_round_keys()),
            gcm_keys: GcmKeys::new(&job.base_nonce, job.hash_key),
            first_index: span.first_index,
            layout,
        }
    }

    /// The AES rounds of the span's key (10 or 14).
    pub(crate) fn rounds(&self) -> usize {
        self.rounds
    }

    /// Chunks per piece (the engine's piece size) and the pieces of the span, in order.
    pub(crate) fn pieces(&self) -> (u64, impl DoubleEndedIterator<Item = (u64, u64)>) {
        let per = self.engine.records_per_piece() as u64;
        let chunks = self.layout.chunks;
        let pieces = (0..chunks.div_ceil(per)).map(move |p| (p * per, per.min(chunks - p * per)));
        (per, pieces)
    }

    /// Enqueues `kind` over the span's chunks `from..from + n`, reading `input` and writing
    /// `output` from the given byte offsets (the bytes of chunk `from` on).
    pub(crate) fn launch(
        &self,
        kind: RecordsKind,
        (from, n): (u64, u64),
        input: (&DeviceBuffer, usize),
        output: (&mut DeviceBuffer, usize),
    ) -> Result<(), GpuError> {
        if n == 0 {
            return Ok(());
        }
        let kernel = self.engine.device().records_kernel(self.rounds, kind)?;
        let (grid, threads) = self.engine.records_shape(&kernel, n);
        let launch = RecordsLaunch {
            grid,
            threads,
            chunks: n,
            first_index: self.first_index + from,
            last_len: self.layout.last_of(from, n),
            keys: &self.keys,
            gcm_keys: &self.gcm_keys,
        };
        kernel.launch_records(self.stream, kind, &launch, input, output)
    }

    /// Bytes that `kind` reads and writes for chunks `from..from + n`.
    pub(crate) fn sizes(&self, kind: RecordsKind, (from, n): (u64, u64)) -> (usize, usize) {
        let (reads, writes) = kind.sizes(n, self.layout.last_of(from, n));
        (reads as usize, writes as usize)
    }

    /// A device buffer for the verdicts of every chunk of the span (16 bytes each).
    pub(crate) fn verdicts(&self) -> Result<DeviceBuffer, GpuError> {
        DeviceBuffer::new(self.stream, (self.layout.chunks * 16) as usize)
    }

    /// The lowest chunk index whose verdict in `verdicts` is not 0, or `None`: the verdicts
    /// come to the host (in pieces, after everything enqueued so far) and every one is read.
    pub(crate) fn first_failure(&self, verdicts: &DeviceBuffer) -> Result<Option<u64>, GpuError> {
        const PIECE: usize = 1 << 20;
        let total = (self.layout.chunks * 16) as usize;
        let mut pinned = PinnedBuffer::new(self.stream.context(), PIECE.min(total))?;
        let mut found = None;
        for at in (0..total).step_by(PIECE) {
            let len = PIECE.min(total - at);
            self.stream.copy_to_host(&mut pinned, (verdicts, at), len)?;
            let first = self.first_index + (at / 16) as u64;
            let here = first_failure(&pinned.bytes_mut()?[..len], first);
            found = found.or(here);
        }
        Ok(found)
    }

    /// Verifies every chunk of records in `input` from byte `at`: the lowest failing index.
    fn verify_all(&self, input: &DeviceBuffer, at: usize) -> Result<Option<u64>, GpuError> {
        let mut verdicts = self.verdicts()?;
        let all = (0, self.layout.chunks);
        self.launch(RecordsKind::Verify, all, (input, at), (&mut verdicts, 0))?;
        self.first_failure(&verdicts)
    }
}

/// Refuses an output that does not hold `needs` bytes.
fn check_room(what: &str, memory: &DeviceMemory, needs: u64) -> Result<(), DeviceMemoryError> {
    if memory.len() as u64 >= needs {
        return Ok(());
    }
    Err(DeviceMemoryError::Layout(format!(
        "{what} holds {} bytes and needs {needs}: allocate a larger one",
        memory.len()
    )))
}

/// Refuses out-of-place operands whose bytes overlap (the kernels would race).
fn check_apart(input: &DeviceMemory, output: &DeviceMemory) -> Result<(), DeviceMemoryError> {
    let (a, b) = (input.span(), output.span());
    if a.is_empty() || b.is_empty() || a.end <= b.start || b.end <= a.start {
        return Ok(());
    }
    Err(DeviceMemoryError::Layout(
        "the input and output device buffers overlap: use the in-place call for one buffer".into(),
    ))
}

impl GpuEngine {
    /// Seals all of `input` (plaintext) as the chunk records of `span` into `output` from its
    /// first byte (which must hold [`ChunkSpan::sealed_len`] bytes); returns the record bytes
    /// written. Enqueued on `stream`: the records may be read by later work there, or after
    /// [`GpuStream::synchronize`].
    pub fn seal_device(
        &self,
        span: &ChunkSpan<'_>,
        input: &DeviceMemory,
        output: &mut DeviceMemory,
        stream: &GpuStream,
    ) -> Result<usize, DeviceMemoryError> {
        self.out_of_place(RecordsKind::Seal, span, input, output, stream)
    }

    /// Opens all of `input` (the chunk records of `span`) into `output` from its first byte
    /// (which must hold [`ChunkSpan::opened_len`] bytes); returns the plaintext bytes written.
    /// Every tag is verified on the device first, and the call waits for the verdicts: if any
    /// fails, [`DeviceMemoryError::Tampered`] names the lowest such chunk and `output` is left
    /// as it was. Otherwise the decryption is enqueued on `stream`: the plaintext may be read
    /// by later work there, or after [`GpuStream::synchronize`].
    pub fn open_device(
        &self,
        span: &ChunkSpan<'_>,
        input: &DeviceMemory,
        output: &mut DeviceMemory,
        stream: &GpuStream,
    ) -> Result<usize, DeviceMemoryError> {
        self.out_of_place(RecordsKind::Open, span, input, output, stream)
    }

    /// Seals the first `plaintext_len` bytes of `buffer` in place as the chunk records of
    /// `span`; the buffer must hold the [`ChunkSpan::sealed_len`] bytes they grow into. Returns
    /// the record bytes, which start at the buffer's first byte. Uses one piece of scratch
    /// device memory (the engine's piece size). Enqueued on `stream`, as
    /// [`GpuEngine::seal_device`].
    pub fn seal_device_in_place(
        &self,
        span: &ChunkSpan<'_>,
        buffer: &mut DeviceMemory,
        plaintext_len: usize,
        stream: &GpuStream,
    ) -> Result<usize, DeviceMemoryError> {
        self.in_place(RecordsKind::Seal, span, buffer, plaintext_len, stream)
    }

    /// Opens the first `records_len` bytes of `buffer` (the chunk records of `span`) in place;
    /// returns the plaintext bytes, which start at the buffer's first byte (the rest of the
    /// records' bytes are zeroed). Every tag is verified first and the call waits for the
    /// verdicts: if any fails, [`DeviceMemoryError::Tampered`] names the lowest such chunk and
    /// the buffer is left as it was; otherwise the decryption is enqueued on `stream`, as
    /// [`GpuEngine::open_device`]. Uses one piece of scratch device memory.
    pub fn open_device_in_place(
        &self,
        span: &ChunkSpan<'_>,
        buffer: &mut DeviceMemory,
        records_len: usize,
        stream: &GpuStream,
    ) -> Result<usize, DeviceMemoryError> {
        self.in_place(RecordsKind::Open, span, buffer, records_len, stream)
    }

    /// Seals or opens (`kind`) all of `input` into `output`; returns the bytes written.
    fn out_of_place(
        &self,
        kind: RecordsKind,
        span: &ChunkSpan<'_>,
        input: &DeviceMemory,
        output: &mut DeviceMemory,
        stream: &GpuStream,
    ) -> Result<usize, DeviceMemoryError> {
        let layout = span.layout(kind, input.len() as u64)?;
        let writes = layout.output_len(kind);
        check_room("the output device buffer", output, writes)?;
        check_apart(input, output)?;
        let run = RecordsRun::new(self, &stream.stream, span, layout);
        if kind == RecordsKind::Open {
            if let Some(chunk) = run.verify_all(input.buffer(), 0)? {
                return Err(DeviceMemoryError::Tampered {
                    chunk,
                    buffer: "the output device buffer was left as it was",
                });
            }
        }
        let all = (0, layout.chunks);
        let input = (input.buffer(), 0);
        run.launch(kind, all, input, (output.buffer_mut(), 0))?;
        Ok(writes as usize)
    }

    /// Seals or opens (`kind`) the first `len` bytes of `buffer` in place, piece by piece
    /// through a scratch buffer (module docs: sealing from the last piece, opening from the
    /// first, after verifying all); returns the bytes it leaves at the buffer's start.
    fn in_place(
        &self,
        kind: RecordsKind,
        span: &ChunkSpan<'_>,
        buffer: &mut DeviceMemory,
        len: usize,
        stream: &GpuStream,
    ) -> Result<usize, DeviceMemoryError> {
        let layout = span.layout(kind, len as u64)?;
        check_room("the device buffer", buffer, layout.records_len())?;
        let run = RecordsRun::new(self, &stream.stream, span, layout);
        if layout.chunks == 0 {
            return Ok(0);
        }
        let buffer = buffer.buffer_mut();
        if kind == RecordsKind::Open {
            if let Some(chunk) = run.verify_all(buffer, 0)? {
                return Err(DeviceMemoryError::Tampered {
                    chunk,
                    buffer: "the device buffer was left as it was",
                });
            }
        }
        let (per, mut pieces) = run.pieces();
        let scratch_len = run.sizes(kind, (0, per.min(layout.chunks))).1;
        let mut scratch = DeviceBuffer::new(&stream.stream, scratch_len)?;
        let (from_unit, to_unit) = match kind {
            RecordsKind::Seal => (CHUNK_LEN, RECORD_LEN),
            _ => (RECORD_LEN, CHUNK_LEN),
        };
        let mut step = |(from, n): (u64, u64)| -> Result<(), GpuError> {
            let at = from as usize;
            let input = (&*buffer, at * from_unit);
            run.launch(kind, (from, n), input, (&mut scratch, 0))?;
            let writes = run.sizes(kind, (from, n)).1;
            stream
                .stream
                .copy_on_device((&mut *buffer, at * to_unit), (&scratch, 0), writes)
        };
        match kind {
            RecordsKind::Seal => pieces.rev().try_for_each(&mut step)?,
            _ => pieces.try_for_each(&mut step)?,
        }
        if kind == RecordsKind::Open {
            let range = layout.plaintext_len() as usize..layout.records_len() as usize;
            stream.stream.zero(buffer, range)?;
        }
        Ok(layout.output_len(kind) as usize)
    }
}
