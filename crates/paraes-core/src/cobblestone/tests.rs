//! Tests of Cobblestone: pyca/cryptography's messages reproduced byte for byte and opened, each
//! chunk against RustCrypto `aes-gcm`, and every way a message can be wrong refused.

use aes_gcm::aead::{Aead, KeyInit as _};
use sha2::{Digest, Sha256};

use super::*;

/// The plaintext of the vectors: `(i * 7 + i / 251) % 256`.
fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + i / 251) % 256) as u8).collect()
}

/// One line of tests/data/cobblestone.txt.
struct Vector {
    variant: Variant,
    key: Vec<u8>,
    context: Vec<u8>,
    len: usize,
    salt: [u8; SALT_LEN],
    sha256: String,
    message: Option<Vec<u8>>,
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("../../tests/data/cobblestone.txt");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            Vector {
                variant: match f[0] {
                    "cobblestone128" => Variant::Cobblestone128,
                    "cobblestone256" => Variant::Cobblestone256,
                    other => panic!("variant {other}"),
                },
                key: hex::decode(f[1]).unwrap(),
                context: if f[2] == "-" {
                    Vec::new()
                } else {
                    hex::decode(f[2]).unwrap()
                },
                len: f[3].parse().unwrap(),
                salt: hex::decode(f[4]).unwrap().try_into().unwrap(),
                sha256: f[5].to_owned(),
                message: f.get(6).map(|m| hex::decode(m).unwrap()),
            }
        })
        .collect()
}

#[test]
fn pycas_messages_are_reproduced_byte_for_byte_and_open() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 16);
    for v in vectors {
        let plain = plaintext(v.len);
        let sealed = seal(v.variant, &v.key, &v.salt, &v.context, &plain).unwrap();
        assert_eq!(
            hex::encode(Sha256::digest(&sealed)),
            v.sha256,
            "{:?} {} bytes",
            v.variant,
            v.len
        );
        assert_eq!(sealed.len() as u64, sealed_len(v.len as u64));
        assert_eq!(open(v.variant, &v.key, &v.context, &sealed).unwrap(), plain);
        if let Some(message) = v.message {
            assert_eq!(message, sealed);
        }
    }
}

#[test]
fn every_chunk_is_aes_gcm_under_the_derived_key_and_nonce() {
    let input_key = [0x42u8; 32];
    let salt = [7u8; SALT_LEN];
    let plain = plaintext(3 * CHUNK_LEN + 1000);
    let sealed = seal(Variant::Cobblestone256, &input_key, &salt, b"ctx", &plain).unwrap();
    let keys = MessageKeys::derive(Variant::Cobblestone256, &input_key, &salt, b"ctx").unwrap();
    let oracle = aes_gcm::Aes256Gcm::new_from_slice(keys.aes.as_bytes()).unwrap();
    let chunks = keys.chunks();
    for (i, piece) in plain.chunks(CHUNK_LEN).enumerate() {
        let nonce = chunks.nonce(i as u64);
        let expected = oracle.encrypt(&nonce.into(), piece).unwrap();
        let at = PREFIX_LEN + i * RECORD_LEN;
        assert!(sealed[at..at + expected.len()] == expected[..], "chunk {i}");
    }
}

#[test]
fn wrong_keys_contexts_salts_and_bodies_are_refused_before_any_chunk() {
    let key = [9u8; 16];
    let salt = [1u8; SALT_LEN];
    let plain = plaintext(2 * CHUNK_LEN + 5);
    let sealed = seal(Variant::Cobblestone128, &key, &salt, b"c", &plain).unwrap();
    let opened = |message: &[u8]| open(Variant::Cobblestone128, &key, b"c", message);
    assert_eq!(
        open(Variant::Cobblestone128, &[8u8; 16], b"c", &sealed),
        Err(CobblestoneError::CommitmentMismatch)
    );
    assert_eq!(
        open(Variant::Cobblestone128, &key, b"d", &sealed),
        Err(CobblestoneError::CommitmentMismatch)
    );
    assert_eq!(
        open(Variant::Cobblestone256, &[9u8; 32], b"c", &sealed),
        Err(CobblestoneError::CommitmentMismatch)
    );
    assert!(matches!(
        open(Variant::Cobblestone256, &key, b"c", &sealed),
        Err(CobblestoneError::KeyLength { .. })
    ));
    let mut salted = sealed.clone();
    salted[3] ^= 1;
    assert_eq!(opened(&salted), Err(CobblestoneError::CommitmentMismatch));
    let mut committed = sealed.clone();
    committed[SALT_LEN + 31] ^= 0x80;
    assert_eq!(
        opened(&committed),
        Err(CobblestoneError::CommitmentMismatch)
    );
    // A valid GCM body under another commitment: the commitment decides, not the chunks.
    let other = seal(
        Variant::Cobblestone128,
        &key,
        &[2u8; SALT_LEN],
        b"c",
        &plain,
    )
    .unwrap();
    let mut spliced = other[..PREFIX_LEN].to_vec();
    spliced.extend_from_slice(&sealed[PREFIX_LEN..]);
    assert!(opened(&spliced).is_err());
    // Truncated at and between chunk boundaries, to nothing, and inside the prefix.
    for cut in [
        0,
        10,
        PREFIX_LEN,
        PREFIX_LEN + 15,
        PREFIX_LEN + RECORD_LEN,
        PREFIX_LEN + 2 * RECORD_LEN,
        sealed.len() - 1,
    ] {
        assert!(opened(&sealed[..cut]).is_err(), "cut at {cut}");
    }
    // Chunks swapped, a tag changed, an empty chunk appended.
    let mut swapped = sealed.clone();
    let (a, b) = (PREFIX_LEN, PREFIX_LEN + RECORD_LEN);
    let first = sealed[a..b].to_vec();
    swapped.copy_within(b..b + RECORD_LEN, a);
    swapped[b..b + RECORD_LEN].copy_from_slice(&first);
    assert_eq!(opened(&swapped), Err(CobblestoneError::Tampered(0)));
    let mut tagged = sealed.clone();
    let last = tagged.len() - 1;
    tagged[last] ^= 1;
    assert_eq!(opened(&tagged), Err(CobblestoneError::Tampered(2)));
    let mut extended = sealed.clone();
    extended.extend_from_slice(&keys_tag_of_empty(&key, &salt, 3));
    assert!(opened(&extended).is_err());
}

/// A correct tag for an empty chunk `index` of the message keyed by `key` and `salt`.
fn keys_tag_of_empty(key: &[u8], salt: &[u8; SALT_LEN], index: u64) -> [u8; TAG_LEN] {
    let keys = MessageKeys::derive(Variant::Cobblestone128, key, salt, b"c").unwrap();
    keys.chunks().tag(index, &[])
}

#[test]
fn a_message_that_is_a_multiple_of_the_chunk_ends_in_an_empty_chunk() {
    let key = [3u8; 32];
    let salt = [4u8; SALT_LEN];
    let plain = plaintext(2 * CHUNK_LEN);
    let sealed = seal(Variant::Cobblestone256, &key, &salt, b"", &plain).unwrap();
    assert_eq!(sealed.len(), PREFIX_LEN + 2 * RECORD_LEN + TAG_LEN);
    // Without its final empty chunk it is truncated, though every chunk left verifies.
    assert_eq!(
        open(
            Variant::Cobblestone256,
            &key,
            b"",
            &sealed[..sealed.len() - TAG_LEN]
        ),
        Err(CobblestoneError::Truncated)
    );
}
