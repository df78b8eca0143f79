//! Piece scheduling: whole blocks cut into pieces that rotate over the CUDA streams, each with
//! its own pinned host buffer and device buffer, so that the copy-in of one piece, the kernel
//! of another and the copy-out of a third overlap.

use std::ops::Range;

use crate::driver::{DeviceBuffer, Launch, Operands, PinnedBuffer, Stream};
use crate::error::GpuError;
use crate::kernels::KernelKind;
use crate::plan::{self, GcmLayout, RoundKeyWords};
use crate::variant::SyncMode;
use crate::xor::{par_copy, par_xor_into};

use super::GpuEngine;

/// One run of whole blocks through one kernel: everything [`GpuEngine::pipeline`] needs
/// besides the bytes.
#[derive(Clone, Copy)]
pub(super) struct PieceJob<'a> {
    /// The kernel.
    pub(super) kind: KernelKind,
    /// The round keys in the kernels' layout.
    pub(super) keys: &'a RoundKeyWords,
    /// 10, 12 or 14.
    pub(super) rounds: usize,
    /// The counter block of the stream's block 0 (CTR with Stream counters; ignored by ECB
    /// and with `gcm`).
    pub(super) counter: &'a [u8; 16],
    /// GCM chunk counters (CTR only): the CTR kinds run as their `_gcm` kernels.
    pub(super) gcm: Option<GcmLayout>,
    /// The stream block of the body's first byte.
    pub(super) first_block: u64,
}

impl PieceJob<'_> {
    /// The same job through another kernel.
    pub(super) fn with_kind(self, kind: KernelKind) -> Self {
        PieceJob { kind, ..self }
    }

    /// The same job for the bytes after the first `bytes` (whole blocks).
    pub(super) fn after(self, bytes: usize) -> Self {
        PieceJob {
            first_block: self.first_block + (bytes / 16) as u64,
            ..self
        }
    }
}

/// One stream's share of the pipeline: the stream, and the pinned host buffer and device
/// buffer its pieces go through (both made on first use and kept).
pub(super) struct Slot {
    pub(super) stream: Stream,
    host: PinnedBuffer,
    dev: DeviceBuffer,
    /// The piece in flight: its place in the body and whether it comes back as keystream.
    pub(super) pending: Option<(Range<usize>, bool)>,
}

impl Slot {
    /// Waits for the piece in flight, if any, and puts its bytes into `body`. With
    /// [`SyncMode::Spin`] the wait is for the stream (`cuStreamSynchronize`, which spins);
    /// with [`SyncMode::Blocking`] it is for the pinned buffer's own event, which cudarc
    /// makes with `CU_EVENT_BLOCKING_SYNC` and records after the piece's last copy (the
    /// waiting thread sleeps). Either way the host reads the buffer only through
    /// [`PinnedBuffer::bytes_mut`], which waits for that event first.
    fn finish(
        &mut self,
        pool: &rayon::ThreadPool,
        body: &mut [u8],
        sync: SyncMode,
    ) -> Result<(), GpuError> {
        if let Some((range, keystream)) = self.pending.take() {
            if sync == SyncMode::Spin {
                self.stream.synchronize()?;
            }
            let len = range.len();
            let host = &self.host.bytes_mut()?[..len];
            if keystream {
                par_xor_into(pool, &mut body[range], host);
            } else {
                par_copy(pool, &mut body[range], host);
            }
        }
        Ok(())
    }
}

impl GpuEngine {
    /// Streams `body` (whole blocks; stream block `job.first_block` first) through `job.kind`.
    pub(super) fn pipeline(
        &self,
        slots: &mut Vec<Slot>,
        job: &PieceJob<'_>,
        body: &mut [u8],
    ) -> Result<(), GpuError> {
        let PieceJob {
            kind,
            keys,
            rounds,
            counter: iv,
            gcm,
            first_block,
        } = *job;
        let kind = match gcm {
            Some(_) => kind.with_gcm_counters(),
            None => kind,
        };
        if body.is_empty() {
            return Ok(());
        }
        let o = &self.options;
        let mut piece = plan::piece_len(body.len(), o.streams, o.min_piece, o.max_piece);
        if gcm.is_some() {
            piece = piece.min(plan::GCM_MAX_PIECE);
        }
        let capacity = (o.max_piece / 16 * 16).max(16);
        while slots.len() < o.streams {
            let stream = Stream::new(self.device.context())?;
            let host = PinnedBuffer::new(self.device.context(), capacity)?;
            let dev = DeviceBuffer::new(&stream, capacity)?;
            slots.push(Slot {
                stream,
                host,
                dev,
                pending: None,
            });
        }
        let kernel = self.kernel(rounds, kind);
        let full_grid = self.full_grid[(rounds - 10) / 2][kind.index()];
        let n = slots.len();
        let mut next = 0;
        for (i, start) in (0..body.len()).step_by(piece).enumerate() {
            let slot = &mut slots[i % n];
            slot.finish(&self.pool, body, o.sync)?;
            let range = start..(start + piece).min(body.len());
            let len = range.len();
            let nblocks = (len / 16) as u64;
            let block = first_block + (start / 16) as u64;
            let counter = match &gcm {
                Some(layout) => layout.place(block),
                None => plan::counter_halves(iv, block),
            };
            let grid = plan::grid_size(
                nblocks,
                o.threads_per_block,
                crate::BLOCKS_PER_THREAD,
                full_grid,
                1,
            );
            let keystream = kind.is_keystream();
            let operands = if keystream {
                Operands::Keystream(&mut slot.dev)
            } else {
                let host = &mut slot.host.bytes_mut()?[..len];
                par_copy(&self.pool, host, &body[range.clone()]);
                slot.stream
                    .copy_to_device(&mut slot.dev, 0, &mut slot.host, len)?;
                Operands::InPlace(&mut slot.dev)
            };
            let launch = Launch {
                grid,
                threads: o.threads_per_block,
                nblocks,
                counter,
                keys,
                gcm: gcm.as_ref(),
            };
            kernel.launch(&slot.stream, &launch, operands)?;
            slot.stream
                .copy_to_host(&mut slot.host, (&slot.dev, 0), len)?;
            slot.pending = Some((range, keystream));
            next = (i + 1) % n;
        }
        for k in 0..n {
            slots[(next + k) % n].finish(&self.pool, body, o.sync)?;
        }
        Ok(())
    }
}
