//! The GPU engine's records job (`Engine::process_records`: Cobblestone-128 and -256 sealed and
//! opened by the device's records kernels, CTR, GHASH and tags there) byte-identical to the CPU
//! engine's at the edge sizes of a chunk and of a piece, at chunk indices across 2^32 and past
//! 2^40; and a tampered chunk refused with the CPU engine's error, the output left as it was.
//! On the CUDA stand-in where there is no driver; it never skips.

#[path = "support/standin.rs"]
mod standin;

use paraes_core::cobblestone::{MessageKeys, Variant, CHUNK_LEN};
use paraes_core::cpu::CpuEngine;
use paraes_core::engine::RecordsJob;
use paraes_core::seeded::SplitMix64;
use paraes_core::{Direction, Engine, RecordsError};
use paraes_gpu::GpuEngine;

/// The engine on this machine's driver (the stand-in where there is none), with pieces of 2
/// records, so that several pieces run even for small messages.
fn gpu() -> GpuEngine {
    standin::engine_with_record_pieces(2)
}

#[test]
fn records_match_the_cpu_engine_and_tampering_leaves_the_output_alone() {
    let gpu = gpu();
    assert!(
        gpu.name().contains("GCM tags on the device"),
        "{}",
        gpu.name()
    );
    let cpu = CpuEngine::new(Some(1)).unwrap();
    let mut rng = SplitMix64::new(0x6c0b);
    let sizes = [
        0usize,
        1,
        15,
        16,
        16383,
        16384,
        16385,
        2 * 16384,
        5 * 16384 - 7,
        5 * 16384,
    ];
    let firsts = [0u64, (1 << 32) - 2, (1 << 40) + 12345];
    for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
        let bits = variant.key_size().bytes() * 8;
        let ik = rng.bytes(bits / 8);
        let salt: [u8; 24] = rng.array();
        let cipher = MessageKeys::derive(variant, &ik, &salt, b"gpu engine records")
            .unwrap()
            .chunks();
        for (i, &len) in sizes.iter().enumerate() {
            let first = firsts[i % firsts.len()];
            let what = format!("Cobblestone-{bits}, {len} bytes, from chunk {first}");
            let seal = cipher.records_job(Direction::Encrypt, first);
            let open = cipher.records_job(Direction::Decrypt, first);
            assert!(gpu.runs_records(&seal) && gpu.runs_records(&open), "{what}");
            let plaintext = rng.bytes(len);
            let chunks = if len == 0 { 0 } else { len.div_ceil(CHUNK_LEN) };
            let records_len = RecordsJob::records_len(len, chunks).unwrap();
            let mut expect = vec![0u8; records_len];
            cpu.process_records(&seal, &plaintext, &mut expect).unwrap();
            let mut records = vec![0u8; records_len];
            gpu.process_records(&seal, &plaintext, &mut records)
                .unwrap();
            assert!(
                records == expect,
                "{what}: sealed records differ from the CPU engine's"
            );
            let mut opened = vec![0xa5u8; len];
            gpu.process_records(&open, &records, &mut opened).unwrap();
            assert!(opened == plaintext, "{what}: opened plaintext differs");
            if chunks == 0 {
                continue;
            }
            // One byte of the last chunk's data or tag: the CPU engine's error, output untouched.
            let mut bad = records.clone();
            let at = (rng.next_u64() as usize) % bad.len();
            bad[at] ^= 0x10;
            let chunk = (at / (CHUNK_LEN + 16)) as u64;
            let mut cpu_out = vec![0x5au8; len];
            let cpu_err = cpu.process_records(&open, &bad, &mut cpu_out).unwrap_err();
            let mut out = vec![0x5au8; len];
            let err = gpu.process_records(&open, &bad, &mut out).unwrap_err();
            assert!(
                matches!(err, RecordsError::Tampered(k) if k == first + chunk),
                "{what}: {err}"
            );
            assert_eq!(err.to_string(), cpu_err.to_string(), "{what}");
            assert!(
                out.iter().all(|&b| b == 0x5a),
                "{what}: output written on a failed open"
            );
        }
    }
}

/// The benchmark's records timing (issue 38's kernel rows): each step of both variants runs its
/// kernels, times every repetition, and passes its own checks of the result (the first record
/// against the CPU's Cobblestone, every tag verified, the opened bytes equal to the plaintext).
#[test]
fn records_timing_runs_each_step_and_checks_its_result() {
    let gpu = gpu();
    let mut rng = SplitMix64::new(0x7173);
    for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
        let bits = variant.key_size().bytes() * 8;
        let ik = rng.bytes(bits / 8);
        let cipher = MessageKeys::derive(variant, &ik, &rng.array(), b"timing")
            .unwrap()
            .chunks();
        for step in paraes_gpu::RecordsStep::ALL {
            let timing = gpu
                .time_records(&cipher, step, 3 * CHUNK_LEN + 100, 2)
                .unwrap_or_else(|e| panic!("Cobblestone-{bits} {step:?}: {e}"));
            assert_eq!(timing.seconds.len(), 2, "{step:?}");
            assert!(timing.seconds.iter().all(|t| *t >= 0.0), "{step:?}");
            let expect = match step {
                paraes_gpu::RecordsStep::Seal => format!("aes{bits}_gcm_seal"),
                paraes_gpu::RecordsStep::Open => {
                    format!("aes{bits}_gcm_verify+aes{bits}_gcm_open")
                }
                paraes_gpu::RecordsStep::VerifyOnly => format!("aes{bits}_gcm_verify"),
                paraes_gpu::RecordsStep::CtrOnly => format!("aes{bits}_gcm_open"),
            };
            assert_eq!(timing.kernel, expect);
            assert!(
                timing.threads.is_multiple_of(32) && timing.grid >= 1,
                "{timing:?}"
            );
        }
    }
}
