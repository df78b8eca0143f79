//! The GPU engine against the core's reference transform: random keys, ivs, offsets and
//! lengths (0, 1, 15, 16, 17, 1 MiB + 3, 256 MiB), every mode, key size and direction,
//! every CTR variant; every kernel variant, both sync modes and both kernel images (cubin,
//! PTX); with PARAES_GPU_BIG=1 also 8 GiB in one call. Needs a CUDA GPU: where there is none it prints a loud SKIPPED line
//! and passes; build it here (`cargo test -p paraes-gpu --release --no-run`) and run the
//! binary on a GPU machine.

use std::io::Write;

use paraes_core::seeded::SplitMix64;
use paraes_core::{modes, Direction, Engine, Implementation, Job, Key, Mode};
use paraes_gpu::{CtrVariant, GpuEngine, GpuOptions, ImageChoice, KernelVariant, SyncMode};

const MIB: usize = 1 << 20;

/// The engine, or None after printing why the test is skipped.
fn engine(options: GpuOptions) -> Option<GpuEngine> {
    match GpuEngine::new(options) {
        Ok(engine) => Some(engine),
        Err(e) if e.is_unavailable() => {
            // Straight to the stderr handle: the test harness captures eprintln!, and this
            // line must be seen even when the test passes.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED: no CUDA driver/device: {e} ***\n"
            );
            None
        }
        Err(e) => panic!("a GPU is present but the engine failed to start: {e}"),
    }
}

/// Checks one job on one buffer against the reference, for every CTR variant.
fn check(
    engine: &GpuEngine,
    rng: &mut SplitMix64,
    mode: Mode,
    direction: Direction,
    bits: usize,
    len: usize,
) {
    let key_bytes: [u8; 32] = rng.array();
    let key = Key::new(&key_bytes[..bits / 8]).unwrap().expand();
    let mut iv: [u8; 16] = rng.array();
    if rng.next_u64().is_multiple_of(4) {
        // Counters that carry across 2^64 or wrap at 2^128 inside the buffer.
        iv[8..].copy_from_slice(&[0xff; 8]);
        if rng.next_u64().is_multiple_of(2) {
            iv[..8].copy_from_slice(&[0xff; 8]);
        }
    }
    let (len, offset) = match mode {
        Mode::Ecb => (len / 16 * 16, (rng.next_u64() % (1 << 30)) * 16),
        Mode::Ctr => (len, rng.next_u64() % (1 << 40)),
    };
    let job = Job {
        mode,
        direction,
        key: &key,
        iv,
        offset,
    };
    let mut data = vec![0u8; len];
    rng.fill(&mut data);
    let mut expect = data.clone();
    let reference = if len <= 4096 {
        Implementation::Portable
    } else {
        Implementation::detect()
    };
    modes::apply(reference, &job, &mut expect).unwrap();
    let variants: &[CtrVariant] = match mode {
        Mode::Ecb => &[CtrVariant::Auto],
        Mode::Ctr => &CtrVariant::ALL,
    };
    for &variant in variants {
        let mut got = data.clone();
        engine.process_with(&job, &mut got, variant).unwrap();
        assert!(
            got == expect,
            "{mode:?} {direction:?} AES-{bits} len {len} offset {offset} CTR {variant}: \
             GPU output differs from the reference (first difference at byte {:?})",
            got.iter().zip(&expect).position(|(a, b)| a != b)
        );
    }
}

#[test]
fn gpu_engine_matches_the_reference() {
    let Some(engine) = engine(GpuOptions::default()) else {
        return;
    };
    eprintln!("testing on {}: {}", engine.device_info(), engine.name());
    let mut rng = SplitMix64::new(0x5eed_1234_abcd_ef01);
    for len in [0, 1, 15, 16, 17, 4096 + 5, MIB + 3, 256 * MIB] {
        for bits in [128, 192, 256] {
            for (mode, direction) in [
                (Mode::Ecb, Direction::Encrypt),
                (Mode::Ecb, Direction::Decrypt),
                (Mode::Ctr, Direction::Encrypt),
                (Mode::Ctr, Direction::Decrypt),
            ] {
                check(&engine, &mut rng, mode, direction, bits, len);
            }
        }
    }
    eprintln!("CTR variant chosen by auto: {}", engine.ctr_variant());
}

/// Many small pieces over two streams, threads per block other than the default: the
/// pipeline's rotation, the per-piece counters and the grid-stride tails.
#[test]
fn small_pieces_and_odd_geometry_match() {
    let options = GpuOptions {
        streams: 2,
        min_piece: 16,
        max_piece: 4096 + 16 * 7,
        threads_per_block: 96,
        ..GpuOptions::default()
    };
    let Some(engine) = engine(options) else {
        return;
    };
    let mut rng = SplitMix64::new(77);
    for len in [17, 4096 * 3 + 1, MIB + 3] {
        for bits in [128, 256] {
            for mode in [Mode::Ecb, Mode::Ctr] {
                for direction in [Direction::Encrypt, Direction::Decrypt] {
                    check(&engine, &mut rng, mode, direction, bits, len);
                }
            }
        }
    }
}

