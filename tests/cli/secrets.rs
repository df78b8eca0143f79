//! Secrets stay secret: whatever goes wrong, no key (hex or raw bytes) and no passphrase appears
//! in paraes's messages, warnings or output names.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;

use crate::common::{assert_error, assert_success, seeded_bytes, stderr, Scratch};

/// Test identities (made for these tests from fixed seeds; they guard nothing).
const X25519_IDENTITY: &str =
    "PARAES-SECRET-KEY-1JNEUN88SYNZAWQKEGD0NF8EG6ZDJF5CMT9EX3FT3Z6Q7FN268NPST04UR0";
const PQ_IDENTITY: &str =
    "PARAES-PQ-SECRET-KEY-1RMDGZ2VUUCWNVZDUM62D2DQWE3846J3406RQWCDX06E58YGND07SLREXW3";

/// Asserts that no 4 consecutive characters of `secret` show in `shown` (either case).
fn assert_no_part_of(secret: &[u8], shown: &[u8], what: &str) {
    let shown = String::from_utf8_lossy(shown).to_lowercase();
    let secret = String::from_utf8_lossy(secret).to_lowercase();
    for part in secret.as_bytes().windows(4) {
        let part = String::from_utf8_lossy(part);
        assert!(
            !shown.contains(part.as_ref()),
            "{what}: \"{part}\" of the secret shows: {shown}"
        );
    }
}

/// Runs `paraes ARGS`, expects a failure, and checks that none of `secrets` shows on stdout or
/// stderr, in any spelling (hex lower/upper, raw text).
fn fails_without_telling(scratch: &Scratch, args: &[&str], secrets: &[&[u8]], what: &str) {
    let out = scratch.run(args);
    assert!(
        !out.status.success(),
        "{what}: should fail: {}",
        stderr(&out)
    );
    let shown = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    let shown_text = String::from_utf8_lossy(&shown).to_lowercase();
    for secret in secrets {
        let hex = hex::encode(secret);
        assert!(
            !shown_text.contains(&hex),
            "{what}: the key shows as hex: {shown_text}"
        );
        // At least 8 bytes of the secret verbatim (raw key bytes, a passphrase).
        for window in secret.windows(8.min(secret.len())) {
            assert!(
                !shown.windows(window.len()).any(|w| w == window),
                "{what}: part of a secret shows verbatim: {shown_text}"
            );
        }
    }
}

