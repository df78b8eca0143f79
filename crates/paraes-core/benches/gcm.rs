//! Criterion bench of format v3's body on one core: 1 MiB as 64 AES-256-GCM chunks of 16 KiB
//! (C2SP chunked encryption), CTR and GHASH apart, the chunk seal as CTR then GHASH and as the
//! stitched kernel (`ChunkCipher::seal`, CTR and GHASH in one pass where the CPU has VAES-512
//! and VPCLMULQDQ), and the chunk open both ways, beside AES-256-CTR over the same bytes
//! (issue 26's target: the chunked GCM body at >= 0.6x paraes's own CTR); and the CPU engine's
//! records job over 64 MiB, out of place beside in place. Run with `cargo bench
//! -p paraes-core --bench gcm`; put `openssl speed -evp aes-256-gcm -bytes 16384` beside it in
//! the same session (docs/RESULTS.md).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use paraes_core::cobblestone::{MessageKeys, Variant, CHUNK_LEN, RECORD_LEN, SALT_LEN};
use paraes_core::engine::RecordsJob;
use paraes_core::ghash::Ghash;
use paraes_core::{Counters, CpuEngine, Direction, Engine, Job, Key};
use std::hint::black_box;
use std::time::Duration;

const LEN: usize = 1 << 20;

fn gcm_body(c: &mut Criterion) {
    let engine = CpuEngine::new(Some(1)).expect("one thread");
    let key = Key::new(&[0x42u8; 32]).expect("key").expand();
    let stream = Job::ctr(&key, [0; 16], 0);
    let chunked = stream.with_counters(Counters::GcmChunks {
        base_nonce: [7; 12],
        stride: CHUNK_LEN,
    });
    let keys = MessageKeys::derive(Variant::Cobblestone256, &[1; 32], &[2; SALT_LEN], b"")
        .expect("a 32-byte key");
    let cipher = keys.chunks();
    let ghash = Ghash::new(&[0x5a; 16]);
    let mut buf = vec![0u8; LEN];
    let mut group = c.benchmark_group(format!("aes256-one-core-{}KiB", LEN >> 10));
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .throughput(Throughput::Bytes(LEN as u64));
    group.bench_function("ctr (stream counter)", |b| {
        b.iter(|| engine.process(&stream, &mut buf).expect("ctr"))
    });
    group.bench_function("ctr (gcm chunk counters)", |b| {
        b.iter(|| engine.process(&chunked, &mut buf).expect("ctr"))
    });
    group.bench_function("ghash (16 KiB chunks)", |b| {
        b.iter(|| {
            for chunk in buf.chunks(CHUNK_LEN) {
                black_box(ghash.gcm(chunk));
            }
        })
    });
    group.bench_function("gcm seal (ctr + ghash + E(J0) per chunk)", |b| {
        b.iter(|| {
            for (i, chunk) in buf.chunks_mut(CHUNK_LEN).enumerate() {
                cipher.ctr(i as u64, chunk);
                black_box(cipher.tag(i as u64, chunk));
            }
        })
    });
    group.bench_function("gcm seal stitched (ChunkCipher::seal)", |b| {
        b.iter(|| {
            for (i, chunk) in buf.chunks_mut(CHUNK_LEN).enumerate() {
                black_box(cipher.seal(i as u64, chunk));
            }
        })
    });
    // Opening needs authentic chunks each time: every iteration opens a fresh copy of one
    // sealed MiB (the copy is made outside the timed part).
    let tags: Vec<[u8; 16]> = buf
        .chunks_mut(CHUNK_LEN)
        .enumerate()
        .map(|(i, chunk)| cipher.seal(i as u64, chunk))
        .collect();
    let sealed = buf.clone();
    group.bench_function("gcm open (verify, then ctr per chunk)", |b| {
        b.iter_batched_ref(
            || sealed.clone(),
            |data| {
                for ((i, chunk), tag) in data.chunks_mut(CHUNK_LEN).enumerate().zip(&tags) {
                    assert!(cipher.verify(i as u64, chunk, tag));
                    cipher.ctr(i as u64, chunk);
                }
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("gcm open stitched (ChunkCipher::open)", |b| {
        b.iter_batched_ref(
            || sealed.clone(),
            |data| {
                for ((i, chunk), tag) in data.chunks_mut(CHUNK_LEN).enumerate().zip(&tags) {
                    cipher.open(i as u64, chunk, tag).expect("authentic");
                }
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// The CPU engine's records job on one thread, out of place (input in, records out: what the
/// hybrid's CPU share, MPI's scatter ranks and `pipeline::seal` run) beside in place (the
/// plaintext already in its records' data slots: what `paraes enc`'s workers run), over
/// 64 MiB, more than the caches hold, so the passes over memory show.
fn records_job(c: &mut Criterion) {
    const BIG: usize = 64 << 20;
    let engine = CpuEngine::new(Some(1)).expect("one thread");
    let keys = MessageKeys::derive(Variant::Cobblestone256, &[1; 32], &[2; SALT_LEN], b"")
        .expect("a 32-byte key");
    let cipher = keys.chunks();
    let seal = cipher.records_job(Direction::Encrypt, 0);
    let plaintext: Vec<u8> = (0..BIG).map(|i| (i * 31 % 251) as u8).collect();
    let chunks = BIG / CHUNK_LEN + 1;
    let mut records = vec![0u8; RecordsJob::records_len(BIG, chunks).expect("a length")];
    let mut group = c.benchmark_group(format!("aes256-records-job-one-thread-{}MiB", BIG >> 20));
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4))
        .sample_size(10)
        .throughput(Throughput::Bytes(BIG as u64));
    group.bench_function("seal out of place", |b| {
        b.iter(|| {
            engine
                .process_records(&seal, &plaintext, &mut records)
                .expect("seal")
        })
    });
    group.bench_function("seal in place", |b| {
        b.iter_batched_ref(
            || {
                let mut slots = records.clone();
                for (k, piece) in plaintext.chunks(CHUNK_LEN).enumerate() {
                    slots[k * RECORD_LEN..][..piece.len()].copy_from_slice(piece);
                }
                slots
            },
            |slots| engine.process_records_in_place(&seal, slots).expect("seal"),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, gcm_body, records_job);
criterion_main!(benches);
