//! Criterion bench behind the container's choice of MAC: keyed BLAKE3 (one thread and rayon)
//! beside POLYVAL (RustCrypto's and paraes' own VPCLMULQDQ one) and Poly1305 (RustCrypto) over one 4 MiB chunk, next to the CPU engine's
//! AES-128-CTR on the same buffer for scale; and paraes' GHASH on one 16 KiB record (the default
//! format's) and on 1 MiB, the hash that bounds AES-GCM wherever it is not stitched.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use paraes_core::container::{self, Recipient};
use paraes_core::pipeline::{self, StreamSpec, Tags, DEFAULT_CHUNK_SIZE};
use paraes_core::{CpuEngine, Direction, Engine, Job, Key, KeySize, Mode};
use std::hint::black_box;
use std::time::Duration;
use universal_hash::{KeyInit, UniversalHash};

const CHUNK: usize = 4 << 20;

fn macs(c: &mut Criterion) {
    let buf = vec![0x5au8; CHUNK];
    let key = [7u8; 32];
    let mut group = c.benchmark_group("mac-4MiB");
    group
        .throughput(Throughput::Bytes(CHUNK as u64))
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("blake3-keyed-1t", |b| {
        b.iter(|| black_box(blake3::keyed_hash(&key, &buf)))
    });
    group.bench_function("blake3-keyed-rayon", |b| {
        b.iter(|| {
            let mut hasher = blake3::Hasher::new_keyed(&key);
            hasher.update_rayon(&buf);
            black_box(hasher.finalize())
        })
    });
    group.bench_function("polyval-1t", |b| {
        b.iter(|| {
            let mut mac = polyval::Polyval::new(&[3u8; 16].into());
            mac.update_padded(&buf);
            black_box(mac.finalize())
        })
    });
    let ours = paraes_core::polyval::Polyval::new(&[3u8; 16]);
    group.bench_function("paraes-polyval-1t", |b| {
        b.iter(|| black_box(ours.hash(&buf, &[0; 16])))
    });
    group.bench_function("poly1305-1t", |b| {
        b.iter(|| {
            let mut mac = poly1305::Poly1305::new(&key.into());
            mac.update_padded(&buf);
            black_box(mac.finalize())
        })
    });
    let aes_key = Key::new(&key[..16]).expect("key").expand();
    let job = Job::ctr(&aes_key, [0; 16], 0);
    let mut data = buf.clone();
    for threads in [Some(1), None] {
        let engine = CpuEngine::new(threads).expect("cpu engine");
        group.bench_function(format!("aes128-ctr-{}t", engine.workers()), |b| {
            b.iter(|| engine.process(&job, &mut data).expect("process"))
        });
    }
    group.finish();
}

/// The pipeline from memory to a sink, without and with chunk tags: the cost of authentication.
fn pipeline_cost(c: &mut Criterion) {
    const LEN: usize = 256 << 20;
    let input = vec![0x33u8; LEN];
    let key = Key::new(&[9u8; 16]).expect("key");
    let params = container::BodyParams {
        mode: Mode::Ctr,
        key_size: KeySize::Aes128,
        chunk_size: DEFAULT_CHUNK_SIZE,
    };
    let (_, sealed) = container::seal_v2(params, &[Recipient::Key(key)]).expect("header");
    let engine = CpuEngine::new(None).expect("cpu engine");
    let mut group = c.benchmark_group("pipeline-256MiB-in-memory");
    group
        .throughput(Throughput::Bytes(LEN as u64))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let container = sealed.stream_spec(&engine, Direction::Encrypt);
    let raw = StreamSpec {
        tags: Tags::None,
        ..sealed.stream_spec(&engine, Direction::Encrypt)
    };
    for (label, spec) in [("raw-ctr", raw), ("container-ctr", container)] {
        group.bench_function(format!("{label}-{}t", engine.workers()), |b| {
            b.iter(|| {
                pipeline::run(&spec, &mut &input[..], &mut std::io::sink(), &|_| {})
                    .expect("pipeline")
            })
        });
    }
    group.finish();
}

/// The default format's body (v3, C2SP chunked encryption: AES-256-GCM per 16 KiB chunk) through
/// the pipeline from memory to a sink, sealed and opened: the path `paraes enc` and `dec` take.
fn pipeline_v3(c: &mut Criterion) {
    const LEN: usize = 256 << 20;
    let input = vec![0x33u8; LEN];
    let key = Key::new(&[9u8; 32]).expect("key");
    let (_, sealed) = container::seal(KeySize::Aes256, &[Recipient::Key(key)]).expect("header");
    let engine = CpuEngine::new(None).expect("cpu engine");
    let seal = sealed.stream_spec(&engine, Direction::Encrypt);
    let open = sealed.stream_spec(&engine, Direction::Decrypt);
    let mut body = Vec::with_capacity(LEN + LEN / 1024 + 64);
    pipeline::run(&seal, &mut &input[..], &mut body, &|_| {}).expect("pipeline");
    let mut group = c.benchmark_group("pipeline-v3-256MiB-in-memory");
    group
        .throughput(Throughput::Bytes(LEN as u64))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (label, spec, from) in [
        ("v3-gcm-seal", &seal, &input),
        ("v3-gcm-open", &open, &body),
    ] {
        group.bench_function(format!("{label}-{}t", engine.workers()), |b| {
            b.iter(|| {
                pipeline::run(spec, &mut &from[..], &mut std::io::sink(), &|_| {})
                    .expect("pipeline")
            })
        });
    }
    group.finish();
}

/// paraes' GHASH (POLYVAL over byte-reversed blocks) on one record of the default format and on
/// a long input, one thread.
fn ghash(c: &mut Criterion) {
    let ours = paraes_core::ghash::Ghash::new(&[3u8; 16]);
    for (label, len) in [("16KiB", 16 << 10), ("1MiB", 1 << 20)] {
        let buf = vec![0x5au8; len];
        let mut group = c.benchmark_group(format!("ghash-{label}"));
        group
            .throughput(Throughput::Bytes(len as u64))
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        group.bench_function("paraes-ghash-1t", |b| {
            b.iter(|| black_box(ours.gcm(black_box(&buf))))
        });
        group.finish();
    }
}

criterion_group!(benches, macs, ghash, pipeline_cost, pipeline_v3);
criterion_main!(benches);
