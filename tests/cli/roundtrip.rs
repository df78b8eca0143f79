//! End-to-end round trips of `paraes enc` / `paraes dec` for every mode, key size and the sizes
//! around chunk boundaries, through files (default names and -o) and through pipes.

use crate::common::{
    assert_silent_success, container_len, seeded_bytes, Mode, Scratch, CHUNK, CHUNK_ARG,
    HEADER_LEN, KEY_BITS,
};

/// Plaintext sizes: empty, around one block, around one chunk, and several chunks plus a tail.
const SIZES: [usize; 9] = [0, 1, 15, 16, 17, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5];

/// One round-trip case: its mode, key size, plaintext and key file (in a fresh directory).
struct Case {
    name: String,
    mode: Mode,
    plain: Vec<u8>,
    scratch: Scratch,
}

impl Case {
    /// `enc` arguments (quiet, so a success must leave stderr empty) followed by `extra`.
    fn enc_args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["enc", "-q", "-k", "key", "--chunk-size", CHUNK_ARG];
        args.extend(["--mode", self.mode.arg()]);
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
            container_len(self.mode, self.plain.len(), HEADER_LEN),
            "{}: container length",
            self.name
        );
        assert_eq!(&container[..8], b"\x89PARAES\n", "{}: magic", self.name);
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

/// Runs `check` for every mode x key size x size, each with its own seed and directory.
fn for_every_case(check: impl Fn(&Case)) {
    let mut seed = 0;
    for mode in Mode::ALL {
        for bits in KEY_BITS {
            for size in SIZES {
                seed += 1;
                let scratch = Scratch::new();
                // Alternate the two key-file formats: raw bytes and hex text.
                scratch.key_file("key", bits, seed, seed % 2 == 0);
                check(&Case {
                    name: format!("{mode:?} AES-{bits}, {size} bytes"),
                    mode,
                    plain: seeded_bytes(seed, size),
                    scratch,
                });
            }
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
