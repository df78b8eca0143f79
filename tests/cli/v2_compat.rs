//! Format v2 files still open: the fixtures in tests/fixtures/v2, written by the last paraes
//! that wrote v2 (README.md there says how), decrypt with each of their keys, their passphrase
//! and their identity, from a file and from a pipe; `verify` passes them and refuses every
//! tampering, writing nothing; `info` describes them exactly as that paraes did; `dec --range`
//! reads them; a wrong key, passphrase or identity is refused; a rekey keeps them format v2 (the
//! new key opens them, the old one no longer does); `--show-data-key` still prints the v2 body
//! key and counter, with which `openssl enc` decrypts the body; and v2's defences against a
//! planted stanza slot (issue 25) still hold: two slots for two recipients under different file
//! keys are refused for both, and a slot planted for the victim's own recipient never replaces
//! the real one, not even in a rekey. `upgrade` turns them into v3 files that every old
//! recipient opens, and a failed upgrade changes nothing.

use std::path::Path;

use paraes_core::container::{parse_recipients, Recipient};
use paraes_core::fuzzing::plant_slot;

use crate::common::{
    assert_error, assert_success, openssl_enc, stderr, Scratch, HEADER_LEN, TAG_LEN,
};

/// The format v2 fixtures (containers written by the last paraes that wrote v2, their keys,
/// passphrase, identity and plaintexts).
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v2");

/// The chunk size the fixtures were written with (`--chunk-size 4KiB`; the empty one has the
/// default, 1 MiB, and a single empty chunk).
const FIXTURE_CHUNK: usize = 4096;

/// Each fixture, the ways it opens, and its plaintext's file.
const CASES: [(&str, &[&[&str]], &str); 4] = [
    ("ctr-128.paraes", &[&["-k", "k128.key"]], "plain.txt"),
    ("ecb-256.paraes", &[&["-k", "k256.key"]], "plain.txt"),
    ("ctr-256-empty.paraes", &[&["-k", "k256.key"]], "empty.txt"),
    (
        "ctr-multi.paraes",
        &[
            &["-k", "k256.key"],
            &["--passphrase-file", "pass.txt"],
            &["-i", "x25519.identity"],
        ],
        "plain.txt",
    ),
];

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A scratch directory holding every v2 fixture (secrets with mode 0600).
pub(crate) fn scratch() -> Scratch {
    let s = Scratch::new();
    let mut copied = 0;
    for entry in std::fs::read_dir(FIXTURES).expect("the v2 fixtures folder") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        s.write(&name, &std::fs::read(&path).unwrap());
        s.set_mode(&name, 0o600);
        copied += 1;
    }
    assert!(copied >= 15, "the v2 fixtures folder holds {copied} files");
    for (file, _, _) in CASES {
        assert_eq!(s.read(file)[8], 2, "{file} is not a format v2 fixture");
    }
    s
}

/// `paraes dec -q FILE -o - UNLOCK...`.
fn dec(s: &Scratch, file: &str, unlock: &[&str], extra: &[&str]) -> std::process::Output {
    s.run(&[&["dec", "-q", file, "-o", "-"][..], unlock, extra].concat())
}

pub(crate) fn public(recipient: &str) -> Recipient {
    Recipient::Public(parse_recipients(recipient).unwrap().remove(0))
}

