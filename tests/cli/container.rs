//! The container `paraes enc` writes, checked from outside against docs/FORMAT.md (format v2):
//! header fields; the key-file stanza unwrapped independently (HKDF-SHA256, AES-256-GCM-SIV),
//! the keys derived from the file key D (BLAKE3 contexts), the slot tag and chunk tags
//! recomputed (keyed BLAKE3; POLYVAL-then-AES-256 with a POLYVAL written here from RFC 8452);
//! the body with its tags removed against `openssl enc` under the body key; `--show-data-key`;
//! the v1 cross-mode attack, which must get nothing; and what `paraes info` reports.

use crate::common::{
    assert_silent_success, assert_success, body_without_tags, container_len, nonce, openssl_enc,
    records, seeded_bytes, Mode, Scratch, CHUNK, CHUNK_ARG, HEADER_LEN, KEY_BITS,
};

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes_gcm_siv::aead::{Aead, KeyInit as _, Payload};

const BODY_KEY_CONTEXT: &str = "paraes 2026-11 container v2 body AES key";
const HEADER_KEY_CONTEXT: &str = "paraes 2026-11 container v2 header MAC key";
const CHUNK_KEY_CONTEXT: &str = "paraes 2026-11 container v2 chunk MAC keys";
const KEY_INFO: &[u8] = b"paraes 2026-11 container v2 key-file stanza wrap key";
const WRAP_AAD: &[u8] = b"paraes 2026-11 container v2 wrapped file key";

/// Plaintext sizes: empty, one byte, one whole chunk, and several chunks with a tail.
const SIZES: [usize; 4] = [0, 1, CHUNK, 3 * CHUNK + 5];

/// Encrypts `plain` in a fresh directory (the body key size is `bits`, the key file's size
/// too); returns the key and the container.
fn seal(mode: Mode, bits: usize, plain: &[u8], seed: u64) -> (Vec<u8>, Vec<u8>) {
    let s = Scratch::new();
    let key = s.key_file("key", bits, seed, true);
    let bits_arg = bits.to_string();
    let args = [
        "enc",
        "-q",
        "-k",
        "key",
        "--chunk-size",
        CHUNK_ARG,
        "--bits",
        &bits_arg,
    ];
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

/// The file key D of a container with one key-file stanza, unwrapped as FORMAT.md says.
fn file_key(key: &[u8], container: &[u8]) -> [u8; 32] {
    let slot = &container[64..];
    assert_eq!(slot[..8], 1u64.to_be_bytes(), "generation 1");
    assert_eq!(slot[8..10], 1u16.to_be_bytes(), "one stanza");
    assert_eq!(slot[10], 1, "a key-file stanza");
    assert_eq!(slot[11..13], 64u16.to_be_bytes(), "stanza length");
    let (salt, wrapped) = slot[13..13 + 64].split_at(16);
    let mut kek = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(salt), key)
        .expand(KEY_INFO, &mut kek)
        .unwrap();
    let mut aad = WRAP_AAD.to_vec();
    aad.push(1);
    let d = aes_gcm_siv::Aes256GcmSiv::new_from_slice(&kek)
        .unwrap()
        .decrypt(
            &Default::default(),
            Payload {
                msg: wrapped,
                aad: &aad,
            },
        )
        .expect("the stanza opens with the key");
    d.try_into().unwrap()
}

/// The body key B of a container.
fn body_key(key: &[u8], container: &[u8], bits: usize) -> Vec<u8> {
    blake3::derive_key(BODY_KEY_CONTEXT, &file_key(key, container))[..bits / 8].to_vec()
}

#[test]
fn body_without_tags_is_the_openssl_stream_under_the_body_key() {
    for_every_container(|name, mode, bits, key, plain, container| {
        let iv = nonce(container);
        let iv = (mode == Mode::Ctr).then_some(&iv);
        let body_key = body_key(key, container, bits);
        assert_ne!(
            body_key[..],
            key[..],
            "{name}: the body key is not the user's key"
        );
        let expected = openssl_enc(
            &mode.openssl_cipher(bits),
            &body_key,
            iv,
            false,
            true,
            plain,
        );
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
        assert_eq!(container[8], 2, "{name}: format version");
        let mode_byte = if mode == Mode::Ctr { 1 } else { 2 };
        assert_eq!(container[9], mode_byte, "{name}: mode");
        assert_eq!(usize::from(container[10]), bits / 8, "{name}: key size");
        assert_eq!(container[11], 0, "{name}: reserved");
        assert_eq!(
            container[12..16],
            (CHUNK as u32).to_be_bytes(),
            "{name}: chunk size"
        );
        assert_eq!(
            container[32..36],
            2016u32.to_be_bytes(),
            "{name}: slot length"
        );
        assert!(
            container[36..64].iter().all(|&b| b == 0),
            "{name}: reserved"
        );
        assert!(
            container[64 + 2016..HEADER_LEN].iter().all(|&b| b == 0),
            "{name}: idle slot"
        );
    });
}

