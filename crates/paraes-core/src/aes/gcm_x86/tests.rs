//! The stitched kernel against RustCrypto `aes-gcm` and against the unstitched path (CTR,
//! then GHASH) at every chunk length, both key sizes, small and large chunk indices.
use aes_gcm::aead::{AeadInPlace, KeyInit};
use proptest::prelude::*;

use super::super::{AesImpl, StitchedGcm};
use crate::cobblestone::{ChunkCipher, CobblestoneError, CHUNK_LEN, MAX_CHUNKS};
use crate::key::Key;

/// Whether this CPU runs the kernel: where it does not, the tests below still check the
/// unstitched path, and say so.
fn kernel() -> Option<StitchedGcm> {
    let kernel = StitchedGcm::detect(AesImpl::detect());
    if kernel.is_none() {
        eprintln!("no VAES-512 + VPCLMULQDQ here: only the unstitched path is tested");
    }
    kernel
}

/// RustCrypto's AES-GCM seal of `data` under `key` and `nonce`: ciphertext, tag.
fn oracle(key: &[u8], nonce: &[u8; 12], data: &[u8]) -> (Vec<u8>, [u8; 16]) {
    let mut out = data.to_vec();
    let tag = match key.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(key)
            .unwrap()
            .encrypt_in_place_detached(nonce.into(), b"", &mut out),
        _ => aes_gcm::Aes256Gcm::new_from_slice(key)
            .unwrap()
            .encrypt_in_place_detached(nonce.into(), b"", &mut out),
    }
    .unwrap();
    (out, tag.into())
}

/// Checks chunk `index` of `data` under `key` and `base_nonce`: the cipher's seal (stitched
/// where the CPU can) against aes-gcm and against CTR then GHASH; open of the result back to
/// `data`; open of a changed tag, and of a changed ciphertext byte, refused with the
/// ciphertext left as it was.
fn check_chunk(key: &[u8], base_nonce: [u8; 12], index: u64, data: &[u8]) {
    let cipher = ChunkCipher::new(&Key::new(key).unwrap(), base_nonce);
    let len = data.len();
    let (expected, expected_tag) = oracle(key, &cipher.nonce(index), data);

    let mut sealed = data.to_vec();
    let tag = cipher.seal(index, &mut sealed);
    assert!(sealed == expected, "{len} bytes, chunk {index}: ciphertext");
    assert_eq!(tag, expected_tag, "{len} bytes, chunk {index}: tag");

    let mut unstitched = data.to_vec();
    cipher.ctr(index, &mut unstitched);
    assert!(unstitched == sealed);
    assert_eq!(cipher.tag(index, &unstitched), tag);

    let mut opened = sealed.clone();
    cipher.open(index, &mut opened, &tag).unwrap();
    assert!(opened == data, "{len} bytes, chunk {index}: open");

    let mut bad_tag = tag;
    bad_tag[len % 16] ^= 1 << (len % 8);
    let mut refused = sealed.clone();
    assert_eq!(
        cipher.open(index, &mut refused, &bad_tag),
        Err(CobblestoneError::Tampered(index))
    );
    assert!(
        refused == sealed,
        "{len} bytes: a refused chunk was changed"
    );
    if len > 0 {
        refused[len / 2] ^= 0x80;
        let changed = refused.clone();
        assert_eq!(
            cipher.open(index, &mut refused, &tag),
            Err(CobblestoneError::Tampered(index))
        );
        assert!(
            refused == changed,
            "{len} bytes: a refused chunk was changed"
        );
    }
    // The chunk's tag is its own: the next chunk's nonce refuses it.
    let mut other = sealed.clone();
    assert!(cipher.open(index ^ 1, &mut other, &tag).is_err());
    assert!(other == sealed);
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

#[test]
fn the_kernel_runs_where_the_cpu_has_it() {
    let vaes512 = AesImpl::Vaes512.is_available()
        && std::is_x86_feature_detected!("vpclmulqdq")
        && std::is_x86_feature_detected!("pclmulqdq");
    let forced = std::env::var(super::super::FORCE_PORTABLE_ENV).is_ok_and(|v| v == "1");
    assert_eq!(kernel().is_some(), vaes512 && !forced);
    let cipher = ChunkCipher::new(&Key::new(&[1; 32]).unwrap(), [2; 12]);
    assert_eq!(cipher.runs_stitched(), kernel().is_some());
}

/// Every length whose tail differs: all of the first batches, and around every batch and
/// block boundary up to a whole chunk.
#[test]
fn chunks_of_every_shape_match_aes_gcm_and_the_unstitched_path() {
    kernel();
    let lengths: Vec<usize> = (0..=1100)
        .chain((1..=CHUNK_LEN / 512).flat_map(|b| 512 * b - 20..=(512 * b + 20).min(CHUNK_LEN)))
        .chain((0..CHUNK_LEN).step_by(97))
        .collect();
    for key in [&[0x11u8; 16][..], &[0x22u8; 32][..]] {
        let plain = data(CHUNK_LEN, key[0]);
        for &len in &lengths {
            check_chunk(key, [0xc3; 12], len as u64 * 3, &plain[..len]);
        }
    }
}

/// Every length 0 ..= 16384, seal and open against the unstitched path (aes-gcm is checked
/// on the shapes above and on random ones below).
#[test]
fn every_length_seals_and_opens_as_the_unstitched_path() {
    for key in [&[0x5au8; 16][..], &[0xa5u8; 32][..]] {
        let cipher = ChunkCipher::new(&Key::new(key).unwrap(), [9; 12]);
        let plain = data(CHUNK_LEN, key[1]);
        for len in 0..=CHUNK_LEN {
            let index = len as u64;
            let mut sealed = plain[..len].to_vec();
            let tag = cipher.seal(index, &mut sealed);
            let mut unstitched = plain[..len].to_vec();
            cipher.ctr(index, &mut unstitched);
            assert!(sealed == unstitched, "{len} bytes");
            assert_eq!(tag, cipher.tag(index, &unstitched), "{len} bytes");
            cipher.open(index, &mut sealed, &tag).unwrap();
            assert!(sealed == plain[..len], "{len} bytes");
        }
    }
}

#[test]
fn large_chunk_indices_and_nonces() {
    let plain = data(CHUNK_LEN, 7);
    let indices = [1, 255, 256, 1 << 32, MAX_CHUNKS - 1, MAX_CHUNKS, u64::MAX];
    for (n, &index) in indices.iter().enumerate() {
        for nonce in [[0u8; 12], [0xff; 12]] {
            check_chunk(&[0xee; 32], nonce, index, &plain);
            check_chunk(&[0x77; 16], nonce, index, &plain[..CHUNK_LEN - 1 - 37 * n]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_chunks_match_aes_gcm(
        key in prop_oneof![
            prop::collection::vec(any::<u8>(), 16),
            prop::collection::vec(any::<u8>(), 32),
        ],
        base_nonce in any::<[u8; 12]>(),
        index in prop_oneof![0u64..100, any::<u64>()],
        len in prop_oneof![0usize..=CHUNK_LEN, Just(CHUNK_LEN), CHUNK_LEN - 600..=CHUNK_LEN],
        seed in any::<u8>(),
    ) {
        check_chunk(&key, base_nonce, index, &data(len, seed));
    }
}
