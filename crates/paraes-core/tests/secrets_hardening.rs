//! Hostile review, issue 25 ("P2 hardening"): degenerate post-quantum (X-Wing) and X25519
//! recipients are refused when parsed, errors about secrets name none of their characters, and
//! the hash states that hold key material are wiped on drop.

use bech32::primitives::iter::{ByteIterExt, Fe32IterExt};
use bech32::{Bech32, Hrp};
use paraes_core::container::{parse_identities, seal, PublicRecipient, Recipient, SecretIdentity};
use paraes_core::KeySize;
use x_wing::{Decapsulator, KeyExport};

/// Bytes of an X-Wing public key: the ML-KEM-768 encapsulation key, then the X25519 key.
const XWING_LEN: usize = 1216;
/// Bytes of the ML-KEM-768 encapsulation key: 3 x 384 bytes of 12-bit coefficients (t), then
/// the 32-byte seed rho.
const MLKEM_LEN: usize = 1184;
/// ML-KEM's modulus q.
const Q: u16 = 3329;

/// Low-order X25519 points (u-coordinates, little-endian; RFC 7748 and the list Bernstein's
/// Curve25519 page gives): every secret maps them to the all-zero shared secret.
const LOW_ORDER: [[u8; 32]; 3] = [
    [0; 32],
    {
        let mut one = [0; 32];
        one[0] = 1;
        one
    },
    [
        0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4,
        0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49,
        0xb8, 0x00,
    ],
];

/// Bech32 text of `data` under `prefix`, with the checksum paraes uses (Bech32's, without the
/// 1,023-character limit of `bech32::encode`).
fn bech32_text(prefix: &str, data: &[u8]) -> String {
    let hrp = Hrp::parse(prefix).expect("a valid prefix");
    data.iter()
        .copied()
        .bytes_to_fes()
        .with_checksum::<Bech32>(&hrp)
        .chars()
        .collect()
}

/// The bytes of a real X-Wing public key (from a fixed seed).
fn real_xwing_key() -> Vec<u8> {
    let secret = x_wing::DecapsulationKey::from([7u8; 32]);
    secret.encapsulation_key().to_bytes().to_vec()
}

