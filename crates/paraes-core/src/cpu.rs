//! The CPU engine: a buffer spread over rayon threads in cache-sized slices, each slice run by
//! the fastest AES implementation of the CPU (or one chosen explicitly, e.g. for tests).
//! GCM chunk records are sealed and opened whole, out of place ([`crate::RecordsJob`], in
//! `records`), over the same threads: each record by the stitched kernel where the engine's
//! implementation has one (VAES-512 with VPCLMULQDQ), otherwise by CTR and then GHASH, so the
//! tags are computed in parallel on every implementation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::aes::AesImpl;
use crate::engine::{Engine, EngineError, Job, RecordsError, RecordsJob};
use crate::modes;

mod records;

/// Buffers shorter than this run on the calling thread alone: waking another core costs more
/// than it saves (measured on a 2-vCPU Zen 4 VM: splitting 256 KiB ran at 0.8x one thread,
/// 1 MiB at 1.6x; see docs/RESULTS.md).
const PARALLEL_MIN: usize = 512 * 1024;
/// Largest slice: keeps a slice within the L2 cache of one core, so that whatever reads the
/// buffer next (a MAC, a write) on the same thread finds it there.
const MAX_SLICE: usize = 256 * 1024;
/// Slices per thread at least, so a thread that starts late just takes fewer of them.
const SLICES_PER_THREAD: usize = 4;

/// AES on all (or `threads`) CPU cores.
pub struct CpuEngine {
    implementation: AesImpl,
    threads: usize,
    /// The `threads - 1` workers that help the calling thread; `None` when single-threaded.
    pool: Option<rayon::ThreadPool>,
    /// Whether a call is sharing its work out over `pool` now ([`CpuEngine::pool_for`]).
    pool_taken: AtomicBool,
    parallel_min: usize,
    max_slice: usize,
}

impl CpuEngine {
    /// An engine on `threads` threads (`None`: one per CPU this process may use, [`crate::cpus::usable`]) with the implementation
    /// [`AesImpl::detect`] picks.
    pub fn new(threads: Option<usize>) -> Result<Self, EngineError> {
        Self::with_aes_impl(AesImpl::detect(), threads)
    }

    /// An engine on `threads` threads (`None`: one per CPU this process may use, [`crate::cpus::usable`]) with `implementation`,
    /// which must be available on this CPU.
    pub fn with_aes_impl(
        implementation: AesImpl,
        threads: Option<usize>,
    ) -> Result<Self, EngineError> {
        if !implementation.is_available() {
            return Err(EngineError::Unavailable(format!(
                "this CPU cannot run the {implementation} AES implementation: \
                 choose one of {:?}",
                AesImpl::available()
                    .iter()
                    .map(|imp| imp.name())
                    .collect::<Vec<_>>()
            )));
        }
        let threads = match threads {
            Some(0) => {
                return Err(EngineError::Unavailable(
                    "the thread count must be at least 1".into(),
                ))
            }
            Some(n) => n,
            None => crate::cpus::usable().count,
        };
        let pool = if threads > 1 {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads - 1)
                .thread_name(|i| format!("paraes-cpu-{i}"))
                .build()
                .map_err(|e| {
                    EngineError::Unavailable(format!("could not start {threads} threads: {e}"))
                })?;
            Some(pool)
        } else {
            None
        };
        Ok(CpuEngine {
            implementation,
            threads,
            pool,
            pool_taken: AtomicBool::new(false),
            parallel_min: PARALLEL_MIN,
            max_slice: MAX_SLICE,
        })
    }

    /// Overrides how buffers are split: buffers of at least `parallel_min` bytes are split, into
    /// slices of at most `max_slice` bytes (rounded up to whole blocks). Tests use tiny values
    /// to exercise splitting on small buffers; benchmarks use this to tune the defaults.
    pub fn with_split(mut self, parallel_min: usize, max_slice: usize) -> Self {
        self.parallel_min = parallel_min;
        self.max_slice = max_slice.max(1).next_multiple_of(16);
        self
    }

    /// The AES implementation in use.
    pub fn aes_impl(&self) -> AesImpl {
        self.implementation
    }

    /// Slice length for a buffer of `len` bytes: a multiple of 16, at most `max_slice`.
    fn slice_len(&self, len: usize) -> usize {
        let even_share = len.div_ceil(self.threads * SLICES_PER_THREAD);
        even_share.next_multiple_of(16).clamp(16, self.max_slice)
    }

    /// The threads' pool for a buffer of `len` bytes, held until the returned turn is dropped:
    /// `None` (the calling thread alone) when single-threaded, when the buffer is too short to
    /// share, or when another call holds the pool now. Callers side by side (the workers of
    /// many chunks in flight) so each run alone on their own threads while the pool helps
    /// one of them, instead of queueing their helpers' tasks behind each other's on the same
    /// pool threads and waiting idle for them (measured: two workers on a 2-thread engine
    /// sealed at 0.5-1.8x one thread, erratically, when both shared out every window).
    fn pool_for(&self, len: usize) -> Option<PoolTurn<'_>> {
        let pool = self.pool.as_ref().filter(|_| len >= self.parallel_min)?;
        self.pool_taken
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(PoolTurn {
            pool,
            taken: &self.pool_taken,
        })
    }

    /// Runs `work` on the calling thread and `threads - 1` pool workers at once (each takes
    /// pieces from a shared queue until it is empty).
    fn on_all_threads(&self, turn: &PoolTurn<'_>, work: impl Fn() + Sync) {
        turn.pool.in_place_scope(|scope| {
            for _ in 1..self.threads {
                scope.spawn(|_| work());
            }
            work();
        });
    }
}

