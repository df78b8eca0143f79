//! Secrets stay secret: whatever goes wrong, no key (hex or raw bytes) and no passphrase appears
//! in paraes's messages, warnings or output names.

use crate::common::{seeded_bytes, stderr, Scratch};

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
