//! Command-line abuse: unknown flags, missing files, directories and unreadable files where
//! files belong, empty input every way, /dev/zero with and without a byte limit, and names
//! with spaces, unicode, newlines and bytes that are not UTF-8. Every refusal is one
//! `paraes: error:` line, a non-zero status, and nothing left behind.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::common::{
    assert_error, assert_silent_success, assert_usage_error, bin, container_len, seeded_bytes,
    send_signal, skip, stderr, unfinished_output, unprivileged, wait_until, Scratch, HEADER_LEN,
};

const IV: &str = "000102030405060708090a0b0c0d0e0f";

/// A directory with a 256-bit key file `key` (mode 0600) and a 10,000-byte plaintext `x`.
fn prepared() -> (Scratch, Vec<u8>) {
    let s = Scratch::new();
    s.key_file("key", 256, 7, true);
    let plain = seeded_bytes(7, 10_000);
    s.write("x", &plain);
    (s, plain)
}

#[test]
fn unknown_and_malformed_flags_are_usage_errors() {
    let (s, plain) = prepared();
    for args in [
        &["--frobnicate", "enc", "-k", "key", "x"][..],
        &["enc", "-k", "key", "x", "-Z"],
        &["enc", "-k", "key", "x", "--forc"],
        &["enc", "-k", "key", "x", "-o"],
        &["enc", "-k", "key", "x", "--raw=yes"],
        &["enc", "-k", "key", "x", "y", "z", "-o", "out"],
        &["enc", "-k", "key", "x", "--threads", "many"],
        &[
            "enc",
            "-k",
            "key",
            "x",
            "--chunk-size",
            "99999999999999999999",
        ],
        &["dec", "-k", "key", "x.paraes", "--frobnicate"],
        &["info", "x.paraes", "--frobnicate"],
        &["info"],
        &["keygen", "--frobnicate"],
        &["bench", "--frobnicate"],
    ] {
        let before = s.names();
        assert_usage_error(&s.run(args), &args.join(" "));
        assert_eq!(s.names(), before, "{args:?}: the directory changed");
    }
    assert_eq!(s.read("x"), plain, "the input changed");

    // After `--`, a name that looks like a flag is a file name.
    s.write("--frobnicate", &plain);
    let out = s.run(&["enc", "-k", "key", "-o", "f.paraes", "--", "--frobnicate"]);
    assert_silent_success(&out, "enc -- --frobnicate");
    let out = s.run(&["dec", "-k", "key", "-o", "-", "f.paraes"]);
    assert_silent_success(&out, "dec f.paraes");
    assert_eq!(out.stdout, plain);
}

#[test]
fn missing_files_are_refused() {
    let (s, plain) = prepared();
    let out = s.run(&["enc", "-k", "key", "x"]);
    assert_silent_success(&out, "enc x");
    std::os::unix::fs::symlink("gone", s.path("dangling")).expect("symlink");
    for (args, named) in [
        (&["enc", "-k", "no-key", "x"][..], "no-key"),
        (&["enc", "--passphrase-file", "no-pass", "x"], "no-pass"),
        (&["enc", "-k", "key", "no-dir/x"], "no-dir/x"),
        (&["enc", "-k", "key", "dangling"], "dangling"),
        (&["enc", "-k", "key", "missing", "-o", "-"], "missing"),
        (
            &["dec", "-k", "key", "missing.paraes", "-o", "out"],
            "missing",
        ),
        (&["dec", "-k", "no-key", "x.paraes", "-o", "-"], "no-key"),
    ] {
        let what = args.join(" ");
        let before = s.names();
        let out = s.run(args);
        let message = s.assert_refused(&out, &before, &what);
        assert!(message.contains(named), "{what}: {message}");
        assert!(out.stdout.is_empty(), "{what}: output written");
    }
    assert_eq!(s.read("x"), plain, "the input changed");
}

