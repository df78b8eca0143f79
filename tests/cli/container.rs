//! The container `paraes enc` writes, checked from outside against docs/FORMAT.md (format v3):
//! the exact preamble; the key-file stanza unwrapped independently (HKDF-SHA256,
//! AES-256-GCM-SIV), the header key and the body's input key IK derived from the file key D
//! (BLAKE3 contexts), the slot tag recomputed (keyed BLAKE3); the body, a C2SP chunked-encryption
//! message (Cobblestone), recomputed byte for byte by the reference of `container_reference`
//! (written from the specs, and checked there against NIST's GCM vectors and
//! pyca/cryptography's Cobblestone messages); `--show-data-key`; the v1 cross-mode attack, which
//! must get nothing; refused body choices; and what `paraes info` reports.

use aes_gcm_siv::aead::{Aead, KeyInit as _, Payload};

use crate::common::{
    assert_silent_success, assert_success, assert_usage_error, container_len, records, salt,
    seeded_bytes, Scratch, CHUNK, CHUNK_ARG, CONTAINER_BITS, HEADER_LEN, MESSAGE_PREFIX_LEN,
};
use crate::container_reference::{
    counter_block, gcm, open_message, seal_message, BlockCipher, MessageKeys,
};

const HEADER_KEY_CONTEXT: &str = "paraes 2026-11 container v3 header MAC key";
const INPUT_KEY_CONTEXT: &str = "paraes 2026-11 container v3 body input key";
const KEY_INFO: &[u8] = b"paraes 2026-11 container v2 key-file stanza wrap key";
const WRAP_AAD: &[u8] = b"paraes 2026-11 container v2 wrapped file key";
/// Slot length S of a header with one key-file stanza.
const SLOT_LEN: usize = 2016;

/// Plaintext sizes: empty, one byte, one whole chunk (then an empty final chunk), and several
/// chunks with a tail.
const SIZES: [usize; 4] = [0, 1, CHUNK, 3 * CHUNK + 5];

/// Encrypts `plain` in a fresh directory (the body key size is `bits`, the key file's size
/// too); returns the key and the container.
fn seal(bits: usize, plain: &[u8], seed: u64) -> (Vec<u8>, Vec<u8>) {
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
    let out = s.run_with_stdin(&args, plain);
    assert_silent_success(&out, &format!("AES-{bits} enc"));
    (key, out.stdout)
}

