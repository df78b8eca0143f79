//! The local runner: one process runs a file's chunks on its engine, many in flight at once
//! (read and written at their offsets where the file allows, as streams in order where it
//! does not), or, for the small files of a many-file run, chunk by chunk on the calling
//! thread; with the progress display; and commits the output.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Context, Result};
use paraes_core::pipeline::{self, PipelineError, Segment, Sink, Source, Stages, Workers};
use paraes_core::{Direction, Engine};

use crate::plan::{CryptPlan, FileTask};
use crate::progress::{IoMode, Progress, Summary};
use crate::run::prepare::{self, Credentials, Prepared};
use paraes_files::{Input, Output, Reach};

/// Runs the one file of `plan` in this process.
pub fn run(plan: &CryptPlan, file: &FileTask) -> Result<Summary> {
    let engine = crate::engines::select(&plan.engine)?;
    let spread = Spread::Workers(crate::engines::chunk_workers(&plan.engine, engine.as_ref()));
    let credentials = Credentials::on_first_use(plan);
    let mut job = prepare::prepare(plan, &credentials, file, Reach::ThisMachine)?;
    job.say_warning();
    // After the preparation, which may have asked for a passphrase on the terminal.
    let progress = Progress::start(&plan.ui, job.input.len());
    let done = crypt_prepared(plan, job, engine.as_ref(), spread, &progress, None)?;
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

/// How a prepared file's chunks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Many in flight on this many workers (a file alone, or a large file of a many-file run).
    Workers(usize),
    /// One after another on the calling thread (the small files of a many-file run, many of
    /// which run at once).
    InTurn,
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
        let named = |e| name_failure(e, &input_name, &output_name);
        match spread {
            Spread::Workers(workers) => {
                let start = progress.position();
                let moved = |n| progress.set(start + n);
                let (ran, io) = spread_chunks(&spec, input, output, workers, written, &moved)?;
                written += ran.written;
                (ran.read, Some(io))
            }
            Spread::InTurn => {
                let mut counted = CountedReader {
                    inner: input,
                    bytes: 0,
                };
                written += pipeline::run_segment(
                    &spec,
                    Segment::WHOLE,
                    Stages::InTurn,
                    &mut counted,
                    &mut output.writer(),
                    &|_| {},
                )
                .map_err(named)?;
                (counted.bytes, None)
            }
        }
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

/// Runs `spec` from `input` to `output` with many chunks in flight on `workers` workers: read
/// at offsets where the input is a regular file paraes opened, written at offsets (its room
/// reserved first) where the output is a file paraes created, from byte `header_len` (what
/// was written before the stream); a pipe at either end widened. Standard input and output
/// are streams even when they are regular files (their offsets are the shell's).
fn spread_chunks(
    spec: &pipeline::StreamSpec<'_>,
    input: &mut Input,
    output: &mut Output,
    workers: usize,
    header_len: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(pipeline::Ran, IoMode)> {
    let (input_name, output_name) = (input.name(), output.name());
    let named = |e| name_failure(e, &input_name, &output_name);
    let positioned = input
        .at_offsets()
        .map(|(file, at, len)| (file.try_clone(), at, len));
    let mode = IoMode {
        read_at_offsets: positioned.is_some(),
        write_at_offsets: output.at_offsets().is_some(),
        workers,
    };
    if let Some(stdin) = input.stdin() {
        paraes_files::widen_pipe(stdin);
    }
    if let Output::Stdout(stdout) = &*output {
        paraes_files::widen_pipe(stdout);
    }
    let input_file;
    let source = match positioned {
        Some((file, at, len)) => {
            input_file = file.with_context(|| format!("reading {input_name} failed"))?;
            if let Some(out_len) = spec.output_len(len) {
                output.reserve(header_len + out_len)?;
            }
            Source::At {
                file: &input_file,
                at,
                len,
            }
        }
        None => Source::Stream(input),
    };
    let output_file = output
        .at_offsets()
        .map(|file| file.try_clone())
        .transpose()?;
    let sink = match &output_file {
        Some(file) => Sink::At {
            file,
            at: header_len,
        },
        None => Sink::Stream(output.writer()),
    };
    let ran = pipeline::run_parallel(spec, source, sink, Workers::new(workers), progress)
        .map_err(named)?;
    Ok((ran, mode))
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
