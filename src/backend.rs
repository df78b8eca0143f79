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
             use --backend cpu or auto"
        ),
        BackendArg::Mpi => bail!(
            "the mpi backend is not available in this build (no MPI engine yet): \
             use --backend cpu or auto"
        ),
        BackendArg::SunwaySim => bail!(
            "the sunway-sim backend is not available in this build (no simulator yet): \
             use --backend cpu or auto"
        ),
    }
}
