//! Wycheproof's C2SP chunked-encryption vectors (tests/vectors/c2sp/, 70) and the chunks at
//! sparse high indices (tests/vectors/c2sp-sparse.json) on the core: the one-shot reader, and
//! the CPU engine with every AES implementation this CPU has (each forced with
//! `CpuEngine::with_aes_impl`), on one thread and split over two, through raw mode and the
//! message API (`paraes_core::testing::{wycheproof, sparse}`); then once more with
//! PARAES_FORCE_PORTABLE=1, so the chunk tags too run on the portable AES and POLYVAL.
//! An implementation this CPU lacks is named on stderr; the portable one always runs. Two
//! engines with a planted bug (chunk indices cut to 8 and to 32 bits) show the vectors catch
//! it: the Wycheproof ones the first, only the sparse ones the second.

use paraes_core::aes::FORCE_PORTABLE_ENV;
use paraes_core::testing::{sparse, wycheproof};
use paraes_core::{AesImpl, Counters, CpuEngine, Engine, EngineError, Job};

#[test]
fn every_vector_opens_or_fails_in_the_one_shot_reader() {
    let vectors = wycheproof::vectors();
    assert_eq!(vectors.len(), 2 * wycheproof::PER_FILE);
    assert_eq!(wycheproof::check_one_shot(&vectors), 70);
}

/// The engines of one AES implementation: one thread, and two threads splitting buffers from
/// 16 KiB on into 4 KiB slices (so even the vectors' short bodies are shared out).
fn engines(imp: AesImpl) -> [CpuEngine; 2] {
    [
        CpuEngine::with_aes_impl(imp, Some(1)).expect("an available implementation"),
        CpuEngine::with_aes_impl(imp, Some(2))
            .expect("an available implementation")
            .with_split(16 << 10, 4096),
    ]
}

fn run_all(engine: &dyn Engine, vectors: &[wycheproof::Vector], sparse: &[sparse::SparseVector]) {
    let covered = wycheproof::check_engine_vectors(engine, vectors, wycheproof::Depth::Full);
    assert_eq!(
        (covered.vectors, covered.raw, covered.message_api),
        (70, 50, 70),
        "{}",
        engine.name()
    );
    let chunks = sparse::check_engine_sparse(engine, sparse);
    eprintln!(
        "{}: {covered:?}, {chunks} sparse chunks at indices past 2^32",
        engine.name()
    );
}

#[test]
fn every_vector_on_the_cpu_engine_with_each_aes_implementation() {
    let vectors = wycheproof::vectors();
    let sparse = sparse::sparse_vectors();
    let mut ran = Vec::new();
    for imp in AesImpl::ALL {
        if !imp.is_available() {
            // Hardware this machine lacks: said past the test harness's capture.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** {imp}: not on this CPU (missing {:?}), not run here ***\n",
                imp.missing_features()
            );
            continue;
        }
        for engine in engines(imp) {
            run_all(&engine, &vectors, &sparse);
        }
        ran.push(imp);
    }
    assert!(ran.contains(&AesImpl::Portable) && ran.contains(&AesImpl::fastest()));
    // The chunk cipher's own AES and GHASH (tags, H) follow AesImpl::detect: forced portable.
    std::env::set_var(FORCE_PORTABLE_ENV, "1");
    assert_eq!(AesImpl::detect(), AesImpl::Portable);
    for engine in engines(AesImpl::Portable) {
        run_all(&engine, &vectors, &sparse);
    }
    std::env::remove_var(FORCE_PORTABLE_ENV);
}

/// The CPU engine with a bug planted: a GCM chunk's index loses its bits from `bits` up (as a
/// counter of `bits` bits would), for the tests below that show the vectors catch it.
struct Truncating {
    inner: CpuEngine,
    bits: u32,
}

impl Engine for Truncating {
    fn name(&self) -> String {
        format!("chunk indices cut to {} bits", self.bits)
    }

    fn workers(&self) -> usize {
        1
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        let mut job = *job;
        if let Counters::GcmChunks { stride, .. } = job.counters {
            let stride = stride as u64;
            let kept = (job.offset / stride) & ((1u64 << self.bits) - 1);
            job.offset = kept * stride + job.offset % stride;
        }
        self.inner.process(&job, buf)
    }
}

fn truncating(bits: u32) -> Truncating {
    Truncating {
        inner: CpuEngine::with_aes_impl(AesImpl::Portable, Some(1)).expect("portable"),
        bits,
    }
}

/// An 8-bit chunk counter fails the CounterRollover vectors (chunk 256 and on)...
#[test]
#[should_panic(expected = "CounterRollover")]
fn the_vectors_catch_a_chunk_counter_of_one_byte() {
    let vectors = wycheproof::vectors();
    wycheproof::check_engine_vectors(&truncating(8), &vectors, wycheproof::Depth::Quick);
}

/// ... and a 32-bit one, which every Wycheproof vector passes, fails the sparse chunks.
#[test]
#[should_panic(expected = "past 2^32 on chunk indices cut to 32 bits")]
fn the_sparse_vectors_catch_a_chunk_counter_of_32_bits() {
    let engine = truncating(32);
    let vectors = wycheproof::vectors();
    wycheproof::check_engine_vectors(&engine, &vectors, wycheproof::Depth::Quick);
    sparse::check_engine_sparse(&engine, &sparse::sparse_vectors());
}