/// Runs `check` on a fresh container for every body key size x size.
fn for_every_container(check: impl Fn(&str, usize, &[u8], &[u8], &[u8])) {
    let mut seed = 1000;
    for bits in CONTAINER_BITS {
        for size in SIZES {
            seed += 1;
            let plain = seeded_bytes(seed, size);
            let (key, container) = seal(bits, &plain, seed);
            let name = format!("Cobblestone-{bits}, {size} bytes");
            check(&name, bits, &key, &plain, &container);
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

/// The body's input key IK: the first `bits / 8` bytes of D's v3 input-key derivation.
fn input_key(key: &[u8], container: &[u8], bits: usize) -> Vec<u8> {
    blake3::derive_key(INPUT_KEY_CONTEXT, &file_key(key, container))[..bits / 8].to_vec()
}

/// The message's context: the preamble's first 16 bytes.
fn context(container: &[u8]) -> &[u8] {
    &container[..16]
}

// ---- The container. ----

#[test]
fn header_fields_follow_the_format() {
    for_every_container(|name, bits, _key, plain, container| {
        assert_eq!(
            container.len(),
            container_len(plain.len(), HEADER_LEN),
            "{name}: length"
        );
        let mut preamble = [0u8; 64];
        preamble[..8].copy_from_slice(b"\x89PARAES\n");
        preamble[8] = 3; // format version
        preamble[9] = 3; // the body is a C2SP chunked-encryption message
        preamble[10] = (bits / 8) as u8; // body key bytes
        preamble[12..16].copy_from_slice(&(CHUNK as u32).to_be_bytes());
        // 16..32: zero (v3 has no counter)
        preamble[32..36].copy_from_slice(&(SLOT_LEN as u32).to_be_bytes());
        assert_eq!(
            hex::encode(&container[..64]),
            hex::encode(preamble),
            "{name}: preamble"
        );
        assert_eq!(64 + 2 * SLOT_LEN, HEADER_LEN);
        assert!(
            container[64 + SLOT_LEN..HEADER_LEN].iter().all(|&b| b == 0),
            "{name}: idle slot"
        );
        // Slot 0: one key-file stanza (checked in `file_key`), its tag, then zero.
        let slot_end = 64 + 10 + 3 + 64 + 32;
        assert!(
            container[slot_end..64 + SLOT_LEN].iter().all(|&b| b == 0),
            "{name}: slot 0 after its tag"
        );
        let records = records(container, HEADER_LEN);
        assert_eq!(records.len(), plain.len() / CHUNK + 1, "{name}: chunks");
        for (index, (ciphertext, _)) in records.iter().enumerate() {
            let expected = if index + 1 == records.len() {
                plain.len() % CHUNK
            } else {
                CHUNK
            };
            assert_eq!(ciphertext.len(), expected, "{name}: chunk {index}");
        }
    });
}

/// The body, from `body_offset` (= the header length) to the end, is exactly the Cobblestone
/// message of the plaintext under IK (derived from D) and the context (the preamble's first 16
/// bytes) with the file's salt: commitment, every chunk's ciphertext and tag. And the reference
/// opens it.
#[test]
fn the_body_is_the_cobblestone_message_under_the_input_key() {
    for_every_container(|name, bits, key, plain, container| {
        let ik = input_key(key, container, bits);
        assert_ne!(ik[..], key[..], "{name}: IK is not the user's key");
        let body = &container[HEADER_LEN..];
        let keys = MessageKeys::derive(&ik, &salt(container, HEADER_LEN), context(container));
        assert_eq!(
            hex::encode(&body[24..MESSAGE_PREFIX_LEN]),
            hex::encode(keys.commitment),
            "{name}: key commitment"
        );
        assert_ne!(keys.key, ik, "{name}: the GCM key is not IK");
        let expected = seal_message(&ik, &salt(container, HEADER_LEN), context(container), plain);
        assert!(
            body == expected,
            "{name}: the body differs from the reference's Cobblestone message"
        );
        let opened = open_message(&ik, context(container), body);
        assert!(opened.as_deref() == Ok(plain), "{name}: {:?}", opened.err());
        // The context is bound: the same message under another context does not open.
        let mut other_context = context(container).to_vec();
        other_context[8] = 2;
        assert_eq!(
            open_message(&ik, &other_context, body),
            Err("the key commitment does not match".into()),
            "{name}: another context"
        );
    });
}

#[test]
fn tags_follow_the_format() {
    for_every_container(|name, bits, key, _plain, container| {
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

        let ik = input_key(key, container, bits);
        let keys = MessageKeys::derive(&ik, &salt(container, HEADER_LEN), context(container));
        let records = records(container, HEADER_LEN);
        for (index, (ciphertext, tag)) in records.iter().enumerate() {
            let last = index + 1 == records.len();
            assert!(
                if last {
                    ciphertext.len() < CHUNK
                } else {
                    ciphertext.len() == CHUNK
                },
                "{name}: chunk {index} has {} bytes",
                ciphertext.len()
            );
            let (_, expected) = gcm(&keys.key, &keys.nonce(index as u64), ciphertext, false);
            assert_eq!(expected[..], tag[..], "{name}: GCM tag of chunk {index}");
        }
    });
}

/// `dec --show-data-key` prints IK and the context, not D nor the user's key; with them alone
/// the body opens as a Cobblestone message.
#[test]
fn show_data_key_lets_a_cobblestone_reader_open_the_body() {
    for bits in CONTAINER_BITS {
        let plain = seeded_bytes(42, 3 * CHUNK + 9);
        let (key, container) = seal(bits, &plain, 42);
        let s = Scratch::new();
        s.write("key", format!("{}\n", hex::encode(&key)).as_bytes());
        s.set_mode("key", 0o600);
        s.write("f.paraes", &container);
        let out = s.run(&["dec", "-k", "key", "f.paraes", "-o", "-", "--show-data-key"]);
        let err = assert_success(&out, "dec --show-data-key");
        assert!(
            out.stdout == plain,
            "AES-{bits}: the plaintext still comes out"
        );
        let field = |name: &str| {
            err.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| hex::decode(v.trim()).unwrap())
                .unwrap_or_else(|| panic!("no {name} in {err}"))
        };
        let data_key = field("data key:");
        let shown_context = field("context:");
        assert_eq!(
            data_key,
            input_key(&key, &container, bits),
            "AES-{bits}: the data key is IK"
        );
        assert_eq!(shown_context, context(&container), "AES-{bits}: context");
        assert!(err.contains("warning"), "{err}");
        assert!(
            !err.contains("counter:"),
            "AES-{bits}: a v3 file has no counter: {err}"
        );
        let d = file_key(&key, &container);
        for (what, secret) in [("the file key", &d[..]), ("the user's key", &key[..])] {
            assert!(
                !err.to_lowercase().contains(&hex::encode(secret)),
                "AES-{bits}: {what} shown: {err}"
            );
        }
        let opened = open_message(&data_key, &shown_context, &container[HEADER_LEN..]);
        assert!(
            opened.as_deref() == Ok(&plain[..]),
            "AES-{bits}: the shown data key and context do not open the body: {:?}",
            opened.err()
        );
    }
}

/// The v1 flaw: encrypting a CTR container's counter blocks with `enc --raw ecb` under the same
/// key K gave its keystream. Under v3 the chunks' AES-GCM key comes from IK, not K: even given
/// the true counter blocks of chunk 0, the attack yields noise.
#[test]
fn the_cross_mode_attack_recovers_nothing() {
    let plain = seeded_bytes(9, 4096);
    let s = Scratch::new();
    let key = s.key_file("k", 256, 9, true);
    s.write("secret", &plain);
    s.enc_small_chunks("k", "secret");
    let container = s.read("secret.paraes");
    let ik = input_key(&key, &container, 256);
    let keys = MessageKeys::derive(&ik, &salt(&container, HEADER_LEN), context(&container));
    let nonce = keys.nonce(0);
    let blocks: Vec<u8> = (0..256u32)
        .flat_map(|j| counter_block(&nonce, 2 + j))
        .collect();
    s.write("counters", &blocks);
    let out = s.run(&[
        "enc", "-q", "--raw", "ecb", "--no-pad", "-k", "k", "counters", "-o", "ks",
    ]);
    assert_silent_success(&out, "raw ECB of the counter blocks");
    let keystream = s.read("ks");
    let (ciphertext, _) = records(&container, HEADER_LEN)[0];
    assert_eq!(ciphertext.len(), plain.len());
    // The attack's layout is right: under the chunks' real key the same blocks give the plaintext.
    let aes = BlockCipher::new(&keys.key);
    let real_keystream: Vec<u8> = blocks
        .chunks(16)
        .flat_map(|b| aes.encrypt(b.try_into().unwrap()))
        .collect();
    let decrypted: Vec<u8> = ciphertext
        .iter()
        .zip(&real_keystream)
        .map(|(c, k)| c ^ k)
        .collect();
    assert!(
        decrypted == plain,
        "the real keystream does not decrypt chunk 0"
    );
    let recovered: Vec<u8> = ciphertext
        .iter()
        .zip(&keystream)
        .map(|(c, k)| c ^ k)
        .collect();
    assert_eq!(recovered.len(), plain.len());
    let equal = recovered.iter().zip(&plain).filter(|(a, b)| a == b).count();
    assert!(
        equal < 64,
        "{equal} of 4096 plaintext bytes recovered: the chunk key is K again"
    );
}

#[test]
fn salts_and_file_keys_are_fresh_per_file() {
    for bits in CONTAINER_BITS {
        let plain = seeded_bytes(7, 100);
        let (key, first) = seal(bits, &plain, 7);
        let (_, second) = seal(bits, &plain, 7);
        assert_eq!(first[..64], second[..64], "AES-{bits}: the same preamble");
        assert_ne!(
            salt(&first, HEADER_LEN),
            salt(&second, HEADER_LEN),
            "AES-{bits}: same key, same data: same salt"
        );
        assert_ne!(
            file_key(&key, &first),
            file_key(&key, &second),
            "AES-{bits}: same file key"
        );
        assert_ne!(
            first[HEADER_LEN + 24..HEADER_LEN + MESSAGE_PREFIX_LEN],
            second[HEADER_LEN + 24..HEADER_LEN + MESSAGE_PREFIX_LEN],
            "AES-{bits}: same commitment"
        );
        assert_ne!(
            first[HEADER_LEN + MESSAGE_PREFIX_LEN..],
            second[HEADER_LEN + MESSAGE_PREFIX_LEN..],
            "AES-{bits}: same key, same data: same chunks"
        );
    }
}

/// Containers are AES-GCM with 128- or 256-bit keys: ECB and 192-bit bodies are usage errors,
/// and `--chunk-size` must be whole 16 KiB chunks; nothing is written.
#[test]
fn containers_refuse_ecb_192_bit_bodies_and_partial_chunks() {
    let s = Scratch::new();
    s.key_file("key", 256, 5, true);
    s.write("plain", &seeded_bytes(5, 1000));
    let before = s.names();
    let cases: [(&[&str], &str); 4] = [
        (&["--mode", "ecb"], "AES-GCM"),
        (&["--bits", "192"], "192"),
        (&["--chunk-size", "4KiB"], "16KiB"),
        (&["--chunk-size", "24KiB"], "16KiB"),
    ];
    for (extra, expected) in cases {
        let args = [&["enc", "-q", "-k", "key", "plain"][..], extra].concat();
        let message = assert_usage_error(&s.run(&args), &format!("{extra:?}"));
        assert!(message.contains(expected), "{extra:?}: {message}");
        assert_eq!(s.names(), before, "{extra:?}: something was written");
    }
    // A multiple of 16 KiB is only the pipeline's batch: the format's chunks stay 16 KiB.
    let out = s.run(&["enc", "-q", "-k", "key", "plain", "--chunk-size", "48KiB"]);
    assert_silent_success(&out, "--chunk-size 48KiB");
    let container = s.read("plain.paraes");
    assert_eq!(container[12..16], (CHUNK as u32).to_be_bytes());
    assert_eq!(container.len(), container_len(1000, HEADER_LEN));
}

#[test]
fn info_shows_the_header() {
    for_every_container(|name, bits, _key, plain, container| {
        let s = Scratch::new();
        s.write("data.paraes", container);
        let out = s.run(&["info", "data.paraes"]);
        assert_silent_success(&out, name);
        let info = String::from_utf8(out.stdout).expect("info prints text");
        let field = |field: &str| {
            crate::common::info_field(&info, field)
                .unwrap_or_else(|| panic!("{name}: no '{field}:' line in paraes info:\n{info}"))
        };
        assert_eq!(field("format"), "paraes container v3", "{name}");
        let body = field("body");
        for expected in [
            format!("Cobblestone-{bits} "),
            format!("AES-{bits}-GCM"),
            format!("from byte {HEADER_LEN}"),
        ] {
            assert!(body.contains(&expected), "{name}: no {expected} in\n{info}");
        }
        assert!(field("slot 0").contains("key file"), "{name}: {info}");
        let chunks = records(container, HEADER_LEN).len();
        assert_eq!(
            field("chunks"),
            format!("{chunks} ({} bytes of ciphertext)", plain.len()),
            "{name}: {info}"
        );
        assert!(
            field("authenticity").starts_with("not checked"),
            "{name}: info has no key: {info}"
        );

        let out = s.run(&["info", "--json", "data.paraes"]);
        assert_silent_success(&out, name);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(json["format"], 3, "{name}: {json}");
        assert_eq!(json["body_offset"], HEADER_LEN, "{name}: {json}");
        assert_eq!(json["body"]["construction"], format!("Cobblestone-{bits}"));
        assert_eq!(json["body"]["aead"], format!("AES-{bits}-GCM"));
        assert_eq!(json["chunks"]["count"], chunks, "{name}: {json}");
        assert_eq!(json["chunks"]["ciphertext_bytes"], plain.len(), "{name}");
    });
}