#[test]
fn directories_where_files_belong_are_refused() {
    let (s, plain) = prepared();
    for dir in ["dir", "key-dir", "x.paraes", "y"] {
        fs::create_dir(s.path(dir)).expect("mkdir");
    }
    s.write("y.paraes", b"");
    for (args, expected) in [
        // Input.
        (&["enc", "-k", "key", ".", "-o", "-"][..], "directory"),
        (&["enc", "-k", "key", "dir/", "-o", "-"], "directory"),
        // Key and passphrase files.
        (&["enc", "-k", "key-dir", "x", "-o", "-"], "key-dir"),
        (
            &["enc", "--passphrase-file", "key-dir", "x", "-o", "-"],
            "key-dir",
        ),
        // Outputs, given or derived from the input name.
        (&["enc", "-k", "key", "x"], "directory"),
        (&["enc", "-k", "key", "x", "--force"], "directory"),
        (&["enc", "-k", "key", "x", "-o", "."], "directory"),
        (&["enc", "-k", "key", "x", "-o", "dir/"], "directory"),
        (&["enc", "-k", "key", "x", "-o", "/"], "directory"),
    ] {
        let what = args.join(" ");
        let before = s.names();
        let out = s.run(args);
        let message = s.assert_refused(&out, &before, &what);
        assert!(message.contains(expected), "{what}: {message}");
        assert!(out.stdout.is_empty(), "{what}: output written");
    }
    // dec's derived output `y` is a directory (its input is checked first: make it valid).
    fs::remove_dir(s.path("x.paraes")).expect("rmdir");
    let out = s.run(&["enc", "-k", "key", "x", "-o", "y.paraes", "--force"]);
    assert_silent_success(&out, "enc -o y.paraes");
    let before = s.names();
    let message = s.assert_refused(
        &s.run(&["dec", "-k", "key", "y.paraes", "--force"]),
        &before,
        "dec y.paraes onto the directory y",
    );
    assert!(message.contains("directory"), "{message}");
    assert!(fs::read_dir(s.path("y")).expect("y").next().is_none());
    assert!(fs::read_dir(s.path("dir")).expect("dir").next().is_none());
    assert_eq!(s.read("x"), plain, "the input changed");
}

/// Run as a user without privileges (`unprivileged`: root reads any file whatever its mode),
/// who is not the files' owner.
#[test]
fn unreadable_files_and_unwritable_directories_are_refused() {
    let (s, plain) = prepared();
    // The other user may enter the directory (but not write in it) and read `key`; -q keeps
    // the warning about that key's mode off stderr.
    s.set_mode("", 0o755);
    s.set_mode("key", 0o644);
    s.write("pass", b"correct horse\n");
    s.write("sealed.paraes", b"");
    let out = s.run(&[
        "enc",
        "-q",
        "-k",
        "key",
        "x",
        "-o",
        "sealed.paraes",
        "--force",
    ]);
    assert_silent_success(&out, "enc sealed.paraes");
    // paraes makes its outputs private (0600): let the other user read this one.
    s.set_mode("sealed.paraes", 0o644);
    s.write("locked", &plain);
    s.write("locked-key", &fs::read(s.path("key")).expect("key"));
    s.write("locked-pass", b"correct horse\n");
    s.write("locked.paraes", &s.read("sealed.paraes"));
    for name in ["locked", "locked-key", "locked-pass", "locked.paraes"] {
        s.set_mode(name, 0o000);
    }
    let cases: [(&[&str], &str); 6] = [
        (&["enc", "-q", "-k", "key", "locked", "-o", "-"], "locked"),
        (
            &["dec", "-q", "-k", "key", "locked.paraes", "-o", "-"],
            "locked",
        ),
        (
            &["enc", "-q", "-k", "locked-key", "x", "-o", "-"],
            "locked-key",
        ),
        (
            &[
                "enc",
                "-q",
                "--passphrase-file",
                "locked-pass",
                "x",
                "-o",
                "-",
            ],
            "locked-pass",
        ),
        // Readable input, but no right to write in the directory: derived and given names.
        (&["enc", "-q", "-k", "key", "x"], "not writable"),
        (
            &["dec", "-q", "-k", "key", "sealed.paraes", "-o", "y"],
            "not writable",
        ),
    ];
    for (args, expected) in cases {
        let what = args.join(" ");
        let before = s.names();
        let out = unprivileged(&s.path(""), args)
            .output()
            .expect("paraes runs");
        let message = s.assert_refused(&out, &before, &what);
        assert!(message.contains(expected), "{what}: {message}");
        assert!(out.stdout.is_empty(), "{what}: output written");
    }
    assert_eq!(s.read("x"), plain, "the input changed");
    assert_eq!(s.read("locked"), plain, "the unreadable input changed");
}