/// A call's hold on the engine's pool ([`CpuEngine::pool_for`]), let go when dropped.
struct PoolTurn<'a> {
    pool: &'a rayon::ThreadPool,
    taken: &'a AtomicBool,
}

impl Drop for PoolTurn<'_> {
    fn drop(&mut self) {
        self.taken.store(false, Ordering::Release);
    }
}

impl Engine for CpuEngine {
    fn name(&self) -> String {
        let s = if self.threads == 1 { "" } else { "s" };
        format!("cpu ({}, {} thread{s})", self.implementation, self.threads)
    }

    fn workers(&self) -> usize {
        self.threads
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        job.check(buf.len())?;
        let imp = self.implementation;
        let Some(turn) = self.pool_for(buf.len()) else {
            return modes::apply(imp, job, buf);
        };
        // Run a partial first block here so every slice starts on a block boundary.
        let head_len = ((16 - job.offset % 16) % 16) as usize;
        let (head, rest) = buf.split_at_mut(head_len.min(buf.len()));
        modes::apply(imp, job, head)?;
        let rest_job = job.advanced(head.len() as u64);
        let slice = self.slice_len(rest.len());
        // Self-scheduling: the calling thread and `threads - 1` pool workers take slices from one
        // queue, so the caller starts at once and a worker that wakes late just takes fewer.
        let slices = Mutex::new(rest.chunks_mut(slice).enumerate());
        let first_error = Mutex::new(None);
        self.on_all_threads(&turn, || loop {
            let next = slices.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, piece)) = next else { break };
            if let Err(e) = modes::apply(imp, &rest_job.advanced((i * slice) as u64), piece) {
                first_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(e);
            }
        });
        match first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// `true` where the engine's implementation is the stitched kernel's (VAES-512 with
    /// VPCLMULQDQ), and on every implementation where the engine has more than one thread:
    /// its threads then share out whole records, CTR and tag each, so the tags are computed in
    /// parallel too (the caller's tag stage is one thread, the bound of a body whose GHASH is
    /// slower than its CTR). One thread without the kernel answers `false`: the caller's CTR
    /// and tag stages on threads of their own overlap the two.
    fn runs_records(&self, job: &RecordsJob<'_>) -> bool {
        let _ = job;
        self.stitches_records() || self.pool.is_some()
    }

    /// Runs on every CPU engine, whatever [`Engine::runs_records`] answers: each record by the
    /// stitched kernel where the engine has it, otherwise by CTR and then GHASH (slower than the
    /// caller's stages, but the same bytes). The stitched kernel works in place: the chunks'
    /// data is copied to where it goes in `output` (each thread its share of records) and sealed
    /// or opened there, the one copy the pipeline made before when it moved a batch's pieces
    /// apart in place for their tags, so it costs nothing more. A record whose tag fails leaves
    /// zeros in `output`.
    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        self.records(job, records::Sides::Apart { input, output })
    }

    /// Wherever the engine runs records jobs ([`Engine::runs_records`]): in place every record
    /// is sealed or opened where it lies, the same work as out of place less the copy.
    fn runs_records_in_place(&self, job: &RecordsJob<'_>) -> bool {
        self.runs_records(job)
    }

    fn process_records_in_place(
        &self,
        job: &RecordsJob<'_>,
        records: &mut [u8],
    ) -> Result<(), RecordsError> {
        self.records(job, records::Sides::InPlace(records))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One call at a time shares its work out over the pool; a call that comes while another
    /// holds it runs on its own thread, and the pool is free again once the holder is done.
    #[test]
    fn a_call_while_another_holds_the_pool_runs_alone() {
        let engine = CpuEngine::new(Some(2)).unwrap();
        let turn = engine.pool_for(1 << 20).expect("a free pool");
        assert!(
            engine.pool_for(1 << 20).is_none(),
            "the pool was given twice"
        );
        drop(turn);
        assert!(engine.pool_for(1 << 20).is_some(), "the pool stayed taken");
        assert!(
            engine.pool_for(16).is_none(),
            "a short buffer was shared out"
        );
        let one = CpuEngine::new(Some(1)).unwrap();
        assert!(
            one.pool_for(1 << 20).is_none(),
            "a one-thread engine has no pool"
        );
    }

    /// Many calls side by side, each sharing out or alone as the pool allows, give the bytes
    /// one thread gives.
    #[test]
    fn calls_side_by_side_give_the_bytes_of_one_thread() {
        let key = crate::Key::new(&[7u8; 32]).unwrap();
        let expanded = crate::ExpandedKey::new(&key);
        let job = Job::ctr(&expanded, [3u8; 16], 0);
        let engine = CpuEngine::new(Some(2)).unwrap().with_split(1024, 4096);
        let mut expected = vec![0u8; 300_000];
        CpuEngine::new(Some(1))
            .unwrap()
            .process(&job, &mut expected)
            .unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..20 {
                        let mut buf = vec![0u8; 300_000];
                        engine.process(&job, &mut buf).unwrap();
                        assert!(buf == expected, "a call side by side gave other bytes");
                    }
                });
            }
        });
    }
}
