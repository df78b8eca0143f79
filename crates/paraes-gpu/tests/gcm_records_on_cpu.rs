//! The GCM records kernels of kernels/aes.cu (`aes{128,256}_gcm_seal`, `_gcm_verify`,
//! `_gcm_open`: CTR, each chunk's GHASH and tag on the device) run on the CPU through
//! kernels/emulate/host.cpp, with real block semantics (barriers, shuffles), against the core's
//! Cobblestone chunk cipher (`paraes_core::cobblestone::ChunkCipher`, whose GHASH is paraes's
//! POLYVAL): every edge size of a chunk, several chunks with short, full and empty last chunks,
//! chunk indices across 2^32 and past 2^40, tampered ciphertext and tags. And the constant-time
//! property as a model test: the kernels' address stream (every global load and store, and the
//! bank of every T-table lookup, traced by the emulator) is the same for any key, H and data.

#[path = "support/standin.rs"]
mod standin;

use std::path::{Path, PathBuf};

use paraes_core::cobblestone::{ChunkCipher, MessageKeys, Variant, CHUNK_LEN, TAG_LEN};
use paraes_core::seeded::SplitMix64;
use paraes_core::Direction;
use paraes_gpu::plan::{GcmLayout, RoundKeyWords};

fn build() -> PathBuf {
    standin::compile("emulate/host.cpp", &[], "aes-host")
}

/// Runs records kernel `aes{bits}_gcm_{kind}` on (grid, threads) over `input`, for `chunks`
/// chunks whose last has `last_len` bytes, from GCM chunk `first_index`; returns its output.
fn run(
    exe: &Path,
    kernel: (usize, &str),
    shape: (u32, u32),
    cipher: &ChunkCipher,
    params: (u64, u64, u64),
    input: &[u8],
) -> Vec<u8> {
    run_traced(exe, kernel, shape, cipher, params, input).0
}

