//! Writes the seed corpus: small valid containers (CTR and ECB, every key size, raw-key and
//! passphrase headers, 0 to 3 chunks of 4 KiB plus a 64 KiB-chunk one) and edge cases, into
//! `corpus/container`, `corpus/raw_stream` and `corpus/header`. Run from `fuzz/`:
//! `cargo run --release --example make_seeds`.

use std::fs;
use std::path::Path;

use paraes_core::container::{UnverifiedHeader, MIN_CHUNK_SIZE};
use paraes_core::fuzzing::{cheap_argon2_params, seal_container, SeedRecipient};
use paraes_core::{KeySize, Mode};

fn plain(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn write(dir: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(dir);
    fs::create_dir_all(&dir).expect("corpus folder");
    fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed file");
}

fn main() {
    let chunk = MIN_CHUNK_SIZE;
    let mut seeds = Vec::new();
    for (mode, mode_name) in [(Mode::Ctr, "ctr"), (Mode::Ecb, "ecb")] {
        for size in [KeySize::Aes128, KeySize::Aes192, KeySize::Aes256] {
            let passphrase = SeedRecipient::Passphrase(cheap_argon2_params());
            let sources: [(&[SeedRecipient], &str); 5] = [
                (&[SeedRecipient::Key], "key"),
                (&[passphrase], "pass"),
                (&[SeedRecipient::X25519], "x25519"),
                (&[SeedRecipient::Hybrid], "pq"),
                (&[SeedRecipient::X25519, passphrase, SeedRecipient::Key], "mix"),
            ];
            for (recipients, source) in sources {
                for len in [0, 1, 16, chunk - 1, chunk, chunk + 5, 2 * chunk + 17] {
                    // Other than key headers: fewer lengths, the body path is the same.
                    if source != "key" && ![0, chunk + 5].contains(&len) {
                        continue;
                    }
                    let bits = size.bytes() * 8;
                    let name = format!("v2-{mode_name}-{bits}-{source}-{len}");
                    seeds.push((name, seal_container(mode, size, chunk, recipients, &plain(len))));
                }
            }
        }
    }
    seeds.push((
        "v2-ctr-256-key-64k-chunk".into(),
        seal_container(Mode::Ctr, KeySize::Aes256, 64 << 10, &[SeedRecipient::Key], &plain(70_000)),
    ));
    for (name, bytes) in &seeds {
        write("container", name, bytes);
        let header_len = UnverifiedHeader::read(&mut &bytes[..])
            .expect("a valid seed")
            .info()
            .header_len;
        write("header", name, &bytes[..header_len.min(bytes.len())]);
    }
    // Edge cases: empty, magic only, header truncated, absurd fields.
    let (_, base) = &seeds[0];
    write("container", "empty", b"");
    write("container", "magic-only", &base[..8]);
    let mut absurd = base[..64].to_vec();
    absurd[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
    write("header", "v2-chunk-size-max", &absurd);
    let mut key99 = base[..64].to_vec();
    key99[10] = 99;
    write("header", "v2-key-size-99", &key99);
    // Raw streams: CTR/ECB ciphertext-like bytes of assorted lengths.
    for len in [0, 1, 15, 16, 17, 4095, 4096, 4097, 8192 + 32] {
        write("raw_stream", &format!("{len}"), &plain(len));
    }
    println!("{} container seeds written", seeds.len() + 2);
}
