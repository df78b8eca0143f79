//! The local runner: one process streams the job through the threaded pipeline on its engine,
//! with the progress display, and commits the output.

use std::io::Read;

use anyhow::{Context, Result};
use paraes_core::pipeline::{self, PipelineError};
use paraes_core::Direction;

use crate::job::{self, Prepared};
use crate::output::Reach;
use crate::plan::CryptPlan;
use crate::progress::{Progress, Summary};

/// Runs `plan` in this process.
pub fn run(plan: &CryptPlan) -> Result<Summary> {
    let engine = crate::engines::select(&plan.engine)?;
    let mut job = job::prepare(plan, Reach::ThisMachine)?;
    let mut written = 0u64;
    if let (Some(header), Direction::Encrypt) = (job.stream.header(), plan.direction) {
        job.output
            .writer()
            .write_all(header)
            .with_context(|| format!("writing {} failed", job.output.name()))?;
        written += header.len() as u64;
    }
    let progress = Progress::start(&plan.ui, job.input.len());
    let read = {
        let Prepared {
            stream,
            input,
            output,
        } = &mut job;
        let spec = stream.spec(engine.as_ref(), plan.direction);
        let (input_name, output_name) = (input.name(), output.name());
        let mut counted = CountedReader {
            inner: input,
            bytes: 0,
        };
        let result = pipeline::run(&spec, &mut counted, &mut output.writer(), &|n| {
            progress.set(n)
        });
        written += name_failure(result, input_name, output_name)?;
        counted.bytes
    };
    let seconds = progress.finish();
    job.output.commit()?;
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
        bytes_in: read,
        bytes_out: Some(written),
        seconds,
        engine: engine.name(),
        workers: engine.workers(),
        runner: "local",
    })
}

/// Names the file that failed (the pipeline only knows "the input" and "the output").
fn name_failure(result: Result<u64, PipelineError>, input: String, output: String) -> Result<u64> {
    result.map_err(|e| match e {
        PipelineError::Read(io) => {
            anyhow::Error::new(io).context(format!("reading {input} failed"))
        }
        PipelineError::Write(io) => {
            anyhow::Error::new(io).context(format!("writing {output} failed"))
        }
        other => other.into(),
    })
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
