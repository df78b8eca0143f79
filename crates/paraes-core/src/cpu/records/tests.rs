use super::*;
use crate::cobblestone::{ChunkCipher, MessageKeys, Variant, MAX_CHUNKS, SALT_LEN};
use crate::Engine;

const G: usize = GCM_CHUNK_LEN;
const R: usize = GCM_RECORD_LEN;
const T: usize = GCM_TAG_LEN;

fn cipher(variant: Variant) -> ChunkCipher {
    let input_key = vec![0x3c; variant.key_size().bytes()];
    MessageKeys::derive(variant, &input_key, &[7; SALT_LEN], b"cpu")
        .unwrap()
        .chunks()
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + i / 251) as u8).collect()
}

/// Engines on `imp`: single-threaded, split into one record per piece, and the default split.
fn engines(imp: AesImpl) -> Vec<CpuEngine> {
    vec![
        CpuEngine::with_aes_impl(imp, Some(1)).unwrap(),
        CpuEngine::with_aes_impl(imp, Some(3))
            .unwrap()
            .with_split(0, 4096),
        CpuEngine::with_aes_impl(imp, Some(2)).unwrap(),
    ]
}

/// The records of `chunks` chunks whose plaintext is `plain`, sealed one by one by
/// [`ChunkCipher::seal`] from chunk `first` on.
fn sealed_by_the_cipher(cipher: &ChunkCipher, first: u64, plain: &[u8], chunks: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for k in 0..chunks {
        let piece = &plain[(k * G).min(plain.len())..((k + 1) * G).min(plain.len())];
        let start = out.len();
        out.extend_from_slice(piece);
        let tag = cipher.seal(first + k as u64, &mut out[start..]);
        out.extend_from_slice(&tag);
    }
    out
}

/// An engine says it runs records jobs where its implementation is the stitched kernel's, and
/// on every implementation when it has threads to share records out (the tags are then
/// computed in parallel); one thread without the kernel leaves them to the caller's stages.
/// Every CPU engine runs them when asked, each with its own implementation (so `bench --impl`
/// rows stay honest).
#[test]
fn engines_with_threads_or_the_kernel_run_records() {
    let cipher = cipher(Variant::Cobblestone256);
    let job = cipher.records_job(Direction::Encrypt, 0);
    for imp in AesImpl::available() {
        let kernel = StitchedGcm::detect(imp).is_some();
        let one = CpuEngine::with_aes_impl(imp, Some(1)).unwrap();
        assert_eq!(one.runs_records(&job), kernel, "{imp}, one thread");
        let two = CpuEngine::with_aes_impl(imp, Some(2)).unwrap();
        assert!(two.runs_records(&job), "{imp}, two threads");
        for engine in [one, two] {
            let mut out = [0u8; T];
            engine.process_records(&job, &[], &mut out).unwrap();
            assert_eq!(out, cipher.tag(0, &[]));
        }
    }
    let detected = CpuEngine::new(Some(1)).unwrap();
    assert_eq!(detected.runs_records(&job), cipher.runs_stitched());
}

