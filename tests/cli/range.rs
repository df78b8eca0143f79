//! `paraes dec --range` (issue 14): ranges at and around chunk boundaries, empty and open
//! ranges equal `dd` slices of the plaintext for v3 bodies of 128- and 256-bit keys (also one
//! whose last chunk is empty) and for v1 containers (v2: tests/cli/v2_compat.rs); ranges past
//! the end are refused with a clear error and no output; a small range of a large file reads a
//! few chunks, not the file, and damage to a chunk it does not read does not matter (but
//! damage to the last chunk, the salt or the key commitment, which every range depends on,
//! does).

use crate::common::{
    assert_error, assert_success, assert_usage_error, container_len, seeded_bytes, Scratch, CHUNK,
    CHUNK_ARG, CONTAINER_BITS, HEADER_LEN, MESSAGE_PREFIX_LEN, TAG_LEN,
};

const PLAIN_LEN: usize = 5 * CHUNK + 100;

fn range(s: &Scratch, file: &str, key: &str, range: &str) -> Vec<u8> {
    let out = s.run(&["dec", "-q", "-k", key, file, "--range", range, "-o", "-"]);
    assert_success(&out, range);
    out.stdout
}

/// `paraes enc -q -k KEY --bits BITS --chunk-size 16KiB INPUT` (writes `INPUT.paraes`), whose
/// length is checked against the v3 layout.
fn enc(s: &Scratch, key: &str, bits: usize, input: &str) {
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        key,
        "--bits",
        &bits.to_string(),
        "--chunk-size",
        CHUNK_ARG,
        input,
    ]);
    assert_success(&out, &format!("enc --bits {bits} {input}"));
    let plain_len = s.read(input).len();
    let container = s.read(&format!("{input}.paraes"));
    assert_eq!(container[8], 3, "enc did not write format v3");
    assert_eq!(
        container.len(),
        container_len(plain_len, HEADER_LEN),
        "--bits {bits}: not the v3 layout"
    );
}

/// Ranges past the end of a plaintext of `n` bytes are refused, writing nothing.
fn assert_past_the_end_refused(s: &Scratch, file: &str, n: usize) {
    for text in [
        format!("0..{}", n + 1),
        format!("{}..", n + 1),
        "1GiB..2GiB".to_owned(),
    ] {
        let before = s.names();
        let out = s.run(&["dec", "-k", "k", file, "--range", &text, "-o", "part"]);
        let err = s.assert_refused(&out, &before, &text);
        assert!(
            err.contains("reaches past the end") && err.contains(&format!("{n} bytes")),
            "{err}"
        );
    }
}

#[test]
fn ranges_equal_slices_of_the_plaintext() {
    for bits in CONTAINER_BITS {
        let s = Scratch::new();
        s.key_file("k", 128, 1, true);
        let plain = seeded_bytes(5, PLAIN_LEN);
        s.write("p", &plain);
        enc(&s, "k", bits, "p");
        let c = CHUNK;
        let n = PLAIN_LEN;
        let cases: Vec<(String, usize, usize)> = vec![
            ("0..0".into(), 0, 0),
            (format!("{c}..{c}"), c, c),
            (format!("0..{c}"), 0, c),
            (format!("{}..{}", c - 1, c + 1), c - 1, c + 1),
            (format!("{c}..{}", 2 * c), c, 2 * c),
            ("..".into(), 0, n),
            (format!("{}..", 5 * c), 5 * c, n),
            (format!("{}..", n - 1), n - 1, n),
            (format!("{n}.."), n, n),
            ("..1".into(), 0, 1),
            ("1KiB..2KiB".into(), 1024, 2048),
            ("16KiB..32KiB".into(), c, 2 * c),
            (format!("{}..{n}", 3 * c + 7), 3 * c + 7, n),
        ];
        for (text, start, end) in cases {
            assert_eq!(
                range(&s, "p.paraes", "k", &text),
                &plain[start..end],
                "AES-{bits} {text}"
            );
        }
        // Past the end: a clear error and no output file.
        assert_past_the_end_refused(&s, "p.paraes", n);
        assert_usage_error(
            &s.run(&["dec", "-k", "k", "p.paraes", "--range", "9..3"]),
            "reversed",
        );
        assert_usage_error(
            &s.run(&["dec", "-k", "k", "p.paraes", "--range", "3"]),
            "no ..",
        );
        assert_usage_error(
            &s.run(&["dec", "-k", "k", "p.paraes", "--range", "x..3"]),
            "not a size",
        );
    }
}

