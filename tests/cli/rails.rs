//! The safety rails of the `paraes` command line: no silent overwrites, no writing onto the
//! input, no temporaries left behind, refused option combinations, key-file permissions,
//! `keygen`, closed pipes, terminals, warnings and usage errors.

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{
    assert_error, assert_silent_success, assert_success, assert_usage_error, container_len,
    openssl_enc, seeded_bytes, stderr, unfinished_output, Scratch, CHUNK_ARG, HEADER_LEN,
};

/// The format v2 fixtures (docs/FORMAT.md: v2 is still read), among them an ECB container.
const V2_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v2");

/// Copies the v2 fixture `name` into `s` (mode 0600, as a key file must be to stay quiet).
fn v2_fixture(s: &Scratch, name: &str) -> Vec<u8> {
    let bytes = fs::read(format!("{V2_FIXTURES}/{name}"))
        .unwrap_or_else(|e| panic!("the v2 fixture {name}: {e}"));
    s.write(name, &bytes);
    s.set_mode(name, 0o600);
    bytes
}

/// A directory with a 256-bit key file `key` (mode 0600), a plaintext `x` and its container
/// `x.paraes`.
fn prepared() -> (Scratch, Vec<u8>) {
    let s = Scratch::new();
    s.key_file("key", 256, 1, true);
    let plain = seeded_bytes(1, 10_000);
    s.write("x", &plain);
    let out = s.run(&["enc", "-k", "key", "--chunk-size", CHUNK_ARG, "x"]);
    assert_silent_success(&out, "enc x");
    (s, plain)
}

/// The single warning line on stderr, without its `paraes: warning: ` prefix.
fn one_warning(err: &str, what: &str) -> String {
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: expected one warning line: {err}");
    lines[0]
        .strip_prefix("paraes: warning: ")
        .unwrap_or_else(|| panic!("{what}: not a warning: {err}"))
        .to_owned()
}

#[test]
fn existing_output_needs_force() {
    let (s, plain) = prepared();
    let sealed = s.read("x.paraes");
    // enc onto an existing container, dec onto an existing plaintext.
    for (args, output, contents) in [
        (&["enc", "-k", "key", "x"][..], "x.paraes", &sealed),
        (&["dec", "-k", "key", "x.paraes"][..], "x", &plain),
    ] {
        let before = s.names();
        let message = s.assert_refused(&s.run(args), &before, output);
        assert!(message.contains("--force"), "{output}: {message}");
        assert!(&s.read(output) == contents, "{output} changed");
    }

    s.write("other", b"something else");
    let out = s.run(&["enc", "-k", "key", "x", "-o", "other", "--force"]);
    assert_silent_success(&out, "enc --force");
    let out = s.run(&["dec", "-k", "key", "other", "-o", "-"]);
    assert_silent_success(&out, "dec of the replaced file");
    assert!(
        out.stdout == plain,
        "--force replaced the file with the container"
    );
    s.assert_no_temporary("--force");
}

#[test]
fn failed_decryption_leaves_an_existing_output_alone_even_with_force() {
    let (s, _) = prepared();
    let mut damaged = s.read("x.paraes");
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    s.write("bad.paraes", &damaged);
    s.write("target", b"precious");
    let before = s.names();
    let out = s.run(&["dec", "-k", "key", "bad.paraes", "-o", "target", "--force"]);
    s.assert_refused(&out, &before, "damaged container onto an existing file");
    assert_eq!(s.read("target"), b"precious");
}

#[test]
fn input_and_output_are_never_the_same_file() {
    let (s, _) = prepared();
    fs::hard_link(s.path("x"), s.path("hard-link")).expect("hard link");
    std::os::unix::fs::symlink("x.paraes", s.path("sym-link")).expect("symlink");
    for args in [
        &["dec", "-k", "key", "x.paraes", "-o", "x.paraes", "--force"][..],
        &["enc", "-k", "key", "x", "-o", "x", "--force"],
        &["enc", "-k", "key", "x", "-o", "hard-link", "--force"],
        &["dec", "-k", "key", "x.paraes", "-o", "sym-link", "--force"],
        &[
            "enc", "--raw", "ecb", "-q", "-k", "key", "x", "-o", "./x", "-f",
        ],
    ] {
        let before = s.names();
        let contents: Vec<_> = ["x", "x.paraes"].map(|n| s.read(n)).into();
        let message = s.assert_refused(&s.run(args), &before, &args.join(" "));
        assert!(message.contains("same file"), "{args:?}: {message}");
        assert_eq!(["x", "x.paraes"].map(|n| s.read(n)).to_vec(), contents);
    }
}

