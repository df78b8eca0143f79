//! The engine's records job ([`paraes_core::Engine::process_records`]): whole GCM chunk
//! records of Cobblestone-128 and -256 sealed and opened on the device by the records kernels
//! (CTR, GHASH and tags all there; docs/GPU.md, "GCM records on the device"). The host only
//! copies bytes: plaintext up and records down to seal, the reverse to open.
//!
//! Pieces of whole chunks go through one stream, one after another. To open, every piece is
//! verified first (the verdicts come back and are accumulated without an early exit); only if
//! every tag holds does a second pass upload the records again and open them, so on a failure
//! nothing has been written to the caller's output.

use paraes_core::engine::{GCM_CHUNK_LEN, GCM_RECORD_LEN};
use paraes_core::{Direction, EngineError, RecordsError, RecordsJob};

use crate::driver::{
    DeviceBuffer, GcmKeys, Kernel, PinnedBuffer, RecordsKind, RecordsLaunch, Stream,
};
use crate::error::GpuError;
use crate::plan::RoundKeyWords;

use super::GpuEngine;

/// The buffers one call's pieces go through (freed, and so cleared, when the call returns).
struct Staging {
    stream: Stream,
    host_in: PinnedBuffer,
    host_out: PinnedBuffer,
    dev_in: DeviceBuffer,
    dev_out: DeviceBuffer,
}

/// The lowest chunk whose verdict is not 0, or `None`: every verdict is read and folded in by
/// masks, with no branch or early exit on a verdict (`verdicts` is one 16-byte block a chunk,
/// its first little-endian word 0 when the tag holds; chunk k is GCM chunk `first_index + k`).
pub(crate) fn first_failure(verdicts: &[u8], first_index: u64) -> Option<u64> {
    let mut first = u64::MAX;
    for (k, block) in verdicts.chunks_exact(16).enumerate() {
        let word = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        let bad = u64::from((word | word.wrapping_neg()) >> 31);
        let unset = u64::from(first == u64::MAX);
        let take = 0u64.wrapping_sub(bad & unset);
        first = (first & !take) | ((first_index + k as u64) & take);
    }
    (first != u64::MAX).then_some(first)
}

impl GpuEngine {
    /// Whether the device has records kernels for this key: AES-128 and AES-256.
    pub(super) fn has_records_kernels(rounds: usize) -> bool {
        rounds == 10 || rounds == 14
    }

