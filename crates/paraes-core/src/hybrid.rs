//! The hybrid engine: one [`Engine`] over a CPU engine and a GPU engine that splits each call's
//! work between them by their measured rates, so the same bytes come out as from either alone.
//!
//! Each call is cut in two at a unit boundary: whole GCM chunk records for a records job
//! ([`Engine::process_records`]), whole blocks (whole records of GCM chunk counters) at their
//! stream positions for a [`Job`] ([`Engine::process`]), so each side's job is the call's job
//! moved on to where its part starts ([`Job::advanced`], [`RecordsJob::advanced`]). The GPU's
//! part (the front) runs on a feeder thread while the calling thread runs the CPU's part; each
//! part's time gives a rate sample (bytes per second, contention included), folded into an
//! exponentially weighted rate per engine (one pair for CTR and ECB jobs, one for records
//! jobs, whose rates differ), and the next call gives the GPU the share
//! `gpu rate / (gpu rate + cpu rate)`, so both parts of a call tend to finish together.
//!
//! * Until both rates are measured, calls are split half and half.
//! * Calls shorter than the minimum split (256 KiB by default) are not split: they run on
//!   the engine with the higher rate (the CPU until both are measured), and measure nothing.
//! * An engine whose share rounds to less than a probe (1/64 of the call) gets nothing,
//!   except every 16th split call, when it gets a probe, so its rate is measured again and it
//!   comes back if it speeds up; a GPU 100x slower than the CPU costs about 3.5% so.
//!
//! When the GPU fails (any error but a tag that does not verify), its part of the call is run
//! again on the CPU (an in-place job from a copy kept of its bytes, which the GPU may have
//! changed before it failed), the failure is kept ([`Split::gpu_failure`]), and every later call
//! runs on the CPU alone: the run finishes on the CPU, the same bytes as ever. The binary says
//! so in one warning line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use zeroize::Zeroize;

use crate::engine::{
    Counters, Engine, EngineError, Job, RecordsError, RecordsJob, Split, GCM_CHUNK_LEN,
    GCM_RECORD_LEN,
};

#[cfg(test)]
mod tests;

/// Calls shorter than this many bytes run on one engine (the split's fixed costs, a feeder
/// thread's wake-up and the GPU's launch latency, are a large part of a short call's time).
pub const DEFAULT_MIN_SPLIT: usize = 256 << 10;
/// Weight of a new rate sample in an engine's rate.
const RATE_WEIGHT: f64 = 0.25;
/// An engine's probe is this fraction of a call (at least one unit).
const PROBE_DIVISOR: usize = 64;
/// Every this many split calls, an engine whose share is below a probe gets a probe.
const PROBE_PERIOD: u64 = 16;

/// The two engines' rates (bytes per second; 0 until measured) and the calls split so far.
#[derive(Debug, Default)]
struct Rates {
    cpu: f64,
    gpu: f64,
    split_calls: u64,
}

impl Rates {
    /// Folds a part's `bytes` in `time` into `rate`.
    fn fold(rate: &mut f64, bytes: usize, time: Duration) {
        let seconds = time.as_secs_f64();
        if bytes == 0 || seconds <= 0.0 {
            return;
        }
        let sample = bytes as f64 / seconds;
        *rate = if *rate == 0.0 {
            sample
        } else {
            *rate + RATE_WEIGHT * (sample - *rate)
        };
    }

    fn measured(&self) -> bool {
        self.cpu > 0.0 && self.gpu > 0.0
    }
}

/// A part's answer and time, or `None` where the part was empty.
type Timed<T> = Option<(T, Duration)>;

/// What a call runs: the engines' rates differ between the two (a records job computes tags
/// as well; the GPU copies more for it), so each has its own rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// A CTR or ECB job ([`Engine::process`]).
    Blocks = 0,
    /// A records job ([`Engine::process_records`]).
    Records = 1,
}

/// How a call of `units` units goes: the GPU's units (the front of the call), and whether
/// the call measures the engines' rates for its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    work: Work,
    gpu_units: usize,
    measures: bool,
}

