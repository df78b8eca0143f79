//! ASCII armor (issue 39, item 6; docs/FORMAT.md, "ASCII armor"): `enc --armor` writes the very
//! container a plain `enc` writes as 64-column base64 between a begin and an end line; `dec`,
//! `verify` and `info` read it, through a pipe too, and refuse every departure from the spec in
//! one line, writing nothing.

use crate::common::{
    assert_error, assert_success, assert_usage_error, container_len, info_field, seeded_bytes,
    stderr, Scratch, CHUNK, HEADER_LEN,
};

const BEGIN: &str = "-----BEGIN PARAES ENCRYPTED FILE-----";
const END: &str = "-----END PARAES ENCRYPTED FILE-----";

/// Checks `text` against the spec's shape (begin and end lines, 64-column lines but the last,
/// LF endings, a final newline) and returns its base64 lines.
fn armor_lines(text: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(text).expect("armor is ASCII text");
    assert!(text.is_ascii());
    assert!(!text.contains('\r'), "LF line endings only");
    assert!(
        text.ends_with(&format!("{END}\n")),
        "ends with the end line"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], BEGIN);
    assert_eq!(lines[lines.len() - 1], END);
    let body: Vec<String> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| l.to_string())
        .collect();
    for (i, line) in body.iter().enumerate() {
        if i + 1 < body.len() {
            assert_eq!(line.len(), 64, "line {} of {}", i + 2, body.len());
        } else {
            assert!((1..=64).contains(&line.len()), "the last line: {line}");
        }
    }
    body
}

