//! The SW26010 simulator through Wycheproof's C2SP chunked-encryption vectors (70) and the
//! chunks at sparse high indices (past 2^32, up to 2^38 - 1, and one past the limit), in raw
//! mode and through the message API (`paraes_core::testing::{wycheproof, sparse}`): the
//! variant `--backend sunway-sim` runs by default (pipelined, double-buffered, 4 CGs) on every
//! path, and each other variant of the ladder (its own AES code) at the quick depth: every
//! chunk opened and sealed at its index, the other paths for the vectors under 1 MiB (the
//! scalar "original" rung simulates ~1.5 MB/s).

use paraes_core::testing::sparse;
use paraes_core::testing::wycheproof::{self, Depth};
use paraes_core::Engine;
use paraes_sunway_sim::{Buffering, SimConfig, SunwaySimEngine, Variant};

/// Every vector and sparse chunk on the simulator of `config`, at `depth`.
fn run(config: SimConfig, depth: Depth) {
    let vectors = wycheproof::vectors();
    let sparse = sparse::sparse_vectors();
    let engine = SunwaySimEngine::new(config).expect("the simulator starts");
    let covered = wycheproof::check_engine_vectors(&engine, &vectors, depth);
    let message_api = match depth {
        Depth::Full => 70,
        Depth::Quick => 66,
    };
    assert_eq!(
        (covered.vectors, covered.raw, covered.message_api),
        (70, 50, message_api),
        "{}",
        engine.name()
    );
    let chunks = sparse::check_engine_sparse(&engine, &sparse);
    assert!(engine.simulated_bytes() > 0, "{}", engine.name());
    eprintln!(
        "{} at {depth:?}: {covered:?}, {chunks} sparse chunks at indices past 2^32",
        engine.name()
    );
}

#[test]
fn every_vector_on_every_path_of_the_default_simulator() {
    run(SimConfig::default(), Depth::Full);
}

#[test]
fn every_vector_on_each_other_variant_of_the_ladder() {
    let others: Vec<Variant> = Variant::ALL
        .into_iter()
        .filter(|&v| v != SimConfig::default().variant)
        .collect();
    assert_eq!(others.len(), Variant::ALL.len() - 1);
    for variant in others {
        run(SimConfig::new(variant, Buffering::Single, 1), Depth::Quick);
    }
}
