//! Property tests against the RustCrypto `aes` + `ctr` oracle: random keys, ivs, lengths
//! 0..=5000 and stream offsets, every implementation this CPU has, every key size, both modes and
//! directions, one thread and two threads (with tiny slices so that short buffers really split),
//! and CTR counters wrapping at 2^128 and carrying across the 64-bit boundary.

use aes::cipher::{
    generic_array::GenericArray, BlockCipher, BlockDecrypt, BlockEncrypt, KeyInit, KeyIvInit,
    StreamCipher, StreamCipherSeek,
};
use paraes_core::{AesImpl, CpuEngine, Direction, Engine, Job, Key, KeySize, Mode};
use proptest::prelude::*;

/// The oracle's answer for the job.
fn oracle(
    mode: Mode,
    direction: Direction,
    key: &[u8],
    iv: u128,
    offset: u64,
    data: &[u8],
) -> Vec<u8> {
    match key.len() {
        16 => oracle_with::<aes::Aes128>(mode, direction, key, iv, offset, data),
        24 => oracle_with::<aes::Aes192>(mode, direction, key, iv, offset, data),
        _ => oracle_with::<aes::Aes256>(mode, direction, key, iv, offset, data),
    }
}

fn oracle_with<C>(
    mode: Mode,
    direction: Direction,
    key: &[u8],
    iv: u128,
    offset: u64,
    data: &[u8],
) -> Vec<u8>
where
    C: BlockCipher + BlockEncrypt + BlockDecrypt + KeyInit + Clone,
    C: BlockCipher<BlockSize = aes::cipher::consts::U16>,
{
    let mut out = data.to_vec();
    match mode {
        Mode::Ecb => {
            let cipher = C::new_from_slice(key).unwrap();
            for block in out.chunks_exact_mut(16) {
                let block = GenericArray::from_mut_slice(block);
                match direction {
                    Direction::Encrypt => cipher.encrypt_block(block),
                    Direction::Decrypt => cipher.decrypt_block(block),
                }
            }
        }
        Mode::Ctr => {
            let mut ctr = ctr::Ctr128BE::<C>::new_from_slices(key, &iv.to_be_bytes()).unwrap();
            ctr.seek(offset);
            ctr.apply_keystream(&mut out);
        }
    }
    out
}

fn paraes(
    engine: &CpuEngine,
    mode: Mode,
    direction: Direction,
    key: &[u8],
    iv: u128,
    offset: u64,
    data: &[u8],
) -> Vec<u8> {
    let key = Key::new(key).unwrap().expand();
    let job = Job::new(mode, direction, &key, iv.to_be_bytes(), offset);
    let mut buf = data.to_vec();
    engine.process(&job, &mut buf).unwrap();
    buf
}

/// Counters that are random, just below 2^128, or just below a 2^64 carry.
fn iv_strategy() -> impl Strategy<Value = u128> {
    prop_oneof![
        any::<u128>(),
        (0u128..4096).prop_map(|d| u128::MAX - d),
        (any::<u64>(), 0u128..4096)
            .prop_map(|(high, d)| ((high as u128) << 64) | (u64::MAX as u128 - d)),
    ]
}

/// Stream offsets: near the start, anywhere in a large file, or huge.
fn offset_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..100_000,
        0u64..(1 << 40),
        any::<u64>().prop_map(|o| o >> 4)
    ]
}

fn engine_for(imp_index: usize, threads: usize, slice: usize) -> CpuEngine {
    let available = AesImpl::available();
    let imp = available[imp_index % available.len()];
    CpuEngine::with_aes_impl(imp, Some(threads))
        .unwrap()
        .with_split(slice, slice)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn matches_oracle(
        size in 0usize..3,
        key_bytes in prop::collection::vec(any::<u8>(), 32),
        iv in iv_strategy(),
        offset in offset_strategy(),
        data in prop::collection::vec(any::<u8>(), 0..=5000),
        ecb in any::<bool>(),
        decrypt in any::<bool>(),
        imp_index in 0usize..4,
        threads in 1usize..=2,
        slice in prop::sample::select(vec![16usize, 48, 1024]),
    ) {
        let key = &key_bytes[..KeySize::ALL[size].bytes()];
        let mode = if ecb { Mode::Ecb } else { Mode::Ctr };
        let direction = if decrypt { Direction::Decrypt } else { Direction::Encrypt };
        let (offset, data) = match mode {
            Mode::Ecb => (offset & !15, &data[..data.len() / 16 * 16]),
            Mode::Ctr => (offset, &data[..]),
        };
        let engine = engine_for(imp_index, threads, slice);
        let ours = paraes(&engine, mode, direction, key, iv, offset, data);
        let theirs = oracle(mode, direction, key, iv, offset, data);
        prop_assert!(ours == theirs, "{} {mode:?} {direction:?} AES-{} iv {iv:#x} offset {offset} len {}",
            engine.name(), key.len() * 8, data.len());
    }

    /// Processing bytes [a, b) alone gives the same bytes as processing the whole stream.
    #[test]
    fn ctr_is_seekable(
        key_bytes in prop::collection::vec(any::<u8>(), 16),
        iv in iv_strategy(),
        data in prop::collection::vec(any::<u8>(), 1..=3000),
        cut in any::<prop::sample::Index>(),
        imp_index in 0usize..4,
    ) {
        let engine = engine_for(imp_index, 1, 16);
        let whole = paraes(&engine, Mode::Ctr, Direction::Encrypt, &key_bytes, iv, 0, &data);
        let a = cut.index(data.len());
        let part = paraes(&engine, Mode::Ctr, Direction::Encrypt, &key_bytes, iv, a as u64, &data[a..]);
        prop_assert_eq!(&whole[a..], &part[..]);
    }
}

