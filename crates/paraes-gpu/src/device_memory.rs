//! Device memory as an API: [`DeviceMemory`] (the engine's own allocation, or a caller's
//! memory borrowed by address), [`GpuStream`] (the engine's default stream, a new one, or a
//! caller's), Cobblestone-128/-256 chunk records sealed and opened in device memory
//! ([`ChunkSpan`], [`GpuEngine::seal_device`] and the rest, in [`records`]) and v3 container
//! files decrypted straight into device memory or written from it ([`load_container`],
//! [`save_container`], in [`files`]).
//!
//! The stream rules (docs/GPU.md, "Device memory as an API"): every call enqueues its work on
//! the stream it is given, after everything already there; a call returns once its work is
//! enqueued, except where it must see a result on the host first (opening waits for the tags'
//! verdicts; the file calls wait for each piece), and its output may be read by later work on
//! the same stream, or by anyone after [`GpuStream::synchronize`]. Memory of the engine's own
//! is also ordered against its uses on every other stream of the engine (cudarc's events); a
//! caller's memory and stream are ordered with the caller's own work by the caller.

use crate::driver::{DeviceBuffer, Event, PinnedBuffer, Stream};
use crate::engine::GpuEngine;
use crate::error::GpuError;

pub mod files;
pub mod records;

pub use files::{
    load_container, load_container_into, save_container, upload_body_only, Loaded, Saved,
};
pub use records::ChunkSpan;

/// Why a device-memory call failed: each a one-line message that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum DeviceMemoryError {
    /// The GPU or its driver failed (or is not there).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The buffers or lengths do not fit the call: says which and what would.
    #[error("{0}")]
    Layout(String),
    /// A chunk's tag does not verify: nothing of the message was decrypted.
    #[error(
        "chunk {chunk} was changed (its tag does not verify), so nothing was decrypted and {buffer}: \
         the data is damaged or was tampered with; get an intact copy"
    )]
    Tampered {
        /// The lowest GCM chunk index whose tag does not verify.
        chunk: u64,
        /// What became of the output: left as it was, or zeroed.
        buffer: &'static str,
    },
    /// The container could not be opened or sealed (wrong key, damaged header, ...).
    #[error("{name}: {source}")]
    Container {
        /// The file.
        name: String,
        /// Why.
        #[source]
        source: paraes_core::container::ContainerError,
    },
    /// The container file could not be read, or the output made or written.
    #[error(transparent)]
    File(#[from] paraes_files::FileError),
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the file's name.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A CUDA stream that device-memory work is ordered on: the engine's default stream
/// ([`GpuEngine::default_stream`]), a new one ([`GpuEngine::new_stream`]), or a caller's
/// ([`GpuEngine::borrow_stream`]). Cheap to clone (clones name the same stream).
#[derive(Clone)]
pub struct GpuStream {
    pub(crate) stream: Stream,
}

impl GpuStream {
    /// Waits until everything enqueued on the stream so far is done: after it, the outputs
    /// of the calls that enqueued there may be read by anyone.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize()
    }

    /// The raw `CUstream` handle as an integer (0: the legacy default stream), as
    /// `__cuda_array_interface__`'s `stream` and DLPack's `__dlpack__(stream=...)` take it.
    pub fn handle(&self) -> usize {
        self.stream.handle() as usize
    }

    /// Marks the point the stream has reached (everything enqueued there so far), to be
    /// waited for later even after the stream itself is gone.
    pub fn record_event(&self) -> Result<GpuEvent, GpuError> {
        let event = Event::new(self.stream.context())?;
        self.stream.record(&event)?;
        Ok(GpuEvent { event })
    }
}

/// A point in a stream's work ([`GpuStream::record_event`]); it does not keep the stream.
pub struct GpuEvent {
    event: Event,
}

impl GpuEvent {
    /// Waits until the work before the point is done.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.event.synchronize()
    }
}

