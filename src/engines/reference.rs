//! A test-only engine registered beside the real ones, to show (and test) that adding an
//! engine takes one registry entry: the plain, one-thread reference path of `paraes-core`
//! (`modes::apply` on the portable AES), with no options of its own.
// recipe-example: engine (the engine itself, with its conformance test)

use paraes_core::{modes, AesImpl, Engine, EngineError, Job};

use super::{Built, EngineEntry, Takes};

/// The registry entry.
pub const ENTRY: EngineEntry = EngineEntry {
    name: "reference-test",
    about: "The one-thread portable reference (tests only)",
    takes: Takes {
        threads: false,
        gpu: false,
        sim: false,
    },
    on_ranks: false,
    one_thread_baseline: false,
    build: |_| {
        Ok(Built {
            engine: Box::new(ReferenceEngine),
            implementation: "portable".into(),
        })
    },
    share_node: |_, _, _| {},
};

/// Every job on this thread, through the portable AES.
struct ReferenceEngine;

impl Engine for ReferenceEngine {
    fn name(&self) -> String {
        "reference-test (portable, 1 thread)".into()
    }

    fn workers(&self) -> usize {
        1
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        modes::apply(AesImpl::Portable, job, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine passes the conformance kit every engine passes.
    #[test]
    fn the_reference_engine_passes_the_conformance_kit() {
        let checked = paraes_core::testing::check_engine(
            &ReferenceEngine,
            7,
            paraes_core::testing::Budget::quick(),
        );
        assert!(checked.jobs > 0, "{checked:?}");
    }
}
