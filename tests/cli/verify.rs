//! `paraes verify` (issue 14): exit 0 only for a whole, authentic container; every kind of
//! tampering (header, the v3 message's salt and key commitment, body, tag, truncation, also at
//! a chunk boundary, extension, reordering, a header or body from another file, wrong key) gives
//! exit 1 and writes nothing; many files are checked in one run with a count of failures; v1
//! files verify (v2 files: tests/cli/v2_compat.rs).

use crate::common::{
    assert_error, assert_success, assert_usage_error, container_len, records, seeded_bytes, stderr,
    Scratch, CHUNK, CHUNK_ARG, CONTAINER_BITS, HEADER_LEN, MESSAGE_PREFIX_LEN, TAG_LEN,
};

/// Three full chunks and a short last one.
const PLAIN_LEN: usize = 3 * CHUNK + 100;

/// `plain` sealed for key file `k` with a `bits`-bit v3 body as `name`; returns its bytes.
fn seal(s: &Scratch, bits: usize, plain: &[u8], name: &str) -> Vec<u8> {
    s.write("plain", plain);
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "k",
        "--bits",
        &bits.to_string(),
        "--chunk-size",
        CHUNK_ARG,
        "plain",
        "-o",
        name,
    ]);
    assert_success(&out, &format!("enc --bits {bits}"));
    let sealed = s.read(name);
    assert_eq!(sealed[8], 3, "enc did not write format v3");
    assert_eq!(sealed.len(), container_len(plain.len(), HEADER_LEN));
    sealed
}

fn sealed(s: &Scratch, bits: usize) -> Vec<u8> {
    s.key_file("k", 256, 1, true);
    seal(s, bits, &seeded_bytes(3, PLAIN_LEN), "p.paraes")
}