impl GpuEngine {
    /// The engine's own stream (non-blocking with respect to the legacy default stream, made
    /// with the engine): what device-memory calls use when the caller has no stream of its own.
    pub fn default_stream(&self) -> GpuStream {
        GpuStream {
            stream: self.own_stream().clone(),
        }
    }

    /// A new stream of the engine's device (non-blocking with respect to the legacy default
    /// stream), destroyed when its last clone and the last buffer made on it are dropped.
    pub fn new_stream(&self) -> Result<GpuStream, GpuError> {
        Ok(GpuStream {
            stream: Stream::new(self.device().context())?,
        })
    }

    /// A caller's stream, by its raw `CUstream` handle (0: the legacy default stream; 2: the
    /// per-thread default stream), as PyTorch's `torch.cuda.Stream.cuda_stream` or CuPy's
    /// `Stream.ptr` give it. It is never destroyed here.
    ///
    /// # Safety
    /// `handle` must be 0, 2, or a live stream of the primary context of the engine's device
    /// (the context the CUDA runtime, PyTorch and CuPy use), and its owner must keep it alive
    /// while the returned value, its clones, or memory made or borrowed on it live.
    pub unsafe fn borrow_stream(&self, handle: usize) -> GpuStream {
        let raw = std::ptr::without_provenance_mut(handle);
        // SAFETY: the caller's contract is Stream::borrowed's.
        let stream = unsafe { Stream::borrowed(self.device().context(), raw) };
        GpuStream { stream }
    }
}

/// Bytes in device memory: an allocation of the engine's ([`DeviceMemory::zeroed`]), zeroed
/// when made and zeroed again before it is freed (it may hold plaintext), or a caller's memory
/// ([`DeviceMemory::from_raw`]), which is never zeroed or freed here. Either way its length is
/// exactly what was asked for, and every use is checked against it.
pub struct DeviceMemory {
    buffer: DeviceBuffer,
    len: usize,
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMemory")
            .field("len", &self.len)
            .field("borrowed", &self.buffer.is_borrowed())
            .finish()
    }
}

impl DeviceMemory {
    /// `len` zeroed bytes on `stream`'s device, allocated in `stream`'s order.
    pub fn zeroed(stream: &GpuStream, len: usize) -> Result<DeviceMemory, GpuError> {
        Ok(DeviceMemory {
            buffer: DeviceBuffer::new(&stream.stream, len)?,
            len,
        })
    }

    /// A caller's `len` bytes of device memory at `address` (`__cuda_array_interface__`'s
    /// `data[0]`, DLPack's `data + byte_offset`), used in `stream`'s order. Refused unless the
    /// address is a multiple of 16 (the kernels load 16 bytes at a time; every CUDA allocation
    /// is 256-byte aligned, so only a view that starts inside one can be misaligned), a null
    /// address holds nothing, and the range does not run past 2^64.
    ///
    /// # Safety
    /// `address..address + len` must be device memory of the primary context of `stream`'s
    /// device that stays allocated while the returned value lives, and that nothing else
    /// reads or writes while work enqueued through it may run unless that use is ordered with
    /// `stream` by the caller (the same stream, or an event). Two values made from overlapping
    /// memory must not be passed to one call (the out-of-place calls refuse overlaps they see).
    pub unsafe fn from_raw(
        stream: &GpuStream,
        address: u64,
        len: usize,
    ) -> Result<DeviceMemory, DeviceMemoryError> {
        if address == 0 && len > 0 {
            return Err(DeviceMemoryError::Layout(format!(
                "a device buffer of {len} bytes at address 0: pass the array's data pointer"
            )));
        }
        if address.checked_add(len as u64).is_none() {
            return Err(DeviceMemoryError::Layout(format!(
                "a device buffer of {len} bytes at {address:#x} runs past the end of the address \
                 space: pass the array's real data pointer and length"
            )));
        }
        if !address.is_multiple_of(16) {
            return Err(DeviceMemoryError::Layout(format!(
                "the device buffer at {address:#x} does not start on a 16-byte boundary: pass an \
                 array that starts at the beginning of its allocation, or copy it into one"
            )));
        }
        // SAFETY: the caller's contract is DeviceBuffer::borrowed's.
        let buffer = unsafe { DeviceBuffer::borrowed(&stream.stream, address, len)? };
        Ok(DeviceMemory { buffer, len })
    }

