//! The one place where `--backend` becomes an engine.

use anyhow::{bail, Result};
use paraes_core::{CpuEngine, Engine};
use paraes_gpu::{GpuEngine, GpuError, GpuOptions};
use paraes_sunway_sim::{SimConfig, SunwaySimEngine};

use crate::cli::{BackendArg, EngineArgs};

/// The engine for `--backend` with `threads` CPU threads (`None`: all cores) and the other
/// engines' `options`.
///
/// `auto` takes the GPU when this machine has a usable one and the CPU otherwise, silently
/// when there is no driver or device (a GPU that is present but fails to start is reported in a
/// warning, then the CPU is used).
pub fn select(
    backend: BackendArg,
    threads: Option<usize>,
    options: &EngineArgs,
) -> Result<Box<dyn Engine>> {
    match backend {
        BackendArg::Cpu => Ok(Box::new(CpuEngine::new(threads)?)),
        BackendArg::Auto => match gpu(options, options.gpu_device, threads) {
            Ok(engine) => Ok(Box::new(engine)),
            Err(e) => {
                if !e.is_unavailable() {
                    eprintln!("paraes: warning: the GPU cannot be used ({e}): using the CPU");
                }
                Ok(Box::new(CpuEngine::new(threads)?))
            }
        },
        BackendArg::Gpu => Ok(Box::new(gpu(options, options.gpu_device, threads)?)),
        BackendArg::Mpi => bail!(
            "mpi is not an in-memory engine: it runs whole files across ranks (mpiexec -n N \
             paraes enc --backend mpi ...); measure it with benches/mpi-scaling.sh"
        ),
        BackendArg::SunwaySim => {
            let config = SimConfig::new(
                options.sw_variant,
                options.sw_buffering,
                usize::from(options.sw_cgs),
            );
            Ok(Box::new(SunwaySimEngine::new(config)?))
        }
    }
}

/// The GPU engine on CUDA device `device`, with `threads` host threads for its CPU-side work.
pub fn gpu(
    options: &EngineArgs,
    device: usize,
    threads: Option<usize>,
) -> Result<GpuEngine, GpuError> {
    GpuEngine::new(GpuOptions {
        device,
        ctr_variant: options.gpu_ctr,
        host_threads: threads,
        ..GpuOptions::default()
    })
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
pub fn bench_engines(
    list: &str,
    threads: Option<usize>,
    options: &EngineArgs,
) -> Result<Vec<BenchEngine>> {
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
                engine: select(BackendArg::Cpu, Some(1), options)?,
            });
            let parallel = select(BackendArg::Cpu, threads, options)?;
            if parallel.workers() > 1 {
                engines.push(BenchEngine::Present {
                    label,
                    engine: parallel,
                });
            }
            continue;
        }
        engines.push(match select(*backend, threads, options) {
            Ok(engine) => BenchEngine::Present { label, engine },
            Err(e) => BenchEngine::Absent {
                label,
                reason: e.to_string(),
            },
        });
    }
    Ok(engines)
}
