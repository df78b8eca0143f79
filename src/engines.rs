//! The one place where an engine choice becomes an engine: for a job (`EngineChoice` of the
//! plan) and for `paraes bench` (a list of engine names).

use anyhow::Result;
use paraes_core::{AesImpl, CpuEngine, Engine};
use paraes_gpu::{GpuEngine, GpuError, GpuOptions};
use paraes_sunway_sim::{SimConfig, SunwaySimEngine};

use crate::cli::BenchEngineArgs;
use crate::plan::{EngineChoice, EngineKind, UsageError};

/// The engine of `choice`.
///
/// `auto` takes the GPU when this machine has a usable one and the CPU otherwise, silently
/// when there is no driver or device (a GPU that is present but fails to start is reported in a
/// warning, then the CPU is used).
pub fn select(choice: &EngineChoice) -> Result<Box<dyn Engine>> {
    match choice.kind {
        EngineKind::Cpu => Ok(Box::new(CpuEngine::new(choice.threads)?)),
        EngineKind::Auto => match gpu(choice, choice.gpu_device) {
            Ok(engine) => Ok(Box::new(engine)),
            Err(e) => {
                if !e.is_unavailable() {
                    eprintln!("paraes: warning: the GPU cannot be used ({e}): using the CPU");
                }
                Ok(Box::new(CpuEngine::new(choice.threads)?))
            }
        },
        EngineKind::Gpu => Ok(Box::new(gpu(choice, choice.gpu_device)?)),
        EngineKind::SunwaySim => Ok(Box::new(SunwaySimEngine::new(choice.sim.clone())?)),
    }
}

/// The GPU engine of `choice` on CUDA device `device`.
pub fn gpu(choice: &EngineChoice, device: usize) -> Result<GpuEngine, GpuError> {
    GpuEngine::new(GpuOptions {
        device,
        ctr_variant: choice.gpu_ctr,
        host_threads: choice.threads,
        ..GpuOptions::default()
    })
}

/// An engine for `paraes bench`: present (measurable) or absent from this build.
pub enum BenchEngine {
    /// An engine that can be measured; `label` is its row name (`cpu`, `gpu`, ...).
    Present {
        /// Row label.
        label: &'static str,
        /// What does the work (the rows' `implementation`): the CPU AES implementation, the
        /// GPU kernel variant, `sunway-sim/<variant>`.
        implementation: String,
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

/// The engines `paraes bench` knows, in report order (`None`: not an in-memory engine).
const BENCH_ENGINES: [(&str, Option<EngineKind>); 4] = [
    ("cpu", Some(EngineKind::Cpu)),
    ("gpu", Some(EngineKind::Gpu)),
    ("mpi", None),
    ("sunway-sim", Some(EngineKind::SunwaySim)),
];

/// The engines for a `bench --backend` list (comma-separated names, or `all`). `cpu` gives,
/// for each of `cpu_impls` (the fastest of this CPU when empty), two engines: one thread (the
/// speedup baseline) and `threads` threads (all cores by default) when that is more than one.
/// The others are whatever [`select`] gives, or absent with its reason.
pub fn bench_engines(
    list: &str,
    threads: Option<usize>,
    cpu_impls: &[AesImpl],
    options: &BenchEngineArgs,
) -> Result<Vec<BenchEngine>> {
    let wanted = bench_engine_names(list)?;
    let choice = |kind, threads| EngineChoice {
        kind,
        threads,
        gpu_ctr: options.gpu_ctr,
        gpu_device: options.gpu_device,
        sim: SimConfig::new(
            options.sw_variant,
            options.sw_buffering,
            usize::from(options.sw_cgs),
        ),
    };
    let default_impl = [AesImpl::detect()];
    let cpu_impls = if cpu_impls.is_empty() {
        &default_impl[..]
    } else {
        cpu_impls
    };
    let mut engines = Vec::new();
    for (label, kind) in BENCH_ENGINES
        .iter()
        .filter(|(name, _)| wanted.contains(name))
    {
        let Some(kind) = *kind else {
            engines.push(BenchEngine::Absent {
                label,
                reason: "mpi is a runner, not an in-memory engine: it runs whole files across \
                         ranks; measure it with benches/mpi-scaling.sh"
                    .to_owned(),
            });
            continue;
        };
        match kind {
            EngineKind::Cpu => {
                for &imp in cpu_impls {
                    let implementation = imp.name().to_string();
                    engines.push(BenchEngine::Present {
                        label,
                        implementation: implementation.clone(),
                        engine: Box::new(CpuEngine::with_aes_impl(imp, Some(1))?),
                    });
                    let parallel = CpuEngine::with_aes_impl(imp, threads)?;
                    if parallel.workers() > 1 {
                        engines.push(BenchEngine::Present {
                            label,
                            implementation,
                            engine: Box::new(parallel),
                        });
                    }
                }
            }
            EngineKind::Gpu => {
                engines.push(match gpu(&choice(kind, threads), options.gpu_device) {
                    Ok(engine) => BenchEngine::Present {
                        label,
                        implementation: engine.options().kernel_variant.to_string(),
                        engine: Box::new(engine),
                    },
                    Err(e) => BenchEngine::Absent {
                        label,
                        reason: e.to_string(),
                    },
                })
            }
            _ => engines.push(match select(&choice(kind, threads)) {
                Ok(engine) => BenchEngine::Present {
                    label,
                    implementation: format!("{label}/{}", options.sw_variant),
                    engine,
                },
                Err(e) => BenchEngine::Absent {
                    label,
                    reason: e.to_string(),
                },
            }),
        }
    }
    Ok(engines)
}

/// The engine names of a `bench --backend` list (comma-separated, or `all`), in report order.
pub fn bench_engine_names(list: &str) -> Result<Vec<&'static str>> {
    let mut wanted: Vec<&'static str> = Vec::new();
    for item in list.split(',').map(|s| s.trim().to_ascii_lowercase()) {
        if item == "all" {
            wanted.extend(BENCH_ENGINES.map(|(name, _)| name));
            continue;
        }
        match BENCH_ENGINES.iter().find(|(name, _)| *name == item) {
            Some((name, _)) => wanted.push(name),
            None => {
                return Err(anyhow::Error::new(UsageError {
                    message: format!(
                        "unknown engine '{item}' in --backend: choose from {} or all",
                        BENCH_ENGINES.map(|(name, _)| name).join(", ")
                    ),
                    command: "bench",
                }))
            }
        }
    }
    Ok(wanted)
}
