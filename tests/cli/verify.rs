//! `paraes verify` (issue 14): exit 0 only for a whole, authentic container; every kind of
//! tampering (header, body, tag, truncation, extension, reordering, wrong key) gives exit 1 and
//! writes nothing; many files are checked in one run with a count of failures; v1 files verify.

use crate::common::{
    assert_error, assert_success, assert_usage_error, records, seeded_bytes, stderr, Mode, Scratch,
    HEADER_LEN, TAG_LEN,
};

const PLAIN_LEN: usize = 3 * 4096 + 100;

fn sealed(s: &Scratch, mode: Mode) -> Vec<u8> {
    s.key_file("k", 256, 1, true);
    s.write("p", &seeded_bytes(3, PLAIN_LEN));
    s.enc_small_chunks("k", mode, "p");
    s.read("p.paraes")
}

#[test]
fn authentic_files_pass_and_every_tampering_fails_writing_nothing() {
    for mode in Mode::ALL {
        let s = Scratch::new();
        let good = sealed(&s, mode);
        let out = s.run(&["verify", "-k", "k", "p.paraes"]);
        assert_success(&out, "verify");
        assert_eq!(out.stdout, b"p.paraes: OK\n");
        let recs = records(&good, HEADER_LEN);
        let record = recs[0].0.len() + TAG_LEN;
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        let flip = |at: usize| {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            bad
        };
        cases.push(("header flag byte", flip(9)));
        cases.push(("stanza byte", flip(70)));
        cases.push(("first ciphertext byte", flip(HEADER_LEN)));
        cases.push(("a tag byte", flip(HEADER_LEN + record - 1)));
        cases.push(("last byte", flip(good.len() - 1)));
        cases.push((
            "cut at a chunk boundary",
            good[..HEADER_LEN + 2 * record].to_vec(),
        ));
        cases.push(("cut inside a chunk", good[..good.len() - 7].to_vec()));
        cases.push(("header only", good[..HEADER_LEN].to_vec()));
        cases.push(("bytes appended", [&good[..], b"more"].concat()));
        cases.push((
            "a record appended",
            [&good[..], &good[HEADER_LEN..HEADER_LEN + record]].concat(),
        ));
        let mut swapped = good[..HEADER_LEN].to_vec();
        swapped.extend_from_slice(&good[HEADER_LEN + record..HEADER_LEN + 2 * record]);
        swapped.extend_from_slice(&good[HEADER_LEN..HEADER_LEN + record]);
        swapped.extend_from_slice(&good[HEADER_LEN + 2 * record..]);
        cases.push(("two chunks swapped", swapped));
        for (what, bytes) in cases {
            s.write("t.paraes", &bytes);
            let before = s.names();
            let out = s.run(&["verify", "-k", "k", "t.paraes"]);
            let what = format!("{mode:?}: {what}");
            assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
            assert!(out.stdout.is_empty(), "{what}: said OK");
            assert!(
                stderr(&out).contains("paraes: error: t.paraes: "),
                "{what}: {}",
                stderr(&out)
            );
            assert_eq!(s.names(), before, "{what}: wrote something");
        }
        s.key_file("wrong", 256, 9, true);
        let out = s.run(&["verify", "-k", "wrong", "p.paraes"]);
        assert_eq!(out.status.code(), Some(1), "wrong key");
    }
}

#[test]
fn many_files_are_checked_in_one_run() {
    let s = Scratch::new();
    let good = sealed(&s, Mode::Ctr);
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
    let err = assert_error(&s.run(&["verify", "-k", "k", "p"]), "plaintext");
    assert!(err.contains("p: not a paraes container"), "{err}");
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
