//! `paraes enc|dec --raw` against the `openssl enc` command line, both directions: CTR (with
//! counters that carry across 64 and 128 bits), ECB with PKCS#7 padding and ECB with --no-pad,
//! at every key size, through files and through standard input/output.

use crate::common::{
    assert_silent_success, openssl_enc, seeded_bytes, Mode, Scratch, CHUNK, CHUNK_ARG, KEY_BITS,
};

/// Sizes for CTR and padded ECB: empty, partial block, around a chunk, several chunks.
const SIZES: [usize; 6] = [0, 1, 17, CHUNK - 1, CHUNK + 1, 3 * CHUNK + 5];
/// Sizes for ECB without padding: whole blocks only.
const BLOCK_SIZES: [usize; 5] = [0, 16, 48, CHUNK, 3 * CHUNK + 16];

/// Initial counter blocks: random, and two whose counter carries past 64 and 128 bits within
/// the first chunks (openssl increments the whole 128-bit block).
fn ivs(seed: u64) -> [[u8; 16]; 3] {
    let random: [u8; 16] = seeded_bytes(seed, 16).try_into().expect("16 bytes");
    let mut carry_64 = [0x42; 16];
    carry_64[8..].copy_from_slice(&(u64::MAX - 100).to_be_bytes());
    let mut carry_128 = [0xff; 16];
    carry_128[15] = 0xf0;
    [random, carry_64, carry_128]
}

/// One raw-stream configuration and the paraes options that select it.
struct Raw {
    name: String,
    mode: Mode,
    bits: usize,
    key: Vec<u8>,
    iv: Option<[u8; 16]>,
    pad: bool,
    scratch: Scratch,
}

impl Raw {
    fn new(mode: Mode, bits: usize, iv: Option<[u8; 16]>, pad: bool, seed: u64) -> Self {
        let scratch = Scratch::new();
        let key = scratch.key_file("key", bits, seed, seed % 2 == 1);
        let iv_name = iv.map(hex::encode).unwrap_or_default();
        Raw {
            name: format!("raw {mode:?} AES-{bits} iv={iv_name} pad={pad}"),
            mode,
            bits,
            key,
            iv,
            pad,
            scratch,
        }
    }

    /// `paraes COMMAND --raw ...` options for this configuration, then `extra`.
    fn args(&self, command: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [command, "--raw", self.mode.arg(), "-q", "-k", "key"]
            .map(String::from)
            .into();
        if command == "enc" {
            args.extend(["--chunk-size".into(), CHUNK_ARG.into()]);
        }
        if let Some(iv) = self.iv {
            args.extend(["--iv".into(), hex::encode(iv)]);
        }
        if !self.pad {
            args.push("--no-pad".into());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    /// Runs `paraes COMMAND` on `input`, alternating between stdin/stdout and files.
    fn paraes(&self, command: &str, input: &[u8], through_files: bool) -> Vec<u8> {
        let s = &self.scratch;
        let what = format!("{}: paraes {command}", self.name);
        if through_files {
            s.write("in", input);
            let args = self.args(command, &["in", "-o", "out", "--force"]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_silent_success(&s.run(&args), &what);
            s.read("out")
        } else {
            let args = self.args(command, &[]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = s.run_with_stdin(&args, input);
            assert_silent_success(&out, &what);
            out.stdout
        }
    }

    fn openssl(&self, decrypt: bool, input: &[u8]) -> Vec<u8> {
        let cipher = self.mode.openssl_cipher(self.bits);
        openssl_enc(
            &cipher,
            &self.key,
            self.iv.as_ref(),
            decrypt,
            self.pad,
            input,
        )
    }

    /// paraes enc == openssl enc; each side decrypts the other's output to the plaintext.
    fn check_both_directions(&self, plain: &[u8], through_files: bool) {
        let name = format!("{}, {} bytes", self.name, plain.len());
        let ours = self.paraes("enc", plain, through_files);
        let theirs = self.openssl(false, plain);
        assert!(
            ours == theirs,
            "{name}: paraes enc differs from openssl enc"
        );
        assert!(
            self.paraes("dec", &theirs, !through_files) == plain,
            "{name}: paraes dec of openssl's ciphertext is not the plaintext"
        );
        assert!(
            self.openssl(true, &ours) == plain,
            "{name}: openssl dec of paraes's ciphertext is not the plaintext"
        );
    }
}

#[test]
fn raw_ctr_matches_openssl() {
    let mut seed = 2000;
    for bits in KEY_BITS {
        for iv in ivs(bits as u64) {
            for size in SIZES {
                seed += 1;
                let raw = Raw::new(Mode::Ctr, bits, Some(iv), true, seed);
                raw.check_both_directions(&seeded_bytes(seed, size), seed % 2 == 0);
            }
        }
    }
}

#[test]
fn raw_ecb_padded_matches_openssl() {
    let mut seed = 3000;
    for bits in KEY_BITS {
        for size in SIZES {
            seed += 1;
            let raw = Raw::new(Mode::Ecb, bits, None, true, seed);
            raw.check_both_directions(&seeded_bytes(seed, size), seed % 2 == 0);
        }
    }
}

#[test]
fn raw_ecb_without_padding_matches_openssl() {
    let mut seed = 4000;
    for bits in KEY_BITS {
        for size in BLOCK_SIZES {
            seed += 1;
            let raw = Raw::new(Mode::Ecb, bits, None, false, seed);
            raw.check_both_directions(&seeded_bytes(seed, size), seed % 2 == 0);
        }
    }
}

#[test]
fn raw_ctr_encrypts_alike_with_any_chunk_size() {
    // The counter must run on across chunks however the stream is cut.
    let plain = seeded_bytes(77, 5 * CHUNK + 3);
    let raw = Raw::new(Mode::Ctr, 256, Some(ivs(77)[1]), true, 77);
    let ciphertext = raw.openssl(false, &plain);
    let iv = hex::encode(raw.iv.expect("ctr has an iv"));
    for chunk in ["4KiB", "8KiB", "4112", "64KiB"] {
        let args = [
            "enc",
            "--raw",
            "ctr",
            "-q",
            "-k",
            "key",
            "--chunk-size",
            chunk,
        ];
        let out = raw
            .scratch
            .run_with_stdin(&[&args[..], &["--iv", &iv]].concat(), &plain);
        assert_silent_success(&out, chunk);
        assert!(
            out.stdout == ciphertext,
            "--chunk-size {chunk}: wrong ciphertext"
        );
    }
}
