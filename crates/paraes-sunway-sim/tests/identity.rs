//! The simulator's output is byte-identical to the reference transform (paraes-core's portable
//! path, itself checked against RustCrypto `aes`) for every variant, buffering, CG count, mode,
//! key size, direction, offset and length.

use paraes_core::modes::apply;
use paraes_core::seeded::SplitMix64;
use paraes_core::{Direction, Engine, Implementation, Job, Key, Mode};
use paraes_sunway_sim::{Buffering, SimConfig, SunwaySimEngine, Variant};

fn check(
    engine: &SunwaySimEngine,
    rng: &mut SplitMix64,
    mode: Mode,
    direction: Direction,
    key_len: usize,
    offset: u64,
    len: usize,
) {
    let key = Key::new(&rng.bytes(key_len)).unwrap().expand();
    let mut iv = [0u8; 16];
    iv.copy_from_slice(&rng.bytes(16));
    if rng.next_u64().is_multiple_of(4) {
        iv[8..].fill(0xff); // low half about to carry
    }
    let job = Job {
        mode,
        direction,
        key: &key,
        iv,
        offset,
    };
    let data = rng.bytes(len);
    let mut expected = data.clone();
    apply(Implementation::Portable, &job, &mut expected).unwrap();
    let mut got = data;
    engine.process(&job, &mut got).unwrap();
    assert!(
        got == expected,
        "{} {mode:?} {direction:?} AES-{} offset {offset} len {len}",
        engine.name(),
        key_len * 8
    );
}

/// The longest buffers of the sweep: more than one LDM chunk on some CPEs in release builds,
/// smaller in unoptimised ones (the simulator is ~50x slower there). A multiple of 16 (ECB).
const LONG: usize = if cfg!(debug_assertions) {
    9_008
} else {
    70_000
};

/// The large-buffer test's length: ~2.4 LDM chunks per CPE on 2 CGs in release builds, just over
/// one in unoptimised ones.
const LARGE: usize = if cfg!(debug_assertions) {
    2_200_003
} else {
    5_000_003
};

#[test]
fn every_variant_buffering_mode_key_and_direction_matches_the_reference() {
    let mut rng = SplitMix64::new(0x5eed_1234_abcd_0001);
    for variant in Variant::ALL {
        for buffering in Buffering::ALL {
            for cgs in [1, 3, 4] {
                let engine = SunwaySimEngine::new(SimConfig::new(variant, buffering, cgs)).unwrap();
                for key_len in [16, 24, 32] {
                    for direction in [Direction::Encrypt, Direction::Decrypt] {
                        for len in [0usize, 16, 32, 128, 4096, LONG] {
                            let offset = 16 * (rng.next_u64() % 1000);
                            check(
                                &engine,
                                &mut rng,
                                Mode::Ecb,
                                direction,
                                key_len,
                                offset,
                                len,
                            );
                        }
                        for len in [0usize, 1, 15, 16, 17, 127, 129, 5000, LONG + 1] {
                            let offset = rng.next_u64() % 100_000;
                            check(
                                &engine,
                                &mut rng,
                                Mode::Ctr,
                                direction,
                                key_len,
                                offset,
                                len,
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn large_buffers_spanning_several_ldm_chunks_per_cpe_match() {
    let mut rng = SplitMix64::new(77);
    for variant in Variant::ALL {
        let engine = SunwaySimEngine::new(SimConfig::new(variant, Buffering::Double, 2)).unwrap();
        // 2 CGs x 64 CPEs x 16 KiB buffers (see LARGE).
        check(
            &engine,
            &mut rng,
            Mode::Ctr,
            Direction::Encrypt,
            32,
            5,
            LARGE,
        );
        check(
            &engine,
            &mut rng,
            Mode::Ecb,
            Direction::Decrypt,
            16,
            0,
            LARGE / 16 * 16,
        );
    }
}

#[test]
fn a_stream_in_chunks_equals_the_stream_at_once() {
    let mut rng = SplitMix64::new(99);
    let engine = SunwaySimEngine::new(SimConfig::default()).unwrap();
    let key = Key::new(&rng.bytes(16)).unwrap().expand();
    let iv = [0xfe; 16];
    let data = rng.bytes(100_000);
    let whole_job = Job {
        mode: Mode::Ctr,
        direction: Direction::Encrypt,
        key: &key,
        iv,
        offset: 0,
    };
    let mut whole = data.clone();
    apply(Implementation::Portable, &whole_job, &mut whole).unwrap();
    let mut pieces = data;
    let mut position = 0;
    for size in [1usize, 15, 17, 4096, 33, 65_536, 10_000] {
        let end = (position + size).min(pieces.len());
        engine
            .process(
                &whole_job.advanced(position as u64),
                &mut pieces[position..end],
            )
            .unwrap();
        position = end;
    }
    engine
        .process(
            &whole_job.advanced(position as u64),
            &mut pieces[position..],
        )
        .unwrap();
    assert_eq!(pieces, whole);
    assert!(engine.simulated_seconds() > 0.0);
    assert_eq!(engine.simulated_bytes(), 100_000);
}

#[test]
fn rustcrypto_agrees_on_a_fips_vector() {
    use aes::cipher::{BlockEncrypt, KeyInit};
    let key_bytes: Vec<u8> = (0u8..16).collect();
    let engine = SunwaySimEngine::new(SimConfig::default()).unwrap();
    let key = Key::new(&key_bytes).unwrap().expand();
    let mut block: Vec<u8> = (0u8..16).map(|i| i * 0x11).collect();
    let mut expected = aes::cipher::generic_array::GenericArray::clone_from_slice(&block);
    aes::Aes128::new_from_slice(&key_bytes)
        .unwrap()
        .encrypt_block(&mut expected);
    let job = Job {
        mode: Mode::Ecb,
        direction: Direction::Encrypt,
        key: &key,
        iv: [0; 16],
        offset: 0,
    };
    engine.process(&job, &mut block).unwrap();
    assert_eq!(block, expected.to_vec());
    // FIPS-197 C.1: 00112233...ff under 000102...0f.
    assert_eq!(
        block,
        [
            0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
            0xc5, 0x5a
        ]
    );
}

#[test]
fn ecb_partial_block_is_refused() {
    let engine = SunwaySimEngine::new(SimConfig::default()).unwrap();
    let key = Key::new(&[0; 16]).unwrap().expand();
    let job = Job {
        mode: Mode::Ecb,
        direction: Direction::Encrypt,
        key: &key,
        iv: [0; 16],
        offset: 0,
    };
    assert!(engine.process(&job, &mut [0u8; 17]).is_err());
}
