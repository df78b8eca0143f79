//! The container `paraes enc` writes, checked from outside against docs/FORMAT.md: header
//! fields, the body with its tags removed against the `openssl enc` command line, the header
//! and chunk tags recomputed independently (keyed BLAKE3; POLYVAL-then-AES-256 with a POLYVAL
//! written here from RFC 8452), and what `paraes info` reports.

mod common;

use common::{
    assert_silent_success, body_without_tags, container_len, nonce, openssl_enc, records,
    seeded_bytes, Mode, Scratch, CHUNK, CHUNK_ARG, HEADER_LEN, HEADER_TAG_LEN, KEY_BITS,
};

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};

/// BLAKE3 derivation context of the MAC key `M` (docs/FORMAT.md, "Keys").
const MAC_KEY_CONTEXT: &str = "paraes 2026-11 container v1 authentication key";
/// BLAKE3 derivation context of a file's chunk keys `H` and `K_tag`.
const CHUNK_KEY_CONTEXT: &str = "paraes 2026-11 container v1 per-file chunk MAC keys";

/// Plaintext sizes: empty, one byte, one whole chunk, and several chunks with a tail.
const SIZES: [usize; 4] = [0, 1, CHUNK, 3 * CHUNK + 5];

/// Encrypts `plain` in a fresh directory; returns the key and the container.
fn seal(mode: Mode, bits: usize, plain: &[u8], seed: u64) -> (Vec<u8>, Vec<u8>) {
    let s = Scratch::new();
    let key = s.key_file("key", bits, seed, true);
    let args = ["enc", "-q", "-k", "key", "--chunk-size", CHUNK_ARG];
    let out = s.run_with_stdin(&[&args[..], &["--mode", mode.arg()]].concat(), plain);
    assert_silent_success(&out, &format!("{mode:?} AES-{bits} enc"));
    (key, out.stdout)
}

/// Runs `check` on a fresh container for every mode x key size x size.
fn for_every_container(check: impl Fn(&str, Mode, usize, &[u8], &[u8], &[u8])) {
    let mut seed = 1000;
    for mode in Mode::ALL {
        for bits in KEY_BITS {
            for size in SIZES {
                seed += 1;
                let plain = seeded_bytes(seed, size);
                let (key, container) = seal(mode, bits, &plain, seed);
                let name = format!("{mode:?} AES-{bits}, {size} bytes");
                check(&name, mode, bits, &key, &plain, &container);
            }
        }
    }
}

#[test]
fn body_without_tags_is_the_openssl_stream() {
    for_every_container(|name, mode, bits, key, plain, container| {
        let iv = nonce(container);
        let iv = (mode == Mode::Ctr).then_some(&iv);
        let expected = openssl_enc(&mode.openssl_cipher(bits), key, iv, false, true, plain);
        assert!(
            body_without_tags(container, HEADER_LEN) == expected,
            "{name}: the body with the tags removed differs from openssl enc"
        );
    });
}

#[test]
fn header_fields_follow_the_format() {
    for_every_container(|name, mode, bits, _key, plain, container| {
        assert_eq!(
            container.len(),
            container_len(mode, plain.len(), HEADER_LEN)
        );
        assert_eq!(&container[..8], b"\x89PARAES\n", "{name}: magic");
        assert_eq!(container[8], 1, "{name}: format version");
        let mode_byte = if mode == Mode::Ctr { 1 } else { 2 };
        assert_eq!(container[9], mode_byte, "{name}: mode");
        assert_eq!(usize::from(container[10]), bits / 8, "{name}: key size");
        assert_eq!(container[11], 0, "{name}: key source (raw key)");
        assert_eq!(
            container[12..16],
            (CHUNK as u32).to_be_bytes(),
            "{name}: chunk size"
        );
    });
}

#[test]
fn nonces_are_fresh_per_file() {
    let plain = seeded_bytes(7, 100);
    let (_, first) = seal(Mode::Ctr, 256, &plain, 7);
    let (_, second) = seal(Mode::Ctr, 256, &plain, 7);
    assert_ne!(
        nonce(&first),
        nonce(&second),
        "same key, same data: same nonce"
    );
    assert_ne!(
        first[HEADER_LEN..],
        second[HEADER_LEN..],
        "same key, same data: same CTR body"
    );
}

/// Multiplication in GHASH's field (NIST SP 800-38D, algorithm 1; bit 0 is the top bit).
fn ghash_mul(x: u128, y: u128) -> u128 {
    let mut z = 0;
    let mut v = y;
    for i in 0..128 {
        if (x >> (127 - i)) & 1 == 1 {
            z ^= v;
        }
        v = (v >> 1) ^ if v & 1 == 1 { 0xe1 << 120 } else { 0 };
    }
    z
}

