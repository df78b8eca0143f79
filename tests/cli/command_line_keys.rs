//! Keys and passphrases without key files (`-k -`, `--key-fd`, `--key-env`,
//! `--passphrase-file -`, `<(...)`), and the warnings about secrets that other users can read
//! or that are short.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::command_line::prepared;
use crate::common::{assert_error, assert_success, assert_usage_error};

#[test]
fn keys_come_from_stdin_descriptors_environment_and_pipes() {
    let s = prepared();
    let plain = s.read("f");
    let key = s.read("key");
    assert_success(&s.run(&["enc", "-q", "-k", "key", "f"]), "enc");
    let opened = |out: std::process::Output, what: &str| {
        assert_success(&out, what);
        assert!(out.stdout == plain, "{what}: wrong plaintext");
    };
    opened(
        s.run_with_stdin(&["dec", "-q", "-k", "-", "f.paraes", "-o", "-"], &key),
        "-k -",
    );
    opened(
        s.bash("\"$PARAES\" dec -q --key-fd 3 f.paraes -o - 3<key"),
        "--key-fd 3",
    );
    opened(
        s.bash("K=$(cat key) \"$PARAES\" dec -q --key-env K f.paraes -o -"),
        "--key-env",
    );
    opened(
        s.bash("\"$PARAES\" dec -q -k <(cat key) f.paraes -o -"),
        "-k <(...)",
    );
    // A passphrase from standard input.
    let out = s.run_with_stdin(
        &["enc", "-q", "--passphrase-file", "-", "f", "-o", "p.paraes"],
        b"a long enough passphrase\n",
    );
    assert_success(&out, "--passphrase-file - (enc)");
    opened(
        s.run_with_stdin(
            &["dec", "-q", "--passphrase-file", "-", "p.paraes", "-o", "-"],
            b"a long enough passphrase\n",
        ),
        "--passphrase-file - (dec)",
    );
    // Standard input cannot carry both the key and the data.
    for args in [
        &["enc", "-k", "-"][..],
        &["dec", "--passphrase-file", "-"],
        &["dec", "-k", "-", "--passphrase-file", "-", "f.paraes"],
    ] {
        let message = assert_usage_error(&s.run_with_stdin(args, &key), &args.join(" "));
        assert!(message.contains("standard input"), "{message}");
    }
    let out = s.run(&["dec", "--key-fd", "9", "f.paraes", "-o", "-"]);
    assert!(assert_error(&out, "--key-fd 9").contains("descriptor 9"));
    let out = s.run(&[
        "dec",
        "--key-env",
        "PARAES_NO_SUCH_VAR",
        "f.paraes",
        "-o",
        "-",
    ]);
    assert!(assert_error(&out, "--key-env unset").contains("PARAES_NO_SUCH_VAR"));
}

#[test]
fn secrets_in_readable_files_and_short_passphrases_are_warned_about() {
    let s = prepared();
    s.write("pass", b"short\n");
    s.set_mode("pass", 0o644);
    let out = s.run(&["enc", "--passphrase-file", "pass", "f"]);
    let err = assert_success(&out, "enc with a readable, short passphrase file");
    assert!(err.contains("can be read by other users"), "{err}");
    assert!(err.contains("shorter than"), "{err}");
}

#[test]
fn key_files_from_pipes_keep_their_permission_checks_quiet() {
    // A pipe has no meaningful mode: no warning about other users.
    let s = prepared();
    s.set_mode("key", 0o600);
    let out = s.bash("\"$PARAES\" enc -k <(cat key) f -o g");
    let err = assert_success(&out, "-k <(cat key)");
    assert!(!err.contains("other users"), "{err}");
    let meta = fs::metadata(s.path("g")).expect("g");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
}