/// `paraes info FILE`, asserted to succeed.
fn info(s: &Scratch, name: &str) -> String {
    let out = s.run(&["info", name]);
    assert_success(&out, &format!("info {name}"));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn enc_armor_writes_the_plain_container_as_text_that_dec_verify_and_info_read() {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    for len in [0, 1, 48, 49, 1024 * 1024 + 3 * CHUNK + 5] {
        let what = format!("{len} bytes");
        let plain = seeded_bytes(len as u64, len);
        s.write("plain", &plain);
        assert_success(
            &s.run(&["enc", "-q", "-k", "k", "plain", "-o", "p.paraes"]),
            &what,
        );
        let out = s.run(&["enc", "-q", "--armor", "-k", "k", "plain", "-o", "p.asc"]);
        assert_success(&out, &what);
        let lines = armor_lines(&s.read("p.asc"));
        // Decoded by another base64 decoder: a binary container of the plain one's length and
        // shape, which dec opens as any container.
        let decoded = s.bash("sed '1d;$d' p.asc | base64 -d > p.bin");
        assert_success(&decoded, "base64 -d");
        let binary = s.read("p.bin");
        let plain_container = s.read("p.paraes");
        assert_eq!(binary.len(), container_len(len, HEADER_LEN), "{what}");
        assert_eq!(binary.len(), plain_container.len(), "{what}");
        assert_eq!(lines.len(), binary.len().div_ceil(48), "{what}");
        assert_eq!(binary[..8], plain_container[..8], "{what}: the magic");
        assert_eq!(info(&s, "p.bin"), info(&s, "p.paraes"), "{what}");
        let armored_info = info(&s, "p.asc");
        assert_eq!(
            armored_info.replace(&format!("{}\n", armored_info.lines().last().unwrap()), ""),
            info(&s, "p.bin"),
            "{what}: info of the armor shows the container's fields"
        );
        assert!(
            info_field(&armored_info, "armor").is_some(),
            "{armored_info}"
        );
        for (input, output) in [("p.asc", "out.asc"), ("p.bin", "out.bin")] {
            let out = s.run(&["dec", "-q", "-k", "k", input, "-o", output]);
            assert_success(&out, &format!("{what}: dec {input}"));
            assert!(s.read(output) == plain, "{what}: dec {input}");
            s.remove(output);
        }
        let out = s.run(&["verify", "-k", "k", "p.asc"]);
        assert_success(&out, &format!("{what}: verify"));
        assert_eq!(out.stdout, b"p.asc: OK\n");
        let json = s.run(&["info", "--json", "p.asc"]);
        assert!(String::from_utf8_lossy(&json.stdout).contains("\"armored\":true"));
        for name in ["p.paraes", "p.asc", "p.bin", "plain"] {
            s.remove(name);
        }
    }
}

#[test]
fn armored_output_goes_through_a_pipe_into_dec_and_from_standard_input() {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    let plain = seeded_bytes(7, 5 * CHUNK + 77);
    let (enc, dec) = s.pipe(
        &["enc", "-q", "-a", "-k", "k", "-o", "-"],
        &["dec", "-q", "-k", "k", "-o", "-"],
        &plain,
    );
    assert_success(&enc, "enc -a into a pipe");
    assert_success(&dec, "dec from the pipe");
    assert!(dec.stdout == plain, "the pipe's round trip");
    let armored = s.run_with_stdin(&["enc", "-q", "-a", "-k", "k"], &plain);
    assert_success(&armored, "enc -a from standard input");
    armor_lines(&armored.stdout);
    // CRLF throughout is read too (a text pasted on another system).
    let crlf = String::from_utf8(armored.stdout.clone())
        .unwrap()
        .replace('\n', "\r\n");
    for text in [armored.stdout.clone(), crlf.into_bytes()] {
        let out = s.run_with_stdin(&["dec", "-q", "-k", "k"], &text);
        assert_success(&out, "dec of armor on standard input");
        assert!(out.stdout == plain);
    }
    let info = s.run_with_stdin(&["info", "/dev/stdin"], &armored.stdout);
    assert_success(&info, "info of armor on standard input");
}

/// Replaces line `n` (1: the begin line) of armored `text` by `line`.
fn with_line(text: &str, n: usize, line: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines[n - 1] = line;
    lines.join("\n") + "\n"
}

#[test]
fn every_departure_from_the_armor_spec_is_refused_in_one_line_writing_nothing() {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    s.write("plain", &seeded_bytes(9, 3000));
    assert_success(
        &s.run(&["enc", "-q", "-a", "-k", "k", "plain", "-o", "p.asc"]),
        "enc -a",
    );
    let good = String::from_utf8(s.read("p.asc")).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let n = lines.len();
    let last = lines[n - 2];
    assert!(last.len() < 64 && last.ends_with('='), "{last}");
    // The last line's final data character with an unused low bit set.
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let (head, tail) = last.split_at(last.trim_end_matches('=').len() - 1);
    let value = ALPHABET.find(&tail[..1]).unwrap();
    let bits = format!(
        "{head}{}{}",
        &ALPHABET[value ^ 1..(value ^ 1) + 1],
        &tail[1..]
    );
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "trailing garbage",
            format!("{good}garbage\n"),
            "data after the end line",
        ),
        (
            "a blank line after the end",
            format!("{good}\n"),
            "data after the end line",
        ),
        (
            "cut",
            good[..good.len() - 100].to_owned(),
            "before its end line",
        ),
        (
            "a long line",
            with_line(&good, 3, &format!("{}A", lines[2])),
            "line 3 is longer than 64",
        ),
        (
            "a short line",
            with_line(&good, 3, &lines[2][..40]),
            "line 3 has 40 characters",
        ),
        (
            "a space",
            with_line(
                &good,
                4,
                &format!("{} {}", &lines[3][..10], &lines[3][11..]),
            ),
            "line 4 holds a space",
        ),
        (
            "a bad character",
            with_line(
                &good,
                4,
                &format!("{}!{}", &lines[3][..10], &lines[3][11..]),
            ),
            "line 4 is not canonical base64",
        ),
        (
            "padding bits",
            with_line(&good, n - 1, &bits),
            "is not canonical base64",
        ),
        ("a blank line", with_line(&good, 2, ""), "line 2 is empty"),
        (
            "another label",
            with_line(&good, 1, "-----BEGIN AGE ENCRYPTED FILE-----"),
            "armored as \"AGE ENCRYPTED FILE\"",
        ),
        (
            "mixed line endings",
            good.replacen('\n', "\r\n", 2),
            "line 3 ends in LF but the first line in CRLF",
        ),
    ];
    for (what, text, expected) in cases {
        s.write("bad.asc", text.as_bytes());
        let before = s.names();
        let out = s.run(&["dec", "-k", "k", "bad.asc", "-o", "out"]);
        let message = s.assert_refused(&out, &before, what);
        assert!(message.contains(expected), "{what}: dec said: {message}");
        assert!(
            message.contains("bad.asc"),
            "{what}: names the file: {message}"
        );
        let out = s.run(&["verify", "-k", "k", "bad.asc"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: verify: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(expected),
            "{what}: verify said: {}",
            stderr(&out)
        );
        let out = s.run(&["info", "bad.asc"]);
        let message = assert_error(&out, &format!("{what}: info"));
        assert!(message.contains(expected), "{what}: info said: {message}");
        let out = s.run_with_stdin(&["dec", "-k", "k", "-o", "out"], text.as_bytes());
        let message = s.assert_refused(&out, &before, &format!("{what}, piped"));
        assert!(
            message.contains(expected),
            "{what}: dec of a pipe said: {message}"
        );
    }
}