#[test]
fn nonces_and_file_keys_are_fresh_per_file() {
    let plain = seeded_bytes(7, 100);
    let (key, first) = seal(Mode::Ctr, 256, &plain, 7);
    let (_, second) = seal(Mode::Ctr, 256, &plain, 7);
    assert_ne!(
        nonce(&first),
        nonce(&second),
        "same key, same data: same counter"
    );
    assert_ne!(
        file_key(&key, &first),
        file_key(&key, &second),
        "same file key"
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
        let d = file_key(key, container);
        let mac_key = blake3::derive_key(HEADER_KEY_CONTEXT, &d);
        let slot_used = 10 + 3 + 64;
        let expected = blake3::keyed_hash(
            &mac_key,
            &[&container[..64], &container[64..64 + slot_used]].concat(),
        );
        assert_eq!(
            expected.as_bytes()[..],
            container[64 + slot_used..64 + slot_used + 32],
            "{name}: slot tag"
        );

        let mut material = [0u8; 48];
        let mut kdf = blake3::Hasher::new_derive_key(CHUNK_KEY_CONTEXT);
        kdf.update(&d).update(&container[..32]);
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

/// `dec --show-data-key` prints the body key and counter; with them, `openssl enc` alone
/// decrypts the body.
#[test]
fn show_data_key_lets_openssl_decrypt_the_body() {
    for mode in Mode::ALL {
        let plain = seeded_bytes(42, 3 * CHUNK + 9);
        let (key, container) = seal(mode, 256, &plain, 42);
        let s = Scratch::new();
        s.write("key", &key);
        s.write("f.paraes", &container);
        let out = s.run(&["dec", "-k", "key", "f.paraes", "-o", "-", "--show-data-key"]);
        let err = assert_success(&out, "dec --show-data-key");
        assert_eq!(out.stdout, plain);
        let field = |name: &str| {
            err.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| hex::decode(v.trim()).unwrap())
                .unwrap_or_else(|| panic!("no {name} in {err}"))
        };
        let data_key = field("data key:");
        assert_eq!(data_key, body_key(&key, &container, 256));
        assert!(err.contains("warning"), "{err}");
        let counter: [u8; 16] = field("counter:").try_into().unwrap();
        let iv = (mode == Mode::Ctr).then_some(&counter);
        let body = body_without_tags(&container, HEADER_LEN);
        let opened = openssl_enc(&mode.openssl_cipher(256), &data_key, iv, true, true, &body);
        assert_eq!(opened, plain, "{mode:?}: openssl with the shown key");
    }
}

/// The v1 flaw: encrypting a CTR container's counter blocks with `enc --raw ecb` under
/// the same key K gave its keystream. Under v2 the body key is not K: the attack yields noise.
#[test]
fn the_cross_mode_attack_recovers_nothing() {
    let plain = seeded_bytes(9, 4096);
    let s = Scratch::new();
    s.key_file("k", 256, 9, true);
    s.write("secret", &plain);
    assert_silent_success(
        &s.run(&["enc", "-q", "-k", "k", "secret", "--chunk-size", CHUNK_ARG]),
        "enc",
    );
    let container = s.read("secret.paraes");
    let counter = u128::from_be_bytes(nonce(&container));
    let blocks: Vec<u8> = (0..256u128)
        .flat_map(|i| counter.wrapping_add(i).to_be_bytes())
        .collect();
    s.write("counters", &blocks);
    let out = s.run(&[
        "enc", "-q", "--raw", "ecb", "--no-pad", "-k", "k", "counters", "-o", "ks",
    ]);
    assert_silent_success(&out, "raw ECB of the counter blocks");
    let keystream = s.read("ks");
    let body = body_without_tags(&container, HEADER_LEN);
    let recovered: Vec<u8> = body.iter().zip(&keystream).map(|(c, k)| c ^ k).collect();
    assert_eq!(recovered.len(), plain.len());
    let equal = recovered.iter().zip(&plain).filter(|(a, b)| a == b).count();
    assert!(
        equal < 64,
        "{equal} of 4096 plaintext bytes recovered: the body key is K again"
    );
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
            crate::common::info_field(&info, field)
                .unwrap_or_else(|| panic!("{name}: no '{field}:' line in paraes info:\n{info}"))
        };
        let expected_mode = format!("AES-{bits}-{}", mode.arg().to_uppercase());
        assert_eq!(field("mode"), expected_mode, "{name}");
        assert_eq!(field("chunk size"), format!("{CHUNK} bytes"), "{name}");
        assert!(field("slot 0").contains("key file"), "{name}: {info}");
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
