//! The command line as a user and an attacker meet it: outputs that would destroy a file the
//! command reads, no hidden subcommand that deletes files, exit status 2 for usage, shell
//! completions and the man page, per-subcommand help, options refused where they would be
//! ignored, error wording, sizes, progress summaries, `info`'s length check and
//! `dec --raw` on a container. Signals (SIGKILL, 128 + N for signal N, Ctrl-C at the
//! passphrase prompt): `command_line_signals`; keys without files: `command_line_keys`.

use std::fs;
use std::process::Command;

use crate::common::{
    assert_error, assert_success, assert_usage_error, bin, container_len, info_field, seeded_bytes,
    stderr, Scratch, CHUNK, HEADER_LEN, MESSAGE_PREFIX_LEN, TAG_LEN,
};

/// The format v2 fixtures (docs/FORMAT.md: v2 is still read), among them an ECB container.
const V2_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v2");

/// A scratch directory with a hex key file `key` (0600) and a 10 KiB plaintext `f`.
pub(crate) fn prepared() -> Scratch {
    let s = Scratch::new();
    s.key_file("key", 256, 7, true);
    s.write("f", &seeded_bytes(7, 10 << 10));
    s
}

#[test]
fn the_output_is_never_a_file_the_command_reads() {
    let s = prepared();
    s.write("pass", b"correct horse battery staple\n");
    s.set_mode("pass", 0o600);
    fs::hard_link(s.path("key"), s.path("key.hard")).expect("hard link");
    std::os::unix::fs::symlink("key", s.path("key.soft")).expect("symlink");
    let key = s.read("key");
    let cases: [&[&str]; 6] = [
        &["enc", "-k", "key", "f", "-o", "key", "-f"],
        &["enc", "-k", "key", "f", "-o", "key.hard", "-f"],
        &["enc", "-k", "key", "f", "-o", "key.soft", "-f"],
        &["enc", "-k", "key.soft", "f", "-o", "key", "-f"],
        &["enc", "--passphrase-file", "pass", "f", "-o", "pass", "-f"],
        &["enc", "-k", "key", "f", "-o", "f", "-f"],
    ];
    for args in cases {
        let what = args.join(" ");
        let before = s.names();
        let message = s.assert_refused(&s.run(args), &before, &what);
        assert!(
            message.contains(
                "which is read to make it (writing to it would destroy it): choose another output"
            ),
            "{what}: {message}"
        );
        assert_eq!(s.read("key"), key, "{what}: the key changed");
    }
    assert_eq!(s.read("pass"), b"correct horse battery staple\n");
    // An identity file as the output of dec.
    let out = s.run(&["keygen", "--x25519", "-o", "me.id"]);
    assert_success(&out, "keygen");
    let recipient = stderr(&out)
        .trim()
        .trim_start_matches("recipient: ")
        .to_owned();
    assert_success(
        &s.run(&["enc", "-r", &recipient, "f", "-o", "g.paraes"]),
        "enc -r",
    );
    let id = s.read("me.id");
    let before = s.names();
    let args = ["dec", "-i", "me.id", "g.paraes", "-o", "me.id", "-f"];
    s.assert_refused(&s.run(&args), &before, "dec onto the identity");
    assert_eq!(s.read("me.id"), id);
}

#[test]
fn standard_output_appended_to_the_input_is_refused() {
    let s = prepared();
    let plain = s.read("f");
    let out = s.bash("\"$PARAES\" enc -k key f -o - >> f");
    let message = assert_error(&out, "enc f -o - >> f");
    assert!(
        message.contains("standard output is the same file as the input"),
        "{message}"
    );
    assert_eq!(s.read("f"), plain, "the input grew");
    // Also onto the key file.
    let key = s.read("key");
    let out = s.bash("\"$PARAES\" enc -k key f -o - >> key");
    assert_error(&out, "enc -k key >> key");
    assert_eq!(s.read("key"), key);
}

#[test]
fn keys_and_data_on_descriptors_are_kept_off_the_output_too() {
    let s = prepared();
    let key = s.read("key");
    let plain = s.read("f");
    for script in [
        "\"$PARAES\" enc -k - f -o key --force < key",
        "\"$PARAES\" enc --key-fd 3 f -o key --force 3<key",
        "\"$PARAES\" enc -k key -q < f >> f",
        "\"$PARAES\" enc -k key -o f --force < f",
    ] {
        let message = assert_error(&s.bash(script), script);
        assert!(
            message.contains(
                "which is read to make it (writing to it would destroy it): choose another output"
            ),
            "{script}: {message}"
        );
        assert_eq!(s.read("key"), key, "{script}: the key changed");
        assert_eq!(s.read("f"), plain, "{script}: the input changed");
    }
    // Standard input under another name still counts as standard input.
    let script =
        "(echo a-long-passphrase; cat f) | \"$PARAES\" enc --passphrase-file /dev/stdin -o x";
    let message = assert_usage_error(&s.bash(script), script);
    assert!(message.contains("standard input"), "{message}");
}

