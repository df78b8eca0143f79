//! Format v1 files still open: the fixtures in tests/fixtures/v1, written by the last paraes
//! that wrote v1, decrypt with their keys and passphrase, and `info` describes them exactly as
//! that release did. A wrong key is still refused, and v1 files cannot be rekeyed.

use std::path::Path;

use crate::common::{assert_error, assert_success, Scratch};

use crate::common::V1_FIXTURES as FIXTURES;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(name)).expect("fixture")
}

/// A scratch directory holding every fixture.
fn scratch() -> Scratch {
    crate::common::v1_fixtures()
}

#[test]
fn v1_fixtures_decrypt() {
    let s = scratch();
    let cases = [
        ("ctr-128.paraes", vec!["-k", "k128.key"], "plain.txt"),
        ("ecb-256.paraes", vec!["-k", "k256.key"], "plain.txt"),
        ("ctr-192-empty.paraes", vec!["-k", "k192.key"], "empty.txt"),
        (
            "ctr-pass.paraes",
            vec!["--passphrase-file", "pass.txt"],
            "plain.txt",
        ),
    ];
    for (file, unlock, expected) in cases {
        let out = s.run(&[&["dec", "-q", file, "-o", "-"][..], &unlock[..]].concat());
        assert_success(&out, file);
        assert!(out.stdout == fixture(expected), "{file}: wrong plaintext");
    }
    let wrong = s.run(&[
        "dec",
        "-q",
        "ctr-128.paraes",
        "-o",
        "-",
        "--key",
        "00112233445566778899aabbccddeeff",
    ]);
    let err = assert_error(&wrong, "wrong key on v1");
    assert!(err.contains("wrong key"), "{err}");
}

#[test]
fn info_describes_v1_fixtures_as_before() {
    let s = scratch();
    for file in ["ctr-128", "ecb-256", "ctr-192-empty", "ctr-pass"] {
        let out = s.run(&["info", &format!("{file}.paraes")]);
        assert_success(&out, file);
        let expected = String::from_utf8(fixture(&format!("{file}.info.txt"))).unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "{file}");
    }
}

#[test]
fn v1_files_cannot_be_rekeyed() {
    let s = scratch();
    let before = s.read("ctr-128.paraes");
    let out = s.run(&[
        "rekey",
        "-q",
        "-k",
        "k128.key",
        "--new-key-file",
        "k256.key",
        "ctr-128.paraes",
    ]);
    let err = assert_error(&out, "rekey v1");
    assert!(err.contains("v1"), "{err}");
    assert_eq!(s.read("ctr-128.paraes"), before, "the file is unchanged");
}