/// The formats of `enc`/`dec` that empty input is tried with: extra arguments of `enc` and of
/// `dec`, and the length of the encryption of nothing.
type EmptyVariant = (&'static str, Vec<&'static str>, Vec<&'static str>, usize);

fn empty_input_variants() -> [EmptyVariant; 5] {
    let raw = |args: Vec<&'static str>| (args.clone(), args);
    let (ctr_enc, ctr_dec) = raw(vec!["--raw", "ctr", "--iv", IV]);
    let (ecb_enc, ecb_dec) = raw(vec!["--raw", "ecb", "-q"]);
    let (nopad_enc, nopad_dec) = raw(vec!["--raw", "ecb", "--no-pad", "-q"]);
    [
        // dec reads a container's key size from its header: it takes no --bits.
        (
            "container (Cobblestone-256)",
            vec![],
            vec![],
            container_len(0, HEADER_LEN),
        ),
        (
            "container (Cobblestone-128)",
            vec!["--bits", "128"],
            vec![],
            container_len(0, HEADER_LEN),
        ),
        ("raw ctr", ctr_enc, ctr_dec, 0),
        ("raw ecb", ecb_enc, ecb_dec, 16),
        ("raw ecb --no-pad", nopad_enc, nopad_dec, 0),
    ]
}

#[test]
fn empty_input_round_trips_from_files_and_standard_input() {
    let s = Scratch::new();
    s.key_file("key", 128, 8, true);
    s.write("empty", b"");
    for (what, enc_extra, dec_extra, sealed_len) in empty_input_variants() {
        let with = |base: &[&'static str]| -> Vec<&'static str> {
            let extra = if base[0] == "dec" {
                &dec_extra
            } else {
                &enc_extra
            };
            base.iter().copied().chain(extra.iter().copied()).collect()
        };
        // From a file, to a file.
        let out = s.run(&with(&["enc", "-k", "key", "empty", "-o", "e.sealed"]));
        assert_silent_success(&out, &format!("{what}: enc empty file"));
        assert_eq!(
            s.read("e.sealed").len(),
            sealed_len,
            "{what}: sealed length"
        );
        let out = s.run(&with(&["dec", "-k", "key", "e.sealed", "-o", "e.plain"]));
        assert_silent_success(&out, &format!("{what}: dec file"));
        assert_eq!(s.read("e.plain"), b"", "{what}: dec of a file");
        // From standard input, to standard output.
        let out = s.run(&with(&["enc", "-k", "key"]));
        assert_silent_success(&out, &format!("{what}: enc empty stdin"));
        assert_eq!(
            out.stdout.len(),
            sealed_len,
            "{what}: sealed length (stdin)"
        );
        let out = s.run_with_stdin(&with(&["dec", "-k", "key", "-o", "-"]), &out.stdout);
        assert_silent_success(&out, &format!("{what}: dec stdin"));
        assert!(out.stdout.is_empty(), "{what}: dec of stdin");
        s.remove("e.sealed");
        s.remove("e.plain");
    }
    // Nor is empty input an ECB container: a container has no ECB, whatever the input.
    for args in [
        &["enc", "-k", "key", "-m", "ecb", "empty", "-o", "e.sealed"][..],
        &["enc", "-k", "key", "-m", "ecb"],
    ] {
        let what = format!("{}: empty input", args.join(" "));
        let before = s.names();
        let out = s.run(args);
        let message = assert_usage_error(&out, &what);
        assert!(message.contains("no ECB"), "{what}: {message}");
        assert!(out.stdout.is_empty(), "{what}: output written");
        assert_eq!(s.names(), before, "{what}: the directory changed");
    }
}

#[test]
fn empty_input_that_cannot_be_a_ciphertext_is_refused() {
    let s = Scratch::new();
    s.key_file("key", 128, 9, true);
    s.write("empty.paraes", b"");
    s.write("empty.ecb", b"");
    for (args, expected) in [
        // A container has at least a header.
        (
            &["dec", "-k", "key", "empty.paraes"][..],
            "not a paraes container",
        ),
        (&["dec", "-k", "key", "-o", "out"], "not a paraes container"),
        (&["info", "empty.paraes"], "not a paraes container"),
        // A padded ECB ciphertext has at least one block.
        (
            &["dec", "-k", "key", "--raw", "ecb", "empty.ecb", "-o", "out"],
            "padding",
        ),
        (&["dec", "-k", "key", "--raw", "ecb", "-o", "-"], "padding"),
    ] {
        let what = args.join(" ");
        let before = s.names();
        let out = s.run(args);
        let message = s.assert_refused(&out, &before, &what);
        assert!(message.contains(expected), "{what}: {message}");
        assert!(out.stdout.is_empty(), "{what}: output written");
    }
}

#[test]
fn zero_stream_with_a_byte_limit_round_trips() {
    let s = Scratch::new();
    s.key_file("key", 256, 10, true);
    for (what, enc, dec, sealed_len) in [
        (
            "container",
            "enc -k key --chunk-size 1MiB",
            "dec -k key",
            // After the header, the salt and commitment, 4096 chunks of 16 KiB and the empty
            // last chunk, each with its tag (the 1 MiB batches change nothing).
            HEADER_LEN + 56 + (64 << 20) + 4097 * 16,
        ),
        (
            "raw ecb",
            "enc -q -k key --raw ecb",
            "dec -q -k key --raw ecb",
            (64 << 20) + 16,
        ),
    ] {
        let script = format!(
            "set -o pipefail; head -c 64M /dev/zero | \"$PARAES\" {enc} > z.sealed && \
             stat -c %s z.sealed && \"$PARAES\" {dec} z.sealed -o - | cmp - <(head -c 64M /dev/zero)"
        );
        let out = s.bash(&script);
        assert!(
            out.status.success(),
            "{what}: {script}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        let len: usize = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("size");
        assert_eq!(len, sealed_len, "{what}: sealed length");
        s.remove("z.sealed");
    }
}

#[test]
fn dev_zero_as_input_runs_until_stopped_and_leaves_nothing() {
    let s = Scratch::new();
    s.key_file("key", 256, 11, true);

    // The reader leaves: a normal end.
    let out = s.bash("set -o pipefail; \"$PARAES\" enc -k key /dev/zero -o - | head -c 8M | wc -c");
    assert_silent_success(&out, "enc /dev/zero | head -c 8M");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "8388608");

    // The output fills: one error line, at once.
    let before = s.names();
    let message = s.assert_refused(
        &s.run(&["enc", "-k", "key", "/dev/zero", "-o", "/dev/full"]),
        &before,
        "enc /dev/zero -o /dev/full",
    );
    assert!(message.contains("No space left"), "{message}");

    // Not a container: refused after the first bytes.
    let message = s.assert_refused(
        &s.run(&["dec", "-k", "key", "/dev/zero", "-o", "out"]),
        &before,
        "dec /dev/zero",
    );
    assert!(message.contains("not a paraes container"), "{message}");

    // Without -o, the output is not named after the device (which would put it in /dev). A
    // device node in the scratch directory shows it without risking /dev.
    let made = Command::new("mknod")
        .args(["zero", "c", "1", "5"])
        .current_dir(s.path(""))
        .status();
    if made.is_ok_and(|status| status.success()) {
        for args in [
            &["enc", "-k", "key", "zero"][..],
            &["dec", "-k", "key", "zero"],
        ] {
            let before = s.names();
            let message = s.assert_refused(&s.run(args), &before, &args.join(" "));
            assert!(
                message.contains("a device") && message.contains("-o"),
                "{message}"
            );
        }
        s.remove("zero");
    } else {
        skip(
            "dev_zero_as_input_runs_until_stopped_and_leaves_nothing",
            "cannot mknod a /dev/zero node in the scratch directory (needs root): the refusal \
             to name an output after a device is untested here",
        );
    }

    // Into a file: it goes on (the output grows) until the user stops it, which leaves nothing.
    for (signal, status) in [("INT", 130), ("TERM", 143)] {
        let child = s
            .command(&["enc", "-k", "key", "/dev/zero", "-o", "zeros.paraes"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("paraes runs");
        let pid = child.id();
        let size = || unfinished_output(pid, &s.path("")).unwrap_or(0);
        wait_until(20, "the unfinished output to grow past 32 MiB", || {
            size() > 32 << 20
        });
        send_signal(child.id(), signal);
        let out = child.wait_with_output().expect("paraes ends");
        assert_eq!(
            out.status.code(),
            Some(status),
            "SIG{signal}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("no output file was left behind"),
            "SIG{signal}: {}",
            stderr(&out)
        );
        assert_eq!(s.names(), before, "SIG{signal}: something was left behind");
    }
}

/// Encrypts `name` to its derived `.paraes` name, decrypts that back to `name` after removing
/// the original, and checks the bytes; then the same through `-o` names.
fn round_trip_under_name(s: &Scratch, name: &OsStr, plain: &[u8]) {
    let shown = name.to_string_lossy();
    let path = s.path("").join(name);
    fs::write(&path, plain).expect("write the named input");
    let sealed = {
        let mut sealed = name.to_os_string();
        sealed.push(".paraes");
        sealed
    };
    let run = |args: &[&OsStr]| -> Output {
        let mut command = Command::new(bin());
        command
            .args(args)
            .current_dir(s.path(""))
            .stdin(Stdio::null())
            .output()
            .expect("paraes runs")
    };
    let o = OsStr::new;
    let out = run(&[o("enc"), o("-k"), o("key"), o("--"), name]);
    assert_silent_success(&out, &format!("enc {shown:?}"));
    assert!(
        s.path("").join(&sealed).is_file(),
        "{shown:?}: no derived .paraes file"
    );
    fs::remove_file(&path).expect("remove the input");
    let out = run(&[o("dec"), o("-k"), o("key"), o("--"), &sealed]);
    assert_silent_success(&out, &format!("dec {shown:?}.paraes"));
    assert_eq!(
        fs::read(&path).expect("the derived plaintext"),
        plain,
        "{shown:?}"
    );

    // The same name as -o, in a directory whose name has spaces and unicode too.
    let out_dir = PathBuf::from("sub dir ✓");
    fs::create_dir_all(s.path("").join(&out_dir)).expect("mkdir");
    let target = out_dir.join(&sealed);
    let out = run(&[
        o("enc"),
        o("-k"),
        o("key"),
        o("-o"),
        target.as_os_str(),
        o("--"),
        name,
    ]);
    assert_silent_success(&out, &format!("enc -o {target:?}"));
    let out = run(&[
        o("dec"),
        o("-k"),
        o("key"),
        o("-o"),
        o("-"),
        target.as_os_str(),
    ]);
    assert_silent_success(&out, &format!("dec {target:?}"));
    assert_eq!(out.stdout, plain, "{target:?}");
    fs::remove_file(s.path("").join(&target)).expect("remove");
    fs::remove_file(&path).expect("remove");
    fs::remove_file(s.path("").join(&sealed)).expect("remove");
    s.assert_no_temporary(&shown);
}

#[test]
fn names_with_spaces_unicode_and_odd_bytes_work() {
    let s = Scratch::new();
    s.key_file("key", 256, 12, true);
    let plain = seeded_bytes(12, 9_000);
    let names: [&[u8]; 9] = [
        b"my file.txt",
        b" leading and trailing ",
        "ünïcödé 日本語 📁.txt".as_bytes(),
        "ファイル".as_bytes(),
        b"tab\there",
        b"new\nline",
        b"-looks-like-a-flag",
        b"not-utf8-\xff\xfe.bin",
        b"twice.paraes",
    ];
    for name in names {
        round_trip_under_name(&s, OsStr::from_bytes(name), &plain);
    }
}

#[test]
fn odd_names_in_errors_stay_on_one_line() {
    let s = Scratch::new();
    s.key_file("key", 256, 13, true);
    for name in ["missing\nfile", "missing ✗ file", "tab\tmissing"] {
        let before = s.names();
        let out = s.run(&["enc", "-k", "key", "--", name]);
        // assert_refused checks for exactly one stderr line.
        let message = s.assert_refused(&out, &before, &format!("enc {name:?}"));
        assert!(message.contains("missing"), "{name:?}: {message}");
    }
    // Not UTF-8: the name is shown (lossily) and the error is still one line.
    let name = OsStr::from_bytes(b"missing-\xff");
    let out = Command::new(bin())
        .args([OsStr::new("enc"), OsStr::new("-k"), OsStr::new("key"), name])
        .current_dir(s.path(""))
        .stdin(Stdio::null())
        .output()
        .expect("paraes runs");
    let message = assert_error(&out, "enc missing-\\xff");
    assert!(message.contains("missing-"), "{message}");
}
