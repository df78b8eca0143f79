//! `paraes dec --range` (issue 14): ranges at and around chunk boundaries, empty and open
//! ranges equal `dd` slices of the plaintext for CTR and ECB, v1 and v2; ranges past the end
//! are refused with a clear error and no output; a small range of a large file reads a few
//! chunks, not the file.

use crate::common::{
    assert_error, assert_success, assert_usage_error, seeded_bytes, Mode, Scratch, CHUNK,
};

const PLAIN_LEN: usize = 5 * CHUNK + 100;

fn range(s: &Scratch, file: &str, key: &str, range: &str) -> Vec<u8> {
    let out = s.run(&["dec", "-q", "-k", key, file, "--range", range, "-o", "-"]);
    assert_success(&out, range);
    out.stdout
}

#[test]
fn ranges_equal_slices_of_the_plaintext() {
    for mode in Mode::ALL {
        let s = Scratch::new();
        s.key_file("k", 128, 1, true);
        let plain = seeded_bytes(5, PLAIN_LEN);
        s.write("p", &plain);
        s.enc_small_chunks("k", mode, "p");
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
            (format!("{}..{n}", 3 * c + 7), 3 * c + 7, n),
        ];
        for (text, start, end) in cases {
            assert_eq!(
                range(&s, "p.paraes", "k", &text),
                &plain[start..end],
                "{mode:?} {text}"
            );
        }
        // Past the end: a clear error and no output file.
        for text in [
            format!("0..{}", n + 1),
            format!("{}..", n + 1),
            "1GiB..2GiB".to_owned(),
        ] {
            let before = s.names();
            let out = s.run(&["dec", "-k", "k", "p.paraes", "--range", &text, "-o", "part"]);
            let err = s.assert_refused(&out, &before, &text);
            assert!(
                err.contains("reaches past the end") && err.contains(&format!("{n} bytes")),
                "{err}"
            );
        }
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
    s.enc_small_chunks("k", Mode::Ctr, "p");
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
    assert!(
        read <= 3 * (CHUNK as u64 + 16),
        "read {read} bytes for a 1000-byte range"
    );
    assert_eq!(s.read("r"), &plain[40000..41000]);
    // A chunk the range does not touch may be damaged; one it touches may not.
    let mut bytes = s.read("p.paraes");
    let header = bytes.len() - (64 * (CHUNK + 16) + 3 + 16);
    bytes[header + 20 * (CHUNK + 16) + 5] ^= 1;
    s.write("p.paraes", &bytes);
    assert_eq!(range(&s, "p.paraes", "k", "0..100"), &plain[..100]);
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