/// A CPU engine and a GPU engine sharing each call's work by their measured rates (see the
/// module's text). Any two engines serve (the tests use two CPU engines); the first is the
/// one that never stops: the second's failure moves its work to the first.
pub struct HybridEngine {
    cpu: Box<dyn Engine>,
    gpu: Box<dyn Engine>,
    /// Runs a call's GPU part while the calling thread runs its CPU part.
    feeder: rayon::ThreadPool,
    /// The rates for each [`Work`].
    rates: [Mutex<Rates>; 2],
    cpu_bytes: AtomicU64,
    gpu_bytes: AtomicU64,
    /// Why the GPU failed; once set, every call runs on the CPU alone.
    gpu_failure: OnceLock<String>,
    /// Buffers for copies of GPU parts of in-place jobs, reused from call to call; each
    /// holds only zeros between calls ([`KeptCopy`]).
    spares: Mutex<Vec<Vec<u8>>>,
    min_split: usize,
}

impl HybridEngine {
    /// The hybrid of `cpu` and `gpu`, splitting calls of [`DEFAULT_MIN_SPLIT`] bytes or more.
    pub fn new(cpu: Box<dyn Engine>, gpu: Box<dyn Engine>) -> Result<Self, EngineError> {
        let feeders = cpu.workers().max(2);
        let feeder = rayon::ThreadPoolBuilder::new()
            .num_threads(feeders)
            .thread_name(|i| format!("paraes-hybrid-feeder-{i}"))
            .build()
            .map_err(|e| {
                EngineError::Unavailable(format!("could not start {feeders} threads: {e}"))
            })?;
        Ok(HybridEngine {
            cpu,
            gpu,
            feeder,
            rates: Default::default(),
            cpu_bytes: AtomicU64::new(0),
            gpu_bytes: AtomicU64::new(0),
            gpu_failure: OnceLock::new(),
            spares: Mutex::new(Vec::new()),
            min_split: DEFAULT_MIN_SPLIT,
        })
    }

    /// The same engine splitting calls of `bytes` bytes or more (tests: small calls split).
    pub fn with_min_split(mut self, bytes: usize) -> Self {
        self.min_split = bytes;
        self
    }

    /// The CPU engine.
    pub fn cpu(&self) -> &dyn Engine {
        self.cpu.as_ref()
    }

    /// The GPU engine.
    pub fn gpu(&self) -> &dyn Engine {
        self.gpu.as_ref()
    }

    /// How a call of `work` in `units` units of `unit_len` bytes each goes (see the module's
    /// text).
    fn plan(&self, work: Work, units: usize, unit_len: usize) -> Plan {
        let alone = Plan {
            work,
            gpu_units: 0,
            measures: false,
        };
        if units == 0 || self.gpu_failure.get().is_some() {
            return alone;
        }
        let mut rates = self.rates(work);
        if units < 2 || units.saturating_mul(unit_len) < self.min_split {
            let gpu_faster = rates.measured() && rates.gpu > rates.cpu;
            return Plan {
                gpu_units: if gpu_faster { units } else { 0 },
                ..alone
            };
        }
        rates.split_calls += 1;
        let share = if rates.measured() {
            rates.gpu / (rates.gpu + rates.cpu)
        } else {
            0.5
        };
        let mut gpu_units = ((share * units as f64).round() as usize).min(units);
        let probe = (units / PROBE_DIVISOR).max(1);
        if rates.split_calls.is_multiple_of(PROBE_PERIOD) {
            gpu_units = gpu_units.clamp(probe, units - probe);
        }
        Plan {
            gpu_units,
            measures: true,
            ..alone
        }
    }