/// As [`run`], also returning what the emulator wrote on stderr (the trace build: its trace).
fn run_traced(
    exe: &Path,
    (bits, kind): (usize, &str),
    shape: (u32, u32),
    cipher: &ChunkCipher,
    (chunks, first_index, last_len): (u64, u64, u64),
    input: &[u8],
) -> (Vec<u8>, String) {
    let mut stdin = Vec::new();
    for v in [chunks, first_index, last_len] {
        stdin.extend_from_slice(&v.to_le_bytes());
    }
    let keys = RoundKeyWords::new(cipher.key().enc_round_keys());
    let nonce = GcmLayout::new(&cipher.base_nonce(), CHUNK_LEN)
        .unwrap()
        .nonce;
    let job = cipher.records_job(Direction::Encrypt, 0);
    let h: Vec<u32> = job
        .hash_key
        .chunks(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    for w in keys.w.iter().chain(&nonce).chain([&0]).chain(&h) {
        stdin.extend_from_slice(&w.to_le_bytes());
    }
    stdin.extend_from_slice(input);
    standin::run_emulator(exe, &format!("aes{bits}_gcm_{kind}"), shape, &stdin)
}

/// The records of `plaintext` cut into `chunks` chunks (all whole but the last), sealed by the
/// core from GCM chunk `first_index` on.
fn core_records(cipher: &ChunkCipher, plaintext: &[u8], chunks: u64, first_index: u64) -> Vec<u8> {
    let mut records = Vec::new();
    for k in 0..chunks as usize {
        let end = if k + 1 == chunks as usize {
            plaintext.len()
        } else {
            (k + 1) * CHUNK_LEN
        };
        let mut chunk = plaintext[k * CHUNK_LEN..end].to_vec();
        let tag = cipher.seal(first_index + k as u64, &mut chunk);
        records.extend_from_slice(&chunk);
        records.extend_from_slice(&tag);
    }
    records
}

#[test]
fn records_kernels_match_the_core_at_every_edge() {
    let exe = build();
    let mut rng = SplitMix64::new(0x6763_6d5f_7265_6373);
    // (chunks, last chunk's bytes): the edge sizes of one chunk, then several chunks with a
    // short, a full and an empty last chunk, and more chunks than the launch has warps.
    let cases: [(u64, usize); 15] = [
        (1, 0),
        (1, 1),
        (1, 15),
        (1, 16),
        (1, 17),
        (1, 511),
        (1, 512),
        (1, 513),
        (1, CHUNK_LEN - 1),
        (1, CHUNK_LEN),
        (2, 1),
        (2, 0),
        (3, CHUNK_LEN),
        (4, 5),
        (9, 16 * 31 + 7),
    ];
    let firsts = [0u64, (1 << 32) - 2, (1 << 40) + 12345];
    for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
        let bits = variant.key_size().bytes() * 8;
        let ik = rng.bytes(bits / 8);
        let salt: [u8; 24] = rng.array();
        let cipher = MessageKeys::derive(variant, &ik, &salt, b"gpu records")
            .unwrap()
            .chunks();
        for (i, &(chunks, last_len)) in cases.iter().enumerate() {
            let first_index = firsts[i % firsts.len()];
            let plaintext = rng.bytes((chunks as usize - 1) * CHUNK_LEN + last_len);
            let expect = core_records(&cipher, &plaintext, chunks, first_index);
            let shape = if i % 2 == 0 { (1, 32) } else { (2, 64) };
            let params = (chunks, first_index, last_len as u64);
            let what = format!("Cobblestone-{bits}, {chunks} chunks, last {last_len} bytes, from chunk {first_index}");

            let sealed = run(&exe, (bits, "seal"), shape, &cipher, params, &plaintext);
            assert!(sealed == expect, "seal differs from the core: {what}");

            let verdicts = run(&exe, (bits, "verify"), shape, &cipher, params, &expect);
            assert_eq!(
                verdicts,
                vec![0u8; 16 * chunks as usize],
                "verify of good records: {what}"
            );

            let opened = run(&exe, (bits, "open"), shape, &cipher, params, &expect);
            assert!(
                opened == plaintext,
                "open differs from the plaintext: {what}"
            );

            // One flipped bit in one record's ciphertext (when it has any) or tag: that chunk's
            // verdict alone is 1.
            let k = rng.next_u64() % chunks;
            let start = k as usize * (CHUNK_LEN + TAG_LEN);
            let len = if k + 1 == chunks { last_len } else { CHUNK_LEN } + TAG_LEN;
            let mut tampered = expect.clone();
            tampered[start + (rng.next_u64() as usize) % len] ^= 1 << (rng.next_u64() % 8);
            let verdicts = run(&exe, (bits, "verify"), shape, &cipher, params, &tampered);
            for c in 0..chunks {
                let mut want = [0u8; 16];
                want[0] = u8::from(c == k);
                assert_eq!(
                    verdicts[c as usize * 16..][..16],
                    want,
                    "chunk {c} of tampered record {k}: {what}"
                );
            }
        }
    }
}

/// Constant time: with two different keys (so two different H and nonces) and different data
/// of the same lengths, and with tags that hold or not, each records kernel makes exactly the
/// same global accesses (buffer and byte offset, per thread, in order) and T-table lookups in
/// the same banks. A GHASH with a table of multiples of H, or a tag check that stops at the
/// first differing byte, would make the traces differ.
#[test]
fn records_kernels_address_stream_does_not_depend_on_keys_or_data() {
    let exe = standin::compile("emulate/host.cpp", &["-DTRACE_ACCESSES"], "aes-host-trace");
    let mut rng = SplitMix64::new(0x7472_6163_6573);
    // Two chunks, the last with a partial block and an unaligned tag.
    let (chunks, last_len) = (2u64, 17usize);
    let params = (chunks, (1u64 << 32) - 1, last_len as u64);
    for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
        let bits = variant.key_size().bytes() * 8;
        let mut traces: Vec<Vec<(String, String)>> = Vec::new();
        for _ in 0..2 {
            let ik = rng.bytes(bits / 8);
            let salt: [u8; 24] = rng.array();
            let cipher = MessageKeys::derive(variant, &ik, &salt, b"")
                .unwrap()
                .chunks();
            let plaintext = rng.bytes(CHUNK_LEN + last_len);
            let records = core_records(&cipher, &plaintext, chunks, params.1);
            let mut tampered = records.clone();
            *tampered.last_mut().unwrap() ^= 0x80;
            let mut runs = Vec::new();
            for (kind, input) in [
                ("seal", &plaintext),
                ("verify", &records),
                ("verify", &tampered),
                ("open", &records),
            ] {
                let kernel = format!("aes{bits}_gcm_{kind}");
                let (_, trace) = run_traced(&exe, (bits, kind), (1, 64), &cipher, params, input);
                for space in [" i ", " s "] {
                    assert!(
                        trace.contains(space),
                        "{kernel}: no '{space}' access traced"
                    );
                }
                assert!(
                    !trace.contains(" ? "),
                    "{kernel}: an access outside its buffers"
                );
                runs.push((kernel, trace));
            }
            assert_eq!(
                runs[1].1, runs[2].1,
                "verify of a good and a bad tag: different address streams"
            );
            traces.push(runs);
        }
        for ((kernel, a), (_, b)) in traces[0].iter().zip(&traces[1]) {
            assert!(
                a == b,
                "{kernel}: the address stream depends on the key, H or the data"
            );
        }
    }
}

