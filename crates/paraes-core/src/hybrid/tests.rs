//! The hybrid engine over two CPU engines, one of them wrapped to stand for a GPU that can be
//! slow or fail: the same bytes as one CPU engine for every job and size, both engines used,
//! shares that follow the rates, and a failing "GPU" whose work finishes on the CPU.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::aes::AesImpl;
use crate::engine::{Direction, GCM_TAG_LEN};
use crate::key::Key;
use crate::seeded::SplitMix64;
use crate::testing::edges::check_edge_sizes;
use crate::CpuEngine;

/// A CPU engine standing for a GPU: counts the bytes it runs, may sleep for each byte (a
/// slower device), and from call `fail_from` on fails as a device does, after scribbling
/// over what it was given (so a hybrid that reused its bytes would be caught).
struct FakeGpu {
    cpu: CpuEngine,
    calls: AtomicUsize,
    bytes: AtomicUsize,
    fail_from: usize,
    nanos_per_byte: u64,
}

impl FakeGpu {
    fn new(fail_from: usize, nanos_per_byte: u64) -> Self {
        FakeGpu {
            cpu: CpuEngine::with_aes_impl(AesImpl::Portable, Some(1)).unwrap(),
            calls: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            fail_from,
            nanos_per_byte,
        }
    }

    /// Counts a call of `len` bytes; `Err` from call `fail_from` on.
    fn call(&self, len: usize) -> Result<(), EngineError> {
        if self.calls.fetch_add(1, Ordering::Relaxed) >= self.fail_from {
            return Err(EngineError::Device {
                device: "GPU",
                source: "the fake device was lost".into(),
            });
        }
        self.bytes.fetch_add(len, Ordering::Relaxed);
        std::thread::sleep(Duration::from_nanos(self.nanos_per_byte * len as u64));
        Ok(())
    }
}

impl Engine for FakeGpu {
    fn name(&self) -> String {
        "fake gpu".into()
    }

    fn workers(&self) -> usize {
        1
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        self.cpu.process(job, buf)?;
        if let Err(e) = self.call(buf.len()) {
            buf.iter_mut().for_each(|b| *b ^= 0x5a);
            return Err(e);
        }
        Ok(())
    }

    fn runs_records(&self, _: &RecordsJob<'_>) -> bool {
        true
    }

    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        self.cpu.process_records(job, input, output)?;
        // The plaintext side, the shorter one, as the hybrid counts it.
        if let Err(e) = self.call(input.len().min(output.len())) {
            output.fill(0xee);
            return Err(e.into());
        }
        Ok(())
    }
}

/// The fake GPU, shared between a hybrid and the test that looks at its counters.
struct Shared(Arc<FakeGpu>);

impl Engine for Shared {
    fn name(&self) -> String {
        self.0.name()
    }

    fn workers(&self) -> usize {
        self.0.workers()
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        self.0.process(job, buf)
    }

    fn runs_records(&self, job: &RecordsJob<'_>) -> bool {
        self.0.runs_records(job)
    }

    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        self.0.process_records(job, input, output)
    }
}

/// The hybrid of a two-thread CPU engine and `gpu`, splitting calls of 16 KiB or more, and
/// the fake GPU in it.
fn hybrid(gpu: FakeGpu) -> (HybridEngine, Arc<FakeGpu>) {
    let cpu = CpuEngine::new(Some(2)).unwrap();
    let gpu = Arc::new(gpu);
    let engine = HybridEngine::new(Box::new(cpu), Box::new(Shared(Arc::clone(&gpu))))
        .unwrap()
        .with_min_split(GCM_CHUNK_LEN);
    (engine, gpu)
}

/// Byte identity with the CPU engine at every size and key size, and both engines got bytes.
#[test]
fn same_bytes_as_the_cpu_engine_with_both_engines_working() {
    let (engine, gpu) = hybrid(FakeGpu::new(usize::MAX, 0));
    check_edge_sizes(&engine, 38);
    let split = engine.split().unwrap();
    assert!(split.cpu_bytes > 0 && split.gpu_bytes > 0, "{split:?}");
    assert_eq!(split.gpu_bytes, gpu.bytes.load(Ordering::Relaxed) as u64);
    assert_eq!(split.gpu_failure, None);
}