/// The Engine trait path, chunk by chunk as the pipeline calls it, equals one call.
#[test]
fn chunked_calls_equal_one_call() {
    let Some(engine) = engine(GpuOptions::default()) else {
        return;
    };
    let mut rng = SplitMix64::new(99);
    let key = Key::new(&rng.array::<16>()).unwrap().expand();
    let iv: [u8; 16] = rng.array();
    let mut data = vec![0u8; 5 * MIB + 11];
    rng.fill(&mut data);
    let job = Job {
        mode: Mode::Ctr,
        direction: Direction::Encrypt,
        key: &key,
        iv,
        offset: 0,
    };
    let mut whole = data.clone();
    engine.process(&job, &mut whole).unwrap();
    let mut chunked = data.clone();
    let mut at = 0;
    for piece in chunked.chunks_mut(MIB - 5) {
        engine.process(&job.advanced(at as u64), piece).unwrap();
        at += piece.len();
    }
    assert!(whole == chunked);
    let mut expect = data;
    modes::apply(Implementation::detect(), &job, &mut expect).unwrap();
    assert!(whole == expect);
}

/// Every kernel variant with both sync modes, and the base kernels from the PTX as well as
/// the cubin, against the reference: the A/B runs of gpu_bench are only worth reading if
/// every variant is correct on the GPU too (kernels/aes.cu is also checked on the CPU by
/// kernel_source_on_cpu). Includes CTR launches that straddle a multiple of 2^32 counter
/// blocks (the R1 variants' general path) and ones that do not (their fast path).
#[test]
fn every_kernel_variant_sync_mode_and_image_matches() {
    let mut configs: Vec<(KernelVariant, SyncMode, ImageChoice)> = Vec::new();
    for variant in KernelVariant::ALL {
        for sync in [SyncMode::Spin, SyncMode::Blocking] {
            configs.push((variant, sync, ImageChoice::Auto));
        }
    }
    configs.push((KernelVariant::Base, SyncMode::Spin, ImageChoice::Ptx));
    configs.push((KernelVariant::PairR1, SyncMode::Blocking, ImageChoice::Ptx));
    let mut rng = SplitMix64::new(0xa1b2_c3d4);
    for (variant, sync, image) in configs {
        let options = GpuOptions {
            kernel_variant: variant,
            sync,
            image,
            threads_per_block: 256,
            max_piece: 4 * MIB,
            ..GpuOptions::default()
        };
        let Some(engine) = engine(options) else {
            return;
        };
        eprintln!("{}", engine.name());
        if image == ImageChoice::Ptx {
            assert_eq!(engine.module_report().image, paraes_gpu::KernelImage::Ptx);
        }
        for len in [17, MIB + 3, 24 * MIB + 5] {
            for bits in [128, 256] {
                for (mode, direction) in [
                    (Mode::Ecb, Direction::Encrypt),
                    (Mode::Ecb, Direction::Decrypt),
                    (Mode::Ctr, Direction::Encrypt),
                ] {
                    check(&engine, &mut rng, mode, direction, bits, len);
                }
            }
        }
        // CTR pieces whose counters cross 2^32 blocks in the low word, and pieces that do not.
        let key = Key::new(&rng.array::<16>()).unwrap().expand();
        for low in [0xffff_0000u32, 0x0000_1000] {
            let mut iv: [u8; 16] = rng.array();
            iv[12..].copy_from_slice(&low.to_be_bytes());
            let job = Job {
                mode: Mode::Ctr,
                direction: Direction::Encrypt,
                key: &key,
                iv,
                offset: 0,
            };
            let mut data = vec![0u8; 3 * MIB + 7];
            rng.fill(&mut data);
            let mut expect = data.clone();
            modes::apply(Implementation::detect(), &job, &mut expect).unwrap();
            for ctr in [CtrVariant::Fused, CtrVariant::Keystream] {
                let mut got = data.clone();
                engine.process_with(&job, &mut got, ctr).unwrap();
                assert!(
                    got == expect,
                    "{} CTR {ctr} from low word {low:#x}",
                    engine.name()
                );
            }
        }
    }
}

/// 8 GiB in one call (more than 2^32 bytes, many pieces, counters past 2^28 blocks), CTR
/// and ECB, AES-128: only with PARAES_GPU_BIG=1 (about 24 GiB of host memory, 30-60 s).
#[test]
fn eight_gib_in_one_call_matches() {
    if std::env::var_os("PARAES_GPU_BIG").is_none_or(|v| v != "1") {
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED: the 8 GiB identity test runs only with PARAES_GPU_BIG=1 ***\n"
        );
        return;
    }
    let Some(engine) = engine(GpuOptions::default()) else {
        return;
    };
    let mut rng = SplitMix64::new(8);
    let key = Key::new(&rng.array::<16>()).unwrap().expand();
    let len = 8usize << 30;
    let mut data = vec![0u8; len];
    data.chunks_mut(1 << 24)
        .for_each(|c| SplitMix64::new(c.len() as u64 ^ c.as_ptr() as u64).fill(c));
    for (mode, offset) in [(Mode::Ctr, 5u64), (Mode::Ecb, 0)] {
        let job = Job {
            mode,
            direction: Direction::Encrypt,
            key: &key,
            iv: rng.array(),
            offset,
        };
        let mut expect = data.clone();
        modes::apply(Implementation::detect(), &job, &mut expect).unwrap();
        let mut got = data.clone();
        let start = std::time::Instant::now();
        engine.process(&job, &mut got).unwrap();
        eprintln!(
            "{mode:?} 8 GiB on the GPU in {:.2} s",
            start.elapsed().as_secs_f64()
        );
        assert!(
            got == expect,
            "{mode:?} 8 GiB: first difference at byte {:?}",
            got.iter().zip(&expect).position(|(a, b)| a != b)
        );
    }
}