/// The error message of parsing `text` as a recipient (which must fail).
fn refused(text: &str, what: &str) -> String {
    match text.parse::<PublicRecipient>() {
        Ok(_) => panic!("{what}: accepted as a recipient"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_all_zero_post_quantum_recipient_is_refused() {
    let text = bech32_text("paraespq", &[0; XWING_LEN]);
    assert!(text.starts_with("paraespq1qqqq"), "{}", &text[..20]);
    let message = refused(&text, "all zero");
    assert!(message.contains("degenerate"), "{message}");
}

#[test]
fn an_all_zero_ml_kem_half_is_refused() {
    let mut key = real_xwing_key();
    key[..MLKEM_LEN].fill(0);
    let message = refused(&bech32_text("paraespq", &key), "zero ML-KEM half");
    assert!(message.contains("ML-KEM-768"), "{message}");
    // Zero coefficients with a real seed rho leak just as much: t = 0.
    let mut key = real_xwing_key();
    key[..MLKEM_LEN - 32].fill(0);
    refused(&bech32_text("paraespq", &key), "t = 0");
}

#[test]
fn a_low_order_x25519_half_is_refused() {
    for point in LOW_ORDER {
        let mut key = real_xwing_key();
        key[MLKEM_LEN..].copy_from_slice(&point);
        let message = refused(&bech32_text("paraespq", &key), "low-order X25519 half");
        assert!(message.contains("X25519"), "{message}");
        // The X25519 recipients go through the same check.
        let message = refused(&bech32_text("paraes", &point), "low-order X25519 recipient");
        assert!(message.contains("low-order"), "{message}");
    }
}

#[test]
fn an_ml_kem_coefficient_of_q_or_more_is_refused() {
    for value in [Q, Q + 1, 4095] {
        for coefficient in [0usize, 1, 767] {
            let mut key = real_xwing_key();
            // ByteEncode12: coefficients 2i and 2i+1 share bytes 3i..3i+3, little-endian.
            let at = 3 * (coefficient / 2);
            if coefficient % 2 == 0 {
                key[at] = value as u8;
                key[at + 1] = (key[at + 1] & 0xf0) | (value >> 8) as u8;
            } else {
                key[at + 1] = (key[at + 1] & 0x0f) | ((value & 0x0f) << 4) as u8;
                key[at + 2] = (value >> 4) as u8;
            }
            let message = refused(
                &bech32_text("paraespq", &key),
                &format!("coefficient {coefficient} = {value}"),
            );
            assert!(message.contains("ML-KEM-768"), "{message}");
        }
    }
}

#[test]
fn real_recipients_still_parse_and_seal() {
    let text = bech32_text("paraespq", &real_xwing_key());
    let recipient: PublicRecipient = text.parse().expect("a real X-Wing key");
    assert_eq!(recipient.to_string(), text);
    for id in [
        SecretIdentity::generate_hybrid().unwrap(),
        SecretIdentity::generate_x25519().unwrap(),
    ] {
        let recipient: PublicRecipient = id.recipient().to_string().parse().unwrap();
        assert_eq!(recipient, id.recipient());
        seal(KeySize::Aes256, &[Recipient::Public(recipient)]).expect("seals");
    }
    seal(KeySize::Aes256, &[Recipient::Public(text.parse().unwrap())]).expect("seals");
}

/// Every substring of 4 characters of `secret` (case-insensitive) missing from `shown`.
fn assert_no_part_of(secret: &str, shown: &str, what: &str) {
    let shown = shown.to_lowercase();
    let secret = secret.to_lowercase();
    for start in 0..secret.len().saturating_sub(3) {
        let part = &secret[start..start + 4];
        assert!(
            !shown.contains(part),
            "{what}: \"{part}\" of the secret shows in: {shown}"
        );
    }
}

#[test]
fn errors_about_identities_show_none_of_their_characters() {
    // A fixed identity, so that no 4 characters of it can meet the messages by chance.
    let seed = paraes_core::seeded::SplitMix64::new(25).bytes(32);
    let text = bech32_text("paraes-secret-key-", &seed).to_uppercase();
    let id: SecretIdentity = text.parse().unwrap();
    assert_eq!(*id.to_secret_text(), text);
    let body = &text["PARAES-SECRET-KEY-1".len()..];
    // Given as a recipient, whole or changed (so that its checksum fails).
    let mut changed = text.clone().into_bytes();
    let last = changed.len() - 1;
    changed[last] = if changed[last] == b'Q' { b'P' } else { b'Q' };
    let changed = String::from_utf8(changed).unwrap();
    let mut bad_char = text.clone();
    bad_char.replace_range(30..31, "B");
    for given in [text.as_str(), &text.to_lowercase(), &changed, &bad_char] {
        let message = refused(given, "an identity as a recipient");
        assert!(message.contains("secret identity"), "{message}");
        assert_no_part_of(body, &message, "identity as a recipient");
    }
    // In an identity file, broken.
    for broken in [&changed, &bad_char, &text[..40]] {
        let message = parse_identities(&format!("# mine\n{broken}\n"))
            .unwrap_err()
            .to_string();
        assert!(message.contains("line 2"), "{message}");
        assert_no_part_of(body, &message, "broken identity");
    }
}

/// Compiles only if `T` wipes itself when dropped.
fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>() {}

#[test]
fn hash_states_that_hold_key_material_are_wiped() {
    // HKDF-SHA256's HMAC keeps its keyed inner and outer SHA-256 states: with sha2's `zeroize`
    // feature (which turns on digest's) they and the block buffer are wiped on drop.
    wiped_on_drop::<sha2::Sha256>();
    wiped_on_drop::<x25519_dalek::StaticSecret>();
}
