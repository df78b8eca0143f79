//! The CPU engine: a buffer spread over rayon threads in cache-sized slices, each slice run by
//! the fastest AES implementation of the CPU (or one chosen explicitly, e.g. for tests).

use rayon::prelude::*;

use crate::aes::Implementation;
use crate::engine::{Engine, EngineError, Job};
use crate::modes;

/// Smallest slice handed to a thread: below this, splitting costs more than it saves.
const MIN_SLICE: usize = 16 * 1024;
/// Largest slice: keeps a slice within the L2 cache of one core, so that whatever reads the
/// buffer next (a MAC, a write) on the same thread finds it there.
const MAX_SLICE: usize = 256 * 1024;
/// Slices per thread when the buffer is small, so threads finishing early can steal work.
const SLICES_PER_THREAD: usize = 4;

/// AES on all (or `threads`) CPU cores.
pub struct CpuEngine {
    implementation: Implementation,
    threads: usize,
    /// `None` when single-threaded: the work runs on the caller's thread, no pool at all.
    pool: Option<rayon::ThreadPool>,
    min_slice: usize,
    max_slice: usize,
}

impl CpuEngine {
    /// An engine on `threads` threads (`None`: one per available core) with the implementation
    /// [`Implementation::detect`] picks.
    pub fn new(threads: Option<usize>) -> Result<Self, EngineError> {
        Self::with_implementation(Implementation::detect(), threads)
    }

    /// An engine on `threads` threads (`None`: one per available core) with `implementation`,
    /// which must be available on this CPU.
    pub fn with_implementation(
        implementation: Implementation,
        threads: Option<usize>,
    ) -> Result<Self, EngineError> {
        if !implementation.is_available() {
            return Err(EngineError::Unavailable(format!(
                "this CPU cannot run the {implementation} AES implementation: \
                 choose one of {:?}",
                Implementation::available()
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
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let pool = if threads > 1 {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
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
            min_slice: MIN_SLICE,
            max_slice: MAX_SLICE,
        })
    }

    /// Overrides the slice length limits (bytes, rounded up to whole blocks): tests use tiny
    /// slices to exercise splitting on small buffers, benchmarks use this to tune the defaults.
    pub fn with_slice_limits(mut self, min: usize, max: usize) -> Self {
        self.min_slice = min.max(1).next_multiple_of(16);
        self.max_slice = max.next_multiple_of(16).max(self.min_slice);
        self
    }

    /// The AES implementation in use.
    pub fn implementation(&self) -> Implementation {
        self.implementation
    }

    /// Slice length for a buffer of `len` bytes: a multiple of 16 between the limits above.
    fn slice_len(&self, len: usize) -> usize {
        let even_share = len.div_ceil(self.threads * SLICES_PER_THREAD);
        even_share
            .next_multiple_of(16)
            .clamp(self.min_slice, self.max_slice)
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
        let pool = match &self.pool {
            Some(pool) if buf.len() > self.min_slice => pool,
            _ => return modes::apply(imp, job, buf),
        };
        // Run a partial first block here so every slice starts on a block boundary.
        let head_len = ((16 - job.offset % 16) % 16) as usize;
        let (head, rest) = buf.split_at_mut(head_len.min(buf.len()));
        modes::apply(imp, job, head)?;
        let rest_job = job.advanced(head.len() as u64);
        let slice = self.slice_len(rest.len());
        pool.install(|| {
            rest.par_chunks_mut(slice)
                .enumerate()
                .try_for_each(|(i, piece)| {
                    modes::apply(imp, &rest_job.advanced((i * slice) as u64), piece)
                })
        })
    }
}
