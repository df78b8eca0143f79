//! Criterion benches of the Engine seam: the CPU engine with each AES implementation (one thread,
//! and all threads with the fastest one) beside the RustCrypto `aes` + `ctr` oracle crates, for
//! AES-128/256, CTR and ECB, over 16 KiB, 1 MiB, 4 MiB (in L3, not L2) and 64 MiB buffers.
//!
//! `benches/core-vs-openssl.sh` runs this together with `openssl speed` for the same-run baseline.

use aes::cipher::{inout::InOutBuf, BlockEncrypt, KeyInit, KeyIvInit, StreamCipher};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use paraes_core::{AesImpl, CpuEngine, Direction, Engine, Job, Key, KeySize, Mode};
use std::time::Duration;

const SIZES: [usize; 4] = [16 << 10, 1 << 20, 4 << 20, 64 << 20];

/// The engines to compare: each implementation on one thread, the fastest on all threads.
fn engines() -> Vec<(String, CpuEngine)> {
    let mut engines: Vec<(String, CpuEngine)> = AesImpl::available()
        .into_iter()
        .map(|imp| {
            let engine = CpuEngine::with_aes_impl(imp, Some(1)).expect("available");
            (format!("paraes-{imp}-1t"), engine)
        })
        .collect();
    let all = CpuEngine::with_aes_impl(AesImpl::fastest(), None).expect("available");
    engines.push((format!("paraes-{}-{}t", all.aes_impl(), all.workers()), all));
    engines
}

/// The RustCrypto crates on the same job.
fn rustcrypto(mode: Mode, key: &[u8], buf: &mut [u8]) {
    fn run<C>(mode: Mode, key: &[u8], buf: &mut [u8])
    where
        C: BlockEncrypt + KeyInit + aes::cipher::BlockCipher<BlockSize = aes::cipher::consts::U16>,
        ctr::Ctr128BE<C>: KeyIvInit + StreamCipher,
    {
        match mode {
            Mode::Ctr => ctr::Ctr128BE::<C>::new_from_slices(key, &[0; 16])
                .expect("key length")
                .apply_keystream(buf),
            Mode::Ecb => {
                let (blocks, _) = InOutBuf::from(buf).into_chunks();
                C::new_from_slice(key)
                    .expect("key length")
                    .encrypt_blocks_inout(blocks);
            }
        }
    }
    match key.len() {
        16 => run::<aes::Aes128>(mode, key, buf),
        _ => run::<aes::Aes256>(mode, key, buf),
    }
}

fn engine_seam(c: &mut Criterion) {
    let engines = engines();
    for mode in [Mode::Ctr, Mode::Ecb] {
        for size in [KeySize::Aes128, KeySize::Aes256] {
            let raw_key = vec![0x42u8; size.bytes()];
            let key = Key::new(&raw_key).expect("key").expand();
            let job = Job::new(mode, Direction::Encrypt, &key, [0; 16], 0);
            let mut group = c.benchmark_group(format!(
                "{}-aes{}",
                format!("{mode:?}").to_lowercase(),
                size.bits()
            ));
            group
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(3));
            for len in SIZES {
                let mut buf = vec![0u8; len];
                group.throughput(Throughput::Bytes(len as u64));
                group.sample_size(if len >= 64 << 20 { 10 } else { 50 });
                for (label, engine) in &engines {
                    group.bench_function(BenchmarkId::new(label, len), |b| {
                        b.iter(|| engine.process(&job, &mut buf).expect("process"))
                    });
                }
                group.bench_function(BenchmarkId::new("rustcrypto", len), |b| {
                    b.iter(|| rustcrypto(mode, &raw_key, &mut buf))
                });
            }
            group.finish();
        }
    }
}

criterion_group!(benches, engine_seam);
criterion_main!(benches);
