//! The engine registry: the one place that knows every engine the binary runs. Each entry
//! names the engine (`--backend NAME`, `--rank-engine NAME`, `bench --backend LIST`), says which
//! option groups it reads (so the plan refuses the others by structure, not by a rule per
//! pair), and builds it from the settings. Adding an engine: its crate (implementing
//! `paraes_core::Engine`, with a conformance-kit test), one [`EngineEntry`] in [`ENGINES`], and
//! if it has options of its own, an option group in `cli.rs` with its flag in [`Takes`]
//! (ARCHITECTURE.md).

use anyhow::Result;
use paraes_core::cpus::CpuSource;
use paraes_core::{AesImpl, CpuEngine, Engine, HybridEngine};
use paraes_gpu::{CtrVariant, GpuEngine, GpuOptions};
use paraes_sunway_sim::{SimConfig, SunwaySimEngine};

#[cfg(test)]
mod reference;

/// One engine the binary can run.
pub struct EngineEntry {
    /// Its name on the command line and in `bench` rows.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// The option groups it reads.
    pub takes: Takes,
    /// Whether MPI ranks may run it (`--backend mpi --rank-engine NAME`).
    pub on_ranks: bool,
    /// Whether `bench` measures a one-thread copy beside it (the speedup baseline).
    pub one_thread_baseline: bool,
    /// Builds the engine.
    pub build: fn(&EngineSettings) -> Result<Built>,
    /// The settings of one of `ranks_here` MPI ranks on a node, as rank `local_rank` of them.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub share_node: fn(&mut EngineSettings, local_rank: usize, ranks_here: usize),
}

/// A built engine and what does its work (for `bench` rows: the CPU's AES implementation, the
/// GPU kernel, the simulated variant).
pub struct Built {
    /// The engine.
    pub engine: Box<dyn Engine>,
    /// What does the work.
    pub implementation: String,
}

/// The option groups an engine reads (the others are refused when it is chosen).
#[derive(Clone, Copy, Debug, Default)]
pub struct Takes {
    /// `--threads`.
    pub threads: bool,
    /// `--gpu-ctr`, `--gpu-device`.
    pub gpu: bool,
    /// `--sw-variant`, `--sw-buffering`, `--sw-cgs`.
    pub sim: bool,
}

/// Every engine's settings, with their defaults where the command line said nothing; an engine
/// reads the groups its [`Takes`] names.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Worker threads (`None`: every CPU this process may use, `paraes_core::cpus`).
    pub threads: Option<usize>,
    /// The ranks on this node among which a runner shared its CPUs to set `threads` (MPI;
    /// `None`: `threads` is `--threads` or the default).
    pub node_ranks: Option<usize>,
    /// The CPU's AES implementation (`None`: the fastest this CPU has).
    pub aes_impl: Option<AesImpl>,
    /// The GPU's CTR variant.
    pub gpu_ctr: CtrVariant,
    /// The CUDA device.
    pub gpu_device: usize,
    /// The Sunway simulator's configuration.
    pub sim: SimConfig,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            threads: None,
            node_ranks: None,
            aes_impl: None,
            gpu_ctr: CtrVariant::Auto,
            gpu_device: 0,
            sim: SimConfig::default(),
        }
    }
}