    /// The rates of `work`.
    fn rates(&self, work: Work) -> std::sync::MutexGuard<'_, Rates> {
        self.rates[work as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a call's bytes on each engine and, where the plan says so, folds the parts'
    /// times into the rates: `gpu` is the GPU part's length and its answer (whether the GPU ran
    /// it, not the CPU after a failure; and its time), `cpu` the CPU part's.
    fn settle<G, C>(
        &self,
        plan: Plan,
        (gpu_len, gpu): (usize, &Timed<(bool, G)>),
        (cpu_len, cpu): (usize, &Timed<C>),
    ) {
        let gpu_ran = gpu.as_ref().is_some_and(|((ran, _), _)| *ran);
        let (on_gpu, on_cpu) = if gpu_ran {
            (gpu_len, cpu_len)
        } else {
            (0, cpu_len + gpu_len)
        };
        self.cpu_bytes.fetch_add(on_cpu as u64, Ordering::Relaxed);
        self.gpu_bytes.fetch_add(on_gpu as u64, Ordering::Relaxed);
        if !plan.measures {
            return;
        }
        let mut rates = self.rates(plan.work);
        if let Some((_, time)) = cpu {
            Rates::fold(&mut rates.cpu, cpu_len, *time);
        }
        if let (Some((_, time)), true) = (gpu, gpu_ran) {
            Rates::fold(&mut rates.gpu, gpu_len, *time);
        }
    }

    /// Keeps the first GPU failure; every later call runs on the CPU alone.
    fn gpu_failed(&self, error: &EngineError) {
        // A device's error says what failed itself ("out of GPU memory ...").
        let (mut reason, mut source) = match error {
            EngineError::Device { source, .. } => (source.to_string(), source.source()),
            other => (other.to_string(), std::error::Error::source(other)),
        };
        while let Some(cause) = source {
            reason = format!("{reason}: {cause}");
            source = cause.source();
        }
        let _ = self.gpu_failure.set(reason);
    }

    /// Runs `gpu` on a feeder thread while the calling thread runs `cpu` (a part that is
    /// `None` runs nothing; one alone runs on the calling thread); returns each one's answer
    /// and time.
    fn side_by_side<G, C>(
        &self,
        gpu: Option<impl FnOnce() -> G + Send>,
        cpu: Option<impl FnOnce() -> C>,
    ) -> (Timed<G>, Timed<C>)
    where
        G: Send,
    {
        fn timed<T>(work: impl FnOnce() -> T) -> (T, Duration) {
            let start = Instant::now();
            let answer = work();
            (answer, start.elapsed())
        }
        match (gpu, cpu) {
            (Some(gpu), Some(cpu)) => {
                let mut gpu_answer = None;
                let mut cpu_answer = None;
                self.feeder.in_place_scope(|scope| {
                    scope.spawn(|_| gpu_answer = Some(timed(gpu)));
                    cpu_answer = Some(timed(cpu));
                });
                (gpu_answer, cpu_answer)
            }
            (gpu, cpu) => (gpu.map(timed), cpu.map(timed)),
        }
    }

    /// A spare buffer holding a copy of `bytes` (for a GPU part run in place), given back
    /// zeroed when the copy is dropped.
    fn copy_of(&self, bytes: &[u8]) -> KeptCopy<'_> {
        let spare = self.spares.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut copy = spare.unwrap_or_default();
        // A spare holds only zeros, so a reallocation here frees no plaintext.
        copy.clear();
        copy.extend_from_slice(bytes);
        KeptCopy {
            engine: self,
            bytes: copy,
        }
    }

    /// The GPU's part of an in-place job: `buf` on the GPU, or, when the GPU fails, its bytes
    /// as they were run on the CPU. Returns whether the GPU ran it, and the answer.
    fn gpu_part(&self, job: &Job<'_>, buf: &mut [u8]) -> (bool, Result<(), EngineError>) {
        let kept = self.copy_of(buf);
        let answer = match self.gpu.process(job, buf) {
            Ok(()) => (true, Ok(())),
            Err(e) => {
                self.gpu_failed(&e);
                buf.copy_from_slice(&kept.bytes);
                (false, self.cpu.process(job, buf))
            }
        };
        drop(kept);
        answer
    }

    /// The GPU's part of a records job, or, when the GPU fails (a tag that does not verify is
    /// an answer, not a failure), the same records on the CPU. Returns whether the GPU ran it.
    fn gpu_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> (bool, Result<(), RecordsError>) {
        match self.gpu.process_records(job, input, output) {
            Err(RecordsError::Engine(e)) => {
                self.gpu_failed(&e);
                (false, self.cpu.process_records(job, input, output))
            }
            answer => (true, answer),
        }
    }
}

/// A copy of a GPU part's bytes (plaintext when sealing), kept to rerun the part on the CPU
/// should the GPU fail; zeroed and given back to the spares when dropped, on every path (a
/// panic too), so no copy of a caller's bytes outlives the call.
struct KeptCopy<'a> {
    engine: &'a HybridEngine,
    bytes: Vec<u8>,
}

impl Drop for KeptCopy<'_> {
    fn drop(&mut self) {
        let mut spare = std::mem::take(&mut self.bytes);
        // Zeroes every byte the copy was given (its length stays, so the next call's
        // reallocation copies only zeros; bytes past it were zeroed by earlier calls).
        spare.as_mut_slice().zeroize();
        self.engine
            .spares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(spare);
    }
}

