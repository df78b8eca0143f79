//! The timing loop: a warm-up that also calibrates how many calls make one sample, then
//! `repeats` samples, each the time per call of a batch lasting at least `min_sample`.
//!
//! Engines are measured only through the [`Engine`] seam, so every engine that implements it can
//! be benchmarked by listing it; [`measure_e2e`] times the whole container pipeline on files.

use std::error::Error;
use std::fs::File;
use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

use paraes_core::container::{self, Recipient};
use paraes_core::pipeline;
use paraes_core::{Counters, Direction, Engine, EngineError, ExpandedKey, Job, Key, Mode};

use crate::stats::Stats;

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Run the engine at least this long (and at least once) before measuring.
    pub warmup: Duration,
    /// Samples per measurement (at least 1).
    pub repeats: usize,
    /// Each sample times a batch of calls lasting at least this long, then divides, so that
    /// calls far shorter than the clock's resolution are still measured well.
    pub min_sample: Duration,
}

impl Timing {
    /// The default: 100 ms warm-up, 11 samples of at least 2 ms.
    pub const FULL: Timing = Timing {
        warmup: Duration::from_millis(100),
        repeats: 11,
        min_sample: Duration::from_millis(2),
    };
    /// `--quick`: 10 ms warm-up, 5 samples of at least 1 ms.
    pub const QUICK: Timing = Timing {
        warmup: Duration::from_millis(10),
        repeats: 5,
        min_sample: Duration::from_millis(1),
    };
}

/// A deterministic, non-constant fill for the buffers (the contents do not change AES's speed,
/// but zero pages could be shared copy-on-write and make the first pass unrepresentative).
/// The fill is the CTR keystream of a fixed key, which the fastest AES path writes at GB/s.
fn fill(buf: &mut [u8]) {
    buf.fill(0);
    let key = Key::new(&[0x5e; 16]).expect("16 bytes").expand();
    let job = Job {
        mode: Mode::Ctr,
        direction: Direction::Encrypt,
        key: &key,
        counter: [0; 16],
        offset: 0,
        counters: Counters::Stream,
    };
    paraes_core::modes::apply(paraes_core::AesImpl::detect(), &job, buf)
        .expect("CTR takes any length");
}

/// Times `op` per `timing`; `op` is one call of the thing measured.
fn time_calls<E>(timing: &Timing, mut op: impl FnMut() -> Result<(), E>) -> Result<Stats, E> {
    let start = Instant::now();
    let mut calls = 0u64;
    loop {
        op()?;
        calls += 1;
        if start.elapsed() >= timing.warmup {
            break;
        }
    }
    let per_call = start.elapsed().as_secs_f64() / calls as f64;
    let batch = (timing.min_sample.as_secs_f64() / per_call.max(1e-9))
        .ceil()
        .max(1.0) as u64;
    let mut samples = Vec::with_capacity(timing.repeats.max(1));
    for _ in 0..timing.repeats.max(1) {
        let t = Instant::now();
        for _ in 0..batch {
            op()?;
        }
        samples.push(t.elapsed().as_secs_f64() / batch as f64);
    }
    Ok(Stats::of(&samples).expect("at least one finite sample"))
}

/// Times `engine` encrypting a `bytes`-long buffer in place with `mode` and `key` (in-memory
/// throughput: the Engine seam alone). Returns seconds per call.
pub fn measure_engine(
    engine: &dyn Engine,
    mode: Mode,
    key: &ExpandedKey,
    bytes: usize,
    timing: &Timing,
) -> Result<Stats, EngineError> {
    let mut buf = vec![0u8; bytes];
    fill(&mut buf);
    let job = Job {
        mode,
        direction: Direction::Encrypt,
        key,
        counter: [0x5a; 16],
        offset: 0,
        counters: Counters::Stream,
    };
    job.check(bytes)?;
    time_calls(timing, || {
        engine.process(&job, black_box(&mut buf))?;
        black_box(&buf);
        Ok(())
    })
}

/// Times the whole `paraes enc` path: a format v3 container header, then the chunk pipeline
/// (reader thread, `engine` running the body's AES-CTR, GHASH tags, writer thread) from a
/// temporary file of `bytes` bytes to a temporary output file (in the temporary directory,
/// `$TMPDIR` or /tmp), in pipeline chunks of `chunk_size` bytes. The body's key size is `key`'s
/// (128 or 256 bits: a container has no 192-bit body). One sample is one whole file; there is
/// no batching. Returns seconds per file.
pub fn measure_e2e(
    engine: &dyn Engine,
    key: &Key,
    bytes: usize,
    chunk_size: usize,
    timing: &Timing,
) -> Result<Stats, Box<dyn Error + Send + Sync>> {
    let dir = tempfile::tempdir()?;
    let input_path = dir.path().join("input");
    let output_path = dir.path().join("output.paraes");
    {
        let mut input = File::create(&input_path)?;
        let mut block = vec![0u8; (1 << 20).min(bytes.max(1))];
        fill(&mut block);
        let mut left = bytes;
        while left > 0 {
            let n = left.min(block.len());
            input.write_all(&block[..n])?;
            left -= n;
        }
    }
    let once = || -> Result<(), Box<dyn Error + Send + Sync>> {
        // As `paraes enc -k`: a fresh file key per file, wrapped for the key.
        let (header_bytes, mut sealed) =
            container::seal(key.size(), &[Recipient::Key(key.clone())])?;
        sealed.set_batch(chunk_size);
        let mut input = File::open(&input_path)?;
        let mut output = File::create(&output_path)?;
        output.write_all(&header_bytes)?;
        let spec = sealed.stream_spec(engine, Direction::Encrypt);
        pipeline::run(&spec, &mut input, &mut output, &|_| {})?;
        output.flush()?;
        Ok(())
    };
    let timing = Timing {
        min_sample: Duration::ZERO,
        ..*timing
    };
    time_calls(&timing, once)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraes_core::CpuEngine;

    const TINY: Timing = Timing {
        warmup: Duration::from_millis(1),
        repeats: 3,
        min_sample: Duration::from_micros(200),
    };

    #[test]
    fn engine_times_are_positive_and_ordered() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[7u8; 16]).unwrap().expand();
        for mode in [Mode::Ctr, Mode::Ecb] {
            let s = measure_engine(&engine, mode, &key, 4096, &TINY).unwrap();
            assert!(
                s.min > 0.0 && s.min <= s.median && s.median <= s.max,
                "{s:?}"
            );
        }
    }

    #[test]
    fn ecb_partial_block_is_an_error() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[7u8; 16]).unwrap().expand();
        assert!(measure_engine(&engine, Mode::Ecb, &key, 100, &TINY).is_err());
    }

    #[test]
    fn e2e_runs_the_pipeline() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[7u8; 32]).unwrap();
        let s = measure_e2e(&engine, &key, 100_000, 1 << 16, &TINY).unwrap();
        assert!(
            s.min > 0.0 && s.min <= s.median && s.median <= s.max,
            "{s:?}"
        );
    }
}
