//! Benchmark timers on the engine's device: kernel-only launches timed with CUDA events, and
//! copies each way (for `gpu_bench` and the device runs; not used by the Engine path).

use paraes_core::engine::GCM_CHUNK_LEN;
use paraes_core::{modes, AesImpl, ExpandedKey, Job};

use crate::driver::{DeviceBuffer, Event, Launch, Operands, PinnedBuffer, Stream};
use crate::error::GpuError;
use crate::kernels::KernelKind;
use crate::plan::{self, GcmLayout, RoundKeyWords};
use crate::variant::KernelVariant;

use super::GpuEngine;

/// Which way a timed copy goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyDirection {
    /// Pinned host memory to device memory.
    HostToDevice,
    /// Device memory to pinned host memory.
    DeviceToHost,
    /// Device memory to device memory (counts read + write when turned into bandwidth).
    DeviceToDevice,
}

/// What [`GpuEngine::time_kernel_with`] measured, with the launch shape.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTiming {
    /// Entry point in kernels/aes.cu.
    pub kernel: String,
    /// Registers per thread.
    pub registers: u32,
    /// Thread blocks resident per SM at this block size.
    pub resident_per_sm: u32,
    /// Thread blocks launched.
    pub grid: u32,
    /// Threads per block.
    pub threads: u32,
    /// Seconds per launch.
    pub seconds: Vec<f64>,
}

impl GpuEngine {
    /// Kernel-only timing with the engine's variant and threads per block: seconds per
    /// launch (see [`GpuEngine::time_kernel_with`]).
    pub fn time_kernel(
        &self,
        key: &ExpandedKey,
        kind: KernelKind,
        bytes: usize,
        reps: usize,
    ) -> Result<Vec<f64>, GpuError> {
        let o = &self.options;
        self.time_kernel_with(
            key,
            kind,
            o.kernel_variant,
            o.threads_per_block,
            bytes,
            reps,
        )
        .map(|t| t.seconds)
    }

    /// Kernel-only timing of any variant at any block size: `reps` launches of `kind` for
    /// `key` over `bytes` bytes in device memory (separate input and output), each timed
    /// with CUDA events after two warm-up launches, on a grid that fills the GPU.
    pub fn time_kernel_with(
        &self,
        key: &ExpandedKey,
        kind: KernelKind,
        variant: KernelVariant,
        threads: u32,
        bytes: usize,
        reps: usize,
    ) -> Result<KernelTiming, GpuError> {
        self.timed(|| {
            let rounds = key.rounds();
            let kernel = self.device.kernel(rounds, kind, variant)?;
            if threads > kernel.max_threads() || threads == 0 || !threads.is_multiple_of(32) {
                return Err(GpuError::BadOption(format!(
                    "{variant} {} runs 32..={} threads per block in steps of 32, not {threads}",
                    kind.name(),
                    kernel.max_threads()
                )));
            }
            let resident = kernel.resident_per_sm(threads)?;
            let registers = kernel.registers()?;
            let bytes = (bytes / 16 * 16).max(16);
            let ctx = self.device.context();
            let stream = Stream::new(ctx)?;
            let input = self.device_random(&stream, bytes)?;
            let mut output = DeviceBuffer::new(&stream, bytes)?;
            let keys = match kind {
                KernelKind::EcbDecrypt => key.dec_round_keys(),
                _ => key.enc_round_keys(),
            };
            let mut words = RoundKeyWords::new(keys);
            let nblocks = (bytes / 16) as u64;
            // GCM chunk kernels: records with a tag's room (16400 bytes), as in a message.
            let gcm = if kind.is_gcm() {
                if bytes > plan::GCM_MAX_PIECE {
                    return Err(GpuError::BadOption(format!(
                        "{} launches take at most {} GiB",
                        kind.name(),
                        plan::GCM_MAX_PIECE >> 30
                    )));
                }
                GcmLayout::new(&[0x5a; 12], GCM_CHUNK_LEN + 16)
            } else {
                None
            };
            let grid = plan::grid_size(
                nblocks,
                threads,
                crate::BLOCKS_PER_THREAD,
                self.device.info.sms.max(1) * resident,
                1,
            );
            let (start, end) = (Event::new(ctx)?, Event::new(ctx)?);
            let mut seconds = Vec::with_capacity(reps);
            for rep in 0..reps + 2 {
                stream.record(&start)?;
                let launch = Launch {
                    grid,
                    threads,
                    nblocks,
                    counter: (rep as u64, 0),
                    keys: &words,
                    gcm: gcm.as_ref(),
                };
                let operands = Operands::Separate {
                    input: &input,
                    output: &mut output,
                };
                kernel.launch(&stream, &launch, operands)?;
                stream.record(&end)?;
                let t = start.seconds_until(&end)?;
                if rep >= 2 {
                    seconds.push(t);
                }
            }
            words.wipe();
            stream.synchronize()?;
            Ok(KernelTiming {
                kernel: variant.kernel_name(128 + 32 * (rounds - 10), kind),
                registers,
                resident_per_sm: resident,
                grid,
                threads,
                seconds,
            })
        })
    }

