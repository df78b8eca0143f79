//! The machine's bound beside the engines' rows, measured in the same run on the same number
//! of threads: a copy of the buffer in memory (what any out-of-place pass over it costs at
//! least) and, for whole files, the file read by as many readers as threads, each at its own
//! offsets (what `paraes enc` reading a file cannot beat). Every throughput row can then be
//! read as a share of what the machine allows.

use std::hint::black_box;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use paraes_core::pipeline::WINDOW;

use crate::measure::fill;
use crate::stats::Stats;
use crate::timing::{time_op, BenchError, Op, Timing};

/// The engine label of bound rows (`bound-e2e` for the whole-file bound).
pub const BOUND_ENGINE: &str = "bound";

/// The implementation of the in-memory bound row.
pub const MEMORY_COPY: &str = "memory-copy";

/// The implementation of the whole-file bound row.
pub const PARALLEL_READ: &str = "parallel-read";

/// Threads that live across samples (as a run's workers live for a run): none for one thread,
/// which works on the calling thread.
struct Threads(Option<rayon::ThreadPool>);

impl Threads {
    fn new(threads: usize) -> Result<Self, BenchError> {
        let pool = match threads {
            0 | 1 => None,
            _ => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()?,
            ),
        };
        Ok(Threads(pool))
    }

    /// Runs `work(i)` for every thread `i` side by side; returns the results in thread order.
    fn each<T: Send>(&self, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
        match &self.0 {
            None => vec![work(0)],
            Some(pool) => pool.broadcast(|thread| work(thread.index())),
        }
    }
}

/// Times a copy of `bytes` bytes from one buffer into another, split in `threads` contiguous
/// parts copied side by side. Returns seconds per copy.
pub fn measure_memory_copy(
    bytes: usize,
    threads: usize,
    timing: &Timing,
) -> Result<Stats, BenchError> {
    let buffers = CopyBuffers::new(bytes);
    let op = memory_copy_op(&buffers, threads)?;
    time_op(timing, op)
}

/// The two buffers of the memory-copy rows of one size, made once and shared by the rows of
/// every thread count (their ops run one at a time).
pub struct CopyBuffers {
    from: Vec<u8>,
    to: Mutex<Vec<u8>>,
}

impl CopyBuffers {
    /// Two buffers of `bytes` bytes.
    pub fn new(bytes: usize) -> Self {
        let mut from = vec![0u8; bytes];
        fill(&mut from);
        CopyBuffers {
            from,
            to: Mutex::new(vec![0u8; bytes]),
        }
    }
}

/// [`measure_memory_copy`]'s call, prepared: `buffers` copied on `threads` threads.
pub fn memory_copy_op(buffers: &CopyBuffers, threads: usize) -> Result<Op<'_>, BenchError> {
    let bytes = buffers.from.len();
    let threads = threads.max(1);
    let part = bytes.div_ceil(threads).max(1);
    let pool = Threads::new(threads)?;
    Ok(Op::new(move || -> Result<(), BenchError> {
        let from = &buffers.from;
        let mut to = buffers.to.lock().unwrap_or_else(|e| e.into_inner());
        let parts: Vec<Mutex<&mut [u8]>> = to.chunks_mut(part).map(Mutex::new).collect();
        pool.each(|index| {
            if let Some(dst) = parts.get(index) {
                let mut dst = dst.lock().unwrap_or_else(|e| e.into_inner());
                let (at, len) = (index * part, dst.len());
                dst.copy_from_slice(&from[at..at + len]);
                black_box(&mut **dst);
            }
        });
        Ok(())
    }))
}

/// Times reading a file of `bytes` bytes (in the temporary directory, from the page cache) by
/// `threads` readers, each reading its own contiguous part at its offsets in windows of
/// [`WINDOW`] bytes into a buffer of its own. Returns seconds per whole file.
pub fn measure_parallel_read(
    bytes: usize,
    threads: usize,
    timing: &Timing,
) -> Result<Stats, BenchError> {
    time_op(timing, parallel_read_op(bytes, threads)?)
}

/// [`measure_parallel_read`]'s call, prepared (its file written now; one file per sample).
pub fn parallel_read_op(bytes: usize, threads: usize) -> Result<Op<'static>, BenchError> {
    let mut file = tempfile::tempfile()?;
    let mut block = vec![0u8; WINDOW.min(bytes.max(1))];
    fill(&mut block);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len());
        file.write_all(&block[..n])?;
        left -= n;
    }
    let threads = threads.max(1);
    let part = bytes.div_ceil(threads).max(1) as u64;
    let buffers: Vec<Mutex<Vec<u8>>> = (0..threads)
        .map(|_| Mutex::new(vec![0u8; WINDOW.min(part as usize)]))
        .collect();
    let pool = Threads::new(threads)?;
    Ok(Op::whole(move || -> Result<(), BenchError> {
        let read = pool.each(|index| -> std::io::Result<()> {
            let mut buf = buffers[index].lock().unwrap_or_else(|e| e.into_inner());
            let start = index as u64 * part;
            let end = (start + part).min(bytes as u64);
            let mut at = start;
            while at < end {
                let n = (end - at).min(buf.len() as u64) as usize;
                file.read_exact_at(&mut buf[..n], at)?;
                at += n as u64;
            }
            black_box(&buf);
            Ok(())
        });
        read.into_iter().collect::<std::io::Result<()>>()?;
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: Timing = Timing::TINY;

    #[test]
    fn bounds_are_timed_on_any_thread_count() {
        for threads in [1, 2, 3] {
            for bytes in [1, 4096, (1 << 20) + 5] {
                for stats in [
                    measure_memory_copy(bytes, threads, &TINY).unwrap(),
                    measure_parallel_read(bytes, threads, &TINY).unwrap(),
                ] {
                    assert!(
                        stats.min > 0.0 && stats.min <= stats.median && stats.median <= stats.max,
                        "{threads} threads, {bytes} bytes: {stats:?}"
                    );
                }
            }
        }
    }
}