/// Where a job's buffer is cut into whole units: the first unit boundary at or after its
/// start (`head` bytes in), the unit's length, and how many whole units follow it. Whole
/// 16-byte blocks at their stream positions, or whole records of GCM chunk counters.
fn units_of(job: &Job<'_>, len: usize) -> (usize, usize, usize) {
    let unit = match job.counters {
        Counters::Stream => 16,
        Counters::GcmChunks { stride, .. } => stride,
    };
    let head = ((unit as u64 - job.offset % unit as u64) % unit as u64) as usize;
    let head = head.min(len);
    (head, unit, (len - head) / unit)
}

/// The lower of two answers' failures: a tag that does not verify at the lowest index, else
/// the first engine error.
fn either(
    first: Result<(), RecordsError>,
    second: Result<(), RecordsError>,
) -> Result<(), RecordsError> {
    match (first, second) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(RecordsError::Tampered(a)), Err(RecordsError::Tampered(b))) => {
            Err(RecordsError::Tampered(a.min(b)))
        }
        (Err(e @ RecordsError::Engine(_)), _) | (_, Err(e @ RecordsError::Engine(_))) => Err(e),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
    }
}

impl Engine for HybridEngine {
    fn name(&self) -> String {
        format!("hybrid ({} + {})", self.cpu.name(), self.gpu.name())
    }

    /// The CPU engine's workers: as many calls side by side as it has threads.
    fn workers(&self) -> usize {
        self.cpu.workers()
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        job.check(buf.len())?;
        let (head, unit, units) = units_of(job, buf.len());
        let plan = self.plan(Work::Blocks, units, unit);
        let cut = match plan.gpu_units {
            0 => 0,
            g if g == units => buf.len(),
            g => head + g * unit,
        };
        let (gpu_buf, cpu_buf) = buf.split_at_mut(cut);
        let cpu_job = job.advanced(cut as u64);
        let (gpu, cpu) = self.side_by_side(
            (!gpu_buf.is_empty()).then_some(|| self.gpu_part(job, gpu_buf)),
            (!cpu_buf.is_empty()).then_some(|| self.cpu.process(&cpu_job, cpu_buf)),
        );
        self.settle(plan, (cut, &gpu), (buf.len() - cut, &cpu));
        gpu.map_or(Ok(()), |((_, answer), _)| answer)?;
        cpu.map_or(Ok(()), |(answer, _)| answer)
    }

    /// Whether either engine runs it: the GPU's part goes to the GPU where it runs records for
    /// this key, and everything to the CPU engine, which runs every records job, otherwise.
    fn runs_records(&self, job: &RecordsJob<'_>) -> bool {
        self.cpu.runs_records(job) || self.gpu.runs_records(job)
    }

    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        let records = job.check(input.len(), output.len())?;
        let plan = if self.gpu.runs_records(job) {
            self.plan(Work::Records, records, GCM_CHUNK_LEN)
        } else {
            self.plan(Work::Records, 0, GCM_CHUNK_LEN)
        };
        let k = plan.gpu_units;
        let (plain_len, records_len) = match job.direction {
            crate::Direction::Encrypt => (input.len(), output.len()),
            crate::Direction::Decrypt => (output.len(), input.len()),
        };
        let (plain_cut, records_cut) = if k == records {
            (plain_len, records_len)
        } else {
            (k * GCM_CHUNK_LEN, k * GCM_RECORD_LEN)
        };
        let (in_cut, out_cut) = match job.direction {
            crate::Direction::Encrypt => (plain_cut, records_cut),
            crate::Direction::Decrypt => (records_cut, plain_cut),
        };
        let (gpu_in, cpu_in) = input.split_at(in_cut);
        let (gpu_out, cpu_out) = output.split_at_mut(out_cut);
        let cpu_job = job.advanced(k as u64);
        let (gpu, cpu) = self.side_by_side(
            (k > 0).then_some(|| self.gpu_records(job, gpu_in, gpu_out)),
            (k < records).then_some(|| self.cpu.process_records(&cpu_job, cpu_in, cpu_out)),
        );
        self.settle(plan, (plain_cut, &gpu), (plain_len - plain_cut, &cpu));
        either(
            gpu.map_or(Ok(()), |((_, answer), _)| answer),
            cpu.map_or(Ok(()), |(answer, _)| answer),
        )
    }

    fn split(&self) -> Option<Split> {
        Some(Split {
            cpu_bytes: self.cpu_bytes.load(Ordering::Relaxed),
            gpu_bytes: self.gpu_bytes.load(Ordering::Relaxed),
            gpu_failure: self.gpu_failure.get().cloned(),
        })
    }
}
