//! The local runner: one process streams a file through the threaded pipeline on its engine
//! (or, for the small files of a many-file run, through the same chunk steps on the calling
//! thread), with the progress display, and commits the output.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Context, Result};
use paraes_core::pipeline::{self, PipelineError, Segment, Stages};
use paraes_core::{Direction, Engine};

use crate::plan::{CryptPlan, FileTask};
use crate::progress::{Progress, Summary};
use crate::run::prepare::{self, Credentials, Prepared};
use paraes_files::Reach;

/// Runs the one file of `plan` in this process.
pub fn run(plan: &CryptPlan, file: &FileTask) -> Result<Summary> {
    let engine = crate::engines::select(&plan.engine)?;
    let credentials = Credentials::on_first_use(plan);
    let job = prepare::prepare(plan, &credentials, file, Reach::ThisMachine)?;
    // After the preparation, which may have asked for a passphrase on the terminal.
    let progress = Progress::start(&plan.ui, job.input.len());
    let done = crypt_prepared(
        plan,
        job,
        engine.as_ref(),
        Stages::Threaded,
        &progress,
        None,
    )?;
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
        files: None,
    })
}

/// What one file's run read and wrote.
#[derive(Clone, Copy, Debug, Default)]
pub struct Done {
    /// Bytes read (after a container's header).
    pub read: u64,
    /// Bytes written (with a container's header).
    pub written: u64,
}

/// Runs and commits one prepared file of `plan`: threaded stages for large files, in-turn
/// stages for the small files of a many-file run (many of which run at once). A threaded run
/// moves `progress` on from where it stands; an in-turn run leaves it to the caller. With `directories`, the
/// output's directory is added there to be synced later, instead of synced now.
pub fn crypt_prepared(
    plan: &CryptPlan,
    mut job: Prepared,
    engine: &dyn Engine,
    stages: Stages,
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
    let read = {
        let Prepared {
            stream,
            input,
            output,
        } = &mut job;
        let spec = stream.spec(engine, plan.direction);
        let (input_name, output_name) = (input.name(), output.name());
        let mut counted = CountedReader {
            inner: input,
            bytes: 0,
        };
        let start = progress.position();
        let moved = |n| {
            if stages == Stages::Threaded {
                progress.set(start + n)
            }
        };
        written += pipeline::run_segment(
            &spec,
            Segment::WHOLE,
            stages,
            &mut counted,
            &mut output.writer(),
            &moved,
        )
        .map_err(|e| name_failure(e, &input_name, &output_name))?;
        counted.bytes
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
    Ok(Done { read, written })
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

/// A reader that counts what passes through it.
struct CountedReader<'a, R> {
    inner: &'a mut R,
    bytes: u64,
}

impl<R: Read> Read for CountedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}
