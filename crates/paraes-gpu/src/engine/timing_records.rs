//! Kernel-only timing of the Cobblestone records kernels (`aesN_gcm_seal`, `_gcm_verify`,
//! `_gcm_open` of kernels/aes.cu) over whole chunks in device memory, with CUDA events, for
//! `gpu_bench` and the device runs (issue 38's kernel rows); each timing checks, after its
//! launches, that what they left is right (the first record against the CPU's Cobblestone,
//! every tag verified on the device, the opened bytes equal to the plaintext).

use paraes_core::cobblestone::{ChunkCipher, CHUNK_LEN, RECORD_LEN};

use crate::device_memory::records::{ChunkSpan, Layout, RecordsRun};
use crate::driver::{DeviceBuffer, Event, PinnedBuffer, RecordsKind, Stream};
use crate::error::GpuError;

use super::{GpuEngine, KernelTiming};

/// What a records timing launches between its two events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordsStep {
    /// Sealing: CTR and every chunk's GHASH and tag (`_gcm_seal`), plaintext to records.
    Seal,
    /// Opening as the engine opens: every tag checked (`_gcm_verify`), then CTR (`_gcm_open`).
    Open,
    /// `_gcm_verify` alone: GHASH over the records and one AES block per chunk (E(J0)), a
    /// verdict per chunk: the GHASH side of the work.
    VerifyOnly,
    /// `_gcm_open` alone: CTR over the records' data, no GHASH: the AES side of the work.
    CtrOnly,
}

impl RecordsStep {
    /// All four, in the order the benchmark prints them.
    pub const ALL: [RecordsStep; 4] = [
        RecordsStep::Seal,
        RecordsStep::Open,
        RecordsStep::VerifyOnly,
        RecordsStep::CtrOnly,
    ];

    /// The kernels launched, in order.
    fn kinds(self) -> &'static [RecordsKind] {
        match self {
            RecordsStep::Seal => &[RecordsKind::Seal],
            RecordsStep::Open => &[RecordsKind::Verify, RecordsKind::Open],
            RecordsStep::VerifyOnly => &[RecordsKind::Verify],
            RecordsStep::CtrOnly => &[RecordsKind::Open],
        }
    }
}

impl GpuEngine {
    /// Kernel-only timing of `step` for `cipher` (Cobblestone-128 or -256) over `bytes` of
    /// plaintext in whole 16 KiB chunks (at least one), from chunk 0, in device memory (the
    /// plaintext, its records, the verdicts and a second plaintext buffer apart): `reps`
    /// launches after two warm-ups, each timed with CUDA events. The data is pseudo-random.
    /// After the launches the results are checked (module docs); a wrong one is an error.
    pub fn time_records(
        &self,
        cipher: &ChunkCipher,
        step: RecordsStep,
        bytes: usize,
        reps: usize,
    ) -> Result<KernelTiming, GpuError> {
        self.timed(|| {
            let chunks = (bytes / CHUNK_LEN).max(1) as u64;
            let layout = Layout {
                chunks,
                last_len: CHUNK_LEN as u64,
            };
            let span = ChunkSpan {
                cipher,
                first_index: 0,
                last: false,
            };
            let stream = Stream::new(self.device.context())?;
            let run = RecordsRun::new(self, &stream, &span, layout);
            let plain_len = layout.plaintext_len() as usize;
            let plain = self.device_random(&stream, plain_len)?;
            let mut records = DeviceBuffer::new(&stream, layout.records_len() as usize)?;
            let mut verdicts = run.verdicts()?;
            let mut opened = DeviceBuffer::new(&stream, plain_len)?;
            let all = (0, chunks);
            let mut launch = |kind: RecordsKind| match kind {
                RecordsKind::Seal => run.launch(kind, all, (&plain, 0), (&mut records, 0)),
                RecordsKind::Verify => run.launch(kind, all, (&records, 0), (&mut verdicts, 0)),
                RecordsKind::Open => run.launch(kind, all, (&records, 0), (&mut opened, 0)),
            };
            // Records to verify and open, whatever the step.
            launch(RecordsKind::Seal)?;
            let (start, end) = (Event::new(stream.context())?, Event::new(stream.context())?);
            let mut seconds = Vec::with_capacity(reps);
            for rep in 0..reps + 2 {
                stream.record(&start)?;
                for &kind in step.kinds() {
                    launch(kind)?;
                }
                stream.record(&end)?;
                let t = start.seconds_until(&end)?;
                if rep >= 2 {
                    seconds.push(t);
                }
            }
            launch(RecordsKind::Verify)?;
            launch(RecordsKind::Open)?;
            if let Some(chunk) = run.first_failure(&verdicts)? {
                return Err(wrong(format!("chunk {chunk}'s tag did not verify")));
            }
            check_first_record(&stream, cipher, &plain, &records)?;
            check_equal(&stream, &plain, &opened)?;
            let first = self
                .device()
                .records_kernel(run.rounds(), step.kinds()[0])?;
            let (grid, threads) = self.records_shape(&first, chunks);
            let names: Vec<String> = step
                .kinds()
                .iter()
                .map(|&kind| {
                    self.device()
                        .records_kernel(run.rounds(), kind)
                        .map(|k| k.name().to_string())
                })
                .collect::<Result<_, _>>()?;
            Ok(KernelTiming {
                kernel: names.join("+"),
                registers: first.registers()?,
                resident_per_sm: first.resident_per_sm(threads)?,
                grid,
                threads,
                seconds,
            })
        })
    }
}

/// A check after the timed launches that failed.
fn wrong(why: String) -> GpuError {
    GpuError::Internal(format!("the records kernels gave a wrong result: {why}"))
}

/// `len` bytes of `buffer` from `at`, copied to the host.
fn to_host(
    stream: &Stream,
    buffer: &DeviceBuffer,
    at: usize,
    len: usize,
) -> Result<Vec<u8>, GpuError> {
    let mut pinned = PinnedBuffer::new(stream.context(), len)?;
    stream.copy_to_host(&mut pinned, (buffer, at), len)?;
    Ok(pinned.bytes_mut()?[..len].to_vec())
}

/// The first record on the device equals the CPU's Cobblestone seal of the first chunk.
fn check_first_record(
    stream: &Stream,
    cipher: &ChunkCipher,
    plain: &DeviceBuffer,
    records: &DeviceBuffer,
) -> Result<(), GpuError> {
    let mut data = to_host(stream, plain, 0, CHUNK_LEN)?;
    let tag = cipher.seal(0, &mut data);
    data.extend_from_slice(&tag);
    if to_host(stream, records, 0, RECORD_LEN)? != data {
        return Err(wrong("record 0 differs from the CPU's".into()));
    }
    Ok(())
}

/// `a` and `b` (device buffers of one length) hold the same bytes, compared 64 MiB at a time.
fn check_equal(stream: &Stream, a: &DeviceBuffer, b: &DeviceBuffer) -> Result<(), GpuError> {
    const PIECE: usize = 64 << 20;
    for at in (0..a.len()).step_by(PIECE) {
        let len = PIECE.min(a.len() - at);
        if to_host(stream, a, at, len)? != to_host(stream, b, at, len)? {
            return Err(wrong(format!(
                "the opened bytes from {at} differ from the plaintext"
            )));
        }
    }
    Ok(())
}
