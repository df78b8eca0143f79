//! The local runner: one process runs a file's chunks on its engine, many in flight at once
//! (read and written at their offsets where the file allows, as streams in order where it
//! does not), or, for the small files of a many-file run, chunk by chunk on the calling
//! thread; with the progress display; and commits the output.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Context, Result};
use paraes_core::pipeline::PipelineError;
use paraes_core::{Direction, Engine};

use crate::plan::{CryptPlan, FileTask};
use crate::progress::{IoMode, Progress, Summary};
use crate::run::prepare::{self, ArmoredInput, Credentials, Prepared};
pub use paraes_files::Spread;
use paraes_files::{Reach, SpreadError};

/// Runs the one file of `plan` in this process.
pub fn run(plan: &CryptPlan, file: &FileTask) -> Result<Summary> {
    let engine = crate::engines::select(&plan.engine)?;
    let spread = Spread::Workers(crate::engines::chunk_workers(&plan.engine, engine.as_ref()));
    let credentials = Credentials::on_first_use(plan);
    let mut job = prepare::prepare(
        plan,
        &credentials,
        file,
        Reach::ThisMachine,
        None,
        ArmoredInput::Decoded,
    )?;
    job.say_warning();
    // After the preparation, which may have asked for a passphrase on the terminal.
    let progress = Progress::start(&plan.ui, job.input.len());
    let done = crypt_prepared(plan, job, engine.as_ref(), spread, &progress, None);
    crate::engines::say_fallback(engine.as_ref());
    let done = done?;
    let seconds = progress.finish();
    if let (Some(modelled), false) = (engine.modelled(), plan.ui.quiet) {
        eprintln!(
            "paraes: {}: {} bytes in {:.6} s simulated ({:.2} Gbps); {:.3} s on this host",
            engine.name(),
            modelled.bytes,
            modelled.seconds,
            modelled.gbps(),
            seconds
        );
    }
    Ok(Summary {
        command: plan.command(),
        bytes_in: done.read,
        bytes_out: Some(done.written),
        seconds,
        engine: engine.name(),
        workers: engine.workers(),
        runner: "local",
        threads_from: crate::engines::threads_from(&plan.engine),
        files: None,
        io: done.io,
        split: engine.split(),
    })
}

/// What one file's run read and wrote.
#[derive(Clone, Copy, Debug, Default)]
pub struct Done {
    /// Bytes read (after a container's header).
    pub read: u64,
    /// Bytes written (with a container's header).
    pub written: u64,
    /// How its chunks were read and written, when many were in flight.
    pub io: Option<IoMode>,
}

/// Runs and commits one prepared file of `plan`, its chunks spread as `spread` says. A run
/// of many chunks in flight moves `progress` on from where it stands; an in-turn run leaves it
/// to the caller. With `directories`, the output's directory is added there to be synced
/// later, instead of synced now.
pub fn crypt_prepared(
    plan: &CryptPlan,
    mut job: Prepared,
    engine: &dyn Engine,
    spread: Spread,
    progress: &Progress,
    directories: Option<&Mutex<BTreeSet<PathBuf>>>,
) -> Result<Done> {
    let mut written = 0u64;
    if plan.direction == Direction::Encrypt {
        written += job
            .stream
            .write_header(job.output.writer())
            .with_context(|| format!("writing {} failed", job.output.name()))?;
    }
    let (read, io) = {
        let Prepared {
            stream,
            input,
            output,
            ..
        } = &mut job;
        let spec = stream.spec(engine, plan.direction);
        let (input_name, output_name) = (input.name(), output.name());
        let start = progress.position();
        let moved = |n| progress.set(start + n);
        let ran = paraes_files::run_stream(&spec, input, output, spread, written, &moved)
            .map_err(|e| name_spread_failure(e, &input_name, &output_name))?;
        written += ran.ran.written;
        (ran.ran.read, ran.io)
    };
    match directories {
        None => job.output.commit()?,
        Some(directories) => {
            if let Some(dir) = job.output.commit_leaving_directory()? {
                directories
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(dir);
            }
        }
    }
    Ok(Done { read, written, io })
}

/// Names the file that failed in a stream's run.
fn name_spread_failure(e: SpreadError, input: &str, output: &str) -> anyhow::Error {
    match e {
        SpreadError::File(e) => e.into(),
        SpreadError::Stream(e) => name_failure(e, input, output),
    }
}

/// Names the file that failed (the pipeline only knows "the input" and "the output").
pub fn name_failure(e: PipelineError, input: &str, output: &str) -> anyhow::Error {
    match e {
        PipelineError::Read(io) => {
            anyhow::Error::new(io).context(format!("reading {input} failed"))
        }
        PipelineError::Write(io) => {
            anyhow::Error::new(io).context(format!("writing {output} failed"))
        }
        other => other.into(),
    }
}