/// A GPU 20x slower per byte than it would be gets a small share once measured: the shares
/// follow the rates, and the slow engine is still probed now and then.
#[test]
fn a_slow_gpu_gets_a_small_share() {
    // ~100 MB/s against a CPU engine of several hundred MB/s or more, even unoptimized.
    let (engine, _) = hybrid(FakeGpu::new(usize::MAX, 10));
    let key = Key::new(&[3; 16]).unwrap().expand();
    let mut buf = vec![0u8; 1 << 20];
    let mut gpu_bytes = Vec::new();
    for call in 0..48u64 {
        engine
            .process(&Job::ctr(&key, [0; 16], call << 20), &mut buf)
            .unwrap();
        gpu_bytes.push(engine.split().unwrap().gpu_bytes);
    }
    let last_32 = gpu_bytes[47] - gpu_bytes[15];
    assert!(
        last_32 < 32 * (1 << 20) / 4,
        "the slow GPU ran {last_32} of the last 32 MiB"
    );
    assert!(last_32 > 0, "the slow GPU was never probed again");
    let rates = engine.rates(Work::Blocks);
    assert!(rates.gpu < rates.cpu, "{rates:?}");
    drop(rates);
    let records = engine.rates(Work::Records);
    assert!(records.cpu == 0.0 && records.gpu == 0.0, "{records:?}");
}

/// A GPU that fails mid-run: the call it fails on and every later one give the right bytes,
/// on the CPU (from a copy of the bytes the GPU scribbled over, or from the input), the
/// failure is kept, and the GPU is asked nothing more.
#[test]
fn a_gpu_failing_mid_run_finishes_on_the_cpu() {
    let (engine, gpu) = hybrid(FakeGpu::new(2, 0));
    check_edge_sizes(&engine, 83);
    let split = engine.split().unwrap();
    let failure = split.gpu_failure.clone().expect("the GPU failure is kept");
    assert!(failure.contains("the fake device was lost"), "{failure}");
    assert_eq!(gpu.calls.load(Ordering::Relaxed), 3);
    assert_eq!(split.gpu_bytes, gpu.bytes.load(Ordering::Relaxed) as u64);
    assert!(split.gpu_bytes > 0 && split.cpu_bytes > 0, "{split:?}");
}

/// A changed tag in each engine's part: the lowest failing chunk is named.
#[test]
fn a_tampered_record_in_either_part_is_named() {
    let (engine, _) = hybrid(FakeGpu::new(usize::MAX, 0));
    let mut rng = SplitMix64::new(7);
    let key = Key::new(&rng.bytes(32)).unwrap().expand();
    let mut hash_key = [0u8; 16];
    AesImpl::Portable.encrypt_blocks(&key, &mut hash_key);
    let seal = RecordsJob::new(Direction::Encrypt, &key, &hash_key, rng.array(), 100);
    let open = RecordsJob {
        direction: Direction::Decrypt,
        ..seal
    };
    let chunks = 64;
    let plain = rng.bytes(chunks * GCM_CHUNK_LEN);
    let mut sealed = vec![0; chunks * GCM_RECORD_LEN];
    engine.process_records(&seal, &plain, &mut sealed).unwrap();
    for bad in [[3, 60], [60, 61], [0, 63]] {
        let mut tampered = sealed.clone();
        for k in bad {
            tampered[(k + 1) * GCM_RECORD_LEN - GCM_TAG_LEN] ^= 1;
        }
        let mut out = vec![0; plain.len()];
        match engine.process_records(&open, &tampered, &mut out) {
            Err(RecordsError::Tampered(index)) => assert_eq!(index, 100 + bad[0] as u64),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    let split = engine.split().unwrap();
    assert!(
        split.gpu_bytes > 0 && split.gpu_failure.is_none(),
        "{split:?}"
    );
}

/// The copies the hybrid keeps of a GPU part's bytes (to rerun them on the CPU if the GPU
/// fails) hold no plaintext once a call returns, whether the GPU ran the part or failed.
#[test]
fn kept_copies_of_plaintext_are_zeroed_after_each_call() {
    for fail_from in [usize::MAX, 0] {
        let (engine, _) = hybrid(FakeGpu::new(fail_from, 0));
        let key = Key::new(&[5; 16]).unwrap().expand();
        let mut buf = vec![0xA5u8; 1 << 20];
        engine
            .process(&Job::ctr(&key, [0; 16], 0), &mut buf)
            .unwrap();
        let spares = engine.spares.lock().unwrap();
        assert!(
            !spares.is_empty(),
            "the call kept no copy (fail_from {fail_from})"
        );
        for spare in spares.iter() {
            assert!(
                spare.iter().all(|&b| b == 0),
                "a kept copy still holds the plaintext (fail_from {fail_from})"
            );
        }
    }
}