/// The engines, in `bench`'s report order.
pub const ENGINES: &[EngineEntry] = &[
    EngineEntry {
        name: "cpu",
        about: "All CPU cores (AES-NI / VAES)",
        takes: Takes {
            threads: true,
            gpu: false,
            sim: false,
        },
        on_ranks: true,
        one_thread_baseline: true,
        build: |s| {
            let aes_impl = s.aes_impl.unwrap_or_else(AesImpl::detect);
            Ok(Built {
                engine: Box::new(CpuEngine::with_aes_impl(aes_impl, s.threads)?),
                implementation: aes_impl.name().to_string(),
            })
        },
        share_node: |s, _, ranks_here| share_cores(s, ranks_here),
    },
    EngineEntry {
        name: "gpu",
        about: "A CUDA GPU",
        takes: Takes {
            threads: true,
            gpu: true,
            sim: false,
        },
        on_ranks: true,
        one_thread_baseline: false,
        build: |s| {
            let engine = gpu(s)?;
            Ok(Built {
                implementation: engine.options().kernel_variant.to_string(),
                engine: Box::new(engine),
            })
        },
        share_node: |s, local_rank, ranks_here| {
            // The node's ranks take its GPUs in turn, from --gpu-device on (wrapping around),
            // and share its cores for their host threads.
            let devices = paraes_gpu::probe().map_or(1, |info| info.device_count.max(1));
            s.gpu_device = (s.gpu_device + local_rank) % devices;
            share_cores(s, ranks_here);
        },
    },
    EngineEntry {
        name: "hybrid",
        about: "The CPU cores and a CUDA GPU together, each call split by their measured rates",
        takes: Takes {
            threads: true,
            gpu: true,
            sim: false,
        },
        on_ranks: false,
        one_thread_baseline: false,
        build: |s| {
            let aes_impl = s.aes_impl.unwrap_or_else(AesImpl::detect);
            let cpu = CpuEngine::with_aes_impl(aes_impl, s.threads)?;
            let gpu = gpu(s)?;
            let implementation = format!("{} + {}", aes_impl.name(), gpu.options().kernel_variant);
            Ok(Built {
                engine: Box::new(HybridEngine::new(Box::new(cpu), Box::new(gpu))?),
                implementation,
            })
        },
        share_node: |_, _, _| {},
    },
    EngineEntry {
        name: "sunway-sim",
        about: "The Sunway SW26010 simulator",
        takes: Takes {
            threads: false,
            gpu: false,
            sim: true,
        },
        on_ranks: false,
        one_thread_baseline: false,
        build: |s| {
            Ok(Built {
                engine: Box::new(SunwaySimEngine::new(s.sim.clone())?),
                implementation: format!("sunway-sim/{}", s.sim.variant),
            })
        },
        share_node: |_, _, _| {},
    },
];

/// The threads of one of the node's `ranks_here` ranks, unless `--threads` said otherwise: the
/// CPUs the rank was given (its affinity mask, a cgroup quota, `SLURM_CPUS_PER_TASK`), or its
/// share of the machine where every rank sees all of it (`UsableCpus::per_rank`).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
fn share_cores(settings: &mut EngineSettings, ranks_here: usize) {
    if settings.threads.is_none() {
        settings.threads = Some(paraes_core::cpus::usable().per_rank(ranks_here));
        settings.node_ranks = Some(ranks_here);
    }
}

/// Where the thread count of `choice`'s engine comes from, in words (`-v`, `--stats json`,
/// `bench`): `--threads`, or what limits this process's CPUs (`paraes_core::cpus`), shared
/// among the node's ranks where a runner divided the machine; `None` for an engine that takes
/// no `--threads`.
pub fn threads_from(choice: &EngineChoice) -> Option<String> {
    if !choice.entry.takes.threads {
        return None;
    }
    let usable = paraes_core::cpus::usable();
    Some(
        match (choice.settings.threads, choice.settings.node_ranks) {
            (Some(_), Some(ranks)) if usable.source == CpuSource::WholeMachine && ranks > 1 => {
                format!("{}, shared among the node's {ranks} ranks", usable.source)
            }
            (Some(_), None) => "--threads".to_owned(),
            _ => usable.source.to_string(),
        },
    )
}

/// Says in one warning line on standard error that the hybrid engine's GPU failed during the
/// run and the rest ran on the CPU (the output is the same); nothing for any other engine, or
/// when the GPU did not fail.
pub fn say_fallback(engine: &dyn Engine) {
    if let Some(why) = engine.split().and_then(|split| split.gpu_failure) {
        eprintln!(
            "paraes: warning: the GPU failed during the run ({}); the rest ran on the CPU and \
             the output is complete: check the GPU, or use --backend cpu",
            crate::advice::one_line(&why)
        );
    }
}

