//! The GPU engine through Wycheproof's C2SP chunked-encryption vectors (70) and the chunks at
//! sparse high indices (past 2^32, up to 2^38 - 1, and one past the limit), in raw mode and
//! through the message API (`paraes_core::testing::{wycheproof, sparse}`): both CTR variants
//! (data through the kernel, and keystream XORed on the host) and `auto`, and small odd pieces
//! that cut every 16 KiB chunk apart. On a GPU every path runs; on the CUDA stand-in
//! (tests/support/standin.rs: kernels/aes.cu on the CPU, where there is no driver) the fused
//! variant runs every path and the others the quick depth (every chunk at its index, the other
//! paths for vectors under 1 MiB). It never skips.

#[path = "support/standin.rs"]
mod standin;

use paraes_core::testing::sparse;
use paraes_core::testing::wycheproof::{self, Depth};
use paraes_core::Engine;
use paraes_gpu::{CtrVariant, GpuEngine, GpuOptions};
use standin::Driver;

/// The engine on this machine's driver (the stand-in where there is none); panics if it does
/// not start.
fn engine(options: GpuOptions) -> GpuEngine {
    let driver = standin::driver();
    let engine = GpuEngine::new(options)
        .unwrap_or_else(|e| panic!("the GPU engine did not start on {driver}: {e}"));
    assert_eq!(
        engine.device_info().is_standin(),
        driver == Driver::StandIn,
        "{}",
        engine.name()
    );
    engine
}

/// Every vector and sparse chunk on `engine`, at `depth` (every path on a GPU).
fn run(engine: &GpuEngine, depth: Depth) {
    let depth = match standin::driver() {
        Driver::Nvidia => Depth::Full,
        Driver::StandIn => depth,
    };
    let vectors = wycheproof::vectors();
    let covered = wycheproof::check_engine_vectors(engine, &vectors, depth);
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
    let chunks = sparse::check_engine_sparse(engine, &sparse::sparse_vectors());
    eprintln!(
        "{} at {depth:?}: {covered:?}, {chunks} sparse chunks at indices past 2^32",
        engine.name()
    );
}

#[test]
fn every_vector_on_the_fused_ctr_variant() {
    run(
        &engine(GpuOptions {
            ctr_variant: CtrVariant::Fused,
            ..GpuOptions::default()
        }),
        Depth::Full,
    );
}

#[test]
fn every_vector_on_the_keystream_and_auto_variants() {
    for ctr_variant in [CtrVariant::Keystream, CtrVariant::Auto] {
        run(
            &engine(GpuOptions {
                ctr_variant,
                ..GpuOptions::default()
            }),
            Depth::Quick,
        );
    }
}

/// Pieces of 16 bytes to 4 KiB + 112 over two streams: every chunk is cut apart, and pieces
/// end inside tags' rooms.
#[test]
fn every_vector_in_small_odd_pieces() {
    run(
        &engine(GpuOptions {
            ctr_variant: CtrVariant::Fused,
            streams: 2,
            min_piece: 16,
            max_piece: 4096 + 16 * 7,
            threads_per_block: 96,
            ..GpuOptions::default()
        }),
        Depth::Quick,
    );
}