    /// [`paraes_core::Engine::process_records`] on the device.
    pub(super) fn records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        let chunks = job.check(input.len(), output.len())?;
        if chunks == 0 {
            return Ok(());
        }
        let rounds = job.key.rounds();
        if !Self::has_records_kernels(rounds) {
            return Err(EngineError::Unsupported(format!(
                "the GPU has GCM records kernels for AES-128 and AES-256 only, not {}-bit keys",
                128 + 32 * (rounds - 10)
            ))
            .into());
        }
        let plain_len = match job.direction {
            Direction::Encrypt => input.len(),
            Direction::Decrypt => output.len(),
        };
        let last_len = (plain_len - (chunks - 1) * GCM_CHUNK_LEN) as u64;
        let per_piece = self.records_per_piece();
        let mut keys = RoundKeyWords::new(job.key.enc_round_keys());
        let gcm_keys = GcmKeys::new(&job.base_nonce, job.hash_key);
        let run = |kind: RecordsKind, staging: &mut Staging, output: &mut [u8]| {
            self.pass(
                kind,
                job,
                (chunks, per_piece, last_len),
                (&keys, &gcm_keys),
                staging,
                input,
                output,
            )
            .map_err(|e| RecordsError::Engine(EngineError::from(e)))
        };
        let result = (|| -> Result<(), RecordsError> {
            let mut staging = self
                .staging(per_piece.min(chunks))
                .map_err(EngineError::from)?;
            match job.direction {
                Direction::Encrypt => run(RecordsKind::Seal, &mut staging, output)?,
                Direction::Decrypt => {
                    let mut verdicts = vec![0u8; chunks * 16];
                    run(RecordsKind::Verify, &mut staging, &mut verdicts)?;
                    if let Some(index) = first_failure(&verdicts, job.first_index) {
                        return Err(RecordsError::Tampered(index));
                    }
                    run(RecordsKind::Open, &mut staging, output)?;
                }
            }
            Ok(())
        })();
        keys.wipe();
        result
    }

    /// Thread blocks and threads per block of a records launch over `chunks` chunks: one warp
    /// a chunk, whole warps, at most 65535 blocks (the kernels stride over the rest).
    pub(crate) fn records_shape(&self, kernel: &Kernel, chunks: u64) -> (u32, u32) {
        let threads = (self.options.threads_per_block.min(kernel.max_threads()) / 32 * 32).max(32);
        let warps = u64::from(threads / 32);
        let grid = u32::try_from(chunks.div_ceil(warps).max(1))
            .unwrap_or(u32::MAX)
            .min(65_535);
        (grid, threads)
    }

    /// Chunk records per piece of the engine's pieces ([`crate::GpuOptions::max_piece`]).
    pub(crate) fn records_per_piece(&self) -> usize {
        (self.options.max_piece / GCM_RECORD_LEN).max(1)
    }

    /// A stream and buffers for pieces of at most `chunks` records.
    fn staging(&self, chunks: usize) -> Result<Staging, GpuError> {
        let len = chunks * GCM_RECORD_LEN;
        let ctx = self.device.context();
        let stream = Stream::new(ctx)?;
        Ok(Staging {
            host_in: PinnedBuffer::new(ctx, len)?,
            host_out: PinnedBuffer::new(ctx, len)?,
            dev_in: DeviceBuffer::new(&stream, len)?,
            dev_out: DeviceBuffer::new(&stream, len)?,
            stream,
        })
    }

    /// One kernel over all `chunks` chunks, `per_piece` at a time; the output of piece `p`
    /// goes to `output` at the kernel's output offset of its first chunk (verdicts: 16 bytes a
    /// chunk).
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        kind: RecordsKind,
        job: &RecordsJob<'_>,
        (chunks, per_piece, last_len): (usize, usize, u64),
        (keys, gcm_keys): (&RoundKeyWords, &GcmKeys),
        staging: &mut Staging,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), GpuError> {
        let kernel: Kernel = self.device.records_kernel(job.key.rounds(), kind)?;
        let (in_unit, out_unit) = kind.sizes(2, 16384);
        let (in_unit, out_unit) = ((in_unit / 2) as usize, (out_unit / 2) as usize);
        for start in (0..chunks).step_by(per_piece) {
            let n = per_piece.min(chunks - start);
            let last = if start + n == chunks {
                last_len
            } else {
                GCM_CHUNK_LEN as u64
            };
            let (reads, writes) = kind.sizes(n as u64, last);
            let (reads, writes) = (reads as usize, writes as usize);
            let src = &input[start * in_unit..start * in_unit + reads];
            staging.host_in.bytes_mut()?[..reads].copy_from_slice(src);
            let Staging {
                stream,
                host_in,
                host_out,
                dev_in,
                dev_out,
            } = staging;
            stream.copy_to_device(dev_in, 0, host_in, reads)?;
            let (grid, threads) = self.records_shape(&kernel, n as u64);
            let launch = RecordsLaunch {
                grid,
                threads,
                chunks: n as u64,
                first_index: job.first_index + start as u64,
                last_len: last,
                keys,
                gcm_keys,
            };
            kernel.launch_records(stream, kind, &launch, (dev_in, 0), (dev_out, 0))?;
            stream.copy_to_host(host_out, (dev_out, 0), writes)?;
            let at = start * out_unit;
            output[at..at + writes].copy_from_slice(&host_out.bytes_mut()?[..writes]);
        }
        Ok(())
    }
}
