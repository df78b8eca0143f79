//! The MPI runner in a build without MPI support: one clear error.

use anyhow::{bail, Result};

use crate::plan::{CryptPlan, MpiIo};
use crate::progress::Summary;

/// Refuses: this binary was built without the `mpi` feature.
pub fn run(_plan: &CryptPlan, _io: Option<MpiIo>) -> Result<Option<Summary>> {
    bail!("not built with MPI support: cargo build --features mpi (needs an MPI library, e.g. Debian's mpich libmpich-dev libclang-dev)")
}
