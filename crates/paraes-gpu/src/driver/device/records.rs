//! Launching the GCM records kernels (`aes{128,256}_gcm_seal`, `_gcm_verify`, `_gcm_open` of
//! kernels/aes.cu): their own parameters (chunks, first index, last chunk's length, round keys,
//! `struct GcmKeys`) and the operand sizes each kind reads and writes, checked before the driver
//! sees the launch.

use std::ffi::c_void;

use cudarc::driver::{sys, DevicePtr, DevicePtrMut};

use super::{Device, Kernel};
use crate::driver::memory::{DeviceBuffer, Stream};
use crate::error::GpuError;
use crate::plan::RoundKeyWords;

/// Bytes of a GCM chunk's data and of its record (data and tag).
const CHUNK: u64 = 16384;
const RECORD: u64 = CHUNK + 16;

/// What a records kernel does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordsKind {
    /// Plaintext in, records (data and tags) out.
    Seal,
    /// Records in, one 16-byte verdict per chunk out (first word 0: the tag holds).
    Verify,
    /// Records in, plaintext out (CTR only: run only after every verdict was good).
    Open,
}

impl RecordsKind {
    fn suffix(self) -> &'static str {
        match self {
            RecordsKind::Seal => "seal",
            RecordsKind::Verify => "verify",
            RecordsKind::Open => "open",
        }
    }

    /// Bytes the kernel reads and writes for `chunks` chunks whose last holds `last_len`.
    pub(crate) fn sizes(self, chunks: u64, last_len: u64) -> (u64, u64) {
        let plain = (chunks - 1) * CHUNK + last_len;
        let records = (chunks - 1) * RECORD + last_len + 16;
        match self {
            RecordsKind::Seal => (plain, records),
            RecordsKind::Verify => (records, chunks * 16),
            RecordsKind::Open => (records, plain),
        }
    }
}

/// `struct GcmKeys` of kernels/aes.cu: the base nonce and H as little-endian column words.
/// H is key material: wiped on drop.
#[repr(C)]
pub(crate) struct GcmKeys {
    w: [u32; 8],
}