#[test]
fn authentic_files_pass_and_every_tampering_fails_writing_nothing() {
    for bits in CONTAINER_BITS {
        let s = Scratch::new();
        let good = sealed(&s, bits);
        // Another file for the same key, of the same length: its header, salt and commitment
        // are its own (a fresh file key per file).
        let other = seal(&s, bits, &seeded_bytes(4, PLAIN_LEN), "o.paraes");
        let out = s.run(&["verify", "-k", "k", "p.paraes"]);
        assert_success(&out, "verify");
        assert_eq!(out.stdout, b"p.paraes: OK\n");
        assert_success(&s.run(&["verify", "-k", "k", "o.paraes"]), "verify other");
        let recs = records(&good, HEADER_LEN);
        assert_eq!(recs.len(), 4, "three full chunks and a short one");
        let record = recs[0].0.len() + TAG_LEN;
        assert_eq!(record, CHUNK + TAG_LEN);
        let body = HEADER_LEN + MESSAGE_PREFIX_LEN;
        let mut cases: Vec<(&str, Vec<u8>, Option<&str>)> = Vec::new();
        let flip = |at: usize| {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            bad
        };
        cases.push(("header body byte", flip(9), None));
        cases.push(("stanza byte", flip(70), None));
        cases.push((
            "salt byte",
            flip(HEADER_LEN),
            Some("key commitment does not match"),
        ));
        cases.push((
            "commitment byte",
            flip(HEADER_LEN + 24),
            Some("key commitment does not match"),
        ));
        cases.push((
            "first ciphertext byte",
            flip(body),
            Some("chunk 0 failed authentication"),
        ));
        cases.push((
            "a tag byte",
            flip(body + record - 1),
            Some("chunk 0 failed authentication"),
        ));
        cases.push((
            "last byte",
            flip(good.len() - 1),
            Some("chunk 3 failed authentication"),
        ));
        cases.push((
            "cut at a chunk boundary",
            good[..body + 2 * record].to_vec(),
            None,
        ));
        cases.push((
            "the short last chunk dropped (cut at the last boundary)",
            good[..body + 3 * record].to_vec(),
            None,
        ));
        cases.push(("cut inside a chunk", good[..good.len() - 7].to_vec(), None));
        cases.push(("header only", good[..HEADER_LEN].to_vec(), None));
        cases.push((
            "header, salt and commitment only",
            good[..body].to_vec(),
            None,
        ));
        cases.push(("bytes appended", [&good[..], b"more"].concat(), None));
        cases.push((
            "a record appended",
            [&good[..], &good[body..body + record]].concat(),
            None,
        ));
        let mut swapped = good[..body].to_vec();
        swapped.extend_from_slice(&good[body + record..body + 2 * record]);
        swapped.extend_from_slice(&good[body..body + record]);
        swapped.extend_from_slice(&good[body + 2 * record..]);
        cases.push(("two chunks swapped", swapped, None));
        cases.push((
            "the header from another file for the same key",
            [&other[..HEADER_LEN], &good[HEADER_LEN..]].concat(),
            Some("key commitment does not match"),
        ));
        cases.push((
            "the header, salt and commitment from another file for the same key",
            [&other[..body], &good[body..]].concat(),
            Some("failed authentication"),
        ));
        cases.push((
            "a chunk from another file for the same key",
            [
                &good[..body],
                &other[body..body + record],
                &good[body + record..],
            ]
            .concat(),
            Some("chunk 0 failed authentication"),
        ));
        for (what, bytes, expected) in cases {
            assert_ne!(bytes, good, "{what}: not a change");
            s.write("t.paraes", &bytes);
            let before = s.names();
            let out = s.run(&["verify", "-k", "k", "t.paraes"]);
            let what = format!("AES-{bits}: {what}");
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{what}: {err}");
            assert!(out.stdout.is_empty(), "{what}: said OK");
            assert!(err.contains("paraes: error: t.paraes: "), "{what}: {err}");
            if let Some(expected) = expected {
                assert!(err.contains(expected), "{what}: {err}");
            }
            assert_eq!(s.names(), before, "{what}: wrote something");
        }
        s.key_file("wrong", 256, 9, true);
        let before = s.names();
        let out = s.run(&["verify", "-k", "wrong", "p.paraes"]);
        assert_eq!(out.status.code(), Some(1), "wrong key: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "wrong key: said OK");
        assert_eq!(s.names(), before, "wrong key: wrote something");
    }
}

#[test]
fn many_files_are_checked_in_one_run() {
    let s = Scratch::new();
    let good = sealed(&s, 256);
    s.write("q.paraes", &good[..good.len() - 1]);
    s.write("r.paraes", &good);
    let out = s.run(&[
        "verify",
        "-k",
        "k",
        "p.paraes",
        "q.paraes",
        "r.paraes",
        "missing.paraes",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("paraes: error: 2 of 4 files failed"), "{err}");
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(
        said.contains("p.paraes: OK") && said.contains("r.paraes: OK"),
        "{said}"
    );
    assert!(!said.contains("q.paraes"), "{said}");
    let out = s.run(&["verify", "-q", "-k", "k", "p.paraes", "r.paraes"]);
    assert_success(&out, "quiet");
    assert!(out.stdout.is_empty());
    assert_usage_error(&s.run(&["verify", "-k", "k"]), "no files");
    assert_usage_error(&s.run(&["verify", "-k", "k", "-"]), "stdin");
    let err = assert_error(&s.run(&["verify", "-k", "k", "plain"]), "plaintext");
    assert!(err.contains("plain: not a paraes container"), "{err}");
}

#[test]
fn v1_containers_verify() {
    let s = crate::common::v1_fixtures();
    for (file, key) in [
        ("ctr-128.paraes", "k128.key"),
        ("ecb-256.paraes", "k256.key"),
        ("ctr-192-empty.paraes", "k192.key"),
    ] {
        assert_success(&s.run(&["verify", "-k", key, file]), file);
    }
}

#[test]
fn a_fifo_given_alone_is_refused_without_blocking() {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    let out = s.bash(r#"mkfifo fifo && timeout 20 "$PARAES" verify -k key fifo"#);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "blocked or passed: {err}");
    assert!(err.contains("fifo is not a regular file"), "{err}");
}