/// A plaintext of whole 16 KiB chunks ends, in v3, in an empty last chunk: ranges up to the
/// end (and the end itself) read as for any other length, and the length is still authentic.
#[test]
fn ranges_of_a_body_whose_last_chunk_is_empty() {
    for bits in CONTAINER_BITS {
        let s = Scratch::new();
        s.key_file("k", 256, 2, true);
        let n = 3 * CHUNK;
        let plain = seeded_bytes(7, n);
        s.write("p", &plain);
        enc(&s, "k", bits, "p");
        for (start, end) in [
            (0, n),
            (n - 1, n),
            (n, n),
            (2 * CHUNK, n),
            (2 * CHUNK - 1, 2 * CHUNK + 1),
            (0, 0),
        ] {
            assert_eq!(
                range(&s, "p.paraes", "k", &format!("{start}..{end}")),
                &plain[start..end],
                "AES-{bits} {start}..{end}"
            );
        }
        assert_eq!(range(&s, "p.paraes", "k", ".."), plain, "AES-{bits} ..");
        assert_past_the_end_refused(&s, "p.paraes", n);
    }
}

#[test]
fn ranges_of_v1_containers() {
    let s = crate::common::v1_fixtures();
    let plain = s.read("plain.txt");
    let n = plain.len();
    for (file, key) in [
        ("ctr-128.paraes", "k128.key"),
        ("ecb-256.paraes", "k256.key"),
    ] {
        for (start, end) in [(0, n), (1, n / 2), (n / 3, n - 1), (n, n)] {
            assert_eq!(
                range(&s, file, key, &format!("{start}..{end}")),
                &plain[start..end],
                "{file}"
            );
        }
    }
}

#[test]
fn a_small_range_reads_a_few_chunks_and_tampering_elsewhere_does_not_matter() {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    let plain = seeded_bytes(6, 64 * CHUNK + 3);
    s.write("p", &plain);
    // The default body (256-bit) in 16 KiB pipeline batches.
    s.enc_small_chunks("k", "p");
    let good = s.read("p.paraes");
    assert_eq!(good[8], 3, "enc did not write format v3");
    assert_eq!(good.len(), container_len(plain.len(), HEADER_LEN));
    let out = s.run(&[
        "dec",
        "-q",
        "-k",
        "k",
        "p.paraes",
        "--range",
        "40000..41000",
        "-o",
        "r",
        "--stats",
        "json",
    ]);
    let err = assert_success(&out, "range");
    let stats: serde_json::Value = serde_json::from_str(err.trim()).expect(&err);
    let read = stats["bytes_in"].as_u64().unwrap();
    // Chunk 2 (which holds the range) and the last chunk (3 bytes and a tag), nothing else.
    assert!(
        read <= 2 * (CHUNK + TAG_LEN) as u64,
        "read {read} bytes for a 1000-byte range"
    );
    assert_eq!(s.read("r"), &plain[40000..41000]);
    // A chunk the range does not touch may be damaged; one it touches may not.
    let chunks_start = HEADER_LEN + MESSAGE_PREFIX_LEN;
    let mut bytes = good.clone();
    bytes[chunks_start + 20 * (CHUNK + TAG_LEN) + 5] ^= 1;
    s.write("p.paraes", &bytes);
    assert_eq!(range(&s, "p.paraes", "k", "0..100"), &plain[..100]);
    assert_eq!(
        range(&s, "p.paraes", "k", &format!("{}..", 21 * CHUNK)),
        &plain[21 * CHUNK..]
    );
    let before = s.names();
    let out = s.run(&[
        "dec",
        "-k",
        "k",
        "p.paraes",
        "--range",
        &format!("{}..{}", 20 * CHUNK, 20 * CHUNK + 1),
        "-o",
        "bad",
    ]);
    let err = assert_error(&out, "tampered chunk in range");
    assert!(err.contains("chunk 20 failed authentication"), "{err}");
    assert_eq!(s.names(), before);
    // Every range depends on the message's salt and key commitment (which tie the file key to
    // the body) and on the last chunk (which makes the plaintext's length authentic): damage
    // to any of them refuses even a range far from it.
    for (what, at, expected) in [
        ("salt", HEADER_LEN + 3, "key commitment does not match"),
        (
            "commitment",
            HEADER_LEN + 30,
            "key commitment does not match",
        ),
        (
            "last chunk",
            good.len() - 1,
            "chunk 64 failed authentication",
        ),
    ] {
        let mut bytes = good.clone();
        bytes[at] ^= 1;
        s.write("p.paraes", &bytes);
        let before = s.names();
        let out = s.run(&[
            "dec", "-k", "k", "p.paraes", "--range", "0..100", "-o", "bad",
        ]);
        let err = s.assert_refused(&out, &before, what);
        assert!(err.contains(expected), "{what}: {err}");
    }
    s.write("p.paraes", &good);
    assert_usage_error(
        &s.run_with_stdin(&["dec", "-k", "k", "--range", "0..1"], b""),
        "stdin",
    );
    assert_usage_error(
        &s.run(&[
            "dec",
            "-k",
            "k",
            "--raw",
            "ctr",
            "--iv",
            "00000000000000000000000000000000",
            "p.paraes",
            "--range",
            "0..1",
        ]),
        "raw",
    );
}

