//! The CPU engine: a buffer spread over rayon threads in cache-sized slices, each slice run by
//! the fastest AES implementation of the CPU (or one chosen explicitly, e.g. for tests).
//! GCM chunk records are sealed and opened whole by the stitched kernel where the engine's
//! implementation has one (VAES-512 with VPCLMULQDQ), over the same threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::aes::AesImpl;
use crate::cobblestone::{self, ChunkCipher, RECORD_LEN};
use crate::engine::{Direction, Engine, EngineError, Job, RecordsError};
use crate::modes;

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
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
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

    /// [`Engine::gcm_records`] with the stitched kernel: whole records shared out among the
    /// threads in groups of at most `max_slice` bytes (at least one record each).
    fn stitched_records(
        &self,
        cipher: &ChunkCipher,
        direction: Direction,
        first_index: u64,
        records: &mut [u8],
    ) -> Result<(), RecordsError> {
        cobblestone::check_records(records.len())?;
        let Some(pool) = self.pool_for(records.len()) else {
            return cipher.crypt_records(direction, first_index, records);
        };
        let per_group = (self.slice_len(records.len()) / RECORD_LEN).max(1);
        let group = per_group * RECORD_LEN;
        // Groups are taken in order, and none after a failure: every group before a failing
        // one has been taken by then and finishes, so the lowest failing index is found.
        let groups = Mutex::new(records.chunks_mut(group).enumerate());
        let failed = AtomicBool::new(false);
        let lowest = Mutex::new(None::<u64>);
        self.on_all_threads(pool, || loop {
            if failed.load(Ordering::Relaxed) {
                break;
            }
            let next = groups.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, piece)) = next else { break };
            let first = first_index + (i * per_group) as u64;
            if let Err(e) = cipher.crypt_records(direction, first, piece) {
                let index = match e {
                    RecordsError::Tampered(index) => index,
                    // Records were checked above; the kernel fails in no other way.
                    RecordsError::Engine(_) => first,
                };
                failed.store(true, Ordering::Relaxed);
                let mut lowest = lowest.lock().unwrap_or_else(|e| e.into_inner());
                *lowest = Some(lowest.map_or(index, |l| l.min(index)));
            }
        });
        match lowest.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(index) => Err(RecordsError::Tampered(index)),
            None => Ok(()),
        }
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

    /// Whole records with the stitched kernel where `cipher` runs it and it is this engine's
    /// implementation's (so a CPU engine forced to another implementation answers `None`, and
    /// its CTR runs that implementation).
    fn gcm_records(
        &self,
        cipher: &ChunkCipher,
        direction: Direction,
        first_index: u64,
        records: &mut [u8],
    ) -> Option<Result<(), RecordsError>> {
        if !cipher.stitched_for(self.implementation) {
            return None;
        }
        Some(self.stitched_records(cipher, direction, first_index, records))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cobblestone::{MessageKeys, Variant, CHUNK_LEN, SALT_LEN, TAG_LEN};

    fn cipher(variant: Variant) -> ChunkCipher {
        let input_key = vec![0x3c; variant.key_size().bytes()];
        MessageKeys::derive(variant, &input_key, &[7; SALT_LEN], b"cpu")
            .unwrap()
            .chunks()
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 13 + i / 251) as u8).collect()
    }

    /// Engines on the detected implementation, single-threaded, split into one record per
    /// piece, and with the default split.
    fn stitched_engines() -> Vec<CpuEngine> {
        vec![
            CpuEngine::new(Some(1)).unwrap(),
            CpuEngine::new(Some(3)).unwrap().with_split(0, 4096),
            CpuEngine::new(Some(2)).unwrap(),
        ]
    }

    /// Only an engine whose implementation is the stitched kernel's seals whole records; the
    /// others answer `None`, so `bench --impl` rows and forced implementations stay honest.
    #[test]
    fn only_the_kernels_own_implementation_seals_records() {
        let cipher = cipher(Variant::Cobblestone256);
        for imp in AesImpl::available() {
            let engine = CpuEngine::with_aes_impl(imp, Some(2)).unwrap();
            let answer = engine.gcm_records(&cipher, Direction::Encrypt, 0, &mut []);
            assert_eq!(answer.is_some(), cipher.stitched_for(imp), "{imp}");
            if imp != AesImpl::Vaes512 {
                assert!(answer.is_none(), "{imp}");
            }
        }
        let detected = CpuEngine::new(Some(1)).unwrap();
        let answer = detected.gcm_records(&cipher, Direction::Decrypt, 0, &mut []);
        assert_eq!(answer.is_some(), cipher.runs_stitched());
        if !cipher.runs_stitched() {
            eprintln!("no stitched GCM kernel on this CPU: the CPU engine seals no records");
        }
    }

    /// Records sealed and opened by the engine, on any number of threads, are
    /// [`ChunkCipher::seal`] and [`ChunkCipher::open`] of each record.
    #[test]
    fn records_are_the_chunk_ciphers_seals_and_opens() {
        let r = RECORD_LEN;
        let lens = [
            0,
            TAG_LEN,
            r,
            r + TAG_LEN,
            5 * r + 100 + TAG_LEN,
            40 * r,
            40 * r + 17,
        ];
        for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
            let cipher = cipher(variant);
            for engine in stitched_engines() {
                for first in [0, 3, crate::cobblestone::MAX_CHUNKS - 41] {
                    for len in lens {
                        let plain = data(len);
                        let mut expected = plain.clone();
                        for (k, record) in expected.chunks_mut(r).enumerate() {
                            let (d, tag) = record.split_at_mut(record.len() - TAG_LEN);
                            tag.copy_from_slice(&cipher.seal(first + k as u64, d));
                        }
                        let mut sealed = plain.clone();
                        let what = format!("{variant:?} {} {first} {len}", engine.name());
                        let Some(done) =
                            engine.gcm_records(&cipher, Direction::Encrypt, first, &mut sealed)
                        else {
                            assert!(!cipher.runs_stitched(), "{what}");
                            return;
                        };
                        done.unwrap();
                        assert!(sealed == expected, "{what}");
                        let mut opened = sealed.clone();
                        engine
                            .gcm_records(&cipher, Direction::Decrypt, first, &mut opened)
                            .unwrap()
                            .unwrap();
                        for (k, (o, p)) in opened.chunks(r).zip(plain.chunks(r)).enumerate() {
                            let n = o.len() - TAG_LEN;
                            assert!(o[..n] == p[..n], "{what} record {k}");
                            assert_eq!(o[n..], sealed[k * r + n..k * r + o.len()], "{what}");
                        }
                    }
                }
            }
        }
    }

    /// A record whose tag fails keeps its ciphertext, and the answer names the lowest failing
    /// index however the records were shared out; records without room for a tag are refused
    /// before anything is touched.
    #[test]
    fn failures_name_the_lowest_record_and_keep_its_ciphertext() {
        let cipher = cipher(Variant::Cobblestone256);
        let r = RECORD_LEN;
        for engine in stitched_engines() {
            let mut sealed = data(12 * r + 50);
            let Some(done) = engine.gcm_records(&cipher, Direction::Encrypt, 9, &mut sealed) else {
                return;
            };
            done.unwrap();
            for bad in [vec![4], vec![4, 9], vec![11], vec![0, 11]] {
                let mut tampered = sealed.clone();
                for &k in &bad {
                    // Data of one, the tag of another.
                    let at = if k % 2 == 0 {
                        k * r + 77
                    } else {
                        k * r + CHUNK_LEN + 3
                    };
                    tampered[at] ^= 0x40;
                }
                let mut opened = tampered.clone();
                let err = engine
                    .gcm_records(&cipher, Direction::Decrypt, 9, &mut opened)
                    .unwrap();
                match err {
                    Err(RecordsError::Tampered(index)) => assert_eq!(index, 9 + bad[0] as u64),
                    other => panic!("{bad:?}: {other:?}"),
                }
                for &k in &bad {
                    let record = k * r..((k + 1) * r).min(opened.len());
                    assert!(opened[record.clone()] == tampered[record], "{bad:?}");
                }
            }
            let mut short = vec![0u8; 2 * r + TAG_LEN - 1];
            let err = engine.gcm_records(&cipher, Direction::Encrypt, 0, &mut short);
            assert!(matches!(err, Some(Err(RecordsError::Engine(_)))), "{err:?}");
            assert!(short.iter().all(|&b| b == 0));
        }
    }
}