#[test]
fn links_as_outputs_are_written_through_never_replaced() {
    let s = prepared();
    s.write("target", b"old");
    std::os::unix::fs::symlink("target", s.path("link")).expect("symlink");
    assert_success(
        &s.run(&["enc", "-q", "-k", "key", "f", "-o", "link", "--force"]),
        "-o link",
    );
    assert!(fs::symlink_metadata(s.path("link"))
        .expect("link")
        .file_type()
        .is_symlink());
    assert_ne!(
        s.read("target"),
        b"old",
        "the link's target was not written"
    );
    // /dev/stdout is standard output, wherever it points.
    let out = s.bash("\"$PARAES\" enc -q -k key f -o /dev/stdout > via-stdout");
    assert_success(&out, "-o /dev/stdout");
    assert!(s.read("via-stdout").starts_with(b"\x89PARAES\n"));
    let out = s.bash("\"$PARAES\" completions bash | head -1");
    assert_success(&out, "completions | head");
}

#[test]
fn no_hidden_subcommand_deletes_files() {
    let s = prepared();
    s.write("precious.txt", b"do not delete");
    let out = s.run(&["watch-output", "precious.txt"]);
    assert_usage_error(&out, "watch-output");
    assert_eq!(s.read("precious.txt"), b"do not delete");
}

#[test]
fn usage_errors_exit_2_and_point_at_the_subcommand_help() {
    let s = prepared();
    let cases: [(&[&str], &str); 12] = [
        (
            &[
                "enc",
                "--iv",
                "00112233445566778899aabbccddeeff",
                "-k",
                "key",
                "f",
            ],
            "--raw",
        ),
        (&["enc", "--threads", "0", "-k", "key", "f"], "--threads"),
        (&["bench", "--repeat", "0"], "--repeat"),
        (&["bench", "--mode", "cbc"], "cbc"),
        (
            &["enc", "--backend", "cuda", "-k", "key", "f"],
            "--backend gpu",
        ),
        (
            &["enc", "--backend", "cpu", "--sw-cgs", "2", "-k", "key", "f"],
            "sunway-sim",
        ),
        (
            &["enc", "--mpi-io", "direct", "-k", "key", "f"],
            "--backend mpi",
        ),
        (
            &[
                "enc",
                "--backend",
                "cpu",
                "--gpu-device",
                "1",
                "-k",
                "key",
                "f",
            ],
            "--backend gpu",
        ),
        (
            &["enc", "--chunk-size", "4100", "-k", "key", "f"],
            "multiple of 16",
        ),
        (
            &["enc", "--chunk-size", "4KiB", "-k", "key", "f"],
            "multiple of 16KiB",
        ),
        (&["enc", "--mode", "ecb", "-k", "key", "f"], "--raw ecb"),
        (
            &["enc", "--bits", "192", "-k", "key", "f"],
            "--bits 128 or 256",
        ),
    ];
    for (args, expected) in cases {
        let what = args.join(" ");
        let before = s.names();
        let out = s.run(args);
        let message = assert_usage_error(&out, &what);
        assert!(message.contains(expected), "{what}: {message}");
        let help = format!("(see paraes {} --help)", args[0]);
        assert!(message.ends_with(&help), "{what}: {message}");
        assert_eq!(s.names(), before, "{what}: the directory changed");
    }
}