/// A new X25519 identity file `name`; returns its recipient.
fn identity(s: &Scratch, name: &str) -> String {
    assert_success(&s.run(&["keygen", "--x25519", "-o", name]), "keygen");
    let out = s.run(&["keygen", "-y", name]);
    assert_success(&out, "keygen -y");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn v2_fixtures_decrypt_with_each_of_their_keys() {
    let s = scratch();
    for (file, unlocks, expected) in CASES {
        let expected = fixture(expected);
        for unlock in unlocks {
            let what = format!("{file} {unlock:?}");
            let out = dec(&s, file, unlock, &[]);
            assert_success(&out, &what);
            assert!(out.stdout == expected, "{what}: wrong plaintext");
            // From a pipe (v2's body check then reads the first chunk only).
            let out = s.run_with_stdin(
                &[&["dec", "-q", "-o", "-"][..], &unlock[..]].concat(),
                &s.read(file),
            );
            assert_success(&out, &format!("{what} from a pipe"));
            assert!(
                out.stdout == expected,
                "{what} from a pipe: wrong plaintext"
            );
        }
        // To a file.
        let out = s.run(&[&["dec", "-q", file, "-o", "out"][..], unlocks[0]].concat());
        assert_success(&out, file);
        assert!(
            s.read("out") == expected,
            "{file} to a file: wrong plaintext"
        );
        s.remove("out");
        assert_eq!(s.read(file), fixture(file), "{file} changed");
    }
}

#[test]
fn v2_fixtures_verify() {
    let s = scratch();
    for (file, unlocks, _) in CASES {
        for unlock in unlocks {
            let out = s.run(&[&["verify"][..], unlock, &[file]].concat());
            assert_success(&out, &format!("verify {file} {unlock:?}"));
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                format!("{file}: OK\n")
            );
        }
    }
}

#[test]
fn info_describes_v2_fixtures_as_before() {
    let s = scratch();
    for (file, _, _) in CASES {
        let stem = file.strip_suffix(".paraes").unwrap();
        let out = s.run(&["info", file]);
        assert_success(&out, file);
        let expected = String::from_utf8(fixture(&format!("{stem}.info.txt"))).unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "{file}");
        // The JSON form says the same about where the body is.
        let out = s.run(&["info", "--json", file]);
        assert_success(&out, &format!("info --json {file}"));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["format"], 2, "{file}: {json}");
        assert_eq!(json["body_offset"], HEADER_LEN, "{file}: {json}");
    }
}

#[test]
fn ranges_of_v2_containers() {
    let s = scratch();
    let plain = s.read("plain.txt");
    let n = plain.len();
    let c = FIXTURE_CHUNK;
    for (file, unlock) in [
        ("ctr-128.paraes", &["-k", "k128.key"][..]),
        ("ecb-256.paraes", &["-k", "k256.key"]),
        ("ctr-multi.paraes", &["-i", "x25519.identity"]),
    ] {
        for (start, end) in [
            (0, n),
            (1, n / 2),
            (n / 3, n - 1),
            (n, n),
            (0, 0),
            (c - 1, c + 1),
            (c, 2 * c),
            (13 * c - 1, n),
            (n - 1, n),
        ] {
            let what = format!("{file} {start}..{end}");
            let out = dec(&s, file, unlock, &["--range", &format!("{start}..{end}")]);
            assert_success(&out, &what);
            assert!(out.stdout == plain[start..end], "{what}: wrong bytes");
        }
        let before = s.names();
        let out = s.run(
            &[
                &[
                    "dec",
                    file,
                    "--range",
                    &format!("0..{}", n + 1),
                    "-o",
                    "part",
                ][..],
                unlock,
            ]
            .concat(),
        );
        let err = s.assert_refused(&out, &before, &format!("{file} past the end"));
        assert!(
            err.contains("reaches past the end") && err.contains(&format!("{n} bytes")),
            "{err}"
        );
    }
    let out = dec(
        &s,
        "ctr-256-empty.paraes",
        &["-k", "k256.key"],
        &["--range", ".."],
    );
    assert_success(&out, "empty ..");
    assert!(out.stdout.is_empty());
    let before = s.names();
    let out = s.run(&[
        "dec",
        "-k",
        "k256.key",
        "ctr-256-empty.paraes",
        "--range",
        "0..1",
        "-o",
        "part",
    ]);
    let err = s.assert_refused(&out, &before, "empty 0..1");
    assert!(err.contains("0 bytes"), "{err}");
}

#[test]
fn a_wrong_key_passphrase_or_identity_is_refused() {
    let s = scratch();
    s.key_file("wrong.key", 256, 77, true);
    s.secret("wrong.pass", b"not the passphrase\n");
    identity(&s, "stranger.id");
    for (file, unlock) in [
        ("ctr-128.paraes", &["-k", "wrong.key"][..]),
        ("ctr-128.paraes", &["-k", "k256.key"]),
        ("ecb-256.paraes", &["-k", "k128.key"]),
        ("ctr-256-empty.paraes", &["-k", "k128.key"]),
        ("ctr-multi.paraes", &["-k", "k128.key"]),
        ("ctr-multi.paraes", &["--passphrase-file", "wrong.pass"]),
        ("ctr-multi.paraes", &["-i", "stranger.id"]),
    ] {
        let what = format!("{file} {unlock:?}");
        let before = s.names();
        let out = s.run(&[&["dec", file, "-o", "out"][..], unlock].concat());
        let err = s.assert_refused(&out, &before, &what);
        assert!(err.contains("opens this file"), "{what}: {err}");
        let out = s.run(&[&["verify"][..], unlock, &[file]].concat());
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{what}: verify said OK");
    }
}

