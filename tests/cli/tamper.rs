//! `paraes dec` on damaged and forged containers: every byte flipped, every truncation, chunks
//! swapped, duplicated, dropped, moved between files, bytes appended, and wrong keys, on format
//! v3 containers (a Cobblestone message after the header: salt, key commitment, then 16 KiB
//! AES-GCM chunks, the last one always shorter), with 128- and 256-bit bodies. Each must fail
//! with one `paraes: error:` line and leave no output file and no temporary behind.

use std::ops::Range;
use std::process::Output;

use crate::common::{
    assert_silent_success, records, seeded_bytes, Scratch, CHUNK, CHUNK_ARG, CONTAINER_BITS,
    HEADER_LEN, MESSAGE_PREFIX_LEN, TAG_LEN,
};

/// Plaintext of the small one-chunk container the exhaustive loops run on.
const SMALL: usize = 300;
/// Plaintext of the three-chunk container (two full chunks and a tail).
const THREE_CHUNKS: usize = 2 * CHUNK + 100;
/// Where the first chunk record starts: after the header and the message's salt and commitment.
const RECORDS_START: usize = HEADER_LEN + MESSAGE_PREFIX_LEN;
/// Bytes of a full chunk record: 16 KiB of ciphertext and a GCM tag.
const RECORD_LEN: usize = CHUNK + TAG_LEN;
/// The idle stanza slot of a one-stanza header (bytes 2080..4096): unauthenticated by design, a
/// rekey writes it (docs/FORMAT.md); the core tests check that damage there changes nothing.
const IDLE_SLOT: Range<usize> = 64 + 2016..HEADER_LEN;

/// A container in a scratch directory that also holds its key file `key`.
struct Sealed {
    name: String,
    scratch: Scratch,
    plain: Vec<u8>,
    container: Vec<u8>,
}

impl Sealed {
    fn new(bits: usize, size: usize, seed: u64) -> Self {
        let scratch = Scratch::new();
        scratch.key_file("key", 256, seed, true);
        let plain = seeded_bytes(seed, size);
        let container = encrypt(&scratch, bits, &plain);
        Sealed {
            name: format!("Cobblestone-{bits}, {size} bytes"),
            scratch,
            plain,
            container,
        }
    }

    /// Byte range of record `i` (chunk `i`'s ciphertext and tag) in the container.
    fn record(&self, i: usize) -> Range<usize> {
        let start = RECORDS_START + i * RECORD_LEN;
        start..(start + RECORD_LEN).min(self.container.len())
    }

    fn records(&self) -> usize {
        records(&self.container, HEADER_LEN).len()
    }

    /// The container with its records in `order` (indices may repeat or be left out).
    fn reordered(&self, order: &[usize]) -> Vec<u8> {
        let mut out = self.container[..RECORDS_START].to_vec();
        for &i in order {
            out.extend_from_slice(&self.container[self.record(i)]);
        }
        out
    }

    /// Writes `bytes` as `t.paraes`, runs `paraes dec -k key t.paraes` (output: `t`) and
    /// asserts a clean refusal; returns the error message.
    fn assert_refused(&self, bytes: &[u8], what: &str) -> String {
        self.assert_refused_with(bytes, &["-k", "key"], what)
    }

    fn assert_refused_with(&self, bytes: &[u8], key_args: &[&str], what: &str) -> String {
        let s = &self.scratch;
        s.write("t.paraes", bytes);
        let before = s.names();
        let out = s.run(&[&["dec"], key_args, &["t.paraes"]].concat());
        s.assert_refused(&out, &before, &format!("{}: {what}", self.name))
    }

    /// `paraes dec -k key -o -` with `bytes` on standard input.
    fn decrypt_to_stdout(&self, bytes: &[u8]) -> Output {
        self.scratch
            .run_with_stdin(&["dec", "-k", "key", "-o", "-"], bytes)
    }
}

fn encrypt(scratch: &Scratch, bits: usize, plain: &[u8]) -> Vec<u8> {
    let bits = bits.to_string();
    let args = [
        "enc",
        "-q",
        "-k",
        "key",
        "--chunk-size",
        CHUNK_ARG,
        "--bits",
        &bits,
    ];
    let out = scratch.run_with_stdin(&args, plain);
    assert_silent_success(&out, "enc");
    out.stdout
}

fn flipped(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut bad = bytes.to_vec();
    bad[at] ^= 0x01;
    bad
}

