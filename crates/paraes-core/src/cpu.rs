//! The CPU engine: a buffer spread over rayon threads in cache-sized slices, each slice run by
//! the fastest AES implementation of the CPU (or one chosen explicitly, e.g. for tests).
//! GCM chunk records are sealed and opened whole, out of place ([`crate::RecordsJob`], in
//! `records`), over the same threads: each record by the stitched kernel where the engine's
//! implementation has one (VAES-512 with VPCLMULQDQ), otherwise by CTR and then GHASH, so the
//! tags are computed in parallel on every implementation.

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
    parallel_min: usize,
    max_slice: usize,
}

impl CpuEngine {
    /// An engine on `threads` threads (`None`: one per available core) with the implementation
    /// [`AesImpl::detect`] picks.
    pub fn new(threads: Option<usize>) -> Result<Self, EngineError> {
        Self::with_aes_impl(AesImpl::detect(), threads)
    }

    /// An engine on `threads` threads (`None`: one per available core) with `implementation`,
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

    /// The threads' pool for a buffer of `len` bytes: `None` (the calling thread alone) when
    /// single-threaded or the buffer is too short to share.
    fn pool_for(&self, len: usize) -> Option<&rayon::ThreadPool> {
        self.pool.as_ref().filter(|_| len >= self.parallel_min)
    }

    /// Runs `work` on the calling thread and `threads - 1` pool workers at once (each takes
    /// pieces from a shared queue until it is empty).
    fn on_all_threads(&self, pool: &rayon::ThreadPool, work: impl Fn() + Sync) {
        pool.in_place_scope(|scope| {
            for _ in 1..self.threads {
                scope.spawn(|_| work());
            }
            work();
        });
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
        let Some(pool) = self.pool_for(buf.len()) else {
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
        self.on_all_threads(pool, || loop {
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
        self.records(job, input, output)
    }
}