    /// Bytes it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of its first byte (for `__cuda_array_interface__` and DLPack).
    pub fn address(&self) -> u64 {
        self.buffer.device_address()
    }

    /// Whether it is a caller's memory ([`DeviceMemory::from_raw`]).
    pub fn is_borrowed(&self) -> bool {
        self.buffer.is_borrowed()
    }

    /// Enqueues zeroing all its bytes on `stream`.
    pub fn zero(&mut self, stream: &GpuStream) -> Result<(), GpuError> {
        stream.stream.zero(&mut self.buffer, 0..self.len)
    }

    /// Copies `bytes` from the host into it from byte `at`, through pinned memory, in
    /// `stream`'s order; returns when the copy is done.
    pub fn write_from_host(
        &mut self,
        stream: &GpuStream,
        at: usize,
        bytes: &[u8],
    ) -> Result<(), DeviceMemoryError> {
        self.check_range("writing", at, bytes.len())?;
        let mut pinned = PinnedBuffer::new(stream.stream.context(), HOST_PIECE.min(bytes.len()))?;
        for (k, piece) in bytes.chunks(HOST_PIECE).enumerate() {
            pinned.bytes_mut()?[..piece.len()].copy_from_slice(piece);
            let to = at + k * HOST_PIECE;
            stream
                .stream
                .copy_to_device(&mut self.buffer, to, &mut pinned, piece.len())?;
        }
        stream.synchronize()?;
        Ok(())
    }

    /// Copies its bytes from `at` into `out` on the host, through pinned memory, in
    /// `stream`'s order (after everything enqueued there); returns when `out` is filled. The
    /// one call that brings device bytes to the host: never made by the calls of this module.
    pub fn read_to_host(
        &self,
        stream: &GpuStream,
        at: usize,
        out: &mut [u8],
    ) -> Result<(), DeviceMemoryError> {
        self.check_range("reading", at, out.len())?;
        let mut pinned = PinnedBuffer::new(stream.stream.context(), HOST_PIECE.min(out.len()))?;
        for (k, piece) in out.chunks_mut(HOST_PIECE).enumerate() {
            let from = at + k * HOST_PIECE;
            stream
                .stream
                .copy_to_host(&mut pinned, (&self.buffer, from), piece.len())?;
            piece.copy_from_slice(&pinned.bytes_mut()?[..piece.len()]);
        }
        Ok(())
    }

    /// Refuses `len` bytes from `at` unless they lie inside.
    fn check_range(&self, what: &str, at: usize, len: usize) -> Result<(), DeviceMemoryError> {
        if at.checked_add(len).is_some_and(|end| end <= self.len) {
            return Ok(());
        }
        Err(DeviceMemoryError::Layout(format!(
            "{what} {len} bytes from byte {at} of a device buffer of {} bytes: they do not fit",
            self.len
        )))
    }

    /// The engine's buffer behind it (its length may exceed [`DeviceMemory::len`]).
    pub(crate) fn buffer(&self) -> &DeviceBuffer {
        &self.buffer
    }

    /// As [`DeviceMemory::buffer`], to be written.
    pub(crate) fn buffer_mut(&mut self) -> &mut DeviceBuffer {
        &mut self.buffer
    }

    /// Its bytes' address range, to refuse two overlapping operands.
    pub(crate) fn span(&self) -> std::ops::Range<u64> {
        let start = self.address();
        start..start + self.len as u64
    }
}

/// Bytes per copy of [`DeviceMemory::write_from_host`] and [`DeviceMemory::read_to_host`].
const HOST_PIECE: usize = 8 << 20;