/// Engines registered by the tests only.
// recipe-example: engine (the test-only engine's registry entry)
#[cfg(test)]
const TEST_ENGINES: &[EngineEntry] = &[reference::ENTRY];
#[cfg(not(test))]
const TEST_ENGINES: &[EngineEntry] = &[];

/// Every registered engine.
pub fn all() -> impl Iterator<Item = &'static EngineEntry> {
    ENGINES.iter().chain(TEST_ENGINES)
}

/// The registered engine called `name`.
pub fn find(name: &str) -> Option<&'static EngineEntry> {
    all().find(|entry| entry.name == name)
}

/// `--backend`'s values: auto, every engine, and mpi (a runner), each with its help line.
pub fn backend_values() -> clap::builder::PossibleValuesParser {
    let mut values = vec![clap::builder::PossibleValue::new("auto")
        .help("The engine measured fastest: the CPU (the GPU when a GPU option is given)")];
    values.extend(all().map(|e| clap::builder::PossibleValue::new(e.name).help(e.about)));
    values.push(
        clap::builder::PossibleValue::new("mpi")
            .help("MPI ranks (a runner: each rank runs --rank-engine)"),
    );
    clap::builder::PossibleValuesParser::new(values)
}

/// `--rank-engine`'s values: the engines MPI ranks may run.
pub fn rank_engine_values() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        all()
            .filter(|e| e.on_ranks)
            .map(|e| clap::builder::PossibleValue::new(e.name).help(e.about)),
    )
}

/// The engine a plan chose, with its settings.
#[derive(Clone, Debug)]
pub struct EngineChoice {
    /// The registered engine.
    pub entry: &'static EngineEntry,
    /// Its settings.
    pub settings: EngineSettings,
}

/// What `--backend auto` (the default) runs: the engine measured fastest. On the one GPU host
/// measured (an H200 beside 16 Xeon cores with VAES-512, docs/gpu-results/2026-11-26-h200), the
/// CPU engine beat the GPU at every size: in memory up to 4 GiB (46-97 GB/s against at most
/// 23 GB/s end to end over PCIe) and through `paraes enc` up to 8 GiB (even at 8 GiB). The GPU
/// runs when asked for (`--backend gpu`, or any GPU option). The hybrid (`--backend hybrid`)
/// is not chosen by auto: it has not been measured on a GPU against the faster engine alone
/// (the bar is at most 5% slower, 1 MiB to 4 GiB, every thread count; docs/GPU.md).
pub const AUTO: &str = "cpu";

impl std::fmt::Debug for EngineEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The workers of a local run's chunks in flight on `engine`, the engine `choice` built: one
/// per engine thread where the engine's work is spread over the CPU's threads (`--threads`:
/// the CPU engine, the GPU engine's host threads), so `--threads` bounds a run's memory too
/// (README: 64 MiB + 8 MiB per worker); at least two ([`paraes_files::chunk_workers`], the
/// rule the Python package follows too).
pub fn chunk_workers(choice: &EngineChoice, engine: &dyn Engine) -> usize {
    let threads = if choice.entry.takes.threads {
        engine.workers()
    } else {
        1
    };
    paraes_files::chunk_workers(threads)
}

/// The engine of `choice`.
pub fn select(choice: &EngineChoice) -> Result<Box<dyn Engine>> {
    Ok((choice.entry.build)(&choice.settings)?.engine)
}

/// The GPU engine of `settings`.
fn gpu(settings: &EngineSettings) -> Result<GpuEngine, paraes_gpu::GpuError> {
    GpuEngine::new(GpuOptions {
        device: settings.gpu_device,
        ctr_variant: settings.gpu_ctr,
        host_threads: settings.threads,
        ..GpuOptions::default()
    })
}