#[test]
fn forced_output_to_a_fifo_writes_into_it() {
    // `-o /dev/null --force` must not replace the device with a regular file; a FIFO in the
    // scratch directory shows the same thing without touching /dev.
    let (s, _) = prepared();
    let made = s.bash("mkfifo out.fifo");
    assert_success(&made, "mkfifo");
    // Hold the FIFO open for reading and writing, so paraes can open it without blocking.
    let mut fifo = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.path("out.fifo"))
        .expect("open the fifo");
    s.write("small", b"a small input that fits in a pipe buffer");
    let out = s.run(&["enc", "-k", "key", "small", "-o", "out.fifo", "--force"]);
    assert_silent_success(&out, "enc -o FIFO --force");
    let kind = fs::symlink_metadata(s.path("out.fifo"))
        .expect("out.fifo")
        .file_type();
    assert!(
        kind.is_fifo(),
        "paraes replaced the FIFO out.fifo with a regular file (with -o /dev/null --force, \
         it would replace /dev/null)"
    );
    let mut header = [0u8; 8];
    std::io::Read::read_exact(&mut fifo, &mut header).expect("container bytes in the fifo");
    assert_eq!(&header, b"\x89PARAES\n");
}

#[test]
fn inputs_that_are_not_files_are_refused() {
    let (s, _) = prepared();
    fs::create_dir(s.path("dir")).expect("mkdir");
    fs::create_dir(s.path("dir.paraes")).expect("mkdir");
    for (args, expected) in [
        (&["enc", "-k", "key", "dir"][..], "directory"),
        (&["dec", "-k", "key", "dir.paraes"], "directory"),
        (&["enc", "-k", "key", "missing"], "missing"),
        (&["dec", "-k", "key", "missing.paraes"], "missing"),
        (&["info", "missing.paraes"], "missing"),
        (&["info", "dir"], "directory"),
    ] {
        let before = s.names();
        let message = s.assert_refused(&s.run(args), &before, &args.join(" "));
        assert!(message.contains(expected), "{args:?}: {message}");
    }
}

#[test]
fn outputs_that_cannot_be_made_are_refused() {
    let (s, _) = prepared();
    fs::create_dir(s.path("dir")).expect("mkdir");
    for args in [
        &["enc", "-k", "key", "x", "-o", "dir"][..],
        &["enc", "-k", "key", "x", "-o", "dir", "--force"],
        &["enc", "-k", "key", "x", "-o", "no-such-dir/x.paraes"],
        &["dec", "-k", "key", "x.paraes", "-o", "no-such-dir/x"],
    ] {
        let before = s.names();
        s.assert_refused(&s.run(args), &before, &args.join(" "));
        assert!(fs::read_dir(s.path("dir")).expect("dir").next().is_none());
    }
}

#[test]
fn empty_input_round_trips() {
    let s = Scratch::new();
    s.key_file("key", 128, 2, false);
    s.write("empty", b"");
    assert_silent_success(&s.run(&["enc", "-k", "key", "empty"]), "enc");
    // The header, the message's salt and commitment, and the tag of the empty last chunk.
    assert_eq!(s.read("empty.paraes").len(), container_len(0, HEADER_LEN));
    assert_eq!(container_len(0, HEADER_LEN), 4168);
    s.remove("empty");
    assert_silent_success(&s.run(&["dec", "-k", "key", "empty.paraes"]), "dec");
    assert_eq!(s.read("empty"), b"");
}

#[test]
fn dec_needs_a_paraes_suffix_or_an_output_name() {
    let (s, plain) = prepared();
    fs::rename(s.path("x.paraes"), s.path("x.enc")).expect("rename");
    let before = s.names();
    let message = s.assert_refused(&s.run(&["dec", "-k", "key", "x.enc"]), &before, "x.enc");
    assert!(message.contains("-o"), "{message}");

    let out = s.run(&["dec", "-k", "key", "x.enc", "-o", "y"]);
    assert_silent_success(&out, "dec -o y");
    assert_eq!(s.read("y"), plain);
}

