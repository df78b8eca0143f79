//! The timing loop: a warm-up that also calibrates how many calls make one sample, then
//! `repeats` samples, each the time per call of a batch lasting at least `min_sample`. Rows that
//! are compared with each other (an engine on one thread and on many, the machine's bound) are
//! timed together by [`time_interleaved`]: round by round, one sample of each in turn, so that a
//! slow spell of a shared machine falls on all of them alike instead of on one row's samples.

use std::error::Error;
use std::time::{Duration, Instant};

use crate::stats::Stats;

/// The error of one timed call.
pub type BenchError = Box<dyn Error + Send + Sync>;

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
    /// The tests' timing: a 1 ms warm-up, 3 samples of at least 200 us.
    #[cfg(test)]
    pub(crate) const TINY: Timing = Timing {
        warmup: Duration::from_millis(1),
        repeats: 3,
        min_sample: Duration::from_micros(200),
    };
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

/// One thing to time, prepared: each call of it is one unit measured (one buffer sealed, one
/// file read).
pub struct Op<'a> {
    call: Box<dyn FnMut() -> Result<(), BenchError> + 'a>,
    /// One call per sample, never a batch (a whole file: long enough alone).
    whole: bool,
}

impl<'a> Op<'a> {
    /// A call timed in batches of at least [`Timing::min_sample`].
    pub fn new(call: impl FnMut() -> Result<(), BenchError> + 'a) -> Self {
        Op {
            call: Box::new(call),
            whole: false,
        }
    }

    /// A call timed alone in each sample (a whole file).
    pub fn whole(call: impl FnMut() -> Result<(), BenchError> + 'a) -> Self {
        Op {
            call: Box::new(call),
            whole: true,
        }
    }
}

/// An op after its warm-up: how many calls make one sample, and the samples so far.
struct Sampler<'a> {
    op: Op<'a>,
    batch: u64,
    samples: Vec<f64>,
}

impl<'a> Sampler<'a> {
    /// Runs `op` for `timing.warmup` (at least once) and sizes its batches from that.
    fn warm(timing: &Timing, mut op: Op<'a>) -> Result<Self, BenchError> {
        let start = Instant::now();
        let mut calls = 0u64;
        loop {
            (op.call)()?;
            calls += 1;
            if start.elapsed() >= timing.warmup {
                break;
            }
        }
        let per_call = start.elapsed().as_secs_f64() / calls as f64;
        let min_sample = if op.whole {
            0.0
        } else {
            timing.min_sample.as_secs_f64()
        };
        let batch = (min_sample / per_call.max(1e-9)).ceil().max(1.0) as u64;
        Ok(Sampler {
            op,
            batch,
            samples: Vec::with_capacity(timing.repeats.max(1)),
        })
    }

    /// Times one batch and keeps its time per call. A batch of one call is preceded by an
    /// untimed call, so that it starts as a run goes on (its threads awake, its buffers where
    /// the last call left them), not as the previous op left the machine; a longer batch
    /// pays that once, among many calls.
    fn sample(&mut self) -> Result<(), BenchError> {
        if self.batch == 1 {
            (self.op.call)()?;
        }
        let t = Instant::now();
        for _ in 0..self.batch {
            (self.op.call)()?;
        }
        self.samples
            .push(t.elapsed().as_secs_f64() / self.batch as f64);
        Ok(())
    }

    fn stats(&self) -> Stats {
        Stats::of(&self.samples).expect("at least one finite sample")
    }
}

/// Times `op` per `timing`. Returns seconds per call.
pub fn time_op(timing: &Timing, op: Op<'_>) -> Result<Stats, BenchError> {
    time_interleaved(timing, vec![op])
        .map(|mut stats| stats.remove(0))
        .map_err(|(_, e)| e)
}

/// Times every op of `ops` per `timing`, their samples interleaved: each is warmed up in turn,
/// then each round takes one sample of every op, in order. Returns seconds per call of each, in
/// the order of `ops`; an error says which op (its index) failed.
pub fn time_interleaved(
    timing: &Timing,
    ops: Vec<Op<'_>>,
) -> Result<Vec<Stats>, (usize, BenchError)> {
    let mut samplers = Vec::with_capacity(ops.len());
    for (index, op) in ops.into_iter().enumerate() {
        samplers.push(Sampler::warm(timing, op).map_err(|e| (index, e))?);
    }
    for _ in 0..timing.repeats.max(1) {
        for (index, sampler) in samplers.iter_mut().enumerate() {
            sampler.sample().map_err(|e| (index, e))?;
        }
    }
    Ok(samplers.iter().map(Sampler::stats).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// After the warm-ups, the samples go round the ops in turn (a, b, a, b, ...), not all of
    /// one op's first.
    #[test]
    fn samples_take_turns() {
        let log = RefCell::new(Vec::new());
        let slow = || std::thread::sleep(Duration::from_micros(300));
        let ops = vec![
            Op::new(|| {
                slow();
                log.borrow_mut().push('a');
                Ok(())
            }),
            Op::whole(|| {
                slow();
                log.borrow_mut().push('b');
                Ok(())
            }),
        ];
        let stats = time_interleaved(&Timing::TINY, ops).unwrap();
        assert_eq!(stats.len(), 2);
        // Each op's calls in a row as one letter: the warm-ups, then three rounds.
        let mut turns = log.into_inner();
        turns.dedup();
        assert_eq!(String::from_iter(turns), "abababab");
        for s in stats {
            assert!(
                s.min > 0.0 && s.min <= s.median && s.median <= s.max,
                "{s:?}"
            );
        }
    }

    /// A sample of one call follows an untimed one; a batch of many does not.
    #[test]
    fn a_lone_call_is_warmed_before_its_sample() {
        for (pause, calls_per_round) in [(Duration::from_micros(300), 2), (Duration::ZERO, 0)] {
            let calls = RefCell::new(0usize);
            let mut sampler = Sampler::warm(
                &Timing::TINY,
                Op::new(|| {
                    std::thread::sleep(pause);
                    *calls.borrow_mut() += 1;
                    Ok(())
                }),
            )
            .unwrap();
            let before = *calls.borrow();
            sampler.sample().unwrap();
            let during = *calls.borrow() - before;
            if calls_per_round == 2 {
                assert_eq!((sampler.batch, during), (1, 2));
            } else {
                assert!(
                    sampler.batch > 1 && during as u64 == sampler.batch,
                    "{during}"
                );
            }
        }
    }

    /// An op that fails is named by its place.
    #[test]
    fn a_failing_op_is_named() {
        let mut calls = 0;
        let ops = vec![
            Op::new(|| Ok(())),
            Op::new(|| {
                calls += 1;
                if calls > 2 {
                    Err("broke".into())
                } else {
                    Ok(())
                }
            }),
        ];
        let (index, error) = time_interleaved(&Timing::TINY, ops).unwrap_err();
        assert_eq!((index, error.to_string()), (1, "broke".to_string()));
    }
}