/// Records sealed and opened by the engine, on any number of threads and every implementation,
/// are [`ChunkCipher::seal`] and [`ChunkCipher::open`] of each chunk, at chunk edges, from any
/// first index.
#[test]
fn records_are_the_chunk_ciphers_seals_and_opens() {
    // (plaintext length, chunks)
    let shapes = [
        (0, 0),
        (0, 1),
        (1, 1),
        (G, 1),
        (G, 2),
        (5 * G + 100, 6),
        (40 * G, 40),
        (40 * G, 41),
        (40 * G + 17, 41),
    ];
    let fastest = AesImpl::fastest();
    for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
        let cipher = cipher(variant);
        for imp in AesImpl::available() {
            // The slower implementations (unoptimised builds run them slowly) on the short
            // shapes only.
            let shapes = if imp == fastest {
                &shapes[..]
            } else {
                &shapes[..6]
            };
            for engine in engines(imp) {
                for first in [0, 3, MAX_CHUNKS - 41] {
                    for &(len, chunks) in shapes {
                        let what = format!("{variant:?} {} {first} {len} {chunks}", engine.name());
                        let plain = data(len);
                        let expected = sealed_by_the_cipher(&cipher, first, &plain, chunks);
                        let mut sealed = vec![0xa5; expected.len()];
                        let seal = cipher.records_job(Direction::Encrypt, first);
                        engine
                            .process_records(&seal, &plain, &mut sealed)
                            .expect(&what);
                        assert!(sealed == expected, "{what}");
                        let mut opened = vec![0x5a; len];
                        let open = cipher.records_job(Direction::Decrypt, first);
                        engine
                            .process_records(&open, &sealed, &mut opened)
                            .expect(&what);
                        assert!(opened == plain, "{what}");
                        // In place: the plaintext in the records' data slots seals to the
                        // same records, which open back to it there.
                        let mut records = vec![0xa5; expected.len()];
                        RecordsJob::scatter_data(&plain, &mut records);
                        engine
                            .process_records_in_place(&seal, &mut records)
                            .expect(&what);
                        assert!(records == expected, "{what} in place");
                        engine
                            .process_records_in_place(&open, &mut records)
                            .expect(&what);
                        let opened = RecordsJob::gather_data(&records);
                        assert!(opened == plain, "{what} in place");
                    }
                }
            }
        }
    }
}

/// A record whose tag fails is answered with the lowest failing index however the records were
/// shared out, and leaves zeros where its plaintext would go; buffers not laid out as records
/// are refused before anything is written.
#[test]
fn failures_name_the_lowest_record() {
    let cipher = cipher(Variant::Cobblestone256);
    let plain = data(12 * G + 50);
    let sealed = sealed_by_the_cipher(&cipher, 9, &plain, 13);
    let open = cipher.records_job(Direction::Decrypt, 9);
    for imp in [AesImpl::fastest(), AesImpl::Portable] {
        for engine in engines(imp) {
            for bad in [vec![4], vec![4, 9], vec![11], vec![0, 12], vec![12]] {
                let mut tampered = sealed.clone();
                for &k in &bad {
                    // Data of one, the tag of another.
                    let at = if k % 2 == 0 { k * R + 7 } else { k * R + G + 3 };
                    let at = at.min(tampered.len() - 1);
                    tampered[at] ^= 0x40;
                }
                let mut opened = vec![0x77; plain.len()];
                let err = engine.process_records(&open, &tampered, &mut opened);
                match err {
                    Err(RecordsError::Tampered(index)) => assert_eq!(index, 9 + bad[0] as u64),
                    other => panic!("{bad:?}: {other:?}"),
                }
                let k = bad[0];
                let released = &opened[k * G..((k + 1) * G).min(plain.len())];
                assert!(
                    released.iter().all(|&b| b == 0),
                    "{} {bad:?}",
                    engine.name()
                );
                let answer = engine.process_records_in_place(&open, &mut tampered);
                match answer {
                    Err(RecordsError::Tampered(index)) => assert_eq!(index, 9 + bad[0] as u64),
                    other => panic!("{bad:?} in place: {other:?}"),
                }
                let slot = RecordsJob::data_slots(tampered.len()).nth(k).unwrap();
                assert!(
                    tampered[slot].iter().all(|&b| b == 0),
                    "{} {bad:?} in place",
                    engine.name()
                );
            }
            let seal = cipher.records_job(Direction::Encrypt, 0);
            for (input, output) in [(G, R + T - 1), (G + 1, R + T), (2 * G, R + T), (0, R)] {
                let mut out = vec![0u8; output];
                let err = engine.process_records(&seal, &data(input), &mut out);
                assert!(
                    matches!(err, Err(RecordsError::Engine(_))),
                    "{input} {output}"
                );
                assert!(out.iter().all(|&b| b == 0));
            }
            let mut out = vec![0u8; G];
            let err = engine.process_records(&open, &sealed[..R + T - 1], &mut out[..G - 1]);
            assert!(matches!(err, Err(RecordsError::Engine(_))), "{err:?}");
        }
    }
}