impl GcmKeys {
    /// The words of `base_nonce` and `hash_key`.
    pub(crate) fn new(base_nonce: &[u8; 12], hash_key: &[u8; 16]) -> GcmKeys {
        let mut w = [0u32; 8];
        for (k, bytes) in base_nonce.chunks_exact(4).enumerate() {
            w[k] = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
        for (k, bytes) in hash_key.chunks_exact(4).enumerate() {
            w[4 + k] = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
        GcmKeys { w }
    }

    fn wipe(&mut self) {
        self.w = [0; 8];
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for GcmKeys {
    fn drop(&mut self) {
        self.wipe();
    }
}

/// One launch of a records kernel, besides its operands.
pub(crate) struct RecordsLaunch<'a> {
    /// Thread blocks and threads per block (a multiple of 32: one warp per chunk).
    pub(crate) grid: u32,
    pub(crate) threads: u32,
    /// Chunks (at least 1), the GCM chunk index of the first, the last one's bytes (0..=16384).
    pub(crate) chunks: u64,
    pub(crate) first_index: u64,
    pub(crate) last_len: u64,
    pub(crate) keys: &'a RoundKeyWords,
    pub(crate) gcm_keys: &'a GcmKeys,
}

impl Device {
    /// The records kernel `kind` for AES with `rounds` rounds (10 or 14: Cobblestone-128 and
    /// -256; there is no AES-192 one).
    pub(crate) fn records_kernel(
        &self,
        rounds: usize,
        kind: RecordsKind,
    ) -> Result<Kernel, GpuError> {
        let name = format!("aes{}_gcm_{}", 128 + 32 * (rounds - 10), kind.suffix());
        match self.kernels.get(&name) {
            Some(Ok(kernel)) => Ok(kernel.clone()),
            Some(Err(why)) => Err(GpuError::Internal(format!("kernel {name}: {why}"))),
            None => Err(GpuError::Internal(format!(
                "looking up kernel {name}: not in the module"
            ))),
        }
    }
}

impl Kernel {
    /// Enqueues one records launch on `stream` reading `input` from byte `input_at` and
    /// writing `output` from byte `output_at`, after checking the shape (whole warps, at most
    /// the compiled threads per block, a chunk or more, a last chunk of at most 16384 bytes),
    /// the contexts, that both offsets keep the kernel's 16-byte loads aligned, and that both
    /// operands hold the bytes `kind` reads and writes from there.
    pub(crate) fn launch_records(
        &self,
        stream: &Stream,
        kind: RecordsKind,
        launch: &RecordsLaunch<'_>,
        (input, input_at): (&DeviceBuffer, usize),
        (output, output_at): (&mut DeviceBuffer, usize),
    ) -> Result<(), GpuError> {
        let refuse = |why: String| {
            Err(GpuError::Internal(format!(
                "launching {} refused before the driver saw it: {why}",
                self.name
            )))
        };
        if launch.grid == 0
            || launch.threads == 0
            || !launch.threads.is_multiple_of(32)
            || launch.threads > self.shape.max_threads
        {
            return refuse(format!(
                "{} blocks of {} threads",
                launch.grid, launch.threads
            ));
        }
        if launch.chunks == 0 || launch.last_len > CHUNK {
            return refuse(format!(
                "{} chunks, a last of {} bytes",
                launch.chunks, launch.last_len
            ));
        }
        let (reads, writes) = kind.sizes(launch.chunks, launch.last_len);
        let holds = |len: usize, at: usize, needs: u64| {
            (len as u64)
                .checked_sub(at as u64)
                .is_some_and(|room| room >= needs)
        };
        if !holds(input.len(), input_at, reads) || !holds(output.len(), output_at, writes) {
            return refuse(format!(
                "operands of {} and {} bytes from {input_at} and {output_at}, it needs {reads} \
                 and {writes}",
                input.len(),
                output.len()
            ));
        }

        let ctx = stream.context();
        if self.module.ctx != *ctx || input.context() != ctx || output.context() != ctx {
            return refuse("an operand or its stream belongs to another context".into());
        }
        let raw_stream = stream.cudarc();
        let output_end = output.len();
        let mut output_view = output.slice_mut().slice_mut(output_at..output_end);
        let (mut output_ptr, _output_done) = output_view.device_ptr_mut(raw_stream);
        let input_view = input.slice().slice(input_at..);
        let (mut input_ptr, _input_done) = input_view.device_ptr(raw_stream);
        if !input_ptr.is_multiple_of(16) || !output_ptr.is_multiple_of(16) {
            return refuse("an operand does not start on a 16-byte boundary".into());
        }
        let (mut chunks, mut first, mut last) =
            (launch.chunks, launch.first_index, launch.last_len);
        let mut keys = *launch.keys;
        let mut gcm_keys = GcmKeys {
            w: launch.gcm_keys.w,
        };
        let mut params: [*mut c_void; 7] = [
            (&mut input_ptr as *mut sys::CUdeviceptr).cast(),
            (&mut output_ptr as *mut sys::CUdeviceptr).cast(),
            (&mut chunks as *mut u64).cast(),
            (&mut first as *mut u64).cast(),
            (&mut last as *mut u64).cast(),
            (&mut keys as *mut RoundKeyWords).cast(),
            (&mut gcm_keys as *mut GcmKeys).cast(),
        ];
        let what = "launching a GCM records kernel";
        // SAFETY: the parameters match GCM_RECORDS_KERNEL in kernels/aes.cu (two u64 pointers,
        // three u64, a 240-byte struct of u32, a 32-byte struct of u32) and live until the
        // call returns (cuLaunchKernel copies them). Both pointers are of buffers in this
        // context holding the bytes the kernel reads and writes (checked above), borrowed for
        // this call and kept alive until the launch has run by cudarc's events (recorded when
        // the guards drop); the launch is whole warps, as the kernels' shuffles need.
        let launched =
            unsafe { self.enqueue(stream, (launch.grid, launch.threads), &mut params, what) };
        keys.wipe();
        gcm_keys.wipe();
        launched
    }
}
