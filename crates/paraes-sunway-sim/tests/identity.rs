//! The simulator through the conformance kit (`paraes_core::testing::check_engine`: every mode,
//! key size, direction, odd offsets and lengths, counter carries, chunked calls) for every
//! variant, buffering and CG count (GCM chunk counters included), plus a FIPS-197 known answer.

use paraes_core::testing::{check_engine, Budget};
use std::sync::atomic::{AtomicU64, Ordering};

use paraes_core::{Direction, Engine, EngineError, Job, Key};
use paraes_sunway_sim::{Buffering, SimConfig, SunwaySimEngine, Variant};

/// The longest buffers of the sweep: more than one LDM chunk on some CPEs in release builds,
/// smaller in unoptimised ones (the simulator is ~50x slower there).
const LONG: usize = if cfg!(debug_assertions) {
    9_008
} else {
    70_001
};

/// The large-buffer test's length: ~2.4 LDM chunks per CPE on 2 CGs in release builds, just over
/// one in unoptimised ones.
const LARGE: usize = if cfg!(debug_assertions) {
    2_200_003
} else {
    5_000_003
};

#[test]
fn every_variant_buffering_and_cg_count_passes_the_conformance_kit() {
    for variant in Variant::ALL {
        for buffering in Buffering::ALL {
            for cgs in [1, 3, 4] {
                let engine = SunwaySimEngine::new(SimConfig::new(variant, buffering, cgs)).unwrap();
                check_engine(&engine, 0x5eed_1234_abcd_0001, Budget::new(LONG, 6));
            }
        }
    }
}

#[test]
fn large_buffers_spanning_several_ldm_chunks_per_cpe_pass_the_kit() {
    for variant in Variant::ALL {
        // 2 CGs x 64 CPEs x 16 KiB buffers (see LARGE): two random jobs up to LARGE bytes.
        let engine = SunwaySimEngine::new(SimConfig::new(variant, Buffering::Double, 2)).unwrap();
        let counting = Counting {
            inner: &engine,
            bytes: AtomicU64::new(0),
        };
        let checked = check_engine(&counting, 77, Budget::new(LARGE, 2));
        assert!(engine.simulated_seconds() > 0.0);
        // Every accepted call's bytes count in the totals: at least those the kit compared
        // whole (its GCM piecewise job adds more calls than it books).
        assert_eq!(
            engine.simulated_bytes(),
            counting.bytes.load(Ordering::Relaxed)
        );
        assert!(engine.simulated_bytes() >= checked.bytes);
    }
}

/// Passes calls on to the simulator and adds up the bytes of those it accepts.
struct Counting<'e> {
    inner: &'e SunwaySimEngine,
    bytes: AtomicU64,
}

impl Engine for Counting<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn workers(&self) -> usize {
        self.inner.workers()
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        self.inner.process(job, buf)?;
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
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
    let job = Job::ecb(&key, Direction::Encrypt);
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