#[test]
fn tampered_v2_files_are_refused_writing_nothing() {
    let s = scratch();
    for (file, key) in [
        ("ctr-128.paraes", "k128.key"),
        ("ecb-256.paraes", "k256.key"),
    ] {
        let good = s.read(file);
        let record = FIXTURE_CHUNK + TAG_LEN;
        let body = HEADER_LEN;
        let flip = |at: usize| {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            bad
        };
        let mut swapped = good[..body].to_vec();
        swapped.extend_from_slice(&good[body + record..body + 2 * record]);
        swapped.extend_from_slice(&good[body..body + record]);
        swapped.extend_from_slice(&good[body + 2 * record..]);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("header mode byte", flip(9)),
            ("counter byte", flip(20)),
            ("stanza byte", flip(70)),
            ("first ciphertext byte", flip(body)),
            ("a middle chunk's byte", flip(body + 5 * record + 9)),
            ("a tag byte", flip(body + record - 1)),
            ("last byte", flip(good.len() - 1)),
            (
                "cut at a chunk boundary",
                good[..body + 2 * record].to_vec(),
            ),
            ("cut inside a chunk", good[..good.len() - 7].to_vec()),
            ("header only", good[..body].to_vec()),
            ("bytes appended", [&good[..], b"more"].concat()),
            (
                "a record appended",
                [&good[..], &good[body..body + record]].concat(),
            ),
            ("two chunks swapped", swapped),
        ];
        for (what, bytes) in cases {
            let what = format!("{file}: {what}");
            assert_ne!(bytes, good, "{what}: not a change");
            s.write("t.paraes", &bytes);
            let before = s.names();
            let out = s.run(&["verify", "-k", key, "t.paraes"]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{what}: {err}");
            assert!(out.stdout.is_empty(), "{what}: said OK");
            assert!(err.contains("paraes: error: t.paraes: "), "{what}: {err}");
            assert_eq!(s.names(), before, "{what}: verify wrote something");
            let out = s.run(&["dec", "-k", key, "t.paraes", "-o", "out"]);
            s.assert_refused(&out, &before, &format!("dec {what}"));
        }
    }
}

#[test]
fn rekey_keeps_a_v2_file_v2_and_moves_it_to_the_new_key() {
    let s = scratch();
    let plain = s.read("plain.txt");
    s.key_file("new.key", 256, 5, true);
    for (file, old) in [
        ("ctr-128.paraes", &["-k", "k128.key"][..]),
        ("ctr-multi.paraes", &["--passphrase-file", "pass.txt"]),
    ] {
        let before = s.read(file);
        let out = s.run(
            &[
                &["rekey", "-q", "--force"][..],
                old,
                &["--new-key-file", "new.key", file],
            ]
            .concat(),
        );
        assert_success(&out, &format!("rekey {file}"));
        let after = s.read(file);
        assert_eq!(after[8], 2, "{file}: the rekey changed the format version");
        assert_eq!(after.len(), before.len(), "{file}: the header changed size");
        assert!(
            after[HEADER_LEN..] == before[HEADER_LEN..],
            "{file}: the rekey changed the body"
        );
        assert_ne!(after, before, "{file}: the rekey changed nothing");
        let out = dec(&s, file, &["-k", "new.key"], &[]);
        assert_success(&out, &format!("{file} with the new key"));
        assert!(
            out.stdout == plain,
            "{file}: wrong plaintext with the new key"
        );
        assert_success(
            &s.run(&["verify", "-k", "new.key", file]),
            &format!("verify {file} with the new key"),
        );
        let before = s.names();
        let out = s.run(&[&["dec", file, "-o", "out"][..], old].concat());
        let err = s.assert_refused(&out, &before, &format!("{file} with the old key"));
        assert!(err.contains("opens this file"), "{file}: {err}");
        let info = String::from_utf8(s.run(&["info", file]).stdout).unwrap();
        assert!(info.contains("paraes container v2"), "{file}: {info}");
        assert!(info.contains("generation 2: key file"), "{file}: {info}");
    }
    // The other stanzas of ctr-multi are gone with the old slot.
    for old in [&["-k", "k256.key"][..], &["-i", "x25519.identity"]] {
        let out = dec(&s, "ctr-multi.paraes", old, &[]);
        assert_eq!(out.status.code(), Some(1), "{old:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{old:?} still opens the file");
    }
}