#[test]
fn armor_is_for_containers_and_whole_files_only() {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    s.write("plain", b"text");
    for extra in [&["--raw", "ctr"][..], &["--format", "cobblestone"]] {
        let mut args = vec!["enc", "-a", "-k", "k", "plain", "-o", "x"];
        args.extend_from_slice(extra);
        let message = assert_usage_error(&s.run(&args), &format!("--armor {extra:?}"));
        assert!(message.contains("--armor"), "{message}");
    }
    assert_success(
        &s.run(&["enc", "-q", "-a", "-k", "k", "plain", "-o", "p.asc"]),
        "enc -a",
    );
    s.key_file("other", 256, 2, true);
    let before = s.names();
    // With the file's key, and with a key that does not open it: the armor is refused before
    // any key is tried (a passphrase's KDF would be seconds spent for nothing).
    for key in ["k", "other"] {
        let out = s.run(&["dec", "-k", key, "p.asc", "--range", "0..2", "-o", "part"]);
        let message = s.assert_refused(&out, &before, &format!("dec --range of armor, -k {key}"));
        assert!(
            message.contains("ASCII armor") && message.contains("drop --range"),
            "-k {key}: {message}"
        );
    }
    // Refused from its begin line, the rest unread: an armor broken at its end gets the same
    // line (before, the whole armor was read and checked first, and the run said the end line
    // was missing).
    let text = s.read("p.asc");
    s.write("no-end.asc", &text[..text.len() - END.len() - 1]);
    let before = s.names();
    let out = s.run(&[
        "dec",
        "-k",
        "k",
        "no-end.asc",
        "--range",
        "0..2",
        "-o",
        "part",
    ]);
    let message = s.assert_refused(&out, &before, "dec --range of armor without its end line");
    assert!(message.contains("drop --range"), "{message}");
}

/// MPI ranks read and write at their own offsets, which armor has not: `enc --armor` under MPI
/// is a usage error, `dec` of armor under MPI refuses in one line and writes nothing.
#[cfg(feature = "mpi")]
#[test]
fn mpi_ranks_refuse_armor() {
    use crate::mpi::with_mpi::{run_mpi, MPI_ENC};
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    s.write("plain", &seeded_bytes(3, 2 * CHUNK + 9));
    let mut args = MPI_ENC.to_vec();
    args.extend(["-a", "plain", "-o", "p.asc"]);
    let message = assert_usage_error(&s.run(&args), "enc --armor --backend mpi");
    assert!(message.contains("--armor"), "{message}");
    assert_success(
        &s.run(&["enc", "-q", "-a", "-k", "k", "plain", "-o", "p.asc"]),
        "enc -a",
    );
    s.key_file("other", 256, 2, true);
    let before = s.names();
    // Refused before any key is tried: with a key that does not open the file too.
    for key in ["k", "other"] {
        let out = run_mpi(
            &s,
            2,
            &["dec", "--backend", "mpi", "-k", key, "p.asc", "-o", "out"],
        );
        assert!(!out.status.success(), "dec of armor under MPI, -k {key}");
        assert!(
            stderr(&out).contains("p.asc is ASCII armor"),
            "-k {key}: {}",
            stderr(&out)
        );
        assert_eq!(s.names(), before, "nothing written");
    }
}