/// POLYVAL through GHASH (RFC 8452, appendix A): byte-reversed blocks, and H times x.
fn polyval(h: &[u8; 16], blocks: &[u8]) -> [u8; 16] {
    let h = ghash_mul(u128::from_le_bytes(*h), 1 << 126);
    let mut y = 0;
    for block in blocks.chunks(16) {
        let block: [u8; 16] = block.try_into().expect("whole blocks");
        y = ghash_mul(y ^ u128::from_le_bytes(block), h);
    }
    y.to_le_bytes()
}

#[test]
fn the_reference_polyval_passes_rfc_8452() {
    let hex16 = |text: &str| -> [u8; 16] { hex::decode(text).unwrap().try_into().unwrap() };
    let h = hex16("25629347589242761d31f826ba4b757b");
    let blocks = hex::decode("4f4f95668c83dfb6401762bb2d01a262d1a24ddd2721d006bbe45f20d3c9f362");
    let expected = hex16("f7a3b47b846119fae5b7866cf5e5b77e");
    assert_eq!(polyval(&h, &blocks.unwrap()), expected);
}

/// `AES-256(K_tag, POLYVAL(H, ciphertext zero-padded || bit length) xor N_i)`.
fn chunk_tag(material: &[u8; 48], index: u64, last: bool, ciphertext: &[u8]) -> [u8; 16] {
    let mut blocks = ciphertext.to_vec();
    blocks.resize(ciphertext.len().div_ceil(16) * 16, 0);
    blocks.extend_from_slice(&(ciphertext.len() as u64 * 8).to_le_bytes());
    blocks.extend_from_slice(&[0; 8]);
    let h: &[u8; 16] = material[..16].try_into().expect("16 bytes");
    let mut block = polyval(h, &blocks);
    for (b, n) in block.iter_mut().zip(index.to_le_bytes()) {
        *b ^= n;
    }
    block[8] ^= u8::from(last);
    let mut block = GenericArray::from(block);
    aes::Aes256::new(GenericArray::from_slice(&material[16..])).encrypt_block(&mut block);
    block.into()
}

#[test]
fn tags_follow_the_format() {
    for_every_container(|name, _mode, _bits, key, _plain, container| {
        let mac_key = blake3::derive_key(MAC_KEY_CONTEXT, key);
        let (fields, header_tag) = container[..HEADER_LEN].split_at(HEADER_LEN - HEADER_TAG_LEN);
        let expected = blake3::keyed_hash(&mac_key, fields);
        assert_eq!(
            expected.as_bytes()[..],
            header_tag[..],
            "{name}: header tag"
        );

        let mut material = [0u8; 48];
        let mut kdf = blake3::Hasher::new_derive_key(CHUNK_KEY_CONTEXT);
        kdf.update(&mac_key).update(header_tag);
        kdf.finalize_xof().fill(&mut material);
        let records = records(container, HEADER_LEN);
        for (index, (ciphertext, tag)) in records.iter().enumerate() {
            let last = index + 1 == records.len();
            assert!(
                last || ciphertext.len() == CHUNK,
                "{name}: chunk {index} is short"
            );
            let expected = chunk_tag(&material, index as u64, last, ciphertext);
            assert_eq!(expected[..], tag[..], "{name}: tag of chunk {index}");
        }
    });
}

#[test]
fn info_shows_the_header() {
    for_every_container(|name, mode, bits, _key, _plain, container| {
        let s = Scratch::new();
        s.write("data.paraes", container);
        let out = s.run(&["info", "data.paraes"]);
        assert_silent_success(&out, name);
        let info = String::from_utf8(out.stdout).expect("info prints text");
        let field = |field: &str| {
            common::info_field(&info, field)
                .unwrap_or_else(|| panic!("{name}: no '{field}:' line in paraes info:\n{info}"))
        };
        let expected_mode = format!("AES-{bits}-{}", mode.arg().to_uppercase());
        assert_eq!(field("mode"), expected_mode, "{name}");
        assert_eq!(field("chunk size"), format!("{CHUNK} bytes"), "{name}");
        assert!(field("key").contains("raw key"), "{name}: {info}");
        let nonce_hex = hex::encode(nonce(container));
        assert!(info.contains(&nonce_hex), "{name}: no nonce in\n{info}");
        let chunks = records(container, HEADER_LEN).len().to_string();
        assert_eq!(
            field("chunks").split_whitespace().next(),
            Some(chunks.as_str()),
            "{name}: {chunks} chunks, but\n{info}"
        );
    });
}
