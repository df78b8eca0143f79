//! Writes the seed corpus: small valid containers (CTR and ECB, every key size, raw-key and
//! passphrase headers, 0 to 3 chunks of 4 KiB plus a 64 KiB-chunk one) and edge cases, into
//! `corpus/container`, `corpus/raw_stream` and `corpus/header`. Run from `fuzz/`:
//! `cargo run --release --example make_seeds`.

use std::fs;
use std::path::Path;

use paraes_core::container::MIN_CHUNK_SIZE;
use paraes_core::fuzzing::{cheap_argon2_params, seal_container};
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
            for (argon2, source) in [(None, "key"), (Some(cheap_argon2_params()), "pass")] {
                for len in [0, 1, 16, chunk - 1, chunk, chunk + 5, 2 * chunk + 17] {
                    // Passphrase headers: fewer lengths, the body path is the same.
                    if argon2.is_some() && ![0, chunk + 5].contains(&len) {
                        continue;
                    }
                    let bits = size.bytes() * 8;
                    let name = format!("{mode_name}-{bits}-{source}-{len}");
                    seeds.push((name, seal_container(mode, size, chunk, argon2, &plain(len))));
                }
            }
        }
    }
    seeds.push((
        "ctr-256-key-64k-chunk".into(),
        seal_container(Mode::Ctr, KeySize::Aes256, 64 << 10, None, &plain(70_000)),
    ));
    for (name, bytes) in &seeds {
        write("container", name, bytes);
        let header_len = if name.contains("-pass-") { 92 } else { 64 };
        write("header", name, &bytes[..header_len.min(bytes.len())]);
    }
    // Edge cases: empty, magic only, header truncated, absurd fields.
    let (_, base) = &seeds[0];
    write("container", "empty", b"");
    write("container", "magic-only", &base[..8]);
    let mut absurd = base[..64].to_vec();
    absurd[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
    write("header", "chunk-size-max", &absurd);
    let mut key99 = base[..64].to_vec();
    key99[10] = 99;
    write("header", "key-size-99", &key99);
    // Raw streams: CTR/ECB ciphertext-like bytes of assorted lengths.
    for len in [0, 1, 15, 16, 17, 4095, 4096, 4097, 8192 + 32] {
        write("raw_stream", &format!("{len}"), &plain(len));
    }
    println!("{} container seeds written", seeds.len() + 2);
}
