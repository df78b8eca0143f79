//! The MPI runner in a build without MPI support: one clear error.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::plan::{CryptPlan, FileTask, MpiIo};
use crate::progress::Summary;

/// Refuses: this binary was built without the `mpi` feature.
pub fn run(_plan: &CryptPlan, _file: &FileTask, _io: Option<MpiIo>) -> Result<Option<Summary>> {
    refuse()
}

/// Refuses, as [`run`] does.
pub fn run_many(
    _plan: &CryptPlan,
    _jobs: &[FileTask],
    _refused: &[(PathBuf, String)],
    _io: Option<MpiIo>,
) -> Result<Option<Summary>> {
    refuse()
}

fn refuse() -> Result<Option<Summary>> {
    bail!("not built with MPI support: cargo build --features mpi (needs an MPI library, e.g. Debian's mpich libmpich-dev libclang-dev)")
}
