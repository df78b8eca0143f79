//! The reference the container tests check the body against, written here from the specs:
//! HMAC-SHA512 (RFC 2104), HKDF-Expand (RFC 5869), AES-GCM (NIST SP 800-38D, over the block
//! cipher of the `aes` crate) and Cobblestone, the C2SP chunked-encryption message; itself
//! checked against NIST's GCM vectors, RFC 4231 and pyca/cryptography's Cobblestone messages.

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use sha2::Digest;

use crate::common::{CHUNK, MESSAGE_PREFIX_LEN, TAG_LEN};

/// The C2SP chunked-encryption label every derivation starts its info with.
const C2SP_LABEL: &[u8] = b"c2sp.org/chunked-encryption@v1+";

/// HMAC-SHA512 (RFC 2104) of the concatenated `parts` under `key` (at most one block).
fn hmac_sha512(key: &[u8], parts: &[&[u8]]) -> [u8; 64] {
    assert!(key.len() <= 128, "a key longer than SHA-512's block");
    let mut padded = [0u8; 128];
    padded[..key.len()].copy_from_slice(key);
    let mut inner = sha2::Sha512::new();
    inner.update(padded.map(|b| b ^ 0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = sha2::Sha512::new();
    outer.update(padded.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    let mut out = [0u8; 64];
    out.copy_from_slice(&outer.finalize());
    out
}

/// HKDF-Expand (RFC 5869 section 2.3) with HMAC-SHA512 and `prk` used as it is.
fn hkdf_expand_sha512(prk: &[u8], info: &[u8], len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut block: Vec<u8> = Vec::new();
    for i in 1..=255u8 {
        if out.len() >= len {
            break;
        }
        block = hmac_sha512(prk, &[&block, info, &[i]]).to_vec();
        out.extend_from_slice(&block);
    }
    out.truncate(len);
    out
}

/// AES-128 or AES-256, the block cipher of the reference GCM (RustCrypto's `aes`).
pub(crate) enum BlockCipher {
    Aes128(Box<aes::Aes128>),
    Aes256(Box<aes::Aes256>),
}

impl BlockCipher {
    pub(crate) fn new(key: &[u8]) -> Self {
        match key.len() {
            16 => BlockCipher::Aes128(Box::new(aes::Aes128::new(GenericArray::from_slice(key)))),
            32 => BlockCipher::Aes256(Box::new(aes::Aes256::new(GenericArray::from_slice(key)))),
            n => panic!("no AES-GCM key of {n} bytes here"),
        }
    }

    pub(crate) fn encrypt(&self, block: [u8; 16]) -> [u8; 16] {
        let mut block = GenericArray::from(block);
        match self {
            BlockCipher::Aes128(aes) => aes.encrypt_block(&mut block),
            BlockCipher::Aes256(aes) => aes.encrypt_block(&mut block),
        }
        block.into()
    }
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

/// `nonce || be32(counter)`, a GCM counter block.
pub(crate) fn counter_block(nonce: &[u8; 12], counter: u32) -> [u8; 16] {
    let mut block = [0u8; 16];
    block[..12].copy_from_slice(nonce);
    block[12..].copy_from_slice(&counter.to_be_bytes());
    block
}

/// AES-GCM (NIST SP 800-38D) with a 96-bit nonce and no associated data: CTR from
/// `nonce || be32(2)` over `data`, and the tag of the ciphertext (`data` itself when
/// decrypting). Returns the CTR output and the tag.
pub(crate) fn gcm(key: &[u8], nonce: &[u8; 12], data: &[u8], encrypt: bool) -> (Vec<u8>, [u8; 16]) {
    let aes = BlockCipher::new(key);
    let h = u128::from_be_bytes(aes.encrypt([0; 16]));
    let mut out = Vec::with_capacity(data.len());
    for (j, piece) in data.chunks(16).enumerate() {
        let keystream = aes.encrypt(counter_block(nonce, 2 + j as u32));
        out.extend(piece.iter().zip(keystream).map(|(d, k)| d ^ k));
    }
    let ciphertext = if encrypt { &out[..] } else { data };
    let mut y = 0u128;
    for piece in ciphertext.chunks(16) {
        let mut block = [0u8; 16];
        block[..piece.len()].copy_from_slice(piece);
        y = ghash_mul(y ^ u128::from_be_bytes(block), h);
    }
    // The length block: 64 bits of associated-data bits (none), 64 bits of ciphertext bits.
    y = ghash_mul(y ^ (ciphertext.len() as u128 * 8), h);
    let tag = y ^ u128::from_be_bytes(aes.encrypt(counter_block(nonce, 1)));
    (out, tag.to_be_bytes())
}

/// The keys of one Cobblestone message.
pub(crate) struct MessageKeys {
    pub(crate) key: Vec<u8>,
    base_nonce: [u8; 12],
    pub(crate) commitment: [u8; 32],
}

impl MessageKeys {
    /// `key || base_nonce || commitment = HKDF-Expand-SHA512(IK, label || AEAD name || 0x00 ||
    /// salt || context, len(IK) + 12 + 32)`.
    pub(crate) fn derive(input_key: &[u8], salt: &[u8], context: &[u8]) -> Self {
        let aead: &[u8] = match input_key.len() {
            16 => b"AEAD_AES_128_GCM",
            32 => b"AEAD_AES_256_GCM",
            n => panic!("no Cobblestone input key of {n} bytes"),
        };
        assert_eq!(salt.len(), 24, "a 24-byte salt");
        let info = [C2SP_LABEL, aead, &[0], salt, context].concat();
        let okm = hkdf_expand_sha512(input_key, &info, input_key.len() + 12 + 32);
        let (key, rest) = okm.split_at(input_key.len());
        let (base_nonce, commitment) = rest.split_at(12);
        MessageKeys {
            key: key.to_vec(),
            base_nonce: base_nonce.try_into().unwrap(),
            commitment: commitment.try_into().unwrap(),
        }
    }

    /// Chunk `index`'s nonce: the base nonce XOR `be96(index)`.
    pub(crate) fn nonce(&self, index: u64) -> [u8; 12] {
        let mut nonce = self.base_nonce;
        for (n, i) in nonce.iter_mut().zip(&u128::from(index).to_be_bytes()[4..]) {
            *n ^= i;
        }
        nonce
    }
}

/// The Cobblestone message of `plain` under `input_key` and `context` with `salt`.
pub(crate) fn seal_message(input_key: &[u8], salt: &[u8], context: &[u8], plain: &[u8]) -> Vec<u8> {
    let keys = MessageKeys::derive(input_key, salt, context);
    let mut out = [salt, &keys.commitment].concat();
    let pieces = plain
        .chunks(CHUNK)
        .chain(plain.len().is_multiple_of(CHUNK).then_some(&[][..]));
    for (index, piece) in pieces.enumerate() {
        let (ciphertext, tag) = gcm(&keys.key, &keys.nonce(index as u64), piece, true);
        out.extend_from_slice(&ciphertext);
        out.extend_from_slice(&tag);
    }
    out
}

/// Opens a whole Cobblestone message: the commitment, every chunk's tag, a final chunk shorter
/// than 16 KiB.
pub(crate) fn open_message(
    input_key: &[u8],
    context: &[u8],
    message: &[u8],
) -> Result<Vec<u8>, String> {
    if message.len() < MESSAGE_PREFIX_LEN {
        return Err("truncated before its first chunk".into());
    }
    let (prefix, body) = message.split_at(MESSAGE_PREFIX_LEN);
    let keys = MessageKeys::derive(input_key, &prefix[..24], context);
    if keys.commitment[..] != prefix[24..] {
        return Err("the key commitment does not match".into());
    }
    if body.len() % (CHUNK + TAG_LEN) < TAG_LEN {
        return Err(format!("{} record bytes: no final chunk", body.len()));
    }
    let mut plain = Vec::new();
    for (index, record) in body.chunks(CHUNK + TAG_LEN).enumerate() {
        let (ciphertext, tag) = record.split_at(record.len() - TAG_LEN);
        let (opened, expected) = gcm(&keys.key, &keys.nonce(index as u64), ciphertext, false);
        if expected != tag {
            return Err(format!("chunk {index}: the tag does not verify"));
        }
        plain.extend_from_slice(&opened);
    }
    Ok(plain)
}

#[test]
fn the_reference_gcm_passes_nist_vectors() {
    // NIST's GCM test cases 3 (AES-128) and 15 (AES-256): 64 bytes, no associated data.
    let nonce: [u8; 12] = hex::decode("cafebabefacedbaddecaf888")
        .unwrap()
        .try_into()
        .unwrap();
    let plain = hex::decode(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
         1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
    )
    .unwrap();
    let cases = [
        (
            "feffe9928665731c6d6a8f9467308308",
            "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e\
             21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
            "4d5c2af327cd64a62cf35abd2ba6fab4",
        ),
        (
            "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa\
             8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
            "b094dac5d93471bdec1a502270e3cc6c",
        ),
    ];
    for (key, ciphertext, tag) in cases {
        let key = hex::decode(key).unwrap();
        let (sealed, sealed_tag) = gcm(&key, &nonce, &plain, true);
        assert_eq!(
            hex::encode(&sealed),
            ciphertext,
            "AES-{} GCM",
            key.len() * 8
        );
        assert_eq!(
            hex::encode(sealed_tag),
            tag,
            "AES-{} GCM tag",
            key.len() * 8
        );
        let (opened, opened_tag) = gcm(&key, &nonce, &sealed, false);
        assert_eq!(opened, plain);
        assert_eq!(opened_tag, sealed_tag);
    }
}

#[test]
fn the_reference_hmac_sha512_passes_rfc_4231() {
    // RFC 4231, test case 2.
    let mac = hmac_sha512(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
    assert_eq!(
        hex::encode(mac),
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
         9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
    );
}

/// The reference reproduces the Cobblestone messages pyca/cryptography made
/// (crates/paraes-core/tests/data/cobblestone.txt, written by scripts/cobblestone-vectors.py),
/// and opens those stored whole.
#[test]
fn the_reference_cobblestone_reproduces_pyca_messages() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/paraes-core/tests/data/cobblestone.txt"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut checked = [0; 2];
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [variant, key, context, len, salt, digest, rest @ ..] = &fields[..] else {
            panic!("a vector line with too few fields: {line}");
        };
        let key = hex::decode(key).unwrap();
        let expected_key_len = match *variant {
            "cobblestone128" => 16,
            "cobblestone256" => 32,
            other => panic!("unknown variant {other}"),
        };
        assert_eq!(key.len(), expected_key_len, "{line}");
        let context = if *context == "-" {
            Vec::new()
        } else {
            hex::decode(context).unwrap()
        };
        let len: usize = len.parse().unwrap();
        let plain: Vec<u8> = (0..len).map(|i| ((i * 7 + i / 251) % 256) as u8).collect();
        let salt = hex::decode(salt).unwrap();
        let message = seal_message(&key, &salt, &context, &plain);
        let name = format!("{variant}, {len} bytes");
        assert_eq!(
            hex::encode(sha2::Sha256::digest(&message)),
            *digest,
            "{name}: the reference's message differs from pyca's"
        );
        if let [whole] = rest {
            let whole = hex::decode(whole).unwrap();
            assert_eq!(message, whole, "{name}");
            assert_eq!(open_message(&key, &context, &whole), Ok(plain), "{name}");
        }
        checked[usize::from(key.len() == 32)] += 1;
    }
    assert!(
        checked.iter().all(|&n| n >= 4),
        "too few vectors of each variant: {checked:?}"
    );
}
