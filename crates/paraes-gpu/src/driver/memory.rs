//! Streams, events, device memory and pinned host memory: cudarc's safe types
//! (`CudaStream`, `CudaEvent`, `CudaSlice`, `PinnedHostSlice`) with the engine's checks and
//! errors, and buffers that clear their bytes (plaintext, keystream) before letting go.
//!
//! What the types guarantee, so that no caller has to:
//! - A buffer holds its stream, and the stream its context: no memory outlives its context.
//! - Every copy or launch records an event on the buffers it uses (cudarc's event tracking,
//!   on for every context the engine makes, and checked before each copy); later work on
//!   any stream waits for it, and so does freeing the memory.
//! - Copies take their destination `&mut`, so no two enqueued uses alias a destination while
//!   the borrow checker can see them; pinned memory is read or written by the host only
//!   through [`PinnedBuffer::bytes_mut`], which first waits for the buffer's last copy.
//! - Ranges are checked before the driver sees them (an error, never a device fault).

use std::mem::ManuallyDrop;
use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr,
    HostSlice, PinnedHostSlice, SyncOnDrop,
};

use crate::error::GpuError;

/// A CUDA stream: one the engine made (non-blocking with respect to the legacy default
/// stream), or a caller's, borrowed ([`Stream::borrowed`]).
#[derive(Clone)]
pub(crate) struct Stream {
    raw: Arc<CudaStream>,
}

impl Stream {
    /// A stream in `ctx` (a device's context: `Device::context`).
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Stream, GpuError> {
        let raw = ctx
            .new_stream()
            .map_err(|e| GpuError::driver("creating a CUDA stream", e))?;
        Ok(Stream { raw })
    }

    /// The caller's stream `raw` of `ctx` (null: the legacy default stream), which this value
    /// never destroys.
    ///
    /// # Safety
    /// `raw` must be a stream of `ctx` that its owner keeps alive while this value, or any
    /// buffer made on it, lives.
    pub(crate) unsafe fn borrowed(ctx: &Arc<CudaContext>, raw: sys::CUstream) -> Stream {
        // SAFETY: the caller's contract is wrap_borrowed_stream's.
        let raw = unsafe { ctx.wrap_borrowed_stream(raw) };
        Stream { raw }
    }

    /// The raw stream handle (what a caller's library knows it by).
    pub(crate) fn handle(&self) -> sys::CUstream {
        self.raw.cu_stream()
    }

    /// The cudarc stream (for a launch).
    pub(crate) fn cudarc(&self) -> &Arc<CudaStream> {
        &self.raw
    }

