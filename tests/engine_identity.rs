//! The Engine seam's contract: every engine in the workspace gives the same bytes for the same
//! job, checked by the one conformance kit (`paraes_core::testing::check_engine`). New engines
//! join by adding themselves to `engines()`.

use std::io::Write;

use paraes_core::testing::{check_engine, Budget};
use paraes_core::{AesImpl, CpuEngine, Engine};
use paraes_gpu::{CtrVariant, GpuEngine, GpuOptions};
use paraes_sunway_sim::{Buffering, SimConfig, SunwaySimEngine, Variant};

/// Every engine this build and machine can run, each with the budget its speed allows.
fn engines() -> Vec<(Box<dyn Engine>, Budget)> {
    let fast = if cfg!(debug_assertions) {
        Budget::quick()
    } else {
        Budget::thorough()
    };
    let slow = if cfg!(debug_assertions) {
        Budget::new(4096 + 5, 4)
    } else {
        Budget::quick()
    };
    let mut engines: Vec<(Box<dyn Engine>, Budget)> = Vec::new();
    for imp in AesImpl::available() {
        for engine in [
            CpuEngine::with_aes_impl(imp, Some(1)).unwrap(),
            CpuEngine::with_aes_impl(imp, Some(2)).unwrap(),
            CpuEngine::with_aes_impl(imp, Some(3))
                .unwrap()
                .with_split(0, 4096),
        ] {
            engines.push((Box::new(engine), fast));
        }
    }
    for (variant, buffering, cgs) in [
        (Variant::Pipelined, Buffering::Double, 4),
        (Variant::Original, Buffering::Single, 1),
        (Variant::Simd, Buffering::Double, 3),
        (Variant::Selldw, Buffering::Single, 2),
    ] {
        let config = SimConfig::new(variant, buffering, cgs);
        engines.push((Box::new(SunwaySimEngine::new(config).unwrap()), slow));
    }
    for ctr_variant in CtrVariant::ALL {
        match GpuEngine::new(GpuOptions {
            ctr_variant,
            ..GpuOptions::default()
        }) {
            Ok(gpu) => engines.push((Box::new(gpu), fast)),
            Err(e) if e.is_unavailable() => {
                // Straight to the stderr handle, past the harness's capture: seen even on success.
                let _ = writeln!(
                    std::io::stderr(),
                    "\n*** SKIPPED the GPU engine ({ctr_variant}) in the identity test: {e} ***\n"
                );
                break;
            }
            Err(e) => panic!("a GPU is present but its engine failed to start: {e}"),
        }
    }
    engines
}

#[test]
fn every_engine_passes_the_conformance_kit() {
    let engines = engines();
    assert!(
        engines.len() >= 3,
        "at least the portable CPU engine variants"
    );
    for (engine, budget) in &engines {
        let checked = check_engine(engine.as_ref(), 0x5eed, *budget);
        eprintln!("{}: {checked:?}", engine.name());
    }
}
