//! `--backend mpi` in a build without MPI support: one clear error.

use anyhow::{bail, Result};
use paraes_core::Direction;

use crate::cli::CryptArgs;

/// Refuses: this binary was built without the `mpi` feature.
pub fn crypt(_args: &CryptArgs, _direction: Direction) -> Result<()> {
    bail!("not built with MPI support: cargo build --features mpi (needs an MPI library, e.g. Debian's mpich libmpich-dev libclang-dev)")
}