/// An armored file whose armor is refused at its end (data after the end line, or no end
/// line) writes nothing to standard output either: the whole armor of a regular file is
/// checked before any chunk is decrypted (found by a hostile review: 25 MiB of plaintext went
/// out before the refusal). `dec --raw` of an armored container is refused as a binary one is.
#[test]
fn a_file_whose_armor_fails_at_its_end_writes_nothing_to_a_stream() {
    let s = Scratch::new();
    s.key_file("k", 256, 3, true);
    // Larger than the windows read ahead on two workers (`--threads 1`), so chunks would be
    // written before the end is read.
    s.write("plain", &seeded_bytes(3, 40 << 20));
    assert_success(
        &s.run(&["enc", "-q", "-a", "-k", "k", "plain", "-o", "p.asc"]),
        "enc -a",
    );
    let text = String::from_utf8(s.read("p.asc")).unwrap();
    let no_end = text[..text.len() - END.len() - 1].to_string();
    for (what, bad) in [
        ("data after the end line", format!("{text}junk\n")),
        ("no end line", no_end),
    ] {
        s.write("bad.asc", bad.as_bytes());
        for to in ["-o - > out", "-o - | cat > out"] {
            let script = format!("set -o pipefail; $PARAES dec -q --threads 1 -k k bad.asc {to}");
            let out = s.bash(&script);
            assert_error(&out, &format!("{what}: {script}"));
            assert!(
                s.read("out").is_empty(),
                "{what}: {script} wrote {} bytes before the refusal",
                s.read("out").len()
            );
        }
    }
    let out = s.run(&[
        "dec",
        "-q",
        "--raw",
        "ctr",
        "--iv",
        "000102030405060708090a0b0c0d0e0f",
        "-k",
        "k",
        "p.asc",
        "-o",
        "raw.out",
    ]);
    let message = assert_error(&out, "dec --raw of an armored container");
    assert!(message.contains("ASCII armor"), "{message}");
    assert!(!s.path("raw.out").exists(), "dec --raw wrote an output");
}

/// rekey and upgrade change a binary container in place; an armored one is refused in one line
/// that says why and what to do (before: "not a paraes container"), and is left as it was.
#[test]
fn rekey_and_upgrade_say_an_armored_container_cannot_change_in_place() {
    let s = Scratch::new();
    s.key_file("k", 256, 1, true);
    s.key_file("k2", 256, 2, true);
    s.write("plain", &seeded_bytes(3, 5000));
    assert_success(
        &s.run(&["enc", "-q", "-a", "-k", "k", "plain", "-o", "p.asc"]),
        "enc -a",
    );
    let armored = s.read("p.asc");
    let out = s.run(&["rekey", "-k", "k", "--add-key-file", "k2", "p.asc"]);
    let message = assert_error(&out, "rekey of armor");
    assert!(
        message.contains("ASCII-armored") && message.contains("encrypt it again"),
        "{message}"
    );
    let out = s.run(&["upgrade", "-k", "k", "p.asc"]);
    assert!(!out.status.success(), "upgrade of armor succeeded");
    let said = stderr(&out);
    assert!(
        said.contains("already format v3") && said.contains("ASCII-armored"),
        "{said}"
    );
    assert_eq!(s.read("p.asc"), armored, "the armored file changed");
}
