//! `verify`: checks that containers are whole and authentic (header tag, every chunk tag, the
//! last-chunk flag, ECB's padding) without decrypting their bodies and without writing
//! anything; many files run as a many-file `enc` does. Prints `FILE: OK` per authentic file.

use anyhow::{anyhow, Result};
use paraes_core::container::{self, ContainerError, Unlock, UnverifiedHeader};
use paraes_core::{CpuEngine, Engine};

use crate::batch;
use crate::job::warner;
use crate::output::Input;
use crate::plan::{Ui, VerifyPlan};
use crate::progress::Progress;

/// Runs `verify`.
pub fn run(plan: &VerifyPlan) -> Result<()> {
    // The last chunk's padding check decrypts one chunk at most: one thread is plenty.
    let engine = CpuEngine::new(Some(1))?;
    let unlock = plan.keys.unlock(&warner(plan.quiet))?;
    let ui = Ui {
        quiet: plan.quiet,
        ..Ui::default()
    };
    for (path, why) in &plan.unlisted {
        eprintln!(
            "paraes: error: {}: {}",
            crate::advice::one_line(&path.display().to_string()),
            crate::advice::one_line(why)
        );
    }
    let progress = Progress::start_many(&ui, batch::total_size(&plan.files), plan.files.len());
    let mut count =
        batch::for_each_file(&plan.files, batch::SMALL_FILE_WORKERS, &progress, |i, _| {
            let path = &plan.files[i];
            let bytes = verify_file(path, &unlock, &engine)?;
            if !plan.quiet {
                progress.println_out(&format!(
                    "{}: OK",
                    crate::advice::one_line(&path.display().to_string())
                ));
            }
            Ok(bytes)
        });
    progress.finish();
    count.failed += plan.unlisted.len();
    batch::outcome(Some(count))
}

/// Checks one container; returns its size.
fn verify_file(path: &std::path::Path, unlock: &Unlock, engine: &dyn Engine) -> Result<u64> {
    let mut input = Input::open(Some(path))?;
    let size = input.len().unwrap_or(0);
    let header = UnverifiedHeader::read(&mut input).map_err(|e| match e {
        ContainerError::NotAContainer => anyhow!("not a paraes container (no paraes header)"),
        other => other.into(),
    })?;
    let opened = header.open(unlock)?;
    container::verify(&opened, engine, &mut input)?;
    Ok(size)
}
