//! CTR's choice between the fused kernel (data to the GPU and back) and the keystream kernel
//! (the host XORs): fixed by the options, or, with `Auto`, measured once on the first large CTR
//! buffer and kept for the engine's life in a `OnceLock`.

use std::time::Instant;

use crate::error::GpuError;
use crate::kernels::KernelKind;
use crate::options::CtrVariant;

use super::schedule::{PieceJob, Slot};
use super::GpuEngine;

impl GpuEngine {
    /// CTR's whole blocks through the kernel `variant` picks (`Auto`: the engine's choice,
    /// calibrating on this buffer if none is made yet and the buffer is large enough).
    pub(super) fn ctr(
        &self,
        slots: &mut Vec<Slot>,
        variant: CtrVariant,
        job: PieceJob<'_>,
        body: &mut [u8],
    ) -> Result<(), GpuError> {
        let chosen = match variant {
            CtrVariant::Auto => self.resolved.get().copied(),
            fixed => Some(fixed),
        };
        let calibrate = self.options.calibrate_bytes.max(16) / 16 * 16;
        if let Some(fixed) = chosen {
            return self.pipeline(slots, &job.with_kind(kernel_of(fixed)), body);
        }
        if body.len() < 2 * calibrate {
            return self.pipeline(slots, &job.with_kind(KernelKind::CtrKeystream), body);
        }
        // Auto, first large buffer: time each variant on real work, keep the faster.
        // A warm-up piece first, so that neither timing pays for buffer allocation.
        let warm = self.options.min_piece.max(16) / 16 * 16;
        let (warm_part, rest) = body.split_at_mut(warm.min(body.len() - 2 * calibrate));
        let mut job = job.with_kind(KernelKind::CtrKeystream);
        self.pipeline(slots, &job, warm_part)?;
        job = job.after(warm_part.len());
        let (a, rest) = rest.split_at_mut(calibrate);
        let (b, rest) = rest.split_at_mut(calibrate);
        let mut seconds = [0f64; 2];
        let trials = [(a, CtrVariant::Keystream), (b, CtrVariant::Fused)];
        for (i, (part, trial)) in trials.into_iter().enumerate() {
            let start = Instant::now();
            self.pipeline(slots, &job.with_kind(kernel_of(trial)), part)?;
            seconds[i] = start.elapsed().as_secs_f64();
            job = job.after(part.len());
        }
        let faster = if seconds[1] < seconds[0] {
            CtrVariant::Fused
        } else {
            CtrVariant::Keystream
        };
        // Calls hold the slots' lock, so no other call calibrates meanwhile; the first choice stays.
        let winner = *self.resolved.get_or_init(|| faster);
        self.pipeline(slots, &job.with_kind(kernel_of(winner)), rest)
    }
}

/// The kernel of a decided CTR variant.
fn kernel_of(variant: CtrVariant) -> KernelKind {
    match variant {
        CtrVariant::Fused => KernelKind::CtrFused,
        _ => KernelKind::CtrKeystream,
    }
}