#[test]
fn key_files_readable_by_others_are_warned_about() {
    let (s, _) = prepared();
    for (mode, quiet, warns) in [
        (0o644, false, true),
        (0o640, false, true),
        (0o604, false, true),
        (0o644, true, false),
        (0o600, false, false),
        (0o400, false, false),
    ] {
        s.set_mode("key", mode);
        let mut args = vec!["dec", "-k", "key", "x.paraes", "-o", "-"];
        if quiet {
            args.push("-q");
        }
        let what = format!("key file mode {mode:o}, quiet {quiet}");
        let err = assert_success(&s.run(&args), &what);
        if warns {
            let warning = one_warning(&err, &what);
            assert!(warning.contains("other users"), "{what}: {warning}");
        } else {
            assert!(err.is_empty(), "{what}: unexpected stderr: {err}");
        }
    }
}

#[test]
fn key_on_the_command_line_is_warned_about() {
    let s = Scratch::new();
    let key = hex::encode(seeded_bytes(3, 16));
    let out = s.run_with_stdin(&["enc", "--key", &key], b"data");
    let warning = one_warning(&assert_success(&out, "--key"), "--key");
    assert!(warning.contains("--key"), "{warning}");
    let out = s.run_with_stdin(&["enc", "--key", &key, "-q"], b"data");
    assert_silent_success(&out, "--key -q");
}

#[test]
fn ecb_is_warned_about() {
    let (s, plain) = prepared();
    // A raw ECB stream: written, with a warning that -q silences.
    let args = ["enc", "-k", "key", "x", "-o", "e", "-f", "--raw", "ecb"];
    let err = assert_success(&s.run(&args), "enc --raw ecb");
    let warning = one_warning(&err, "enc --raw ecb");
    assert!(warning.contains("ECB"), "{warning}");
    assert_silent_success(&s.run(&[&args[..], &["-q"]].concat()), "enc --raw ecb -q");

    // A container has no ECB (its body is AES-GCM): refused outright, not warned about.
    for args in [
        &["enc", "-k", "key", "-m", "ecb", "x", "-o", "c"][..],
        &["enc", "-q", "-k", "key", "--mode", "ecb", "x", "-o", "c"],
    ] {
        let before = s.names();
        let message = assert_usage_error(&s.run(args), &args.join(" "));
        assert!(
            message.contains("no ECB") && message.contains("--raw ecb"),
            "{args:?}: {message}"
        );
        assert_eq!(s.names(), before, "{args:?}: the directory changed");
    }

    // Decryption is no new leak: no warning, for a raw ECB stream and for an ECB container
    // of format v2 (still read).
    let out = s.run(&["dec", "-k", "key", "--raw", "ecb", "e", "-o", "-"]);
    assert_silent_success(&out, "dec --raw ecb");
    assert!(out.stdout == plain, "dec --raw ecb: wrong plaintext");
    v2_fixture(&s, "k256.key");
    v2_fixture(&s, "ecb-256.paraes");
    let out = s.run(&["dec", "-k", "k256.key", "ecb-256.paraes", "-o", "-"]);
    assert_silent_success(&out, "dec of a v2 ECB container");
    assert!(
        out.stdout == fs::read(format!("{V2_FIXTURES}/plain.txt")).expect("plain.txt"),
        "dec of a v2 ECB container: wrong plaintext"
    );
}