/// Every implementation and batch alignment across the 2^128 wrap and the 2^64 carry, over
/// lengths that span several 32-block batches.
#[test]
fn counter_wraps_and_carries_like_the_oracle() {
    let key = [0x5au8; 32];
    let data: Vec<u8> = (0..200 * 16 + 7).map(|i| i as u8).collect();
    for size in KeySize::ALL {
        let key = &key[..size.bytes()];
        for below in 0u128..40 {
            for iv in [
                u128::MAX - below,
                (7u128 << 64) | (u64::MAX as u128 - below),
            ] {
                let expected = oracle(Mode::Ctr, Direction::Encrypt, key, iv, 0, &data);
                for imp in AesImpl::available() {
                    let engine = CpuEngine::with_aes_impl(imp, Some(1)).unwrap();
                    let got = paraes(&engine, Mode::Ctr, Direction::Encrypt, key, iv, 0, &data);
                    assert!(got == expected, "{imp} AES-{} iv {iv:#x}", size.bits());
                }
            }
        }
    }
}

/// The counter after all ones is all zeros (2^128 wraps to 0), as in OpenSSL.
#[test]
fn counter_after_all_ones_is_zero() {
    let key = Key::new(&[1u8; 16]).unwrap().expand();
    let engine = CpuEngine::with_aes_impl(AesImpl::fastest(), Some(1)).unwrap();
    let mut stream = [0u8; 32];
    let job = Job::ctr(&key, [0xff; 16], 0);
    engine.process(&job, &mut stream).unwrap();
    let mut from_zero = [0u8; 16];
    let job_zero = job.with_counter([0; 16]);
    engine.process(&job_zero, &mut from_zero).unwrap();
    assert_eq!(stream[16..], from_zero);
}

/// Buffers far larger than a slice, with the default slice sizes and all threads.
#[test]
fn large_buffers_with_default_slices_match_oracle() {
    let key = [0x33u8; 24];
    let data: Vec<u8> = (0..(1 << 20) + 3).map(|i| (i * 7) as u8).collect();
    for imp in AesImpl::available() {
        let engine = CpuEngine::with_aes_impl(imp, None).unwrap();
        for offset in [0u64, 5, 1 << 33] {
            let got = paraes(
                &engine,
                Mode::Ctr,
                Direction::Encrypt,
                &key,
                42,
                offset,
                &data,
            );
            let expected = oracle(Mode::Ctr, Direction::Encrypt, &key, 42, offset, &data);
            assert!(got == expected, "{imp} offset {offset}");
        }
        let aligned = &data[..1 << 20];
        for direction in [Direction::Encrypt, Direction::Decrypt] {
            let got = paraes(&engine, Mode::Ecb, direction, &key, 0, 0, aligned);
            assert!(
                got == oracle(Mode::Ecb, direction, &key, 0, 0, aligned),
                "{imp} ECB {direction:?}"
            );
        }
    }
}

/// ECB refuses partial blocks with an error, never a panic.
#[test]
fn ecb_rejects_partial_blocks() {
    let key = Key::new(&[0u8; 16]).unwrap().expand();
    let engine = CpuEngine::new(Some(2)).unwrap();
    let job = Job::ecb(&key, Direction::Encrypt);
    let err = engine.process(&job, &mut [0u8; 17]).unwrap_err();
    assert!(err.to_string().contains("whole 16-byte blocks"), "{err}");
    assert!(engine.process(&job.advanced(8), &mut [0u8; 16]).is_err());
}
