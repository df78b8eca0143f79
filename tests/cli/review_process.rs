//! Findings of a hostile review of secrets and process edges (session 13): each test fails on
//! the code it was written against, and passes once the finding is fixed.

use std::fs::File;
use std::process::{Output, Stdio};

use crate::common::{assert_error, assert_success, seeded_bytes, stderr, Scratch};

/// A directory with a key file `key`, an identity file `id`, and `x.paraes` sealed for both.
fn with_container() -> Scratch {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    s.write("x", &seeded_bytes(2, 1000));
    assert_success(
        &s.run(&["keygen", "--x25519", "-o", "id"]),
        "keygen --x25519",
    );
    let recipient = s.run(&["keygen", "-y", "id"]);
    let recipient = String::from_utf8(recipient.stdout).unwrap();
    assert_success(
        &s.run(&["enc", "-q", "-k", "key", "-r", recipient.trim(), "x"]),
        "enc",
    );
    s
}

/// The commands that print their report on standard output.
const PRINTING: [&[&str]; 4] = [
    &["info", "x.paraes"],
    &["info", "--json", "x.paraes"],
    &["verify", "-k", "key", "x.paraes"],
    &["keygen", "-y", "id"],
];

/// `paraes ARGS` with standard output `stdout`.
fn run_into(s: &Scratch, args: &[&str], stdout: impl Into<Stdio>) -> Output {
    s.command(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("paraes runs")
}

/// `println!` panics when standard output cannot be written: `paraes info f > /dev/full`,
/// `paraes verify *.paraes | head -1` and `paraes keygen -y id | true` ended in a panic with
/// a backtrace and exit status 101 (verify's from a worker thread, "a scoped thread
/// panicked"). A full disk is one `paraes: error:` line and status 1; a reader that left is
/// the normal end it is for `dec | head` (status 0, nothing said).
#[test]
fn a_full_or_closed_standard_output_is_an_error_not_a_panic() {
    let s = with_container();
    for args in PRINTING {
        let what = args.join(" ");
        let full = File::options().write(true).open("/dev/full").unwrap();
        let message = assert_error(&run_into(&s, args, full), &format!("{what} > /dev/full"));
        assert!(
            message.starts_with("writing standard output failed"),
            "{what} > /dev/full: {message}"
        );
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = run_into(&s, args, writer);
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{what} | (reader gone): {:?}: {}",
            out.status,
            stderr(&out)
        );
    }
}