    /// The context the stream belongs to.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        self.raw.context()
    }

    /// Waits for everything enqueued so far.
    pub(crate) fn synchronize(&self) -> Result<(), GpuError> {
        self.raw
            .synchronize()
            .map_err(|e| GpuError::driver("waiting for the GPU", e))
    }

    /// Refuses a copy that cudarc would not track, or whose buffers belong to another
    /// context, or whose ranges do not fit: an error instead of a fault or a panic.
    fn check(
        &self,
        what: &str,
        contexts: [&Arc<CudaContext>; 2],
        fits: bool,
    ) -> Result<(), GpuError> {
        let ctx = self.context();
        let why = if !ctx.is_managing_stream_synchronization() {
            "the context does not track stream synchronisation"
        } else if contexts.iter().any(|c| *c != ctx) {
            "a buffer belongs to another context"
        } else if !fits {
            "the range does not fit its buffers"
        } else {
            return Ok(());
        };
        Err(GpuError::Internal(format!(
            "{what} refused before the driver saw it: {why}"
        )))
    }

    /// Enqueues a copy of the first `len` bytes of pinned `src` to device `dst` at `dst_at`.
    pub(crate) fn copy_to_device(
        &self,
        dst: &mut DeviceBuffer,
        dst_at: usize,
        src: &mut PinnedBuffer,
        len: usize,
    ) -> Result<(), GpuError> {
        let fits = len <= src.len() && dst_at.checked_add(len).is_some_and(|e| e <= dst.len());
        let contexts = [dst.context(), src.slice.context()];
        self.check("copying to the GPU", contexts, fits)?;
        if len == 0 {
            return Ok(());
        }
        let mut dst: CudaViewMut<'_, u8> = dst.slice.slice_mut(dst_at..dst_at + len);
        let src = PinnedPrefix {
            pinned: &mut src.slice,
            len,
        };
        self.raw
            .memcpy_htod(&src, &mut dst)
            .map_err(|e| GpuError::driver("copying to the GPU", e))
    }

    /// Enqueues a copy of `len` bytes of device `src` from `src_at` to the start of pinned
    /// `dst`.
    pub(crate) fn copy_to_host(
        &self,
        dst: &mut PinnedBuffer,
        (src, src_at): (&DeviceBuffer, usize),
        len: usize,
    ) -> Result<(), GpuError> {
        let fits = src_at.checked_add(len).is_some_and(|e| e <= src.len()) && len <= dst.len();
        let contexts = [src.context(), dst.slice.context()];
        self.check("copying from the GPU", contexts, fits)?;
        if len == 0 {
            return Ok(());
        }
        let src: CudaView<'_, u8> = src.slice.slice(src_at..src_at + len);
        let mut dst = PinnedPrefix {
            pinned: &mut dst.slice,
            len,
        };
        self.raw
            .memcpy_dtoh(&src, &mut dst)
            .map_err(|e| GpuError::driver("copying from the GPU", e))
    }

    /// Enqueues a device-to-device copy of `len` bytes from `src` at `src_at` to `dst` at
    /// `dst_at` (two buffers, so the ranges cannot overlap unless two borrowed buffers name
    /// the same memory, which their constructor's contract rules out).
    pub(crate) fn copy_on_device(
        &self,
        (dst, dst_at): (&mut DeviceBuffer, usize),
        (src, src_at): (&DeviceBuffer, usize),
        len: usize,
    ) -> Result<(), GpuError> {
        let fits = |at: usize, buf_len: usize| at.checked_add(len).is_some_and(|e| e <= buf_len);
        let fits = fits(src_at, src.len()) && fits(dst_at, dst.len());
        self.check("copying on the GPU", [dst.context(), src.context()], fits)?;
        if len == 0 {
            return Ok(());
        }
        let src: CudaView<'_, u8> = src.slice.slice(src_at..src_at + len);
        let mut dst: CudaViewMut<'_, u8> = dst.slice.slice_mut(dst_at..dst_at + len);
        self.raw
            .memcpy_dtod(&src, &mut dst)
            .map_err(|e| GpuError::driver("copying on the GPU", e))
    }

    /// Enqueues zeroing `dst`'s bytes in `range`.
    pub(crate) fn zero(
        &self,
        dst: &mut DeviceBuffer,
        range: std::ops::Range<usize>,
    ) -> Result<(), GpuError> {
        let fits = range.start <= range.end && range.end <= dst.len();
        self.check("clearing GPU memory", [dst.context(), self.context()], fits)?;
        if range.is_empty() {
            return Ok(());
        }
        let mut view: CudaViewMut<'_, u8> = dst.slice.slice_mut(range);
        self.raw
            .memset_zeros(&mut view)
            .map_err(|e| GpuError::driver("clearing GPU memory", e))
    }

    /// Makes later work on this stream wait until `event` (recorded on another stream) is done.
    pub(crate) fn wait(&self, event: &Event) -> Result<(), GpuError> {
        self.raw
            .wait(&event.raw)
            .map_err(|e| GpuError::driver("ordering two streams", e))
    }

    /// Records `event` on this stream.
    pub(crate) fn record(&self, event: &Event) -> Result<(), GpuError> {
        event
            .raw
            .record(&self.raw)
            .map_err(|e| GpuError::driver("recording an event", e))
    }
}

/// A CUDA timing event.
pub(crate) struct Event {
    raw: CudaEvent,
}

impl Event {
    /// A timing event in `ctx` (a device's context: `Device::context`).
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Event, GpuError> {
        let raw = ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| GpuError::driver("creating an event", e))?;
        Ok(Event { raw })
    }

    /// Waits until the work before its latest record is done.
    pub(crate) fn synchronize(&self) -> Result<(), GpuError> {
        self.raw
            .synchronize()
            .map_err(|e| GpuError::driver("waiting for an event", e))
    }

    /// Seconds from `self` to `end` (both recorded), once both are complete.
    pub(crate) fn seconds_until(&self, end: &Event) -> Result<f64, GpuError> {
        let ms = self
            .raw
            .elapsed_ms(&end.raw)
            .map_err(|e| GpuError::driver("reading an event timer", e))?;
        Ok(f64::from(ms) / 1e3)
    }
}

/// Device memory: the engine's own, zeroed when made and cleared before it goes back; or a
/// caller's, borrowed ([`DeviceBuffer::borrowed`]), which is neither cleared nor freed here.
pub(crate) struct DeviceBuffer {
    slice: ManuallyDrop<CudaSlice<u8>>,
    borrowed: bool,
}

impl DeviceBuffer {
    /// `len` bytes (at least 16) on `stream`'s device, allocated in `stream`'s order (and
    /// freed in it, after every use on any stream).
    pub(crate) fn new(stream: &Stream, len: usize) -> Result<DeviceBuffer, GpuError> {
        let slice = stream.raw.alloc_zeros::<u8>(len.max(16)).map_err(|e| {
            GpuError::driver(&format!("allocating {} MiB on the GPU", len >> 20), e)
        })?;
        Ok(DeviceBuffer {
            slice: ManuallyDrop::new(slice),
            borrowed: false,
        })
    }

    /// The caller's `len` bytes at `ptr`, used in `stream`'s order (cudarc's events order its
    /// uses by the engine's other streams as for the engine's own buffers); never cleared or
    /// freed by this value.
    ///
    /// # Safety
    /// `ptr..ptr + len` must be device memory of `stream`'s context that stays allocated, and
    /// is used by nothing else that is not ordered with `stream`, while this value lives.
    pub(crate) unsafe fn borrowed(
        stream: &Stream,
        ptr: sys::CUdeviceptr,
        len: usize,
    ) -> Result<DeviceBuffer, GpuError> {
        let slice = crate::driver::guard("borrowing device memory", || {
            // SAFETY: the caller's contract: `len` bytes of this context at `ptr`. They are
            // never read as anything but bytes, so any contents are valid.
            Ok(unsafe { stream.raw.upgrade_device_ptr::<u8>(ptr, len) })
        })?;
        Ok(DeviceBuffer {
            slice: ManuallyDrop::new(slice),
            borrowed: true,
        })
    }