/// Wycheproof's C2SP chunked-encryption vectors (70; raw keys, records at their indices) and
/// the sparse chunks past 2^32 through the records kernels, one launch per vector body: verify's
/// verdict is the oracle's (RustCrypto `aes-gcm`) for every record, open gives the oracle's
/// plaintext for every record that verifies, and seal of a valid body's plaintext gives the
/// body back.
#[test]
fn records_kernels_pass_the_c2sp_vectors() {
    use paraes_core::testing::{sparse, wycheproof};
    let exe = build();
    let shape = (2, 64);
    let (mut records_checked, mut refused) = (0, 0);
    for v in wycheproof::vectors() {
        let Some(cipher) = v.raw_cipher() else {
            continue; // a header failure: no body to read
        };
        let bits = v.variant.key_size().bytes() * 8;
        let oracle = v.oracle();
        // The records with room for a tag (a shorter last one is refused before any kernel).
        let mut records = v.records();
        if records.last().is_some_and(|r| r.len() < TAG_LEN) {
            assert!(oracle.chunks[records.len() - 1].is_none(), "{}", v.name());
            records.pop();
        }
        let Some(last) = records.last() else { continue };
        let params = (records.len() as u64, 0, (last.len() - TAG_LEN) as u64);
        let body = records.concat();
        let verdicts = run(&exe, (bits, "verify"), shape, &cipher, params, &body);
        let opened = run(&exe, (bits, "open"), shape, &cipher, params, &body);
        for (index, record) in records.iter().enumerate() {
            let holds = verdicts[16 * index] == 0;
            assert_eq!(
                holds,
                oracle.chunks[index].is_some(),
                "{}: record {index}",
                v.name()
            );
            records_checked += 1;
            match &oracle.chunks[index] {
                Some(plaintext) => {
                    let got = &opened[index * CHUNK_LEN..][..record.len() - TAG_LEN];
                    assert!(
                        got == &plaintext[..],
                        "{}: open of record {index}",
                        v.name()
                    );
                }
                None => refused += 1,
            }
        }
        if oracle.chunks[..records.len()].iter().all(Option::is_some) {
            let sealed = run(&exe, (bits, "seal"), shape, &cipher, params, &opened);
            assert!(sealed == body, "{}: seal of the body", v.name());
        }
    }
    assert!(
        records_checked >= 70 && refused > 0,
        "{records_checked} records, {refused} refused"
    );

    let mut sparse_checked = 0;
    for v in sparse::sparse_vectors().into_iter().filter(|v| v.valid) {
        let cipher = v.raw_cipher();
        let bits = v.variant.key_size().bytes() * 8;
        for c in &v.chunks {
            let params = (1, c.index, c.plaintext.len() as u64);
            let sealed = run(&exe, (bits, "seal"), shape, &cipher, params, &c.plaintext);
            assert!(sealed == c.record, "{}: seal of chunk {}", v.name, c.index);
            let verdict = run(&exe, (bits, "verify"), shape, &cipher, params, &c.record);
            assert_eq!(verdict[0], 0, "{}: chunk {}", v.name, c.index);
            sparse_checked += 1;
        }
    }
    assert!(sparse_checked > 0);
}