#[test]
fn senseless_option_combinations_are_refused() {
    let (s, _) = prepared();
    s.write("short-key", &[7u8; 20]);
    s.set_mode("short-key", 0o600);
    let iv = "000102030405060708090a0b0c0d0e0f";
    // Broken by the options alone: usage errors (status 2).
    let usage: [(&[&str], &str); 17] = [
        (&["enc", "-k", "key", "x", "--iv", iv], "--iv"),
        (&["enc", "-k", "key", "x", "--no-pad"], "--no-pad"),
        (
            &[
                "enc", "-k", "key", "x", "--raw", "ctr", "--iv", iv, "--no-pad",
            ],
            "--no-pad",
        ),
        (&["dec", "-k", "key", "x.paraes", "--raw", "ctr"], "--iv"),
        (
            &["enc", "-k", "key", "x", "--raw", "ecb", "--iv", iv],
            "--iv",
        ),
        (
            &["enc", "-k", "key", "x", "--raw", "ctr", "--iv", "0011"],
            "--iv",
        ),
        (
            &["enc", "-k", "key", "x", "--chunk-size", "100"],
            "--chunk-size",
        ),
        (
            &["enc", "-k", "key", "x", "--chunk-size", "4080"],
            "--chunk-size",
        ),
        (
            &["enc", "-k", "key", "x", "--chunk-size", "4100"],
            "--chunk-size",
        ),
        (
            &["enc", "-k", "key", "x", "--chunk-size", "65MiB"],
            "--chunk-size",
        ),
        // A container's chunks are 16 KiB: its --chunk-size (the pipeline's batch) is a
        // multiple of that; only raw streams take smaller multiples of 16 bytes.
        (
            &["enc", "-k", "key", "x", "--chunk-size", "4KiB"],
            "multiple of 16KiB",
        ),
        (
            &["enc", "-k", "key", "x", "--chunk-size", "24KiB"],
            "multiple of 16KiB",
        ),
        // A container's body is AES-GCM: no ECB, no 192-bit key.
        (&["enc", "-k", "key", "x", "-m", "ecb"], "--mode ecb"),
        (
            &["enc", "-k", "key", "x", "--bits", "192"],
            "--bits 128 or 256",
        ),
        (
            &["dec", "-k", "key", "x.paraes", "--chunk-size", "4KiB"],
            "--chunk-size",
        ),
        (&["dec", "-k", "key", "x.paraes", "--bits", "256"], "--bits"),
        (
            &["enc", "--raw", "ecb", "--passphrase-file", "x", "x"],
            "--raw",
        ),
    ];
    for (args, expected) in usage {
        // A fresh output name, so "already exists" cannot be the reason.
        let args = [args, &["-o", "y"]].concat();
        let before = s.names();
        let message = assert_usage_error(&s.run(&args), &args.join(" "));
        assert_eq!(s.names(), before, "{args:?}: the directory changed");
        assert!(message.contains(expected), "{args:?}: {message}");
    }
    // Refused once paraes looks at the files or the machine (status 1).
    let refused: [(&[&str], &str); 4] = [
        // No GPU here, or (on a GPU machine) no device 4096: refused either way.
        (
            &[
                "enc",
                "-k",
                "key",
                "x",
                "--backend",
                "gpu",
                "--gpu-device",
                "4096",
            ],
            "CUDA",
        ),
        (
            &["dec", "-k", "key", "x.paraes", "--raw", "ctr", "--iv", iv],
            "drop --raw",
        ),
        (&["enc", "-k", "short-key", "x"], "short-key"),
        (&["enc", "-q", "--key", "00112233", "x"], "--key"),
    ];
    for (args, expected) in refused {
        let args = [args, &["-o", "y"]].concat();
        let before = s.names();
        let message = s.assert_refused(&s.run(&args), &before, &args.join(" "));
        assert!(message.contains(expected), "{args:?}: {message}");
    }
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let (s, _) = prepared();
    for args in [
        &["enc", "-k", "key", "x", "--frobnicate"][..],
        &["enc", "x"],
        &["enc", "-i", "key", "x"],
        &["dec", "-k", "key", "-m", "ecb", "x.paraes"],
        &["enc", "-k", "key", "-m", "cbc", "x"],
        &["enc", "-k", "key", "-b", "tpu", "x"],
        &["enc", "-k", "key", "--bits", "512", "x"],
        &["enc", "-k", "key", "--chunk-size", "4XB", "x"],
        &["keygen", "--bits", "100"],
        &["crypt", "x"],
        &["enc", "-k", "key", "-b", "sunway-sim", "--sw-cgs", "5", "x"],
        &[
            "enc",
            "-k",
            "key",
            "-b",
            "sunway-sim",
            "--sw-variant",
            "fastest",
            "x",
        ],
        &[
            "enc",
            "-k",
            "key",
            "-b",
            "sunway-sim",
            "--sw-buffering",
            "triple",
            "x",
        ],
        &[
            "enc",
            "-k",
            "key",
            "-b",
            "gpu",
            "--gpu-ctr",
            "bitsliced",
            "x",
        ],
        &["enc", "-k", "key", "-b", "mpi", "--mpi-io", "sideways", "x"],
    ] {
        let before = s.names();
        let out = s.run(args);
        assert_usage_error(&out, &args.join(" "));
        assert_eq!(s.names(), before, "{args:?}: the directory changed");
    }
}

