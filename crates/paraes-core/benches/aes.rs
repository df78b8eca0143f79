//! Criterion bench of the hardware AES kernels alone: every x86 implementation on one thread,
//! CTR and ECB (both directions), AES-128/256, on a buffer with a partial last batch and on 1 MiB.
//!
//! Used to check that a change to `aes/x86.rs` costs no speed: build the bench before and after,
//! run both binaries alternately on the same machine (see docs/RESULTS.md).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use paraes_core::{AesImpl, CpuEngine, Direction, Engine, Job, Key, KeySize, Mode};
use std::time::Duration;

/// A size with a partial last batch (4 KiB + 3 blocks) and one large enough to stream.
const SIZES: [usize; 2] = [4096 + 48, 1 << 20];

fn kernels(c: &mut Criterion) {
    let implementations: Vec<AesImpl> = AesImpl::available()
        .into_iter()
        .filter(|imp| *imp != AesImpl::Portable)
        .collect();
    let cases = [
        ("ctr", Mode::Ctr, Direction::Encrypt),
        ("ecb-enc", Mode::Ecb, Direction::Encrypt),
        ("ecb-dec", Mode::Ecb, Direction::Decrypt),
    ];
    for (name, mode, direction) in cases {
        for size in [KeySize::Aes128, KeySize::Aes256] {
            let key = Key::new(&vec![0x42u8; size.bytes()]).expect("key").expand();
            let job = Job::new(mode, direction, &key, [0xff; 16], 0);
            let mut group = c.benchmark_group(format!("{name}-aes{}", size.bits()));
            group
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2))
                .sample_size(30);
            for len in SIZES {
                let mut buf = vec![0u8; len];
                group.throughput(Throughput::Bytes(len as u64));
                for imp in &implementations {
                    let engine = CpuEngine::with_aes_impl(*imp, Some(1)).expect("available");
                    group.bench_function(BenchmarkId::new(imp.name(), len), |b| {
                        b.iter(|| engine.process(&job, &mut buf).expect("process"))
                    });
                }
            }
            group.finish();
        }
    }
}

criterion_group!(benches, kernels);
criterion_main!(benches);
