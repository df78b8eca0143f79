//! Findings of a hostile review of secrets and process edges (session 13): each test fails on
//! the code it was written against, and passes once the finding is fixed.

use std::fs::File;
use std::process::{Output, Stdio};

use crate::common::{
    assert_error, assert_success, blocked_reading, seeded_bytes, send_signal, skip, stderr,
    unfinished_output, wait_until, Scratch,
};

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
const PRINTING: [&[&str]; 6] = [
    &["info", "x.paraes"],
    &["info", "--json", "x.paraes"],
    &["verify", "-k", "key", "x.paraes"],
    &["keygen", "-y", "id"],
    &["completions", "bash"],
    &["man"],
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
/// the normal end it is for `dec | head` (status 0, nothing said). (`completions` and `man`
/// did not panic, but their error did not say what could not be written.)
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

/// The soft and hard limits of `/proc/PID/limits`'s line starting with `name`.
fn limits(pid: &str, name: &str) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text.lines().find(|l| l.starts_with(name)).unwrap();
    let fields: Vec<&str> = line[name.len()..].split_whitespace().collect();
    (fields[0].to_owned(), fields[1].to_owned())
}

/// A core dump wrote all of paraes's memory to disk, keys and passphrases included, before they
/// were wiped: Ctrl-\ (SIGQUIT) while `paraes enc -k key` waited for its input left a `core`
/// file holding the raw key (found with `ulimit -c unlimited`, the soft limit of many desktop
/// distributions, whose systemd-coredump keeps dumps for days). paraes sets its core file size
/// limit to 0, soft and hard, before it reads any secret.
#[test]
fn no_core_dump_can_hold_a_key() {
    const TEST: &str = "no_core_dump_can_hold_a_key";
    if limits("self", "Max core file size").1 == "0" {
        skip(
            TEST,
            "the hard core file size limit is 0 here: no limit to lower",
        );
        return;
    }
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    // The shell raises its soft limit to the hard one, then becomes paraes, which waits for
    // its input after reading the key.
    let mut child = std::process::Command::new("bash")
        .args([
            "-c",
            r#"ulimit -S -c "$(ulimit -H -c)" && exec "$PARAES" enc -q -k key -o out"#,
        ])
        .env("PARAES", crate::common::bin())
        .current_dir(s.path(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until(10, "paraes reading its input", || blocked_reading(pid, 0));
    let (soft, hard) = limits(&pid.to_string(), "Max core file size");
    drop(child.stdin.take());
    assert_success(&child.wait_with_output().unwrap(), "enc of nothing");
    assert_eq!(
        (soft.as_str(), hard.as_str()),
        ("0", "0"),
        "core file size limits"
    );
}

/// `paraes ARGS` with standard error `/dev/full` (a full disk: every message fails).
fn run_with_full_stderr(s: &Scratch, args: &[&str]) -> Output {
    s.command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::options().write(true).open("/dev/full").unwrap())
        .output()
        .expect("paraes runs")
}

/// `eprintln!` panics when standard error cannot be written: with `2>/dev/full` (or a reader
/// of `2>&1 |` that left), a warning (a key file others can read) ended `enc` with status 101
/// and no output, `-v`'s summary turned a finished job into status 101, and an error exited
/// 101 instead of 1. A message standard error cannot take is dropped now, except a raw
/// stream's random IV: without it the stream could not be decrypted, so none is made.
#[test]
fn a_standard_error_that_cannot_be_written_is_no_panic() {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    s.write("x", &seeded_bytes(3, 1000));
    s.set_mode("key", 0o644);
    let out = run_with_full_stderr(&s, &["enc", "-k", "key", "x", "-o", "warned"]);
    assert!(out.status.success(), "a warning: {:?}", out.status);
    assert!(s.exists("warned"), "a warning: no output");
    s.set_mode("key", 0o600);
    let out = run_with_full_stderr(&s, &["enc", "-v", "-k", "key", "x", "-o", "summed"]);
    assert!(
        out.status.success() && s.exists("summed"),
        "-v: {:?}",
        out.status
    );
    let out = run_with_full_stderr(&s, &["dec", "-k", "key", "missing.paraes"]);
    assert_eq!(out.status.code(), Some(1), "an error");
    let out = run_with_full_stderr(&s, &["enc", "--raw", "ctr", "-k", "key", "x", "-o", "raw"]);
    assert_eq!(out.status.code(), Some(1), "a raw stream's IV");
    assert!(!s.exists("raw"), "a raw stream whose IV was not shown");
}

/// `enc -k key -o out.paraes` reading from a pipe, its output open and nothing read yet, with
/// `stderr`; and the pipe's end, to hold open until it has exited (an end of input would let
/// it finish the job).
fn enc_waiting_for_input(
    s: &Scratch,
    stderr: Stdio,
) -> (std::process::Child, Option<std::process::ChildStdin>) {
    let mut child = s
        .command(&["enc", "-k", "key", "-o", "out.paraes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let (pid, dir) = (child.id(), s.path(""));
    wait_until(20, "paraes with its output open, reading", || {
        unfinished_output(pid, &dir).is_some() && blocked_reading(pid, 0)
    });
    let input = child.stdin.take();
    (child, input)
}

/// Ctrl-\ (SIGQUIT) killed paraes at once, skipping the clean-up the other signals get: an
/// `enc --recursive --output-dir --force` over 2,000 existing outputs, sent SIGQUIT after 0.15
/// to 0.75 s, left a hidden `.NAME.*.paraes-tmp` copy in 1 run of 3 (the one `--force` renames
/// over the old file; without O_TMPFILE every output is one). SIGQUIT is handled as SIGINT is:
/// the named temporaries removed, exit 128 + 3.
#[test]
fn ctrl_backslash_cleans_up_as_ctrl_c_does() {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    let before = s.names();
    let (child, input) = enc_waiting_for_input(&s, Stdio::piped());
    send_signal(child.id(), "QUIT");
    let out = child.wait_with_output().unwrap();
    drop(input);
    assert_eq!(out.status.code(), Some(131), "SIGQUIT: {}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        "paraes: quit: no output file was left behind"
    );
    assert_eq!(s.names(), before, "SIGQUIT left a file behind");
}

/// `--passphrase-file -` and `-k -` read a terminal on standard input as they read a pipe,
/// with the terminal's echo on: the passphrase or key showed on the screen (and in its
/// scrollback, a `script` log, a shared screen) as it was typed, where `-p` asks without echo.
/// A terminal is refused as the source of a passphrase or key, with what to do instead.
#[test]
fn a_secret_is_never_read_from_a_terminal_with_echo_on() {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    s.write("x", b"data");
    for (args, advice) in [
        ("enc --passphrase-file - x -o p.paraes", "use -p"),
        ("enc -k - x -o k.paraes", "pipe the key in"),
        ("enc --key-fd 0 x -o k.paraes", "pipe the key in"),
    ] {
        // Under `script`, standard input is a terminal (a pseudo-terminal script reads).
        let out = std::process::Command::new("script")
            .args(["-qec", &format!("\"$PARAES\" {args}"), "/dev/null"])
            .env("PARAES", crate::common::bin())
            .current_dir(s.path(""))
            .stdin(Stdio::null())
            .output()
            .expect("the `script` command (util-linux) runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{args}: {text}");
        assert!(
            text.contains("is a terminal, where a secret shows as it is typed")
                && text.contains(advice),
            "{args}: {text}"
        );
    }
    assert!(!s.exists("p.paraes") && !s.exists("k.paraes"));
}

/// SIGHUP usually comes when the terminal is gone, and with it standard error: the signal
/// thread's message then failed, and `eprintln!` panicked in that thread, which ended without
/// exiting the process. paraes went on as if nothing had come (a blocked `enc` kept waiting,
/// its named temporaries already removed). Measured with standard error `/dev/full`: the
/// process still ran a second after SIGHUP; now it exits 129 at once.
#[test]
fn a_hangup_with_standard_error_gone_still_ends_paraes() {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    let before = s.names();
    let full = File::options().write(true).open("/dev/full").unwrap();
    let (mut child, input) = enc_waiting_for_input(&s, full.into());
    send_signal(child.id(), "HUP");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(5) {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    drop(input);
    let status = status.or_else(|| child.wait().ok());
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(129),
        "still running 5 s after SIGHUP, then {status:?}"
    );
    assert_eq!(s.names(), before);
}

/// `paraes keygen > my.key` under the usual umask (022) makes a key file of mode 0644, readable
/// by every user, without a word (`-o my.key` makes one of mode 0600). keygen warns when its
/// standard output is a file other users can read, as age-keygen does.
#[test]
fn keygen_warns_when_its_secret_goes_to_a_file_others_can_read() {
    let s = Scratch::new();
    for (args, mode, warned) in [
        (&["keygen"][..], 0o644, true),
        (&["keygen", "--x25519"], 0o640, true),
        (&["keygen", "-o", "-"], 0o604, true),
        (&["keygen"], 0o600, false),
    ] {
        s.write("shared.key", b"");
        s.set_mode("shared.key", mode);
        let file = File::options()
            .write(true)
            .open(s.path("shared.key"))
            .unwrap();
        let out = run_into(&s, args, file);
        let err = assert_success(&out, &format!("{args:?} > file of mode {mode:o}"));
        assert_eq!(
            err.contains("other users can read"),
            warned,
            "{args:?} > file of mode {mode:o}: {err}"
        );
        assert!(s.read("shared.key").len() > 60, "the secret was written");
    }
}

/// `--passphrase-file` takes a file's first line. Given an identity file (`me.id`), an SSH
/// private key or a public key by mistake, that line is public: `# paraes identity (X25519);
/// keep this file secret`, `-----BEGIN OPENSSH PRIVATE KEY-----`, the recipient itself. enc
/// sealed the file for it, and anyone opened it with `echo '-----BEGIN OPENSSH PRIVATE
/// KEY-----' | paraes dec --passphrase-file -`. Sealing with such a line is refused; what was
/// sealed with one still opens (checked by hand: dec is not refused).
#[test]
fn a_passphrase_file_whose_first_line_is_public_is_refused() {
    let s = with_container();
    let recipient = String::from_utf8(s.run(&["keygen", "-y", "id"]).stdout).unwrap();
    s.secret("id.pub", recipient.as_bytes());
    s.secret(
        "id_ed25519",
        b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    s.secret(
        "cert.pem",
        b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    );
    for (file, says) in [
        ("id", "holds an identity, not a passphrase"),
        ("id_ed25519", "is a PEM header"),
        ("cert.pem", "is a PEM header"),
        ("id.pub", "is a public key (a recipient)"),
    ] {
        let out = s.run(&["enc", "--passphrase-file", file, "x", "-o", "sealed"]);
        let message = assert_error(&out, &format!("--passphrase-file {file}"));
        assert!(
            message.contains(says),
            "--passphrase-file {file}: {message}"
        );
        assert!(!s.exists("sealed"), "--passphrase-file {file}: sealed");
    }
}
