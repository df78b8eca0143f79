//! Byte identity with the CPU engine at the sizes where an engine that cuts its work (the
//! hybrid engine) could go wrong: 0, 1, a GCM chunk (16 KiB) +-1, the pipeline's 4 MiB window
//! +-1 and several windows, every key size, for CTR (stream and GCM chunk counters) and ECB
//! jobs and for records jobs sealed and opened.

use crate::aes::AesImpl;
use crate::engine::{Direction, Engine, Job, RecordsJob, GCM_CHUNK_LEN, GCM_RECORD_LEN};
use crate::key::{ExpandedKey, Key, KeySize};
use crate::seeded::SplitMix64;
use crate::CpuEngine;

/// The pipeline's window (crate::pipeline::parallel takes 4 MiB at a time).
pub const WINDOW: usize = 4 << 20;

/// The sizes the issue names: 0, 1, 16 KiB +-1, a window +-1 and several windows.
pub const SIZES: [usize; 9] = [
    0,
    1,
    GCM_CHUNK_LEN - 1,
    GCM_CHUNK_LEN,
    GCM_CHUNK_LEN + 1,
    WINDOW - 1,
    WINDOW,
    WINDOW + 1,
    3 * WINDOW + 5,
];

/// A random key of `size` and its GHASH key.
fn key_and_hash(rng: &mut SplitMix64, size: KeySize) -> (ExpandedKey, [u8; 16]) {
    let expanded = Key::new(&rng.bytes(size.bytes())).unwrap().expand();
    let mut hash_key = [0u8; 16];
    AesImpl::Portable.encrypt_blocks(&expanded, &mut hash_key);
    (expanded, hash_key)
}

/// Checks that `engine` gives a one-thread portable CPU engine's bytes for CTR (stream and GCM
/// chunk counters) and ECB jobs at every size of [`SIZES`] and key size, from unaligned stream
/// positions, and for sealing and opening records from just below chunk index 2^32 (every
/// key size; an engine that runs no records job for a key is still asked to, as the hybrid
/// engine's CPU engine runs them all); panics at the first difference.
pub fn check_edge_sizes(engine: &dyn Engine, seed: u64) {
    let rng = &mut SplitMix64::new(seed);
    let reference = CpuEngine::with_aes_impl(AesImpl::Portable, Some(1)).unwrap();
    for size in KeySize::ALL {
        let (key, hash_key) = key_and_hash(rng, size);
        let counter: [u8; 16] = rng.array();
        let base_nonce: [u8; 12] = rng.array();
        for len in SIZES {
            let ecb_len = len / 16 * 16;
            let jobs = [
                (Job::ctr(&key, counter, 12_345), len),
                (Job::gcm_chunks(&key, base_nonce, GCM_RECORD_LEN, 7), len),
                (Job::ecb(&key, Direction::Encrypt).at(4096), ecb_len),
                (Job::ecb(&key, Direction::Decrypt), ecb_len),
            ];
            for (job, len) in jobs {
                let data = rng.bytes(len);
                let (mut ours, mut theirs) = (data.clone(), data);
                engine.process(&job, &mut ours).unwrap();
                reference.process(&job, &mut theirs).unwrap();
                assert!(ours == theirs, "{:?} {:?} of {len} bytes", size, job.mode);
            }
            let chunks = len.div_ceil(GCM_CHUNK_LEN).max(1);
            let records_len = RecordsJob::records_len(len, chunks).unwrap();
            let seal = RecordsJob::new(
                Direction::Encrypt,
                &key,
                &hash_key,
                base_nonce,
                (1 << 32) - 3,
            );
            let plain = rng.bytes(len);
            let (mut ours, mut theirs) = (vec![0; records_len], vec![1; records_len]);
            engine.process_records(&seal, &plain, &mut ours).unwrap();
            reference
                .process_records(&seal, &plain, &mut theirs)
                .unwrap();
            assert!(ours == theirs, "{size:?} seal of {len} bytes");
            let open = RecordsJob {
                direction: Direction::Decrypt,
                ..seal
            };
            let mut opened = vec![0; len];
            engine.process_records(&open, &ours, &mut opened).unwrap();
            assert!(opened == plain, "{size:?} open of {len} bytes");
        }
    }
}
