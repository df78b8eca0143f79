//! End-to-end round trips of `paraes enc` / `paraes dec` of containers (format v3: an AES-GCM
//! message) for every container key size and the sizes around chunk boundaries, through files
//! (default names and -o) and through pipes; and the refusal of what a container cannot be
//! (ECB, a 192-bit body).

use crate::common::{
    assert_silent_success, assert_usage_error, container_len, records, seeded_bytes, Scratch,
    CHUNK, CHUNK_ARG, CONTAINER_BITS, HEADER_LEN, TAG_LEN,
};

/// Plaintext sizes: empty, around one block, around one chunk, and several chunks plus a tail.
const SIZES: [usize; 10] = [
    0,
    1,
    15,
    16,
    17,
    CHUNK - 1,
    CHUNK,
    CHUNK + 1,
    2 * CHUNK,
    3 * CHUNK + 5,
];

/// One round-trip case: its key size, plaintext and key file (in a fresh directory).
struct Case {
    name: String,
    bits: usize,
    plain: Vec<u8>,
    scratch: Scratch,
}

impl Case {
    /// `enc` arguments (quiet, so a success must leave stderr empty) followed by `extra`.
    fn enc_args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        let bits = if self.bits == 128 { "128" } else { "256" };
        let mut args = vec!["enc", "-q", "-k", "key", "--chunk-size", CHUNK_ARG];
        args.extend(["--bits", bits]);
        args.extend_from_slice(extra);
        args
    }

    fn dec_args<'a>(&self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["dec", "-q", "-k", "key"];
        args.extend_from_slice(extra);
        args
    }

    fn check_container(&self, container: &[u8]) {
        assert_eq!(
            container.len(),
            container_len(self.plain.len(), HEADER_LEN),
            "{}: container length",
            self.name
        );
        assert_eq!(&container[..8], b"\x89PARAES\n", "{}: magic", self.name);
        assert_eq!(container[8], 3, "{}: format v3", self.name);
        assert_eq!(
            usize::from(container[10]) * 8,
            self.bits,
            "{}: key size byte",
            self.name
        );
        // Full 16 KiB chunks, then one shorter last chunk, each with its tag.
        let records = records(container, HEADER_LEN);
        assert_eq!(
            records.len(),
            self.plain.len() / CHUNK + 1,
            "{}: chunks",
            self.name
        );
        let (last, rest) = records.split_last().expect("a last chunk");
        assert!(
            rest.iter()
                .all(|(body, tag)| body.len() == CHUNK && tag.len() == TAG_LEN),
            "{}: a chunk before the last is not 16 KiB",
            self.name
        );
        assert_eq!(
            last.0.len(),
            self.plain.len() % CHUNK,
            "{}: last chunk",
            self.name
        );
        assert_eq!(last.1.len(), TAG_LEN, "{}: last tag", self.name);
    }

    fn check_plain(&self, decrypted: &[u8], route: &str) {
        assert!(
            decrypted == self.plain,
            "{} ({route}): decrypted {} bytes differ from the {} plaintext bytes",
            self.name,
            decrypted.len(),
            self.plain.len()
        );
    }
}

/// Runs `check` for every container key size x size, each with its own seed and directory
/// (and key files of every AES size: a container's body key size is --bits, not the key's).
fn for_every_case(check: impl Fn(&Case)) {
    let mut seed = 0;
    for bits in CONTAINER_BITS {
        for size in SIZES {
            seed += 1;
            let scratch = Scratch::new();
            // Alternate the two key-file formats (raw bytes and hex text) and the key sizes.
            let key_bits = [128, 192, 256][seed as usize % 3];
            scratch.key_file("key", key_bits, seed, seed % 2 == 0);
            check(&Case {
                name: format!("Cobblestone-{bits} (a {key_bits}-bit key file), {size} bytes"),
                bits,
                plain: seeded_bytes(seed, size),
                scratch,
            });
        }
    }
}

#[test]
fn files_with_default_output_names() {
    for_every_case(|case| {
        let s = &case.scratch;
        s.write("data", &case.plain);
        assert_silent_success(&s.run(&case.enc_args(&["data"])), &case.name);
        case.check_container(&s.read("data.paraes"));

        s.remove("data");
        assert_silent_success(&s.run(&case.dec_args(&["data.paraes"])), &case.name);
        case.check_plain(&s.read("data"), "data.paraes -> data");
        assert_eq!(
            s.names(),
            ["data", "data.paraes", "key"].map(String::from).into(),
            "{}: exactly the outputs, no temporaries",
            case.name
        );
    });
}

#[test]
fn files_with_explicit_output() {
    for_every_case(|case| {
        let s = &case.scratch;
        s.write("in.bin", &case.plain);
        let enc = case.enc_args(&["in.bin", "-o", "sealed.box"]);
        assert_silent_success(&s.run(&enc), &case.name);
        case.check_container(&s.read("sealed.box"));

        let dec = case.dec_args(&["-o", "out.bin", "sealed.box"]);
        assert_silent_success(&s.run(&dec), &case.name);
        case.check_plain(&s.read("out.bin"), "-o out.bin");
        assert_eq!(
            s.names(),
            ["in.bin", "key", "out.bin", "sealed.box"]
                .map(String::from)
                .into(),
            "{}: exactly the outputs, no temporaries",
            case.name
        );
    });
}

#[test]
fn standard_input_to_standard_output() {
    for_every_case(|case| {
        let s = &case.scratch;
        // No INPUT at all for enc, "-" for dec, "-o -" for both at once.
        let sealed = s.run_with_stdin(&case.enc_args(&[]), &case.plain);
        assert_silent_success(&sealed, &case.name);
        case.check_container(&sealed.stdout);

        let opened = s.run_with_stdin(&case.dec_args(&["-", "-o", "-"]), &sealed.stdout);
        assert_silent_success(&opened, &case.name);
        case.check_plain(&opened.stdout, "stdin -> stdout");

        let (enc, dec) = s.pipe(
            &case.enc_args(&["-o", "-"]),
            &case.dec_args(&[]),
            &case.plain,
        );
        assert_silent_success(&enc, &case.name);
        assert_silent_success(&dec, &case.name);
        case.check_plain(&dec.stdout, "paraes enc | paraes dec");
        assert_eq!(s.names(), ["key"].map(String::from).into(), "{}", case.name);
    });
}

#[test]
fn ecb_and_192_bit_containers_are_refused() {
    let s = Scratch::new();
    s.key_file("key", 192, 1, true);
    s.write("data", &seeded_bytes(1, 100));
    for (args, expected) in [
        (&["enc", "-k", "key", "--mode", "ecb", "data"][..], "no ECB"),
        (
            &["enc", "-k", "key", "-m", "ecb", "--bits", "128", "-o", "-"],
            "no ECB",
        ),
        (
            &["enc", "-k", "key", "--bits", "192", "data"],
            "--bits 128 or 256",
        ),
        (
            &["enc", "-k", "key", "--bits", "192", "-o", "-"],
            "--bits 128 or 256",
        ),
    ] {
        let what = args.join(" ");
        let before = s.names();
        let out = s.run_with_stdin(args, b"from standard input");
        let message = assert_usage_error(&out, &what);
        assert!(message.contains(expected), "{what}: {message}");
        assert!(out.stdout.is_empty(), "{what}: output written");
        assert_eq!(s.names(), before, "{what}: the directory changed");
    }
}