#[test]
fn dec_help_lists_only_what_dec_uses() {
    let out = Command::new(bin())
        .args(["dec", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for option in ["--mode", "--bits", "--chunk-size", "--recipient"] {
        assert!(
            !help.contains(option),
            "dec --help offers {option}:\n{help}"
        );
    }
    for option in [
        "--identity",
        "--raw",
        "--key-fd",
        "--key-env",
        "--show-data-key",
    ] {
        assert!(help.contains(option), "dec --help lacks {option}");
    }
    let out = Command::new(bin())
        .args(["enc", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "--identity",
        "--show-data-key",
        "--max-kdf-mib",
        "--force-raw",
    ] {
        assert!(!help.contains(option), "enc --help offers {option}");
    }
}

#[test]
fn errors_say_what_is_wrong_in_the_users_words() {
    let s = prepared();
    fs::create_dir(s.path("dir")).expect("mkdir");
    let message = assert_error(&s.run(&["enc", "-k", "key", "dir"]), "enc dir");
    assert!(
        message.contains("is a directory") && !message.contains("tar"),
        "{message}"
    );
    let message = assert_error(&s.run(&["info", "f"]), "info f");
    assert!(!message.contains("--raw"), "{message}");
    s.write(
        "typo.key",
        b"00112233445566778899aabbccddeeffg0112233445566778899aabbccddeeff\n",
    );
    s.set_mode("typo.key", 0o600);
    let message = assert_error(&s.run(&["enc", "-k", "typo.key", "f"]), "typo key");
    // What was given is never repeated (a key file may hold a passphrase or another secret).
    assert!(
        message.contains("typo.key is not a key") && !message.contains("position"),
        "{message}"
    );
    fs::write(s.path("dir/.paraes"), b"x").expect("write");
    let message = assert_error(
        &s.run(&["dec", "-k", "key", "dir/.paraes"]),
        "dec dir/.paraes",
    );
    assert!(message.contains("leaves no file name"), "{message}");
    let out = s.run(&["enc", "--key", "0011zz", "f"]);
    assert!(
        stderr(&out).contains("--key is not a key"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sizes_take_decimal_and_binary_units() {
    let s = prepared();
    let plain = s.read("f");
    let iv = "00112233445566778899aabbccddeeff";
    let enc = |size: &str, raw: bool, output: &str| {
        let mut args = vec!["enc", "-q", "-k", "key", "--chunk-size", size];
        if raw {
            args.extend(["--raw", "ctr", "--iv", iv]);
        }
        args.extend(["f", "-o", output, "-f"]);
        s.run(&args)
    };
    // A container's --chunk-size batches its 16 KiB chunks: any multiple of 16 KiB, in either
    // kind of unit (2048KB = 2,048,000 = 125 x 16 KiB).
    for size in ["4MiB", "1.5MiB", "64KiB", "16KiB", "2048KB", "32768"] {
        assert_success(&enc(size, false, "g"), size);
        let out = s.run(&["dec", "-q", "-k", "key", "g", "-o", "-"]);
        assert_success(&out, &format!("dec of --chunk-size {size}"));
        assert!(out.stdout == plain, "--chunk-size {size}: wrong plaintext");
    }
    // A refusal says in bytes what the size came to: decimal units are powers of 1000, binary
    // ones of 1024. These are multiples of 16 bytes but not of 16 KiB: refused for a
    // container, taken by a raw stream (whose bytes do not depend on the chunk size either).
    assert_success(&enc("64KiB", true, "r"), "--raw ctr");
    let raw = s.read("r");
    for (size, bytes) in [
        ("4MB", "4000000"),
        ("100KB", "100000"),
        ("20KiB", "20480"),
        ("4.5KiB", "4608"),
        ("1.25MB", "1250000"),
    ] {
        let before = s.names();
        let message = assert_usage_error(&enc(size, false, "g"), size);
        assert!(
            message.contains("multiple of 16KiB")
                && message.contains(&format!("not {bytes} bytes")),
            "{size}: {message}"
        );
        assert_eq!(s.names(), before, "{size}: the directory changed");
        assert_success(
            &enc(size, true, "r"),
            &format!("--raw ctr --chunk-size {size}"),
        );
        assert!(
            s.read("r") == raw,
            "--raw ctr --chunk-size {size}: other bytes"
        );
    }
    // Out of range for either.
    for (size, bytes) in [
        ("65MiB", "68157440"),
        ("4000", "4000"),
        ("70MB", "70000000"),
    ] {
        for raw in [false, true] {
            let what = format!("--chunk-size {size}, raw {raw}");
            let message = assert_usage_error(&enc(size, raw, "h"), &what);
            assert!(
                message.contains(&format!("not {bytes} bytes")),
                "{what}: {message}"
            );
            assert!(!s.exists("h"), "{what}: output written");
        }
    }
}

#[test]
fn verbose_and_json_summaries() {
    let s = prepared();
    let out = s.run(&["enc", "-v", "-k", "key", "f"]);
    let err = assert_success(&out, "enc -v");
    assert!(err.contains("paraes: enc: 10.0 KiB in"), "{err}");
    let out = s.run(&["dec", "--stats", "json", "-k", "key", "f.paraes", "-o", "g"]);
    let err = assert_success(&out, "dec --stats json");
    let json: serde_json::Value = serde_json::from_str(err.trim()).expect("one JSON object");
    assert_eq!(json["command"], "dec");
    assert_eq!(json["bytes_out"], 10 << 10);
    assert!(json["seconds"].as_f64().is_some_and(|t| t >= 0.0));
    assert!(json["engine"].as_str().is_some_and(|e| !e.is_empty()));
}

#[test]
fn info_reports_a_body_length_no_writer_makes() {
    let s = prepared();
    // After the header, the salt and the commitment, records of a 16 KiB chunk and its tag,
    // then a last record of a shorter chunk and its tag (16 to 16,399 bytes).
    let prefix = HEADER_LEN + MESSAGE_PREFIX_LEN;
    let record = CHUNK + TAG_LEN;
    // 10 KiB: one record of 10,256 bytes.
    assert_success(&s.run(&["enc", "-q", "-k", "key", "f"]), "enc f");
    // 32 KiB: two full records, then the empty last chunk's lone tag.
    s.write("e", &seeded_bytes(8, 2 * CHUNK));
    assert_success(&s.run(&["enc", "-q", "-k", "key", "e"]), "enc e");
    // 32 KiB less a byte: a full record, then one of 16,399 bytes.
    s.write("g", &seeded_bytes(9, 2 * CHUNK - 1));
    assert_success(&s.run(&["enc", "-q", "-k", "key", "g"]), "enc g");
    let (one, two, almost) = (s.read("f.paraes"), s.read("e.paraes"), s.read("g.paraes"));
    for (name, sealed, len, chunks) in [
        ("f.paraes", &one, 10 << 10, 1),
        ("e.paraes", &two, 2 * CHUNK, 3),
        ("g.paraes", &almost, 2 * CHUNK - 1, 2),
    ] {
        assert_eq!(sealed.len(), container_len(len, HEADER_LEN), "{name}");
        let out = s.run(&["info", name]);
        assert_success(&out, &format!("info {name}"));
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        // The ciphertext is as long as the plaintext (the tags are not counted).
        let expected = format!("{chunks} ({len} bytes of ciphertext)");
        assert_eq!(
            info_field(&shown, "chunks"),
            Some(expected),
            "{name}: {shown}"
        );
    }
    // An ECB container of format v2 (no longer written, still read): 54,038 bytes in 4 KiB
    // chunks, each of its 14 records a whole number of blocks and a tag.
    let ecb = fs::read(format!("{V2_FIXTURES}/ecb-256.paraes")).expect("the v2 ECB fixture");
    for (what, bytes) in [
        (
            "cut to 8 bytes of the only chunk's tag",
            one[..prefix + 8].to_vec(),
        ),
        (
            "cut after the second record, without the empty last chunk",
            two[..prefix + 2 * record].to_vec(),
        ),
        (
            "extended by one byte: a last chunk of a whole 16 KiB",
            [&almost[..], &[0u8; 1]].concat(),
        ),
        ("extended by 5 bytes", [&almost[..], &[0u8; 5]].concat()),
        ("the salt and commitment, no chunk", one[..prefix].to_vec()),
        (
            "a v2 ECB chunk cut mid-block",
            ecb[..ecb.len() - 3].to_vec(),
        ),
        (
            "a v2 ECB container extended by 5 bytes",
            [&ecb[..], &[0u8; 5]].concat(),
        ),
    ] {
        s.write("g.paraes", &bytes);
        let out = s.run(&["info", "g.paraes"]);
        let message = assert_error(&out, what);
        assert!(
            message.contains("truncated or had bytes appended"),
            "{what}: {message}"
        );
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(shown.contains("INVALID"), "{what}: {shown}");
    }
    // The salt and commitment are read with the header: a file cut before their end is a
    // truncated header (no header fields to show).
    for (what, bytes) in [
        ("cut inside the commitment", one[..prefix - 1].to_vec()),
        ("cut inside the salt", one[..HEADER_LEN + 10].to_vec()),
        ("only the header", one[..HEADER_LEN].to_vec()),
    ] {
        s.write("g.paraes", &bytes);
        let out = s.run(&["info", "g.paraes"]);
        let message = assert_error(&out, what);
        assert!(message.contains("truncated"), "{what}: {message}");
        assert!(
            out.stdout.is_empty(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn dec_raw_refuses_a_container_unless_forced() {
    let s = prepared();
    assert_success(&s.run(&["enc", "-q", "-k", "key", "f"]), "enc");
    let iv = "00112233445566778899aabbccddeeff";
    let args = [
        "dec", "-k", "key", "--raw", "ctr", "--iv", iv, "f.paraes", "-o", "g",
    ];
    let before = s.names();
    let message = s.assert_refused(&s.run(&args), &before, "dec --raw on a container");
    assert!(message.contains("drop --raw"), "{message}");
    let forced = [&args[..], &["--force-raw"]].concat();
    assert_success(&s.run(&forced), "--force-raw");
}

#[test]
fn completions_and_man_page_are_generated() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(bin())
            .args(["completions", shell])
            .output()
            .expect("runs");
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("paraes") && script.contains("--key-fd"),
            "{shell} completion lacks paraes or its options"
        );
    }
    let out = Command::new(bin()).arg("man").output().expect("runs");
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH paraes"),
        "{page}"
    );
}
