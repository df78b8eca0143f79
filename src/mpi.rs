//! `--backend mpi` glue: rank 0 prepares the job as the single-process tool does and broadcasts
//! the plan; every rank runs its share on its own engine (paraes-mpi); rank 0 reports and
//! commits or removes the output. Built with `--features mpi`; see `mpi_stub.rs` otherwise.

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::{CpuEngine, Direction, Engine};
use paraes_mpi::{execute, IoStrategy, JobError, Mpi, Plan, RootIo};

use crate::backend;
use crate::cli::{CryptArgs, MpiIoArg, RankEngineArg};
use crate::commands::{self, Prepared};
use crate::output::Output;
use crate::Reported;
use zeroize::Zeroizing;

/// `enc` and `dec` with `--backend mpi`, on every rank.
pub fn crypt(args: &CryptArgs, direction: Direction) -> Result<()> {
    let mpi = Mpi::init().map_err(|e| anyhow!(e))?;
    let engine = rank_engine(args, &mpi);
    let engine_ready = engine
        .as_ref()
        .map(|_| ())
        .map_err(|e| mpi.tag(&format!("{e:#}")));
    outcome(&mpi, mpi.agree(engine_ready))?;
    let engine = engine.expect("agreed above");
    if mpi.is_root() {
        root(args, direction, &mpi, engine.as_ref())
    } else {
        match Plan::broadcast(&mpi, None)? {
            None => Err(Reported.into()),
            Some(plan) => {
                let worked = execute(&mpi, &plan, engine.as_ref(), RootIo::default());
                outcome(&mpi, worked.map(|_| ()))?;
                // Rank 0 commits the output; its outcome is everyone's.
                outcome(&mpi, mpi.agree(Ok(())))
            }
        }
    }
}

/// Rank 0: prepare, broadcast the plan, run, commit.
fn root(args: &CryptArgs, direction: Direction, mpi: &Mpi, engine: &dyn Engine) -> Result<()> {
    let prepared = commands::check_options(args, direction)
        .and_then(|()| commands::prepare(args, direction))
        .and_then(|job| {
            let strategy = strategy(args, &job)?;
            Ok((job, strategy))
        });
    let prepared = prepared.and_then(|(job, strategy)| {
        job.output.watch_for_kill()?;
        Ok((job, strategy))
    });
    let (mut job, strategy) = match prepared {
        Ok(ready) => ready,
        Err(e) => {
            Plan::broadcast(mpi, None)?;
            return Err(e);
        }
    };
    let header_bytes = job
        .container
        .as_ref()
        .map(|(bytes, _)| bytes.clone())
        .unwrap_or_default();
    if direction == Direction::Encrypt && !header_bytes.is_empty() {
        let written = job
            .output
            .writer()
            .write_all(&header_bytes)
            .and_then(|()| job.output.writer().flush())
            .context("writing the output failed");
        if let Err(e) = written {
            Plan::broadcast(mpi, None)?;
            return Err(e);
        }
    }
    let plan = Plan {
        strategy,
        direction,
        mode: job.mode,
        padding: job.padding,
        chunk_size: job.chunk_size,
        iv: job.iv,
        // A container's file secret (never the user's key), or a raw stream's key.
        key: Zeroizing::new(match (&job.container, &job.raw_key) {
            (Some((_, opened)), _) => opened.secret().as_bytes().to_vec(),
            (None, Some(key)) => key.as_bytes().to_vec(),
            (None, None) => Vec::new(),
        }),
        header: header_bytes,
        input: job.input.path().map(std::path::absolute).transpose()?,
        output: job
            .output
            .temporary_path()
            .map(std::path::absolute)
            .transpose()?,
        input_len: job.input.len().unwrap_or(0),
    };
    Plan::broadcast(mpi, Some(&plan))?;
    let root_io = match strategy {
        IoStrategy::Direct => RootIo::default(),
        IoStrategy::Scatter => RootIo {
            input: Some(&mut job.input),
            output: Some(job.output.writer()),
        },
    };
    let worked = execute(mpi, &plan, engine, root_io);
    if let Err(JobError(message)) = worked {
        // Every rank stops here; dropping the output removes the temporary.
        drop(job);
        bail!("{message}");
    }
    let committed = job.output.commit();
    let agreed = mpi.agree(committed.as_ref().map_err(|e| format!("{e:#}")).copied());
    committed?;
    agreed.map_err(|e| anyhow!(e))
}

/// The I/O strategy: `--mpi-io`, or direct for a file-to-file job and scatter for pipes.
fn strategy(args: &CryptArgs, job: &Prepared) -> Result<IoStrategy> {
    if job.input.path().is_none() && launched_by_hydra() {
        bail!(
            "under MPICH's mpiexec, standard input is forwarded without flow control and large \
             streams are cut off (\"process reading stdin too slowly\"): give the input as a file \
             or a named pipe (mkfifo in.pipe; producer > in.pipe & mpiexec ... paraes enc \
             --backend mpi in.pipe ...)"
        );
    }
    let files = job.input.len().is_some() && matches!(job.output, Output::File { .. });
    match args.mpi_io {
        Some(MpiIoArg::Direct) if !files => bail!(
            "--mpi-io direct needs an input file and an output file (-o PATH): \
             use --mpi-io scatter for pipes and devices"
        ),
        Some(MpiIoArg::Direct) => Ok(IoStrategy::Direct),
        Some(MpiIoArg::Scatter) => Ok(IoStrategy::Scatter),
        None if files => Ok(IoStrategy::Direct),
        None => Ok(IoStrategy::Scatter),
    }
}

/// Whether MPICH's Hydra launcher started this process (it sets the PMI-1 wire-up variables).
fn launched_by_hydra() -> bool {
    std::env::var_os("PMI_FD").is_some() || std::env::var_os("PMI_PORT").is_some()
}

/// This rank's engine: `--rank-engine`, with the node's cores shared among its ranks unless
/// `--threads` says otherwise.
fn rank_engine(args: &CryptArgs, mpi: &Mpi) -> Result<Box<dyn Engine>> {
    match args.rank_engine {
        RankEngineArg::Cpu => {
            let threads = args.threads.unwrap_or_else(|| {
                let cores = std::thread::available_parallelism().map_or(1, usize::from);
                (cores / mpi.local_size()).max(1)
            });
            Ok(Box::new(CpuEngine::new(Some(threads))?))
        }
        RankEngineArg::Gpu => {
            // The node's ranks take its GPUs in turn, from --gpu-device on.
            let devices = paraes_gpu::probe().map_or(1, |info| info.device_count.max(1));
            let device = args.engine.gpu_device + mpi.local_rank() % devices;
            Ok(Box::new(backend::gpu(&args.engine, device, args.threads)?))
        }
    }
}

/// A job outcome as this rank's result: rank 0 reports the message, the others exit non-zero
/// without repeating it.
fn outcome(mpi: &Mpi, result: Result<(), JobError>) -> Result<()> {
    match result {
        Ok(()) => Ok(()),
        Err(JobError(message)) if mpi.is_root() => Err(anyhow!(message)),
        Err(_) => Err(Reported.into()),
    }
}
