//! `--format cobblestone`: bare C2SP chunked-encryption messages, byte-compatible with
//! pyca/cryptography's `cryptography.cobblestone` both ways (files and pipes, 128- and 256-bit
//! keys, empty to multi-chunk), refused cleanly under a wrong key or context and when cut, read
//! by `--range` one chunk at a time, and the option rules of a message (one random key of 16 or 32 bytes, no passphrase or
//! recipients). The pyca checks need Python with cryptography >= 50: scripts/test.sh installs
//! it into target/pyca (pip --target) and names a Python that sees it in PARAES_PYCA; without
//! it they fail under CI and say SKIPPED loudly elsewhere. The exit door of format v3 is here
//! too: pyca reads a v3 container's body with the data key `dec --show-data-key` shows.

use std::process::Command;

use crate::common::{
    assert_error, assert_success, assert_usage_error, seeded_bytes, skip, Scratch,
};

/// A Python that has `cryptography.cobblestone`, if there is one.
fn pyca(test: &str) -> Option<String> {
    let candidates = std::env::var("PARAES_PYCA")
        .ok()
        .into_iter()
        .chain(["python3".to_owned()]);
    for python in candidates {
        let ok = Command::new(&python)
            .args(["-c", "import cryptography.cobblestone"])
            .output()
            .is_ok_and(|out| out.status.success());
        if ok {
            return Some(python);
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: no Python with cryptography >= 50 under CI (scripts/test.sh installs it)"
    );
    skip(
        test,
        "no Python with cryptography >= 50 (run scripts/test.sh)",
    );
    None
}

/// Runs `python -c SCRIPT ARGS...` in the scratch directory, asserting success.
fn python(s: &Scratch, python: &str, script: &str, args: &[&str]) {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .current_dir(s.path("."))
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Decrypts FILE with KEYHEX and CONTEXT into OUT, keeping OUT only if finalize() succeeds.
const PYCA_DECRYPT: &str = r#"
import sys
from cryptography.cobblestone import Cobblestone128Decryptor, Cobblestone256Decryptor
key = bytes.fromhex(sys.argv[1]); context = sys.argv[2].encode()
d = (Cobblestone256Decryptor if len(key) == 32 else Cobblestone128Decryptor)(key, context)
data = open(sys.argv[3], "rb").read()
out = d.update(data[:1000]) + d.update(data[1000:]) + d.finalize()
open(sys.argv[4], "wb").write(out)
"#;

/// Encrypts FILE with KEYHEX and CONTEXT into OUT.
const PYCA_ENCRYPT: &str = r#"
import sys
from cryptography.cobblestone import Cobblestone128Encryptor, Cobblestone256Encryptor
key = bytes.fromhex(sys.argv[1]); context = sys.argv[2].encode()
e = (Cobblestone256Encryptor if len(key) == 32 else Cobblestone128Encryptor)(key, context)
data = open(sys.argv[3], "rb").read()
open(sys.argv[4], "wb").write(e.update(data) + e.finalize())
"#;

#[test]
fn paraes_and_pyca_read_each_others_messages() {
    let Some(py) = pyca("paraes_and_pyca_read_each_others_messages") else {
        return;
    };
    let s = Scratch::new();
    for bits in [128, 256] {
        let key = s.key_file("k", bits, bits as u64, true);
        let key_hex = hex::encode(&key);
        for len in [0, 1, 16383, 16384, 16385, (3 << 20) + 5] {
            let plain = seeded_bytes(len as u64, len);
            s.write("plain", &plain);
            let out = s.run(&[
                "enc",
                "-q",
                "-f",
                "--format",
                "cobblestone",
                "-k",
                "k",
                "--context",
                "a ctx",
                "plain",
                "-o",
                "msg",
            ]);
            assert_success(&out, "enc --format cobblestone");
            python(&s, &py, PYCA_DECRYPT, &[&key_hex, "a ctx", "msg", "back"]);
            assert!(
                s.read("back") == plain,
                "pyca read paraes's {bits}-bit {len}-byte message"
            );
            python(
                &s,
                &py,
                PYCA_ENCRYPT,
                &[&key_hex, "a ctx", "plain", "theirs"],
            );
            let out = s.run(&[
                "dec",
                "-q",
                "-f",
                "--format",
                "cobblestone",
                "-k",
                "k",
                "--context",
                "a ctx",
                "theirs",
                "-o",
                "mine",
            ]);
            assert_success(&out, "dec --format cobblestone of pyca's message");
            assert!(
                s.read("mine") == plain,
                "paraes read pyca's {bits}-bit {len}-byte message"
            );
        }
    }
}

#[test]
fn messages_stream_through_pipes_and_refuse_wrong_keys_contexts_and_cuts() {
    let s = Scratch::new();
    s.key_file("k", 256, 1, false);
    s.key_file("other", 256, 2, true);
    let plain = seeded_bytes(3, (1 << 20) + 100);
    let args = [
        "enc",
        "--format",
        "cobblestone",
        "-k",
        "k",
        "--context-hex",
        "00ff",
    ];
    let out = s.run_with_stdin(&args, &plain);
    assert_success(&out, "enc from a pipe");
    let message = out.stdout;
    assert_eq!(
        message.len(),
        56 + plain.len() + 16 * (plain.len() / 16384 + 1)
    );
    s.write("m", &message);
    let dec = [
        "dec",
        "--format",
        "cobblestone",
        "-k",
        "k",
        "--context-hex",
        "00ff",
    ];
    let out = s.run_with_stdin(&[&dec[..], &["-o", "-"]].concat(), &message);
    assert_success(&out, "dec from a pipe");
    assert!(out.stdout == plain);
    for (what, args) in [
        (
            "wrong key",
            [
                "dec",
                "--format",
                "cobblestone",
                "-k",
                "other",
                "--context-hex",
                "00ff",
            ],
        ),
        (
            "wrong context",
            [
                "dec",
                "--format",
                "cobblestone",
                "-k",
                "k",
                "--context-hex",
                "00fe",
            ],
        ),
    ] {
        let out = s.run(&[&args[..], &["m", "-o", "out"]].concat());
        let err = assert_error(&out, what);
        assert!(err.contains("key commitment"), "{what}: {err}");
        assert!(!s.exists("out"), "{what}: output left");
    }
    for cut in [10, 56, 56 + 16400, message.len() - 1] {
        s.write("cut", &message[..cut]);
        let out = s.run(&[&dec[..], &["cut", "-o", "out"]].concat());
        assert_error(&out, &format!("cut at {cut}"));
        assert!(!s.exists("out"), "cut at {cut}: output left");
    }
}

#[test]
fn a_message_takes_one_random_key_of_16_or_32_bytes_and_nothing_else() {
    let s = Scratch::new();
    s.write("f", b"data");
    s.key_file("k24", 192, 1, true);
    s.key_file("k", 256, 1, true);
    s.secret("pass", b"a long enough passphrase\n");
    let m = ["--format", "cobblestone"];
    for (what, args) in [
        (
            "a passphrase",
            vec!["enc", "--passphrase-file", "pass", "f"],
        ),
        ("a 24-byte key", vec!["enc", "-k", "k24", "f", "-o", "x"]),
        ("--bits 192", vec!["enc", "-k", "k", "--bits", "192", "f"]),
        ("--mode", vec!["enc", "-k", "k", "--mode", "ecb", "f"]),
        (
            "a chunk size that is not whole GCM chunks",
            vec!["enc", "-k", "k", "--chunk-size", "20KiB", "f"],
        ),
        (
            "--show-data-key",
            vec!["dec", "-k", "k", "--show-data-key", "f.paraes"],
        ),
    ] {
        let args: Vec<&str> = args.iter().copied().chain(m).collect();
        let err = assert_usage_error(&s.run(&args), what);
        assert!(
            err.contains("cobblestone") || err.contains("GCM") || err.contains("message"),
            "{what}: {err}"
        );
    }
    let err = assert_usage_error(
        &s.run(&["enc", "-k", "k", "--context", "x", "f"]),
        "--context alone",
    );
    assert!(err.contains("--format cobblestone"), "{err}");
    assert!(!s.exists("f.paraes") && !s.exists("x"));
}

#[test]
fn a_message_file_cut_or_damaged_at_its_end_releases_nothing() {
    let s = Scratch::new();
    s.key_file("k", 128, 4, true);
    s.write("plain", &seeded_bytes(5, 5_000_000));
    let out = s.run(&[
        "enc",
        "-q",
        "--format",
        "cobblestone",
        "-k",
        "k",
        "plain",
        "-o",
        "m",
    ]);
    assert_success(&out, "enc");
    let message = s.read("m");
    let mut damaged = message.clone();
    let last = damaged.len() - 3;
    damaged[last] ^= 1;
    for (what, bytes) in [
        ("cut at a chunk boundary", &message[..56 + 200 * 16400]),
        ("a damaged last chunk", &damaged[..]),
    ] {
        s.write("bad", bytes);
        let out = s.run(&[
            "dec",
            "--format",
            "cobblestone",
            "-k",
            "k",
            "bad",
            "-o",
            "-",
        ]);
        assert_error(&out, what);
        assert!(
            out.stdout.is_empty(),
            "{what}: {} bytes came out",
            out.stdout.len()
        );
    }
}

/// Reads the body of a v3 container with pyca alone, as README and docs/FORMAT.md show: DATA_KEY
/// and CONTEXT (hex, from `paraes dec --show-data-key`), BODY_OFFSET (from `paraes info
/// --json`), FILE, OUT. The plaintext goes to a temporary file that becomes OUT only if
/// finalize() succeeds (pyca releases each authenticated chunk before it can see a cut).
pub const PYCA_READ_CONTAINER: &str = r#"
import os, sys
from cryptography.cobblestone import Cobblestone128Decryptor, Cobblestone256Decryptor
data_key, context = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
body_offset, path, out_path = int(sys.argv[3]), sys.argv[4], sys.argv[5]
Decryptor = Cobblestone256Decryptor if len(data_key) == 32 else Cobblestone128Decryptor
d = Decryptor(data_key, context)
part = out_path + ".part"
try:
    with open(path, "rb") as f, open(part, "wb") as out:
        f.seek(body_offset)
        while block := f.read(1 << 20):
            out.write(d.update(block))
        out.write(d.finalize())
except Exception:
    os.unlink(part)
    raise
os.replace(part, out_path)
"#;

/// The value after `name:` on a line of `text`.
fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .unwrap_or_else(|| panic!("no {name} in: {text}"))
        .trim()
}

/// Format v3's exit door: pyca reads the body of every container paraes writes (both key
/// sizes, empty to multi-chunk) with the data key and context that `dec --show-data-key`
/// shows and the body offset that `info --json` gives; a damaged body gives no output file.
#[test]
fn pyca_reads_the_body_of_a_v3_container_with_the_shown_data_key() {
    let Some(py) = pyca("pyca_reads_the_body_of_a_v3_container_with_the_shown_data_key") else {
        return;
    };
    let s = Scratch::new();
    for bits in [128, 256] {
        let key = s.key_file("k", bits, bits as u64 + 7, true);
        for len in [0, 16385, 3 * 16384 + 5] {
            let plain = seeded_bytes(len as u64 + 1, len);
            s.write("plain", &plain);
            let bits_arg = bits.to_string();
            let out = s.run(&[
                "enc", "-q", "-f", "-k", "k", "--bits", &bits_arg, "plain", "-o", "c",
            ]);
            assert_success(&out, "enc");
            let out = s.run(&["dec", "-f", "-k", "k", "--show-data-key", "c", "-o", "back"]);
            assert_success(&out, "dec --show-data-key");
            assert!(s.read("back") == plain);
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let data_key = field(&stderr, "data key:").to_owned();
            let context = field(&stderr, "context:").to_owned();
            assert_eq!(data_key.len(), bits / 4, "{stderr}");
            assert_ne!(
                hex::decode(&data_key).unwrap(),
                key,
                "the data key is not the user's key"
            );
            assert_eq!(context, hex::encode(&s.read("c")[..16]));
            assert!(
                stderr.contains("write a different body"),
                "the warning says what it allows: {stderr}"
            );
            let out = s.run(&["info", "--json", "c"]);
            assert_success(&out, "info --json");
            let facts: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("one JSON object");
            assert_eq!(facts["format"], 3);
            let offset = facts["body_offset"]
                .as_u64()
                .expect("body_offset")
                .to_string();
            assert_eq!(facts["slots"][0]["authenticated"], false);
            python(
                &s,
                &py,
                PYCA_READ_CONTAINER,
                &[&data_key, &context, &offset, "c", "theirs"],
            );
            assert!(
                s.read("theirs") == plain,
                "pyca read the {bits}-bit {len}-byte body"
            );
            // The last byte changed: pyca refuses at finalize() and no output file is left.
            let mut damaged = s.read("c");
            *damaged.last_mut().unwrap() ^= 1;
            s.write("bad", &damaged);
            let refused = Command::new(&py)
                .arg("-c")
                .arg(PYCA_READ_CONTAINER)
                .args([&data_key, &context, &offset, "bad", "nothing"])
                .current_dir(s.path("."))
                .output()
                .expect("python runs");
            assert!(!refused.status.success(), "pyca accepted a damaged body");
            assert!(!s.path("nothing").exists() && !s.path("nothing.part").exists());
        }
    }
}

/// `dec --format cobblestone --range` reads only the chunks a range touches (and the last,
/// for the authentic length), of paraes's and pyca's messages alike; a range past the end,
/// a wrong context, and a damaged chunk the range touches are refused, one it does not touch
/// does not matter.
#[test]
fn ranges_of_bare_messages_read_only_their_chunks() {
    let s = Scratch::new();
    let key = s.key_file("k", 256, 77, true);
    let plain = seeded_bytes(78, 64 * 16384 + 9);
    s.write("plain", &plain);
    let out = s.run(&[
        "enc",
        "-q",
        "--format",
        "cobblestone",
        "-k",
        "k",
        "--context",
        "c",
        "plain",
        "-o",
        "m",
    ]);
    assert_success(&out, "enc");
    let range = |file: &str, range: &str| {
        s.run(&[
            "dec",
            "-q",
            "--format",
            "cobblestone",
            "-k",
            "k",
            "--context",
            "c",
            "--range",
            range,
            file,
            "-o",
            "-",
            "--stats",
            "json",
        ])
    };
    for (text, start, end) in [
        ("0..100", 0, 100),
        ("16383..16385", 16383, 16385),
        ("500000..501000", 500_000, 501_000),
        ("1048576..", 1_048_576, plain.len()),
        ("..0", 0, 0),
    ] {
        let out = range("m", text);
        let err = assert_success(&out, text);
        assert!(out.stdout == plain[start..end], "{text}: wrong bytes");
        let stats: serde_json::Value = serde_json::from_str(err.trim()).expect(&err);
        let read = stats["bytes_in"].as_u64().unwrap();
        let touched = (end.saturating_sub(1) / 16384 - start / 16384 + 1) as u64;
        assert!(read <= (touched + 1) * 16400, "{text}: read {read} bytes");
    }
    assert_error(&range("m", "0..1048586"), "past the end");
    let wrong_context = s.run(&[
        "dec",
        "-q",
        "--format",
        "cobblestone",
        "-k",
        "k",
        "--context",
        "d",
        "--range",
        "0..10",
        "m",
        "-o",
        "-",
    ]);
    let err = assert_error(&wrong_context, "wrong context");
    assert!(err.contains("commitment"), "{err}");
    let mut damaged = s.read("m");
    damaged[56 + 30 * 16400 + 7] ^= 1;
    s.write("d", &damaged);
    let untouched = range("d", "0..100");
    assert_success(&untouched, "a range away from the damage");
    assert!(untouched.stdout == plain[..100]);
    let touched = range("d", "491520..491620");
    let err = assert_error(&touched, "a range on the damage");
    assert!(err.contains("chunk 30"), "{err}");
    assert!(touched.stdout.is_empty());
    // pyca's message, read by range.
    let Some(py) = pyca("ranges_of_bare_messages_read_only_their_chunks") else {
        return;
    };
    let key_hex = hex::encode(&key);
    python(&s, &py, PYCA_ENCRYPT, &[&key_hex, "c", "plain", "theirs"]);
    let out = range("theirs", "700000..700123");
    assert_success(&out, "range of pyca's message");
    assert!(out.stdout == plain[700_000..700_123]);
}