#[test]
fn no_error_shows_a_key_or_passphrase() {
    let scratch = Scratch::new();
    let key = scratch.key_file("k", 256, 1, true);
    let other = scratch.key_file("other", 256, 2, true);
    let raw = scratch.key_file("raw", 128, 3, false);
    let passphrase: &[u8] = b"correct horse battery staple";
    scratch.secret("pass", passphrase);
    scratch.secret("wrongpass", b"incorrect horse battery staple");
    scratch.write("plain", &seeded_bytes(4, 10_000));
    let run = scratch.run(&["enc", "-q", "-k", "k", "plain", "-o", "sealed"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let run = scratch.run(&[
        "enc",
        "-q",
        "--passphrase-file",
        "pass",
        "plain",
        "-o",
        "psealed",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let key_hex = hex::encode(&key);
    let raw_hex = hex::encode(&raw);
    // A key file whose bad contents are a secret-looking string.
    let mut bad_file = key_hex[..63].to_string();
    bad_file.push('z');
    scratch.write("bad", bad_file.as_bytes());
    scratch.set_mode("bad", 0o600);

    let secrets: [&[u8]; 4] = [&key, &other, &raw, passphrase];
    let cases: [(&[&str], &str); 7] = [
        (&["dec", "-k", "other", "sealed", "-o", "x"], "wrong key"),
        (
            &["dec", "--key", &raw_hex, "sealed", "-o", "x"],
            "wrong key size",
        ),
        (
            &["enc", "--key", &key_hex, "missing", "-o", "x"],
            "missing input",
        ),
        (
            &["enc", "--key", &key_hex[..62], "plain", "-o", "x"],
            "short --key",
        ),
        (&["enc", "-k", "bad", "plain", "-o", "x"], "bad key file"),
        (
            &[
                "dec",
                "--passphrase-file",
                "wrongpass",
                "psealed",
                "-o",
                "x",
            ],
            "wrong passphrase",
        ),
        (
            &["dec", "-k", "k", "psealed", "-o", "x"],
            "key for a passphrase container",
        ),
    ];
    for (args, what) in cases {
        fails_without_telling(&scratch, args, &secrets, what);
    }
    // A key given on the command line is warned about, but the warning does not repeat it.
    let out = scratch.run(&["enc", "--key", &key_hex, "plain", "-o", "fine", "-f"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--key"),
        "expected the process-list warning"
    );
    assert!(!stderr(&out).to_lowercase().contains(&key_hex));
}

#[test]
fn an_identity_given_as_a_recipient_is_not_echoed() {
    let s = Scratch::new();
    s.write("f", b"data");
    for identity in [X25519_IDENTITY, PQ_IDENTITY] {
        let body = &identity[identity.find('1').unwrap() + 1..];
        let mut mistyped = identity.to_string();
        mistyped.replace_range(30..31, "B");
        for given in [
            identity.to_string(),
            identity.to_lowercase(),
            mistyped,
            identity[..40].to_string(),
        ] {
            let out = s.run(&["enc", "-r", &given, "f"]);
            let err = assert_error(&out, "an identity as -r");
            assert!(err.contains("secret identity"), "{err}");
            assert_no_part_of(body.as_bytes(), &out.stderr, "-r IDENTITY");
            s.write("list", format!("# mine\n{given}\n").as_bytes());
            let out = s.run(&["enc", "-R", "list", "f"]);
            let err = assert_error(&out, "an identity in -R");
            assert!(
                err.contains("line 2") && err.contains("secret identity"),
                "{err}"
            );
            assert_no_part_of(body.as_bytes(), &out.stderr, "-R with an identity");
            assert!(!s.exists("f.paraes"));
        }
    }
}

#[test]
fn a_bad_key_is_refused_in_words_that_do_not_depend_on_it() {
    let s = Scratch::new();
    s.write("f", b"data");
    let hex = hex::encode(seeded_bytes(7, 32));
    let mut typo = hex.clone();
    typo.replace_range(32..33, "g");
    let contents: [&[u8]; 6] = [
        b"hunter2hunter2hunter2\n",
        b"correct horse battery staple\n",
        typo.as_bytes(),
        &hex.as_bytes()[..63],
        b"0011zz",
        b"\xff\xfehunter2\x01",
    ];
    let mut first = None;
    for content in contents {
        s.secret("k", content);
        let out = s.run(&["enc", "-k", "k", "f"]);
        let err = assert_error(&out, "a bad key file");
        assert!(err.contains("is not a key"), "{err}");
        assert_no_part_of(content, &out.stderr, "-k");
        assert_eq!(first.get_or_insert_with(|| err.clone()), &err, "same words");
        let text = String::from_utf8_lossy(content).trim().to_string();
        if !text.contains('\u{fffd}') && !text.contains(' ') {
            let out = s.run(&["enc", "--key", &text, "f"]);
            let err = stderr(&out);
            assert!(err.contains("--key is not a key"), "{err}");
            assert_no_part_of(content, &out.stderr, "--key");
        }
        // Not text at all: still not echoed.
        let out = s
            .command(&["enc", "--key-env", "PARAES_TEST_KEY", "f"])
            .env("PARAES_TEST_KEY", OsStr::from_bytes(content))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = assert_error(&out, "a bad --key-env");
        assert!(err.contains("is not a key"), "{err}");
        assert_no_part_of(content, &out.stderr, "--key-env");
        assert!(!s.exists("f.paraes"));
    }
}

#[test]
fn a_raw_key_that_starts_with_a_hash_is_a_key() {
    let s = Scratch::new();
    let plain = seeded_bytes(9, 5000);
    s.write("f", &plain);
    let mut key = seeded_bytes(10, 32);
    key[0] = b'#';
    key[7] = 0x00;
    key[8] = 0xff;
    s.secret("k", &key);
    assert_success(&s.run(&["enc", "-q", "-k", "k", "f"]), "enc with a #-key");
    let out = s.run(&["dec", "-q", "-k", "k", "f.paraes", "-o", "-"]);
    assert_success(&out, "dec with a #-key");
    assert_eq!(out.stdout, plain);
    // Identity files are still told apart, comments and all.
    s.secret(
        "id",
        format!("# my identity\n{X25519_IDENTITY}\n").as_bytes(),
    );
    let err = assert_error(&s.run(&["enc", "-k", "id", "f", "-f"]), "-k IDENTITY");
    assert!(err.contains("identity, not a key"), "{err}");
    assert_no_part_of(
        &X25519_IDENTITY.as_bytes()[19..],
        err.as_bytes(),
        "-k IDENTITY",
    );
}

#[test]
fn a_key_file_given_as_an_identity_is_told_as_a_key() {
    let s = Scratch::new();
    s.write("f", b"data");
    let hex_key = s.key_file("hex.key", 256, 11, true);
    let raw_key = s.key_file("raw.key", 128, 12, false);
    assert_success(&s.run(&["enc", "-q", "-k", "raw.key", "f"]), "enc");
    for (name, key) in [("hex.key", hex_key), ("raw.key", raw_key)] {
        for args in [
            &["dec", "-i", name, "f.paraes", "-o", "out"][..],
            &["keygen", "-y", name],
        ] {
            let out = s.run(args);
            let err = assert_error(&out, &format!("{args:?}"));
            assert!(
                err.contains(&format!(
                    "identity file {name} holds a key, not an identity: give it with -k"
                )),
                "{args:?}: {err}"
            );
            assert_no_part_of(hex::encode(&key).as_bytes(), &out.stderr, name);
            assert!(out.stdout.is_empty() && !s.exists("out"), "{args:?}");
        }
    }
}