/// The untouched container decrypts: the refusals below are due to the damage alone.
#[test]
fn untouched_containers_decrypt() {
    for bits in CONTAINER_BITS {
        for size in [SMALL, THREE_CHUNKS] {
            let sealed = Sealed::new(bits, size, 1);
            assert_eq!(sealed.container[8], 3, "{}: format v3", sealed.name);
            assert_eq!(
                usize::from(sealed.container[10]),
                bits / 8,
                "{}: body key size",
                sealed.name
            );
            let out = sealed.decrypt_to_stdout(&sealed.container);
            assert_silent_success(&out, &sealed.name);
            assert!(out.stdout == sealed.plain, "{}: round trip", sealed.name);
            let s = &sealed.scratch;
            s.write("t.paraes", &sealed.container);
            assert_silent_success(&s.run(&["dec", "-q", "-k", "key", "t.paraes"]), "file");
            assert!(
                s.read("t") == sealed.plain,
                "{}: file round trip",
                sealed.name
            );
        }
    }
}

#[test]
fn every_single_byte_flip_is_refused() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, SMALL, 2);
        assert_eq!(sealed.records(), 1, "{}: one chunk", sealed.name);
        for at in (0..sealed.container.len()).filter(|at| !IDLE_SLOT.contains(at)) {
            let bad = flipped(&sealed.container, at);
            let message = sealed.assert_refused(&bad, &format!("byte {at} flipped"));
            // The salt and the commitment are checked against the file key before any chunk.
            if (HEADER_LEN..RECORDS_START).contains(&at) {
                assert!(
                    message.contains("key commitment does not match"),
                    "{}: byte {at} of the message prefix flipped: {message}",
                    sealed.name
                );
            }
        }
    }
}

#[test]
fn every_truncation_is_refused() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, SMALL, 3);
        for len in 0..sealed.container.len() {
            let bad = &sealed.container[..len];
            sealed.assert_refused(bad, &format!("truncated to {len} bytes"));
        }
    }
}

/// Positions worth flipping in a multi-chunk container: the header (but its idle slot), the
/// message's salt and commitment, both ends of every chunk's ciphertext and tag, and a stride
/// through the rest.
fn sample_positions(sealed: &Sealed) -> Vec<usize> {
    let mut at: Vec<usize> = (0..RECORDS_START)
        .filter(|at| !IDLE_SLOT.contains(at))
        .collect();
    for i in 0..sealed.records() {
        let record = sealed.record(i);
        let tag_start = record.end - TAG_LEN;
        at.extend([record.start, record.start + 1, tag_start - 1]);
        at.extend([tag_start, tag_start + 1, record.end - 1]);
    }
    at.extend((HEADER_LEN..sealed.container.len()).step_by(97));
    at.sort_unstable();
    at.dedup();
    at
}

#[test]
fn byte_flips_in_a_multi_chunk_container_are_refused() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, THREE_CHUNKS, 4);
        assert_eq!(sealed.records(), 3, "{}: three chunks", sealed.name);
        for at in sample_positions(&sealed) {
            let bad = flipped(&sealed.container, at);
            let message = sealed.assert_refused(&bad, &format!("byte {at} flipped"));
            if at >= RECORDS_START {
                let chunk = (at - RECORDS_START) / RECORD_LEN;
                assert!(
                    message.contains(&format!("chunk {chunk}")),
                    "{}: byte {at} (chunk {chunk}) flipped: {message}",
                    sealed.name
                );
            }
        }
    }
}

#[test]
fn truncations_of_a_multi_chunk_container_are_refused() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, THREE_CHUNKS, 5);
        let len = sealed.container.len();
        let mut cuts: Vec<usize> = (0..len).step_by(89).collect();
        // Inside the header, at its end, inside and right after the salt and commitment.
        cuts.extend([
            HEADER_LEN - 1,
            HEADER_LEN,
            HEADER_LEN + 24,
            RECORDS_START - 1,
        ]);
        cuts.extend([RECORDS_START, RECORDS_START + 1, RECORDS_START + TAG_LEN]);
        for i in 0..sealed.records() {
            let end = sealed.record(i).end;
            // At a chunk boundary the remaining chunks all verify: only the missing shorter
            // final chunk tells the cut.
            cuts.extend([
                end - TAG_LEN - 1,
                end - TAG_LEN,
                end - 1,
                end,
                end + 1,
                end + TAG_LEN,
                end + TAG_LEN + 1,
            ]);
        }
        for cut in cuts.into_iter().filter(|&cut| cut < len) {
            let bad = &sealed.container[..cut];
            sealed.assert_refused(bad, &format!("truncated to {cut} bytes"));
        }

        // A plaintext of whole chunks ends in an empty chunk (a lone tag): without it, the
        // full chunks before it all verify, and only the missing final chunk tells the cut.
        let whole = Sealed::new(bits, 2 * CHUNK, 15);
        assert_eq!(
            whole.records(),
            3,
            "{}: two chunks and an empty one",
            whole.name
        );
        assert_eq!(
            whole.record(2).len(),
            TAG_LEN,
            "{}: the empty chunk",
            whole.name
        );
        let cut = whole.container.len() - TAG_LEN;
        whole.assert_refused(&whole.container[..cut], "the empty final chunk dropped");
        let out = whole.decrypt_to_stdout(&whole.container[..cut]);
        let what = format!("{}: the empty final chunk dropped, -o -", whole.name);
        crate::common::assert_error(&out, &what);
        assert!(
            out.stdout.len() <= 2 * CHUNK && out.stdout == whole.plain[..out.stdout.len()],
            "{what}: {} bytes released",
            out.stdout.len()
        );
    }
}