/// A large range runs its whole chunks on many workers, read at their offsets (`--stats json`
/// says `io.read: offsets`; `io.write: offsets` into a file paraes created, `stream` to
/// standard output), and gives the plaintext's bytes whether it starts on a window of chunks,
/// inside one, or inside a chunk, and whether it reaches the end; it still reads only the
/// chunks it touches and the last, and a damaged chunk among its workers' is refused with no
/// output.
#[test]
fn a_large_range_runs_on_many_workers_at_offsets() {
    let s = Scratch::new();
    s.key_file("k", 256, 3, true);
    let n = 10 * (1 << 20) + 777;
    let plain = seeded_bytes(9, n);
    s.write("p", &plain);
    assert_success(&s.run(&["enc", "-q", "-k", "k", "p"]), "enc");
    let c = CHUNK;
    for (start, end) in [
        (5, 9 * (1 << 20) + 3),
        (3 * c + 1, n),
        (0, n),
        ((1 << 20) + 7 * c - 5, 8 * (1 << 20) + 100),
        (256 * c, 2 * 256 * c),
    ] {
        let text = format!("{start}..{end}");
        for (to, write) in [("r", "offsets"), ("-", "stream")] {
            let out = s.run(&[
                "dec", "-q", "-f", "-k", "k", "p.paraes", "--range", &text, "-o", to, "--stats",
                "json",
            ]);
            let err = assert_success(&out, &text);
            let stats: serde_json::Value = serde_json::from_str(err.trim()).expect(&err);
            assert_eq!(stats["io"]["read"], "offsets", "{text} to {to}: {stats}");
            assert_eq!(stats["io"]["write"], write, "{text} to {to}: {stats}");
            assert!(stats["io"]["workers"].as_u64().unwrap() >= 2, "{stats}");
            let got = if to == "-" { out.stdout } else { s.read("r") };
            assert!(got == plain[start..end], "{text} to {to}: wrong bytes");
            let touched = ((end.max(1) - 1) / c - start / c + 1) as u64;
            let read = stats["bytes_in"].as_u64().unwrap();
            assert!(
                read <= (touched + 1) * (c + TAG_LEN) as u64,
                "{text}: read {read} bytes"
            );
        }
    }
    // A damaged chunk in the middle of a large range: refused, nothing written.
    let chunks_start = HEADER_LEN + MESSAGE_PREFIX_LEN;
    let mut bytes = s.read("p.paraes");
    bytes[chunks_start + 300 * (CHUNK + TAG_LEN) + 5] ^= 1;
    s.write("p.paraes", &bytes);
    let before = s.names();
    let out = s.run(&[
        "dec", "-k", "k", "p.paraes", "--range", "5..9MiB", "-o", "bad",
    ]);
    let err = s.assert_refused(&out, &before, "damaged chunk in a large range");
    assert!(err.contains("chunk 300 failed authentication"), "{err}");
}
