//! Section 1: correctness, the GPU engine against the CPU engine (every mode, key size,
//! direction and CTR variant, Stream and GCM chunk counters).

use paraes_core::{Counters, CpuEngine, Direction, Engine, Job, KeySize, Mode};
use paraes_gpu::{CtrVariant, GpuEngine};
use serde_json::{json, Value};

use crate::args::Args;
use crate::common::{make_key, random, save, MIB};

/// Checks the GPU engine's output against the CPU engine's, says each mismatch, records the
/// counts in `report` (saved), and returns the mismatches.
pub(crate) fn check(args: &Args, report: &mut Value, gpu: &GpuEngine, cpu: &CpuEngine) -> usize {
    let mut failures = 0;
    let mut checks = 0;
    let lens: &[usize] = if args.quick {
        &[1, 17, MIB + 3]
    } else {
        &[1, 17, 4096 + 5, MIB + 3, 64 * MIB + 5]
    };
    for (k, size) in KeySize::ALL.into_iter().enumerate() {
        let key = make_key(size, 100 + k as u64);
        for &len in lens {
            // GCM chunk counters (format v3 bodies): records with a tag's room.
            let gcm = Counters::GcmChunks {
                base_nonce: random(12, len as u64 ^ 0x6c).try_into().unwrap(),
                stride: paraes_core::engine::GCM_CHUNK_LEN + 16,
            };
            for (mode, direction, variant, counters) in [
                (
                    Mode::Ecb,
                    Direction::Encrypt,
                    CtrVariant::Auto,
                    Counters::Stream,
                ),
                (
                    Mode::Ecb,
                    Direction::Decrypt,
                    CtrVariant::Auto,
                    Counters::Stream,
                ),
                (
                    Mode::Ctr,
                    Direction::Encrypt,
                    CtrVariant::Fused,
                    Counters::Stream,
                ),
                (
                    Mode::Ctr,
                    Direction::Decrypt,
                    CtrVariant::Keystream,
                    Counters::Stream,
                ),
                (Mode::Ctr, Direction::Encrypt, CtrVariant::Fused, gcm),
                (Mode::Ctr, Direction::Decrypt, CtrVariant::Keystream, gcm),
            ] {
                let len = if mode == Mode::Ecb {
                    len / 16 * 16
                } else {
                    len
                };
                let offset = if mode == Mode::Ecb {
                    16 * 12345
                } else {
                    12345 * 16 + 7
                };
                let iv: [u8; 16] = random(16, len as u64).try_into().unwrap();
                let job = Job::new(mode, direction, &key, iv, offset).with_counters(counters);
                let data = random(len, 7 + len as u64);
                let mut want = data.clone();
                cpu.process(&job, &mut want).unwrap();
                let mut got = data;
                let ok = gpu
                    .process_with(&job, &mut got, variant)
                    .map(|_| got == want);
                checks += 1;
                if !matches!(ok, Ok(true)) {
                    failures += 1;
                    say!(
                        "MISMATCH: AES-{} {mode:?} {direction:?} CTR {variant} {counters:?} len {len}: {ok:?}",
                        size.bits()
                    );
                }
            }
        }
    }
    say!(
        "correctness: {}/{checks} checks identical to the CPU engine",
        checks - failures
    );
    report["correctness"] = json!({ "checks": checks, "failures": failures });
    save(args, report);
    failures
}