#[test]
fn reordered_duplicated_and_dropped_chunks_are_refused() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, THREE_CHUNKS, 6);
        let forgeries: [(&str, &[usize]); 9] = [
            ("chunks 0 and 1 swapped", &[1, 0, 2]),
            ("chunks 1 and 2 swapped", &[0, 2, 1]),
            ("chunk 0 duplicated", &[0, 0, 1, 2]),
            ("chunk 1 duplicated", &[0, 1, 1, 2]),
            ("last chunk duplicated", &[0, 1, 2, 2]),
            ("middle chunk dropped", &[0, 2]),
            ("first chunk dropped", &[1, 2]),
            ("last chunk dropped", &[0, 1]),
            ("only the last chunk", &[2]),
        ];
        for (what, order) in forgeries {
            let message = sealed.assert_refused(&sealed.reordered(order), what);
            assert!(message.contains("chunk"), "{what}: {message}");
        }
    }
}

#[test]
fn appended_bytes_are_refused() {
    for bits in CONTAINER_BITS {
        for size in [SMALL, THREE_CHUNKS] {
            let sealed = Sealed::new(bits, size, 7);
            let last = sealed.record(sealed.records() - 1);
            let appendices: [(&str, Vec<u8>); 6] = [
                ("one zero byte", vec![0]),
                ("one block", seeded_bytes(70, 16)),
                // Read as an empty final chunk: its tag must not verify.
                ("a tag's worth", seeded_bytes(71, TAG_LEN)),
                ("a copy of the last record", sealed.container[last].to_vec()),
                (
                    "a copy of the first record",
                    sealed.container[sealed.record(0)].to_vec(),
                ),
                ("the whole container again", sealed.container.clone()),
            ];
            for (what, extra) in appendices {
                let bad = [&sealed.container[..], &extra].concat();
                sealed.assert_refused(&bad, &format!("appended {what}"));
            }
        }
    }
}

#[test]
fn parts_of_another_container_under_the_same_key_are_refused() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, THREE_CHUNKS, 8);
        // Same key, same plaintext: a fresh file key and salt, everything else equal.
        let other = encrypt(&sealed.scratch, bits, &sealed.plain);
        assert_eq!(other.len(), sealed.container.len());
        let mut foreign_chunk = sealed.container.clone();
        let record = sealed.record(1);
        foreign_chunk[record.clone()].copy_from_slice(&other[record]);
        let message = sealed.assert_refused(&foreign_chunk, "chunk 1 from another container");
        assert!(message.contains("chunk 1"), "chunk 1: {message}");

        let mut foreign_last = sealed.container.clone();
        let record = sealed.record(2);
        foreign_last[record.clone()].copy_from_slice(&other[record]);
        let message = sealed.assert_refused(&foreign_last, "last chunk from another container");
        assert!(message.contains("chunk 2"), "last chunk: {message}");

        // A header opens only a body that commits to its file key.
        let commitment = "key commitment does not match";
        let foreign_header = [&other[..HEADER_LEN], &sealed.container[HEADER_LEN..]].concat();
        let message = sealed.assert_refused(&foreign_header, "header from another container");
        assert!(message.contains(commitment), "foreign header: {message}");

        let foreign_prefix = [
            &sealed.container[..HEADER_LEN],
            &other[HEADER_LEN..RECORDS_START],
            &sealed.container[RECORDS_START..],
        ]
        .concat();
        let what = "salt and commitment from another container";
        let message = sealed.assert_refused(&foreign_prefix, what);
        assert!(message.contains(commitment), "{what}: {message}");

        let mut foreign_salt = sealed.container.clone();
        foreign_salt[HEADER_LEN..HEADER_LEN + 24].copy_from_slice(&other[HEADER_LEN..][..24]);
        let what = "salt from another container";
        let message = sealed.assert_refused(&foreign_salt, what);
        assert!(message.contains(commitment), "{what}: {message}");
    }
}