#[test]
fn show_data_key_on_v2_prints_the_body_key_and_counter_that_openssl_decrypts_with() {
    let s = scratch();
    let plain = s.read("plain.txt");
    for (file, key, cipher, pad) in [
        ("ctr-128.paraes", "k128.key", "-aes-128-ctr", false),
        ("ctr-multi.paraes", "k256.key", "-aes-256-ctr", false),
        ("ecb-256.paraes", "k256.key", "-aes-256-ecb", true),
    ] {
        let out = s.run(&["dec", "-k", key, "--show-data-key", file, "-o", "out"]);
        let err = assert_success(&out, &format!("--show-data-key {file}"));
        assert!(s.read("out") == plain, "{file}: wrong plaintext");
        s.remove("out");
        let field = |name: &str| -> Vec<u8> {
            let line = err
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .unwrap_or_else(|| panic!("{file}: no '{name}' line: {err}"));
            hex::decode(line.trim()).unwrap_or_else(|e| panic!("{file}: {name} {e}: {err}"))
        };
        let data_key = field("data key:");
        let counter: [u8; 16] = field("counter:")
            .try_into()
            .unwrap_or_else(|_| panic!("{file}: a counter that is not 16 bytes: {err}"));
        assert_eq!(
            data_key.len(),
            if file == "ctr-128.paraes" { 16 } else { 32 }
        );
        let user_key = String::from_utf8(s.read(key)).unwrap();
        assert_ne!(
            hex::encode(&data_key),
            user_key.trim().to_lowercase(),
            "{file}: the user's key was printed"
        );
        // Where the body is and how it is cut, as `info` says.
        let info = s.run(&["info", "--json", file]);
        assert_success(&info, file);
        let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        let offset = info["body_offset"].as_u64().unwrap() as usize;
        let chunk = info["body"]["chunk_size"].as_u64().unwrap() as usize;
        assert_eq!(
            (offset, chunk),
            (HEADER_LEN, FIXTURE_CHUNK),
            "{file}: {info}"
        );
        assert_eq!(
            info["body"]["counter"].as_str().unwrap(),
            hex::encode(counter),
            "{file}: info and --show-data-key disagree on the counter"
        );
        let container = s.read(file);
        let ciphertext: Vec<u8> = container[offset..]
            .chunks(chunk + TAG_LEN)
            .flat_map(|record| {
                assert!(
                    record.len() >= TAG_LEN,
                    "{file}: a record shorter than a tag"
                );
                &record[..record.len() - TAG_LEN]
            })
            .copied()
            .collect();
        let iv = (!pad).then_some(&counter);
        let decrypted = openssl_enc(cipher, &data_key, iv, true, pad, &ciphertext);
        assert!(
            decrypted == plain,
            "{file}: openssl {cipher} gave other bytes"
        );
    }
}