/// An engine for `paraes bench`: present (measurable) or absent from this build.
pub enum BenchEngine {
    /// An engine that can be measured; `label` is its row name (`cpu`, `gpu`, ...).
    Present {
        /// Row label.
        label: &'static str,
        /// What does the work (the rows' `implementation`).
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

/// The engines for `bench`: each of `names` built from `settings` by the registry, as a job's
/// engine is. An engine with a one-thread baseline gives, for each of `cpu_impls` (the fastest
/// of this CPU when empty), a one-thread engine and one with `settings.threads` threads (all
/// cores by default) when that is more than one. `mpi` is a runner: absent, with the reason.
pub fn bench_engines(
    names: &[&str],
    settings: &EngineSettings,
    cpu_impls: &[AesImpl],
) -> Result<Vec<BenchEngine>> {
    let default_impl = [AesImpl::detect()];
    let cpu_impls = if cpu_impls.is_empty() {
        &default_impl[..]
    } else {
        cpu_impls
    };
    let mut engines = Vec::new();
    for name in bench_names().filter(|name| names.contains(name)) {
        let Some(entry) = find(name) else {
            debug_assert_eq!(name, MPI, "bench names are registered engines and mpi");
            engines.push(BenchEngine::Absent {
                label: MPI,
                reason: "mpi is a runner, not an in-memory engine: it runs whole files across \
                         ranks; measure it with benches/mpi-scaling.sh"
                    .to_owned(),
            });
            continue;
        };
        let variants: Vec<EngineSettings> = if entry.one_thread_baseline {
            cpu_impls
                .iter()
                .flat_map(|&imp| {
                    let with = |threads| EngineSettings {
                        threads,
                        aes_impl: Some(imp),
                        ..settings.clone()
                    };
                    [with(Some(1)), with(settings.threads)]
                })
                .collect()
        } else {
            vec![settings.clone()]
        };
        for (i, variant) in variants.iter().enumerate() {
            match (entry.build)(variant) {
                // The all-cores copy of a one-thread baseline is measured only if it has more.
                Ok(built)
                    if entry.one_thread_baseline && i % 2 == 1 && built.engine.workers() <= 1 => {}
                Ok(built) => engines.push(BenchEngine::Present {
                    label: entry.name,
                    implementation: built.implementation,
                    engine: built.engine,
                }),
                Err(e) => engines.push(BenchEngine::Absent {
                    label: entry.name,
                    reason: format!("{e:#}"),
                }),
            }
        }
    }
    Ok(engines)
}

/// The names `bench --backend` takes, in report order: the engines MPI ranks can run, then
/// mpi (a runner, listed as absent), then the others.
fn bench_names() -> impl Iterator<Item = &'static str> {
    let ranks = all().filter(|e| e.on_ranks).map(|e| e.name);
    let others = all().filter(|e| !e.on_ranks).map(|e| e.name);
    ranks.chain([MPI]).chain(others)
}

/// `--backend mpi`: the runner, not an engine.
const MPI: &str = "mpi";

/// The engine names of a `bench --backend` list (comma-separated, or `all`), in report order.
pub fn bench_engine_names(list: &str) -> Result<Vec<&'static str>> {
    let mut wanted: Vec<&'static str> = Vec::new();
    for item in list.split(',').map(|s| s.trim().to_ascii_lowercase()) {
        if item == "all" {
            wanted.extend(bench_names());
            continue;
        }
        match bench_names().find(|name| *name == item) {
            Some(name) => wanted.push(name),
            None => {
                return Err(anyhow::Error::new(crate::usage::UsageError {
                    message: format!(
                        "unknown engine '{item}' in --backend: choose from {} or all",
                        bench_names().collect::<Vec<_>>().join(", ")
                    ),
                    command: "bench",
                }))
            }
        }
    }
    Ok(wanted)
}