#[test]
fn wrong_keys_are_refused() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, THREE_CHUNKS, 9);
        let s = &sealed.scratch;
        s.key_file("same-size", 256, 99, true);
        s.key_file("shorter", 128, 9, false);
        s.write("t.paraes", &sealed.container);
        for key in ["same-size", "shorter"] {
            let message = sealed.assert_refused_with(&sealed.container, &["-k", key], key);
            assert!(
                message.contains("key"),
                "{key}: the error should name the key: {message}"
            );
        }
        let other_hex = hex::encode(seeded_bytes(10, 32));
        let args = ["-q", "--key", &other_hex];
        let message = sealed.assert_refused_with(&sealed.container, &args, "--key");
        assert!(
            message.contains("none of the given keys"),
            "--key: {message}"
        );
    }
}

#[test]
fn standard_output_gets_only_verified_chunks() {
    for bits in CONTAINER_BITS {
        let sealed = Sealed::new(bits, THREE_CHUNKS, 11);
        for at in sample_positions(&sealed) {
            let what = format!("{}: byte {at} flipped, -o -", sealed.name);
            let out = sealed.decrypt_to_stdout(&flipped(&sealed.container, at));
            crate::common::assert_error(&out, &what);
            // Chunks before the damaged one may come out, whole and correct; nothing after.
            // Damage to the header, salt or commitment releases nothing.
            let damaged = at.saturating_sub(RECORDS_START) / RECORD_LEN;
            let released = out.stdout.len();
            assert!(
                released.is_multiple_of(CHUNK) && released <= damaged * CHUNK,
                "{what}: {released} bytes released"
            );
            assert!(
                out.stdout == sealed.plain[..released],
                "{what}: wrong bytes"
            );
        }
        // Cut at a chunk boundary on a pipe: every released chunk verified, and the missing
        // final chunk is an error (the chunks before it may have come out).
        let cut = sealed.record(1).end;
        let what = format!("{}: cut after chunk 1, -o -", sealed.name);
        let out = sealed.decrypt_to_stdout(&sealed.container[..cut]);
        crate::common::assert_error(&out, &what);
        let released = out.stdout.len();
        assert!(
            released.is_multiple_of(CHUNK) && released <= 2 * CHUNK,
            "{what}: {released} bytes released"
        );
        assert!(
            out.stdout == sealed.plain[..released],
            "{what}: wrong bytes"
        );
    }
}

/// A regular file is checked at its end before any plaintext goes out, even to standard
/// output: a v3 file of several pipeline batches cut at a chunk boundary, cut inside its last
/// record, or with its last tag changed releases nothing (a hostile review found `dec FILE -o
/// -` writing 4 MiB of a cut file before it failed).
#[test]
fn a_regular_file_cut_or_damaged_at_its_end_releases_nothing_to_standard_output() {
    let s = Scratch::new();
    s.key_file("key", 256, 5, true);
    let plain = seeded_bytes(41, 5_000_000);
    s.write("plain", &plain);
    assert_silent_success(
        &s.run(&["enc", "-q", "-k", "key", "plain", "-o", "c"]),
        "enc",
    );
    let sealed = s.read("c");
    let records_start = crate::common::HEADER_LEN + crate::common::MESSAGE_PREFIX_LEN;
    let record = CHUNK + TAG_LEN;
    let full = (sealed.len() - records_start) / record;
    let cases = [
        (
            "cut at a chunk boundary",
            sealed[..records_start + full * record].to_vec(),
        ),
        (
            "cut inside the last record",
            sealed[..sealed.len() - 3].to_vec(),
        ),
        ("last tag changed", flipped(&sealed, sealed.len() - 1)),
        ("cut inside the salt", sealed[..records_start - 40].to_vec()),
    ];
    for (what, bad) in cases {
        s.write("bad", &bad);
        let out = s.run(&["dec", "-k", "key", "bad", "-o", "-"]);
        crate::common::assert_error(&out, what);
        assert!(
            out.stdout.is_empty(),
            "{what}: {} bytes released",
            out.stdout.len()
        );
    }
}