#[test]
fn slots_planted_in_a_v2_file_never_open_it_for_anyone_nor_replace_the_real_one() {
    let s = scratch();
    let plain = s.read("plain.txt");
    let me = String::from_utf8(s.read("x25519.recipient"))
        .unwrap()
        .trim()
        .to_owned();
    let bob = identity(&s, "bob.id");
    let original = s.read("ctr-multi.paraes");
    // Two recipients under different file keys: slot 1 wraps another file key for Bob. v2's
    // body check (the first and last chunk tags under the file key) refuses Bob; the real
    // recipient is refused because the other slot does not verify under her file key.
    let two_faced = plant_slot(&original, 1, &[public(&bob)], 1);
    s.write("two.paraes", &two_faced);
    for (unlock, expected) in [
        (&["-i", "x25519.identity"][..], "does not authenticate"),
        (&["-i", "bob.id"], "failed authentication"),
    ] {
        for command in [
            [&["dec", "two.paraes", "-o", "-"][..], unlock].concat(),
            [&["verify"][..], unlock, &["two.paraes"]].concat(),
        ] {
            let out = s.run(&command);
            let err = assert_error(&out, &format!("{command:?}"));
            assert!(out.stdout.is_empty(), "{command:?}: wrote");
            assert!(err.contains(expected), "{command:?}: {err}");
        }
    }
    let out = dec(
        &s,
        "two.paraes",
        &["-i", "bob.id"],
        &["--allow-unverified-slot"],
    );
    let err = assert_error(&out, "bob with the override");
    assert!(out.stdout.is_empty(), "bob with the override: wrote");
    assert!(err.contains("failed authentication"), "{err}");
    // A valid slot planted for the victim's own recipient, from her public recipient alone: a
    // rekey is refused and writes nothing; with the override the planted file key fails the
    // body check, so the real slot opens the file and the rekey overwrites the planted one,
    // keeping format v2.
    let planted = plant_slot(&original, 1, &[public(&me)], 7);
    s.write("victim.paraes", &planted);
    s.key_file("new.key", 256, 6, true);
    let rekey = |extra: &[&str]| {
        s.run(
            &[
                &["rekey", "-q", "--force", "-i", "x25519.identity"][..],
                extra,
                &["--new-key-file", "new.key", "victim.paraes"],
            ]
            .concat(),
        )
    };
    let err = assert_error(&rekey(&[]), "rekey");
    assert!(err.contains("does not authenticate"), "{err}");
    assert_eq!(s.read("victim.paraes"), planted, "a refused rekey wrote");
    let out = dec(&s, "victim.paraes", &["-i", "x25519.identity"], &[]);
    let err = assert_error(&out, "dec of the planted file");
    assert!(err.contains("does not authenticate"), "{err}");
    let out = dec(
        &s,
        "victim.paraes",
        &["-i", "x25519.identity", "--allow-unverified-slot"],
        &[],
    );
    assert_success(&out, "dec with the override");
    assert!(out.stdout == plain, "the override read the planted slot");
    assert_success(
        &rekey(&["--allow-unverified-slot"]),
        "rekey with the override",
    );
    assert_eq!(
        s.read("victim.paraes")[8],
        2,
        "the rekey changed the format"
    );
    let out = dec(&s, "victim.paraes", &["-k", "new.key"], &[]);
    assert_success(&out, "the new key");
    assert!(out.stdout == plain, "wrong plaintext after the rekey");
}