    /// Simultaneous copy timing: `bytes` host-to-device on one stream while `bytes` go
    /// device-to-host on another (pinned memory), `reps` times after one warm-up. Seconds
    /// from the start of both to the end of the later; bandwidth = 2 * bytes / seconds.
    pub fn time_copy_both_ways(&self, bytes: usize, reps: usize) -> Result<Vec<f64>, GpuError> {
        self.timed(|| {
            let ctx = self.device.context();
            let (a, b) = (Stream::new(ctx)?, Stream::new(ctx)?);
            let mut up_dst = DeviceBuffer::new(&a, bytes)?;
            let down_src = self.device_random(&b, bytes)?;
            let mut up_src = PinnedBuffer::new(ctx, bytes)?;
            let mut down_dst = PinnedBuffer::new(ctx, bytes)?;
            let start = Event::new(ctx)?;
            let (b_done, end) = (Event::new(ctx)?, Event::new(ctx)?);
            let mut times = Vec::with_capacity(reps);
            for rep in 0..reps + 1 {
                a.record(&start)?;
                b.wait(&start)?;
                a.copy_to_device(&mut up_dst, 0, &mut up_src, bytes)?;
                b.copy_to_host(&mut down_dst, (&down_src, 0), bytes)?;
                b.record(&b_done)?;
                a.wait(&b_done)?;
                a.record(&end)?;
                let t = start.seconds_until(&end)?;
                if rep >= 1 {
                    times.push(t);
                }
            }
            a.synchronize()?;
            b.synchronize()?;
            Ok(times)
        })
    }

    /// Copy timing: `reps` copies of `bytes` bytes in `direction` (pinned host memory),
    /// each timed with CUDA events after one warm-up copy. Seconds per copy.
    pub fn time_copy(
        &self,
        direction: CopyDirection,
        bytes: usize,
        reps: usize,
    ) -> Result<Vec<f64>, GpuError> {
        self.timed(|| {
            let ctx = self.device.context();
            let stream = Stream::new(ctx)?;
            let a = self.device_random(&stream, bytes)?;
            let mut b = DeviceBuffer::new(&stream, bytes)?;
            let mut host = PinnedBuffer::new(ctx, bytes)?;
            let (start, end) = (Event::new(ctx)?, Event::new(ctx)?);
            let mut times = Vec::with_capacity(reps);
            for rep in 0..reps + 1 {
                stream.record(&start)?;
                match direction {
                    CopyDirection::HostToDevice => {
                        stream.copy_to_device(&mut b, 0, &mut host, bytes)?
                    }
                    CopyDirection::DeviceToHost => {
                        stream.copy_to_host(&mut host, (&a, 0), bytes)?
                    }
                    CopyDirection::DeviceToDevice => {
                        stream.copy_on_device((&mut b, 0), (&a, 0), bytes)?
                    }
                }
                stream.record(&end)?;
                let t = start.seconds_until(&end)?;
                if rep >= 1 {
                    times.push(t);
                }
            }
            stream.synchronize()?;
            Ok(times)
        })
    }

    /// Runs `f` under the panic guard.
    pub(super) fn timed<T>(&self, f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
        crate::driver::guard("timing on the GPU", f)
    }

    /// `bytes` of device memory on `stream`, filled with pseudo-random data (never time on
    /// zeros).
    pub(super) fn device_random(
        &self,
        stream: &Stream,
        bytes: usize,
    ) -> Result<DeviceBuffer, GpuError> {
        let mut buffer = DeviceBuffer::new(stream, bytes)?;
        let staging_len = bytes.clamp(16, 64 << 20);
        let mut staging = PinnedBuffer::new(self.device.context(), staging_len)?;
        pseudo_random_fill(staging.bytes_mut()?);
        let mut at = 0;
        while at < bytes {
            let len = staging_len.min(bytes - at);
            stream.copy_to_device(&mut buffer, at, &mut staging, len)?;
            at += len;
        }
        stream.synchronize()?;
        Ok(buffer)
    }
}

/// Fills `buf` with the CTR keystream of a fixed key: pseudo-random bytes at the CPU's AES speed.
fn pseudo_random_fill(buf: &mut [u8]) {
    buf.fill(0);
    let key = paraes_core::Key::new(&[0x25; 16])
        .expect("16 bytes")
        .expand();
    let job = Job::ctr(&key, [0; 16], 0);
    modes::apply(AesImpl::detect(), &job, buf).expect("CTR takes any length");
}
