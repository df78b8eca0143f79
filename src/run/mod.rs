//! `enc` and `dec`: hands a validated plan to its runner (local pipeline, many files in one
//! process, a range of one container, or MPI ranks) and reports the summary.

pub mod local;
pub mod many;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(not(feature = "mpi"))]
#[path = "mpi_stub.rs"]
pub mod mpi;
pub mod prepare;
pub mod range;

use anyhow::Result;

use crate::plan::{CryptPlan, Files, Runner};

/// Runs an `enc` or `dec` plan.
pub fn run(plan: &CryptPlan) -> Result<()> {
    let summary = match (&plan.files, plan.runner) {
        (Files::One(file), Runner::Local) => match plan.range {
            Some(range) => Some(crate::run::range::run(plan, file, range)?),
            None => Some(crate::run::local::run(plan, file)?),
        },
        (Files::One(file), Runner::Mpi { io }) => crate::run::mpi::run(plan, file, io)?,
        (
            Files::Many {
                jobs,
                output_dir,
                refused,
            },
            Runner::Local,
        ) => Some(crate::run::many::run(
            plan,
            jobs,
            output_dir.as_deref(),
            refused,
        )?),
        (Files::Many { jobs, refused, .. }, Runner::Mpi { io }) => {
            crate::run::mpi::run_many(plan, jobs, refused, io)?
        }
    };
    if let Some(summary) = &summary {
        summary.report(&plan.ui);
    }
    crate::run::many::outcome(summary.and_then(|s| s.files))
}
