//! `--allow-unverified-slot` on a format v2 file whose other slot its file key does not
//! authenticate (issue 35 item 2): the refusal's advice names `upgrade` before the override;
//! with the override, every way of reading the file says in one line which slot it ignored and
//! that its recipients may see different content (a file, a pipe, `--range`, a many-file run),
//! `verify`'s line names the slot instead of a plain OK, and `upgrade` names the recipients
//! it drops.

use paraes_core::fuzzing::plant_slot;

use crate::common::{assert_error, assert_success, stderr};
use crate::v2_compat::{public, scratch};

/// The v2 fixtures, with `victim.paraes`: ctr-multi.paraes with a slot planted in slot 1 for
/// its X25519 recipient under a forger's file key.
fn planted_v2() -> (crate::common::Scratch, Vec<u8>) {
    let s = scratch();
    let me = String::from_utf8(s.read("x25519.recipient"))
        .unwrap()
        .trim()
        .to_owned();
    let planted = plant_slot(&s.read("ctr-multi.paraes"), 1, &[public(&me)], 7);
    s.write("victim.paraes", &planted);
    let plain = s.read("plain.txt");
    (s, plain)
}

const IGNORED: &str = "stanza slot 1 (generation 7) is ignored as asked";

#[test]
fn the_refusal_names_upgrade_before_the_override() {
    let (s, _) = planted_v2();
    let out = s.run(&["dec", "-i", "x25519.identity", "victim.paraes", "-o", "out"]);
    let err = assert_error(&out, "dec without the override");
    let upgrade = err.find("paraes upgrade").expect("names upgrade");
    let allow = err
        .rfind("--allow-unverified-slot")
        .expect("names the override");
    assert!(upgrade < allow, "{err}");
    assert!(!s.exists("out"));
}

#[test]
fn with_the_override_every_way_of_reading_says_which_slot_it_ignored() {
    let (s, plain) = planted_v2();
    let id = ["-i", "x25519.identity", "--allow-unverified-slot"];
    let said = |out: &std::process::Output, what: &str| {
        let err = assert_success(out, what);
        assert_eq!(err.matches(IGNORED).count(), 1, "{what}: {err}");
        assert!(err.contains("may see different content"), "{what}: {err}");
        assert!(err.contains("paraes upgrade"), "{what}: {err}");
    };
    // A file.
    let out = s.run(&[&["dec"][..], &id, &["victim.paraes", "-o", "-"]].concat());
    said(&out, "dec of a file");
    assert!(out.stdout == plain);
    // A pipe.
    let out = s.run_with_stdin(
        &[&["dec"][..], &id, &["-o", "-"]].concat(),
        &s.read("victim.paraes"),
    );
    said(&out, "dec of a pipe");
    assert!(out.stdout == plain);
    // A range.
    let out = s.run(
        &[
            &["dec"][..],
            &id,
            &["victim.paraes", "--range", "3..10", "-o", "-"],
        ]
        .concat(),
    );
    said(&out, "dec --range");
    assert!(out.stdout == plain[3..10]);
    // Many files in one run: the planted one is named, the other is not.
    std::fs::create_dir(s.path("out")).unwrap();
    let out = s.run(
        &[
            &["dec"][..],
            &id,
            &["victim.paraes", "ctr-multi.paraes", "--output-dir", "out"],
        ]
        .concat(),
    );
    said(&out, "dec of many files");
    assert!(stderr(&out).contains("victim.paraes: "), "{}", stderr(&out));
    // verify: the file's own line names the slot.
    let out = s.run(&[&["verify"][..], &id, &["victim.paraes", "ctr-multi.paraes"]].concat());
    assert_success(&out, "verify");
    let lines = String::from_utf8(out.stdout).unwrap();
    assert!(
        lines.contains("victim.paraes: OK, stanza slot 1 ignored as asked: format v2, its recipients may see different content"),
        "{lines}"
    );
    assert!(lines.contains("ctr-multi.paraes: OK\n"), "{lines}");
}

#[test]
fn upgrade_with_the_override_names_the_recipients_it_drops() {
    let (s, plain) = planted_v2();
    let out = s.run(&[
        "upgrade",
        "-i",
        "x25519.identity",
        "--allow-unverified-slot",
        "victim.paraes",
    ]);
    let err = assert_success(&out, "upgrade");
    assert!(
        err.contains("stanza slot 1 (generation 7) is ignored as asked"),
        "{err}"
    );
    assert!(
        err.contains("what slot 1 lists (X25519 recipient) opens it only where slot 0 has a way in for it too"),
        "{err}"
    );
    // Said under --quiet too: the user overrode a refusal, and ways in are dropped.
    let (s, _) = planted_v2();
    let out = s.run(&[
        "dec",
        "-q",
        "-i",
        "x25519.identity",
        "--allow-unverified-slot",
        "victim.paraes",
        "-o",
        "-",
    ]);
    assert!(
        stderr(&out).contains("is ignored as asked"),
        "dec -q: {}",
        stderr(&out)
    );
    let out = s.run(&[
        "upgrade",
        "-q",
        "-i",
        "x25519.identity",
        "--allow-unverified-slot",
        "victim.paraes",
    ]);
    let err = assert_success(&out, "upgrade -q");
    assert!(err.contains("is ignored as asked"), "{err}");
    assert_eq!(s.read("victim.paraes")[8], 3);
    let out = s.run(&[
        "dec",
        "-q",
        "-i",
        "x25519.identity",
        "victim.paraes",
        "-o",
        "-",
    ]);
    assert_success(&out, "the upgraded file");
    assert!(out.stdout == plain);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}
