//! Which engine and which runner a command asked for, checked against each other.

use super::*;

/// `--backend` and the options of each engine and runner, refusing those that would be
/// silently ignored.
pub(super) fn engine_and_runner(
    command: &'static str,
    args: &EngineArgs,
) -> Result<(EngineChoice, Runner)> {
    let backend = args.backend.unwrap_or(BackendArg::Auto);
    let mpi = backend == BackendArg::Mpi;
    let kind = match (backend, args.rank_engine) {
        (BackendArg::Mpi, Some(RankEngineArg::Gpu)) => EngineKind::Gpu,
        (BackendArg::Mpi, _) => EngineKind::Cpu,
        (_, Some(_)) => {
            usage!(
                command,
                "--rank-engine applies only to --backend mpi: drop it, or add --backend mpi"
            )
        }
        // GPU options ask for the GPU: auto must not drop them silently for the CPU.
        (BackendArg::Auto, None) if args.gpu_ctr.is_some() || args.gpu_device.is_some() => {
            EngineKind::Gpu
        }
        (BackendArg::Auto, None) => EngineKind::Auto,
        (BackendArg::Cpu, None) => EngineKind::Cpu,
        (BackendArg::Gpu, None) => EngineKind::Gpu,
        (BackendArg::SunwaySim, None) => EngineKind::SunwaySim,
    };
    if args.mpi_io.is_some() && !mpi {
        usage!(
            command,
            "--mpi-io applies only to --backend mpi: drop it, or add --backend mpi"
        );
    }
    let gpu_given = args.gpu_ctr.is_some() || args.gpu_device.is_some();
    if gpu_given && !matches!(kind, EngineKind::Gpu | EngineKind::Auto) {
        usage!(command, "--gpu-ctr and --gpu-device apply only to the GPU engine (--backend gpu or auto; with mpi, --rank-engine gpu): drop them");
    }
    let sim_given =
        args.sw_variant.is_some() || args.sw_buffering.is_some() || args.sw_cgs.is_some();
    if sim_given && kind != EngineKind::SunwaySim {
        usage!(command, "--sw-variant, --sw-buffering and --sw-cgs apply only to --backend sunway-sim: drop them, or add --backend sunway-sim");
    }
    if args.threads.is_some() && kind == EngineKind::SunwaySim {
        usage!(command, "--threads does not apply to the Sunway simulator (it models its own 64 CPEs per core group; --sw-cgs picks core groups)");
    }
    let defaults = SimConfig::default();
    let engine = EngineChoice {
        kind,
        threads: args.threads.map(|t| t as usize),
        gpu_ctr: args.gpu_ctr.unwrap_or(CtrVariant::Auto),
        gpu_device: args.gpu_device.unwrap_or(0),
        sim: SimConfig::new(
            args.sw_variant.unwrap_or(defaults.variant),
            args.sw_buffering.unwrap_or(defaults.buffering),
            args.sw_cgs.map_or(defaults.cgs, usize::from),
        ),
    };
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