    /// Whether it is a caller's memory ([`DeviceBuffer::borrowed`]).
    pub(crate) fn is_borrowed(&self) -> bool {
        self.borrowed
    }

    /// The device address of its first byte.
    pub(crate) fn device_address(&self) -> sys::CUdeviceptr {
        let stream = self.slice.stream().clone();
        let (ptr, _read) = self.slice.device_ptr(&stream);
        ptr
    }

    /// Bytes it holds.
    pub(crate) fn len(&self) -> usize {
        self.slice.len()
    }

    /// The context it belongs to.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        self.slice.context()
    }

    /// The cudarc slice (for a launch).
    pub(crate) fn slice(&self) -> &CudaSlice<u8> {
        &self.slice
    }

    /// The cudarc slice, to be written (for a launch).
    pub(crate) fn slice_mut(&mut self) -> &mut CudaSlice<u8> {
        &mut self.slice
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: `slice` is taken once, here, and never used again.
        let mut slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        if self.borrowed {
            // The caller's memory: their bytes stay, and so does their allocation. `leak`
            // makes the stream wait for the last use first and frees nothing.
            let _ = slice.leak();
            return;
        }
        // Clear the bytes (plaintext, keystream) before the memory goes back: enqueued on the
        // buffer's stream after every use (cudarc waits for its events), and before the free
        // that dropping the slice then enqueues there.
        let stream = slice.stream().clone();
        let _ = stream.memset_zeros(&mut slice);
    }
}

/// Page-locked host memory (DMA-able, so copies run at full bus speed and asynchronously),
/// zeroed when made and cleared before it goes back.
pub(crate) struct PinnedBuffer {
    slice: PinnedHostSlice<u8>,
}

impl PinnedBuffer {
    /// `len` bytes (at least 16) for `ctx` (a device's context: `Device::context`).
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<PinnedBuffer, GpuError> {
        let len = len.max(16);
        // Plain page-locked memory (flags 0): not write-combined, the host reads it back.
        // SAFETY: alloc_pinned_with_flags is unsafe only because the memory starts
        // uninitialised; it is zeroed below before any view of it exists.
        let mut slice = unsafe { ctx.alloc_pinned_with_flags::<u8>(len, 0) }.map_err(|e| {
            GpuError::driver(
                &format!("allocating {} MiB of pinned host memory", len >> 20),
                e,
            )
        })?;
        let ptr = slice
            .as_mut_ptr()
            .map_err(|e| GpuError::driver("waiting for pinned host memory", e))?;
        // SAFETY: `ptr` points at the `len` bytes just allocated, owned by `slice` and not
        // used by any copy yet; zeroing them makes every later `&[u8]` view initialised.
        unsafe { ptr.write_bytes(0, len) };
        Ok(PinnedBuffer { slice })
    }

    /// Bytes it holds.
    pub(crate) fn len(&self) -> usize {
        self.slice.len()
    }

    /// The bytes, once the buffer's last copy (on any stream) is done: the host never sees
    /// memory that a DMA is still reading or writing.
    pub(crate) fn bytes_mut(&mut self) -> Result<&mut [u8], GpuError> {
        self.slice
            .as_mut_slice()
            .map_err(|e| GpuError::driver("waiting for the GPU", e))
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // Clear the bytes (plaintext, keystream) before the memory goes back, once no copy
        // uses them; the slice's own drop waits again and frees it.
        if let Ok(bytes) = self.slice.as_mut_slice() {
            bytes.fill(0);
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// The first `len` bytes of a pinned buffer, as cudarc's copies take a host slice (they copy
/// a whole `PinnedHostSlice` otherwise). Borrows the buffer mutably, and hands cudarc the
/// buffer's own event, so its waits and records are those of the whole buffer.
struct PinnedPrefix<'b> {
    pinned: &'b mut PinnedHostSlice<u8>,
    len: usize,
}

impl HostSlice<u8> for PinnedPrefix<'_> {
    fn len(&self) -> usize {
        self.len
    }

    unsafe fn stream_synced_slice<'a>(
        &'a self,
        stream: &'a CudaStream,
    ) -> (&'a [u8], SyncOnDrop<'a>) {
        // SAFETY: the caller's contract (use the slice with `stream` only) passes on unchanged.
        let (all, done) = unsafe { self.pinned.stream_synced_slice(stream) };
        (&all[..self.len], done)
    }

    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> (&'a mut [u8], SyncOnDrop<'a>) {
        // SAFETY: as in stream_synced_slice.
        let (all, done) = unsafe { self.pinned.stream_synced_mut_slice(stream) };
        (&mut all[..self.len], done)
    }
}
