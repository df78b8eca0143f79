//! `enc` and `dec`: hands a validated plan to its runner (local pipeline or MPI ranks) and
//! reports the summary.

use anyhow::Result;

use crate::plan::{CryptPlan, Runner};

/// Runs an `enc` or `dec` plan.
pub fn run(plan: &CryptPlan) -> Result<()> {
    let summary = match plan.runner {
        Runner::Local => Some(crate::local::run(plan)?),
        Runner::Mpi { io } => crate::mpi::run(plan, io)?,
    };
    if let Some(summary) = summary {
        summary.report(&plan.ui);
    }
    Ok(())
}
