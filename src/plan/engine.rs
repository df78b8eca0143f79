//! Which engine and which runner a command asked for: the engine from the registry
//! (`engines/mod.rs`), its settings from the option groups it reads, and a usage error for a
//! group given to an engine that does not read it (the registry's [`Takes`] says which).

use anyhow::Result;
use paraes_sunway_sim::SimConfig;

use super::{MpiIo, Runner};
use crate::cli::{EngineArgs, GpuArgs, MpiIoArg, SimArgs};
use crate::engines::{self, EngineChoice, EngineEntry, EngineSettings, Takes};

/// Whether an engine reads an option group (a field of [`Takes`]).
type ReadsGroup = fn(&Takes) -> bool;

/// `--backend` and the options of each engine and runner, refusing those that would be
/// silently ignored.
pub(super) fn engine_and_runner(
    command: &'static str,
    args: &EngineArgs,
) -> Result<(EngineChoice, Runner)> {
    let backend = args.backend.as_deref().unwrap_or("auto");
    let mpi = backend == "mpi";
    if args.rank_engine.is_some() && !mpi {
        usage!(
            command,
            "--rank-engine applies only to --backend mpi: drop it, or add --backend mpi"
        );
    }
    if args.mpi_io.is_some() && !mpi {
        usage!(
            command,
            "--mpi-io applies only to --backend mpi: drop it, or add --backend mpi"
        );
    }
    let settings = settings(args.threads, &args.gpu, &args.sim);
    let entry = match backend {
        "mpi" => engine_named(args.rank_engine.as_deref().unwrap_or("cpu")),
        // GPU options ask for the GPU: auto must not drop them silently for the CPU.
        "auto" if args.gpu.given() => engine_named("gpu"),
        "auto" => engine_named(engines::AUTO),
        name => engine_named(name),
    };
    let takes = entry.takes;
    let refused: [(bool, &str, ReadsGroup); 3] = [
        (
            args.gpu.given() && !takes.gpu,
            GpuArgs::FLAGS,
            |t: &Takes| t.gpu,
        ),
        (
            args.sim.given() && !takes.sim,
            SimArgs::FLAGS,
            |t: &Takes| t.sim,
        ),
        (
            args.threads.is_some() && !takes.threads,
            "--threads",
            |t: &Takes| t.threads,
        ),
    ];
    if let Some((_, flags, reads)) = refused.into_iter().find(|(given, ..)| *given) {
        // Under mpi the engine is each rank's: name the rank engines that read the group.
        let readers: Vec<String> = engines::all()
            .filter(|e| reads(&e.takes) && (!mpi || e.on_ranks))
            .map(|e| e.name.to_owned())
            .collect();
        let chosen = match (mpi, backend) {
            (true, _) => format!("--rank-engine {}", entry.name),
            (_, "auto") => format!("--backend auto (the {} engine)", entry.name),
            _ => format!("--backend {}", entry.name),
        };
        let (verb, pronoun) = if flags.contains(' ') {
            ("apply", "them")
        } else {
            ("applies", "it")
        };
        match (mpi, readers.is_empty()) {
            (_, true) => usage!(
                command,
                "{flags} {verb} to none of the engines MPI ranks run: drop {pronoun}"
            ),
            (true, false) => usage!(
                command,
                "{flags} {verb} only to --backend mpi --rank-engine {}, not to {chosen}: drop {pronoun}",
                readers.join(" or ")
            ),
            (false, false) => usage!(
                command,
                "{flags} {verb} only to --backend {}, not to {chosen}: drop {pronoun}",
                readers.join(" or ")
            ),
        }
    }
    let engine = EngineChoice { entry, settings };
    let runner = if mpi {
        Runner::Mpi {
            io: args.mpi_io.map(|io| match io {
                MpiIoArg::Direct => MpiIo::Direct,
                MpiIoArg::Scatter => MpiIo::Scatter,
            }),
        }
    } else {
        Runner::Local
    };
    Ok((engine, runner))
}

/// The registered engine `name` (clap admits only registered names).
fn engine_named(name: &str) -> &'static EngineEntry {
    engines::find(name).expect("clap admits registered engine names only")
}

/// Every engine's settings from the option groups (defaults where a group says nothing), as
/// `enc`, `dec` and `bench` alike build them.
pub fn settings(threads: Option<u32>, gpu: &GpuArgs, sim: &SimArgs) -> EngineSettings {
    let defaults = EngineSettings::default();
    EngineSettings {
        threads: threads.map(|t| t as usize),
        node_ranks: None,
        aes_impl: None,
        gpu_ctr: gpu.gpu_ctr.unwrap_or(defaults.gpu_ctr),
        gpu_device: gpu.gpu_device.unwrap_or(defaults.gpu_device),
        sim: SimConfig::new(
            sim.sw_variant.unwrap_or(defaults.sim.variant),
            sim.sw_buffering.unwrap_or(defaults.sim.buffering),
            sim.sw_cgs.map_or(defaults.sim.cgs, usize::from),
        ),
    }
}
