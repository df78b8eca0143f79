//! A test-only engine registered beside the real ones, to show (and test) that adding an
//! engine takes one registry entry: the plain, one-thread reference path of `paraes-core`
//! (`modes::apply` on the portable AES), with no options of its own.

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
    use clap::Parser;

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

    /// Chosen by name on the command line like any engine, it encrypts a file that the CPU
    /// engine decrypts, and the other way round.
    #[test]
    fn a_registered_engine_runs_enc_and_dec_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
        std::fs::write(path("key"), [9u8; 32]).unwrap();
        let plain: Vec<u8> = (0..100_000u32).map(|i| (i * 31 + 7) as u8).collect();
        std::fs::write(path("plain"), &plain).unwrap();
        let run = |args: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(["paraes"].iter().chain(args).chain(&[
                "-q",
                "-k",
                &path("key"),
            ]))
            .unwrap();
            match crate::plan::build(cli.command).unwrap() {
                crate::plan::Plan::Crypt(plan) => crate::run::run(&plan).unwrap(),
                _ => unreachable!("enc and dec make crypt plans"),
            }
        };
        for (enc, dec) in [("reference-test", "cpu"), ("cpu", "reference-test")] {
            let (sealed, opened) = (path(&format!("{enc}.paraes")), path(&format!("{enc}.out")));
            run(&["enc", "--backend", enc, &path("plain"), "-o", &sealed]);
            run(&["dec", "--backend", dec, &sealed, "-o", &opened]);
            assert_eq!(std::fs::read(&opened).unwrap(), plain, "{enc} -> {dec}");
        }
    }
}
