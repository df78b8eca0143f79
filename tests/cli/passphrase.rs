//! Passphrase containers through `--passphrase-file`: round trips at every key size, the
//! 92-byte header and what `paraes info` says of it, which line of the file counts, and clean
//! refusals of wrong passphrases, the wrong kind of secret and a changed Argon2id header.

use crate::common::{
    assert_silent_success, assert_usage_error, container_len, info_field, seeded_bytes, Scratch,
    CHUNK, CHUNK_ARG, CONTAINER_BITS, PASSPHRASE_HEADER_LEN,
};

/// A directory with the passphrase file `pass` and the plaintext `data`.
fn prepared(passphrase: &[u8], size: usize) -> (Scratch, Vec<u8>) {
    let s = Scratch::new();
    s.secret("pass", passphrase);
    let plain = seeded_bytes(size as u64, size);
    s.write("data", &plain);
    (s, plain)
}

/// `paraes enc --passphrase-file pass --chunk-size 16KiB data [extra]` -> `data.paraes`.
fn encrypt(s: &Scratch, extra: &[&str]) {
    let args = [
        "enc",
        "-q",
        "--passphrase-file",
        "pass",
        "--chunk-size",
        CHUNK_ARG,
    ];
    let out = s.run(&[&args[..], extra, &["data"]].concat());
    assert_silent_success(&out, "enc --passphrase-file");
}

/// Decrypts `data.paraes` to standard output with the passphrase file `file`.
fn decrypt(s: &Scratch, file: &str) -> std::process::Output {
    s.run(&["dec", "--passphrase-file", file, "data.paraes", "-o", "-"])
}

#[test]
fn round_trips_at_every_key_size() {
    for bits in CONTAINER_BITS {
        let what = format!("Cobblestone-{bits}");
        let size = 2 * CHUNK + bits;
        let (s, plain) = prepared(b"correct horse battery staple\n", size);
        encrypt(&s, &["--bits", &bits.to_string()]);
        let container = s.read("data.paraes");
        assert_eq!(
            container.len(),
            container_len(size, PASSPHRASE_HEADER_LEN),
            "{what}: container length"
        );
        assert_eq!(container[8], 3, "{what}: format v3");
        assert_eq!(
            usize::from(container[10]) * 8,
            bits,
            "{what}: key size byte"
        );

        let info = s.run(&["info", "data.paraes"]);
        assert_silent_success(&info, "info");
        let info = String::from_utf8(info.stdout).expect("text");
        let expected_body = format!(
            "Cobblestone-{bits} (C2SP chunked encryption, AES-{bits}-GCM) from byte \
             {PASSPHRASE_HEADER_LEN}"
        );
        assert_eq!(info_field(&info, "body"), Some(expected_body), "{info}");
        let key = info_field(&info, "slot 0").unwrap_or_default();
        assert!(
            key.contains("passphrase (Argon2id"),
            "{what}: no Argon2id line:\n{info}"
        );

        s.remove("data");
        let out = s.run(&["dec", "-q", "--passphrase-file", "pass", "data.paraes"]);
        assert_silent_success(&out, &what);
        assert!(s.read("data") == plain, "{what}: wrong plaintext");
    }
}

#[test]
fn ecb_and_192_bit_bodies_are_refused_with_a_passphrase_too() {
    let (s, _) = prepared(b"correct horse battery staple\n", 100);
    for (extra, expected) in [
        (&["-m", "ecb"][..], "no ECB"),
        (&["--bits", "192"], "--bits 128 or 256"),
    ] {
        let args = [&["enc", "--passphrase-file", "pass"][..], extra, &["data"]].concat();
        let what = args.join(" ");
        let before = s.names();
        let message = assert_usage_error(&s.run(&args), &what);
        assert!(message.contains(expected), "{what}: {message}");
        assert_eq!(s.names(), before, "{what}: the directory changed");
    }
}

#[test]
fn the_default_key_size_is_256_bits() {
    let (s, _) = prepared(b"pw", 10);
    encrypt(&s, &[]);
    assert_eq!(s.read("data.paraes")[10], 32, "key size byte");
}

#[test]
fn only_the_first_line_is_the_passphrase() {
    let (s, plain) = prepared(b"open sesame\nsecond line is a comment\n", 100);
    encrypt(&s, &[]);
    for same in [&b"open sesame"[..], b"open sesame\n", b"open sesame\r\n"] {
        s.secret("same", same);
        let out = decrypt(&s, "same");
        assert_silent_success(&out, &format!("{same:?}"));
        assert_eq!(out.stdout, plain, "{same:?}");
    }
}

#[test]
fn wrong_passphrases_are_refused_cleanly() {
    let (s, _) = prepared(b"open sesame\n", 3 * CHUNK);
    encrypt(&s, &[]);
    for wrong in [&b"open sesame "[..], b"Open sesame", b"open sesam", b"x"] {
        s.secret("wrong", wrong);
        let before = s.names();
        let out = s.run(&["dec", "--passphrase-file", "wrong", "data.paraes"]);
        let message = s.assert_refused(&out, &before, &format!("{wrong:?}"));
        assert!(message.contains("passphrase"), "{wrong:?}: {message}");
    }
}

#[test]
fn the_wrong_kind_of_secret_is_refused() {
    let (s, _) = prepared(b"pw\n", 100);
    encrypt(&s, &[]);
    s.key_file("key", 256, 1, true);
    s.secret("empty", b"\nsecond line\n");
    let before = s.names();
    for args in [
        &["dec", "-k", "key", "data.paraes"][..],
        &["dec", "--passphrase-file", "empty", "data.paraes"],
        &["dec", "--passphrase-file", "missing", "data.paraes"],
    ] {
        s.assert_refused(&s.run(args), &before, &args.join(" "));
    }

    // A container made with a key, opened with a passphrase.
    s.remove("data.paraes");
    assert_silent_success(&s.run(&["enc", "-k", "key", "data"]), "enc -k");
    let before = s.names();
    let out = s.run(&["dec", "--passphrase-file", "pass", "data.paraes"]);
    s.assert_refused(&out, &before, "passphrase for a key container");
}

#[test]
fn a_changed_argon2_header_is_refused() {
    let (s, _) = prepared(b"pw\n", 100);
    encrypt(&s, &[]);
    let container = s.read("data.paraes");
    // The slot length, then in the passphrase stanza (docs/FORMAT.md: from byte 77) the salt,
    // memory, passes, lanes, the wrapped key, and the slot tag; each Argon2id run costs time,
    // so sample.
    for at in [32, 77, 92, 96, 100, 104, 110, 160] {
        let mut bad = container.clone();
        bad[at] ^= 1;
        s.write("bad.paraes", &bad);
        let before = s.names();
        let out = s.run(&["dec", "--passphrase-file", "pass", "bad.paraes"]);
        s.assert_refused(&out, &before, &format!("byte {at} flipped"));
    }
}