/// The names in the scratch directory, sorted (to see that a failed upgrade left nothing).
fn names(s: &Scratch) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(s.path("."))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `paraes upgrade` re-encrypts each v2 fixture as v3 under the same file key, in one run, and
/// keeps every stanza: each key, the passphrase and the identity of the v2 file open the v3
/// file to the same plaintext; the file keeps its mode; `--bits 128` gives a 128-bit body.
#[test]
fn upgrade_makes_v3_files_that_every_old_recipient_opens() {
    let s = scratch();
    s.set_mode("ctr-multi.paraes", 0o640);
    let out = s.run(&[
        "upgrade",
        "-k",
        "k256.key",
        "ctr-multi.paraes",
        "ecb-256.paraes",
        "ctr-256-empty.paraes",
    ]);
    assert_success(&out, "upgrade of three v2 files");
    let out = s.run(&[
        "upgrade",
        "-k",
        "k128.key",
        "--bits",
        "128",
        "ctr-128.paraes",
    ]);
    assert_success(&out, "upgrade --bits 128");
    for (file, unlocks, plain) in CASES {
        let bytes = s.read(file);
        assert_eq!(bytes[8], 3, "{file} is format v3 after the upgrade");
        let bits = if file == "ctr-128.paraes" { 16 } else { 32 };
        assert_eq!(bytes[10], bits, "{file}: body key size");
        for unlock in unlocks {
            let out = dec(&s, file, unlock, &[]);
            assert_success(&out, &format!("{file} {unlock:?} after the upgrade"));
            assert!(out.stdout == fixture(plain), "{file} {unlock:?}: plaintext");
        }
        assert_success(&s.run(&[&["verify", file][..], unlocks[0]].concat()), file);
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(s.path("ctr-multi.paraes"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o640, "the upgraded file keeps its mode");
    // Upgrading again is refused, and changes nothing.
    let before = s.read("ctr-multi.paraes");
    let err = assert_error(
        &s.run(&["upgrade", "-k", "k256.key", "ctr-multi.paraes"]),
        "a second upgrade",
    );
    assert!(err.contains("already format v3"), "{err}");
    assert!(s.read("ctr-multi.paraes") == before);
}

/// A v2 file whose middle chunk was changed fails the upgrade (its plaintext is not authentic)
/// and stays byte for byte as it was, with no temporary left; the other files of the run are
/// upgraded. v1 files and wrong keys are refused the same way; --bits 192 and no key are usage
/// errors.
#[test]
fn a_failed_upgrade_changes_nothing_and_the_run_goes_on() {
    let s = scratch();
    let mut damaged = s.read("ctr-multi.paraes");
    let middle = HEADER_LEN + 5 * (FIXTURE_CHUNK + TAG_LEN) + 100;
    damaged[middle] ^= 1;
    s.write("damaged.paraes", &damaged);
    s.set_mode("damaged.paraes", 0o600);
    let v1 = std::fs::read(Path::new(crate::common::V1_FIXTURES).join("ctr-128.paraes")).unwrap();
    s.write("v1.paraes", &v1);
    let before = names(&s);
    let out = s.run(&[
        "upgrade",
        "-k",
        "k256.key",
        "damaged.paraes",
        "v1.paraes",
        "ctr-128.paraes",
        "ecb-256.paraes",
    ]);
    assert_eq!(out.status.code(), Some(1), "upgrade with three bad files");
    let err = stderr(&out);
    assert!(
        err.contains("damaged.paraes") && err.contains("failed authentication"),
        "{err}"
    );
    assert!(
        err.contains("v1.paraes") && err.contains("format v1"),
        "{err}"
    );
    assert!(
        err.contains("ctr-128.paraes") && err.contains("none of the given keys"),
        "{err}"
    );
    assert!(err.contains("3 of 4 files were not upgraded"), "{err}");
    assert!(
        s.read("damaged.paraes") == damaged,
        "the damaged file is unchanged"
    );
    assert!(s.read("v1.paraes") == v1);
    assert!(s.read("ctr-128.paraes") == fixture("ctr-128.paraes"));
    assert_eq!(
        s.read("ecb-256.paraes")[8],
        3,
        "the good file of the run was upgraded"
    );
    assert_eq!(names(&s), before, "no temporary is left");
    for args in [
        &[
            "upgrade",
            "-k",
            "k256.key",
            "--bits",
            "192",
            "ecb-256.paraes",
        ][..],
        &["upgrade", "ecb-256.paraes"][..],
    ] {
        crate::common::assert_usage_error(&s.run(args), &args.join(" "));
    }
}

/// Through a symbolic link the target is upgraded and the link stays a link; a file with
/// another hard link is refused (the other name would keep format v2).
#[test]
fn upgrade_follows_links_and_refuses_hard_links() {
    let s = scratch();
    std::os::unix::fs::symlink("ctr-128.paraes", s.path("link.paraes")).unwrap();
    assert_success(
        &s.run(&["upgrade", "-k", "k128.key", "link.paraes"]),
        "via link",
    );
    assert!(std::fs::symlink_metadata(s.path("link.paraes"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(s.read("ctr-128.paraes")[8], 3);
    std::fs::hard_link(s.path("ecb-256.paraes"), s.path("other.paraes")).unwrap();
    let err = assert_error(
        &s.run(&["upgrade", "-k", "k256.key", "ecb-256.paraes"]),
        "hard link",
    );
    assert!(err.contains("hard links"), "{err}");
    assert!(s.read("ecb-256.paraes") == fixture("ecb-256.paraes"));
}