#[test]
fn keygen_writes_new_private_key_files() {
    let s = Scratch::new();
    for (bits, digits) in [("128", 32), ("192", 48), ("256", 64)] {
        let name = format!("k{bits}");
        let out = s.run(&["keygen", "--bits", bits, "-o", &name]);
        assert_silent_success(&out, "keygen");
        assert_eq!(s.mode(&name), 0o600, "{name}: mode");
        let text = String::from_utf8(s.read(&name)).expect("hex text");
        let hex = text.strip_suffix('\n').expect("a newline at the end");
        assert_eq!(hex.len(), digits, "{name}: {text:?}");
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{text:?}");
    }
    let default = s.run(&["keygen"]);
    assert_silent_success(&default, "keygen to stdout");
    assert_eq!(default.stdout.len(), 65, "256-bit hex and a newline");
    assert_ne!(s.run(&["keygen"]).stdout, default.stdout, "two equal keys");

    // The keys work with enc and dec (the body key size is --bits, not the key's size).
    s.write("data", b"secret data");
    for (key, bits) in [("k192", "128"), ("k192", "256"), ("k128", "256")] {
        let what = format!("-k {key} --bits {bits}");
        assert_silent_success(
            &s.run(&[
                "enc",
                "-k",
                key,
                "--bits",
                bits,
                "data",
                "-o",
                "data.paraes",
                "-f",
            ]),
            &format!("enc {what}"),
        );
        let out = s.run(&["dec", "-k", key, "data.paraes", "-o", "-"]);
        assert_silent_success(&out, &format!("dec {what}"));
        assert_eq!(out.stdout, b"secret data", "{what}");
        let info = String::from_utf8(s.run(&["info", "data.paraes"]).stdout).expect("text");
        assert!(
            info.contains(&format!("Cobblestone-{bits} ")),
            "{what}: {info}"
        );
    }
    // A container's body has no 192-bit key (Cobblestone-128 or -256): a usage error, even with
    // a 192-bit key file; a raw stream still takes AES-192.
    let before = s.names();
    let args = ["enc", "-k", "k192", "--bits", "192", "data", "-o", "c192"];
    let message = assert_usage_error(&s.run(&args), "enc --bits 192");
    assert!(message.contains("--bits 128 or 256"), "{message}");
    assert_eq!(s.names(), before, "enc --bits 192: the directory changed");
    let args = [
        "enc", "-q", "-k", "k192", "--bits", "192", "--raw", "ecb", "data", "-o", "r192",
    ];
    assert_silent_success(&s.run(&args), "enc --raw ecb --bits 192");
    let key = hex::decode(String::from_utf8(s.read("k192")).expect("hex").trim()).expect("hex");
    assert_eq!(
        s.read("r192"),
        openssl_enc("-aes-192-ecb", &key, None, false, true, b"secret data"),
        "--raw ecb with the 192-bit key is not AES-192-ECB"
    );
    let out = s.run(&["dec", "-q", "-k", "k192", "--raw", "ecb", "r192", "-o", "-"]);
    assert_silent_success(&out, "dec --raw ecb with a 192-bit key");
    assert_eq!(out.stdout, b"secret data");
}

#[test]
fn keygen_never_overwrites_without_force() {
    let s = Scratch::new();
    assert_silent_success(&s.run(&["keygen", "-o", "key"]), "keygen");
    let first = s.read("key");
    let before = s.names();
    let message = s.assert_refused(&s.run(&["keygen", "-o", "key"]), &before, "again");
    assert!(message.contains("--force"), "{message}");
    assert_eq!(s.read("key"), first, "refused, yet changed");

    assert_silent_success(&s.run(&["keygen", "-o", "key", "-f"]), "keygen -f");
    assert_ne!(s.read("key"), first, "-f kept the old key");
    assert_eq!(s.mode("key"), 0o600);
}

