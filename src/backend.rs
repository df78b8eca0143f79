//! The one place where `--backend` becomes an engine.

use anyhow::{bail, Result};
use paraes_core::{CpuEngine, Engine};

use crate::cli::BackendArg;

/// The engine for `--backend` with `threads` CPU threads (`None`: all cores).
pub fn select(backend: BackendArg, threads: Option<usize>) -> Result<Box<dyn Engine>> {
    match backend {
        // The CPU is the only engine in this build, so it is also the fastest one present.
        BackendArg::Auto | BackendArg::Cpu => Ok(Box::new(CpuEngine::new(threads)?)),
        BackendArg::Gpu => bail!(
            "the gpu backend is not available in this build (no GPU engine yet): \
             use --backend cpu"
        ),
        BackendArg::Mpi => bail!(
            "the mpi backend is not available in this build (no MPI engine yet): \
             use --backend cpu"
        ),
        BackendArg::SunwaySim => bail!(
            "the sunway-sim backend is not available in this build (no simulator yet): \
             use --backend cpu"
        ),
    }
}

/// An engine for `paraes bench`: present (measurable) or absent from this build.
pub enum BenchEngine {
    /// An engine that can be measured; `label` is its row name (`cpu`, `gpu`, ...).
    Present {
        /// Row label.
        label: &'static str,
        /// The engine.
        engine: Box<dyn Engine>,
    },
    /// An engine that was asked for but is not in this build, and why.
    Absent {
        /// Row label.
        label: &'static str,
        /// Why it cannot be measured.
        reason: String,
    },
}

/// Every engine `paraes bench` knows, in report order, with the `--backend` it stands for.
pub const BENCH_ENGINES: [(&str, BackendArg); 4] = [
    ("cpu", BackendArg::Cpu),
    ("gpu", BackendArg::Gpu),
    ("mpi", BackendArg::Mpi),
    ("sunway-sim", BackendArg::SunwaySim),
];

/// The engines for a `bench --backend` list (comma-separated names from [`BENCH_ENGINES`], or
/// `all`). `cpu` gives two engines: one thread (the speedup baseline) and `threads` threads (all
/// cores by default) when that is more than one. The others are whatever [`select`] gives, or
/// absent with its reason.
pub fn bench_engines(list: &str, threads: Option<usize>) -> Result<Vec<BenchEngine>> {
    let mut wanted: Vec<&'static str> = Vec::new();
    for item in list.split(',').map(|s| s.trim().to_ascii_lowercase()) {
        if item == "all" {
            wanted.extend(BENCH_ENGINES.map(|(name, _)| name));
            continue;
        }
        match BENCH_ENGINES.iter().find(|(name, _)| *name == item) {
            Some((name, _)) => wanted.push(name),
            None => bail!(
                "unknown engine '{item}' in --backend: choose from {} or all",
                BENCH_ENGINES.map(|(name, _)| name).join(", ")
            ),
        }
    }
    let mut engines = Vec::new();
    for (label, backend) in BENCH_ENGINES
        .iter()
        .filter(|(name, _)| wanted.contains(name))
    {
        if *backend == BackendArg::Cpu {
            engines.push(BenchEngine::Present {
                label,
                engine: select(BackendArg::Cpu, Some(1))?,
            });
            let parallel = select(BackendArg::Cpu, threads)?;
            if parallel.workers() > 1 {
                engines.push(BenchEngine::Present {
                    label,
                    engine: parallel,
                });
            }
            continue;
        }
        engines.push(match select(*backend, threads) {
            Ok(engine) => BenchEngine::Present { label, engine },
            Err(e) => BenchEngine::Absent {
                label,
                reason: e.to_string(),
            },
        });
    }
    Ok(engines)
}