#[test]
fn keygen_force_over_a_readable_file_leaves_a_private_key() {
    let s = Scratch::new();
    s.write("key", b"old, world-readable\n");
    s.set_mode("key", 0o644);
    assert_silent_success(&s.run(&["keygen", "-o", "key", "--force"]), "keygen -f");
    assert_eq!(
        s.mode("key"),
        0o600,
        "keygen --force wrote a new key into a file other users can read"
    );
}

#[test]
fn binary_output_to_a_terminal_is_refused() {
    let (s, _) = prepared();
    // `script` runs the command with its standard output on a new pseudo-terminal.
    let run_on_terminal = |command: &str| {
        let out = s.bash(&format!(
            "script -qec '\"$PARAES\" {command}' /dev/null; echo \"status=$?\""
        ));
        assert!(
            out.status.success(),
            "the `script` command (util-linux) is needed for this test: {}",
            stderr(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for command in [
        "enc -k key x -o -",
        "enc -k key < x",
        "enc --raw ecb -q -k key x -o -",
    ] {
        let shown = run_on_terminal(command);
        assert!(
            shown.contains("paraes: error: refusing"),
            "{command}: {shown}"
        );
        assert!(shown.trim_end().ends_with("status=1"), "{command}: {shown}");
    }
    // Plaintext may go to a terminal.
    s.write("hello", b"hello, terminal\n");
    assert_silent_success(&s.run(&["enc", "-k", "key", "hello"]), "enc hello");
    let shown = run_on_terminal("dec -k key hello.paraes -o -");
    assert!(shown.contains("hello, terminal"), "{shown}");
    assert!(shown.trim_end().ends_with("status=0"), "{shown}");
    s.assert_no_temporary("terminal");
}

#[test]
fn a_closed_output_pipe_is_a_normal_end() {
    let s = Scratch::new();
    s.key_file("key", 256, 4, true);
    s.write("big", &seeded_bytes(4, 3 << 20));
    assert_silent_success(&s.run(&["enc", "-k", "key", "big"]), "enc big");
    for command in [
        "dec -k key big.paraes -o -",
        "dec -k key - < big.paraes",
        "enc -k key big -o -",
        "enc --raw ctr --iv 000102030405060708090a0b0c0d0e0f -k key big -o -",
    ] {
        let script =
            format!("\"$PARAES\" {command} | head -c 10 > /dev/null; echo \"${{PIPESTATUS[0]}}\"");
        let out = s.bash(&script);
        assert_success(&out, command);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "0\n",
            "{command} | head: exit status of paraes; stderr: {}",
            stderr(&out)
        );
        assert!(out.stderr.is_empty(), "{command}: {}", stderr(&out));
    }
}

#[test]
fn termination_removes_the_temporary() {
    let s = Scratch::new();
    s.key_file("key", 256, 5, true);
    // Standard input stays open, so paraes waits with its unfinished output open.
    let child = s
        .command(&["enc", "-k", "key", "-o", "out.paraes"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paraes runs");
    let started = Instant::now();
    while unfinished_output(child.id(), &s.path("")).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no unfinished output appeared: {:?}",
            s.names()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_success(&s.bash(&format!("kill -TERM {}", child.id())), "kill");
    let out = child.wait_with_output().expect("paraes ends");
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert_eq!(s.names(), ["key"].map(String::from).into());
}

#[test]
fn truncated_or_foreign_input_is_refused() {
    let (s, _) = prepared();
    let sealed = s.read("x.paraes");
    for (what, bytes) in [
        ("nothing", &b""[..]),
        (
            "a plaintext",
            b"just some text that is long enough to fill a header, surely",
        ),
        ("half a header", &sealed[..40]),
    ] {
        let out = s.run_with_stdin(&["dec", "-k", "key", "-o", "-"], bytes);
        assert_error(&out, what);
        assert!(out.stdout.is_empty(), "{what}: output written");
    }
}
