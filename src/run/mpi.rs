//! The MPI runner (`--backend mpi`): rank 0 prepares the job as the local runner does and
//! broadcasts the plan; every rank runs its share on its own engine (paraes-mpi); rank 0
//! commits the output. Built with `--features mpi`; see `mpi_stub.rs` otherwise.

use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use paraes_core::{Direction, Engine};
use paraes_mpi::{execute, Assignment, IoStrategy, JobError, Mpi, RootIo};

use crate::advice::{error_line, one_line};
use crate::engines::EngineChoice;
use crate::plan::{CryptPlan, FileTask, Files, MpiIo, OutputTarget};
use crate::progress::{FileCount, Summary};
use crate::run::prepare::{self, ArmoredInput, Credentials, Prepared, Reported};
use paraes_files::Reach;

/// Runs the one file of `plan` on every rank; rank 0 returns the summary.
pub fn run(plan: &CryptPlan, file: &FileTask, io: Option<MpiIo>) -> Result<Option<Summary>> {
    let mpi = start()?;
    let ready = stdin_for_rank_0_alone(&mpi, file).and_then(|()| ready_engine(plan, &mpi));
    let Some(engine) = reported_by_root(&mpi, ready)? else {
        return Ok(None);
    };
    let workers = rank_workers(plan, &mpi, engine.as_ref());
    let credentials = Credentials::on_first_use(plan);
    if mpi.is_root() {
        root(plan, &credentials, file, io, &mpi, engine.as_ref(), workers).map(Some)
    } else {
        reported_by_root(&mpi, other_rank(&mpi, engine.as_ref(), workers)).map(|_| None)
    }
}

/// MPI started; rank 0 alone speaks for the job, on signals too ([`crate::signals::silence`]).
fn start() -> Result<Mpi> {
    let mpi = Mpi::init().map_err(|e| anyhow!(e))?;
    if !mpi.is_root() {
        crate::signals::silence();
    }
    Ok(mpi)
}

/// A failure every rank agreed on is rank 0's to report and to exit non-zero for; another rank
/// that would only repeat it exits 0 (`Ok(None)`). Open MPI's `mpirun` stops every rank as
/// soon as one exits non-zero, which could stop rank 0 before it has printed the failure.
fn reported_by_root<T>(mpi: &Mpi, result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if !mpi.is_root() && e.is::<Reported>() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Runs every file of a many-file `plan` in turn on every rank: rank 0 goes through its list
/// and each file is one job of all ranks, as [`run`] runs one (the other ranks learn how many
/// jobs come from rank 0, so lists that differ between ranks cannot put them out of step). A
/// file that fails is reported by rank 0 and the others go on. Rank 0 returns the summary.
pub fn run_many(
    plan: &CryptPlan,
    jobs: &[FileTask],
    refused: &[(PathBuf, String)],
    io: Option<MpiIo>,
) -> Result<Option<Summary>> {
    let mpi = start()?;
    let Some(engine) = reported_by_root(&mpi, ready_engine(plan, &mpi))? else {
        return Ok(None);
    };
    let workers = rank_workers(plan, &mpi, engine.as_ref());
    if !mpi.is_root() {
        for _ in 0..mpi.sum(0) {
            // Rank 0 reports failures; this rank goes on to the next file.
            let _ = other_rank(&mpi, engine.as_ref(), workers);
        }
        return Ok(None);
    }
    // Keys are read once, before any job starts: if they cannot be, no job starts.
    let credentials = Credentials::read_now(plan);
    let jobs = if credentials.is_ok() { jobs } else { &[] };
    mpi.sum(jobs.len() as u64);
    let credentials = credentials?;
    let mut count = FileCount {
        done: 0,
        failed: refused.len(),
    };
    let (mut bytes_in, mut seconds) = (0, 0.0);
    for (path, why) in refused {
        eprintln!(
            "paraes: error: {}: {}",
            one_line(&path.display().to_string()),
            one_line(why)
        );
    }
    for file in jobs {
        let worked = root(plan, &credentials, file, io, &mpi, engine.as_ref(), workers);
        match worked {
            Ok(summary) => {
                count.done += 1;
                bytes_in += summary.bytes_in;
                seconds += summary.seconds;
            }
            Err(e) => {
                count.failed += 1;
                let name = file.input.as_deref().unwrap_or(Path::new("-"));
                eprintln!(
                    "paraes: error: {}: {}",
                    one_line(&name.display().to_string()),
                    error_line(&e)
                );
            }
        }
    }
    Ok(Some(Summary {
        command: plan.command(),
        bytes_in,
        bytes_out: None,
        seconds,
        engine: engine.name(),
        workers: mpi.size(),
        runner: "mpi",
        threads_from: crate::engines::threads_from(&rank_choice(plan, &mpi)),
        files: Some(count),
        io: None,
        split: None,
    }))
}

/// This rank's engine, once every rank has one (else the job ends on every rank).
fn ready_engine(plan: &CryptPlan, mpi: &Mpi) -> Result<Box<dyn Engine>> {
    let engine = rank_engine(plan, mpi);
    let engine_ready = engine
        .as_ref()
        .map(|_| ())
        .map_err(|e| mpi.tag(&format!("{e:#}")));
    outcome(mpi, mpi.agree(engine_ready))?;
    Ok(engine.expect("agreed above"))
}

/// A rank other than 0: one job as rank 0 plans it (`Err(Reported)` when it failed: rank 0
/// tells the user).
fn other_rank(mpi: &Mpi, engine: &dyn Engine, workers: usize) -> Result<()> {
    match Assignment::broadcast(mpi, None)? {
        None => Err(Reported.into()),
        Some(job) => {
            let worked = execute(mpi, &job, engine, workers, RootIo::default());
            outcome(mpi, worked.map(|_| ()))?;
            // Rank 0 commits the output; its outcome is everyone's.
            outcome(mpi, mpi.agree(Ok(())))
        }
    }
}

/// Rank 0: prepare, broadcast the plan, run, commit.
fn root(
    plan: &CryptPlan,
    credentials: &Credentials<'_>,
    file: &FileTask,
    io: Option<MpiIo>,
    mpi: &Mpi,
    engine: &dyn Engine,
    workers: usize,
) -> Result<Summary> {
    // Ranks on other nodes open the unfinished output by name; on one node an unnamed
    // temporary serves, reached through /proc.
    let reach = if mpi.local_size() == mpi.size() {
        Reach::ThisMachine
    } else {
        Reach::OtherMachines
    };
    if let (
        Files::Many {
            output_dir: Some(dir),
            ..
        },
        OutputTarget::Path { path, .. },
    ) = (&plan.files, &file.output)
    {
        if let Err(e) = crate::run::many::make_parents(dir, path) {
            Assignment::broadcast(mpi, None)?;
            return Err(e);
        }
    }
    let armored = ArmoredInput::Refused(|name| {
        format!("{name} is ASCII armor, which one process decodes in order: decrypt it without --backend mpi")
    });
    let prepared =
        prepare::prepare(plan, credentials, file, reach, None, armored).and_then(|mut job| {
            job.say_warning();
            let strategy = strategy(io, &job)?;
            Ok((job, strategy))
        });
    let (mut job, strategy) = match prepared {
        Ok(ready) => ready,
        Err(e) => {
            Assignment::broadcast(mpi, None)?;
            return Err(e);
        }
    };
    if plan.direction == Direction::Encrypt {
        let written = job
            .stream
            .write_header(job.output.writer())
            .and_then(|_| job.output.writer().flush())
            .context("writing the output failed");
        if let Err(e) = written {
            Assignment::broadcast(mpi, None)?;
            return Err(e);
        }
    }
    let input_len = job.input.len().unwrap_or(0);
    let broadcast = Assignment {
        strategy,
        direction: plan.direction,
        stream: job.stream.to_rank_bytes(),
        input: job.input.path().map(std::path::absolute).transpose()?,
        output: job.output.shared_path(),
        input_len,
    };
    Assignment::broadcast(mpi, Some(&broadcast))?;
    let started = Instant::now();
    let root_io = match strategy {
        IoStrategy::Direct => RootIo::default(),
        IoStrategy::Scatter => RootIo {
            input: Some(&mut job.input),
            output: Some(job.output.writer()),
        },
    };
    let worked = execute(mpi, &broadcast, engine, workers, root_io);
    if let Err(failure) = worked {
        // Every rank stops here; dropping the output removes the temporary.
        drop(job);
        bail!("{}", crate::advice::rank_failure(&failure));
    }
    let seconds = started.elapsed().as_secs_f64();
    let committed = job.output.commit();
    let agreed = mpi.agree(committed.as_ref().map_err(|e| format!("{e:#}")).copied());
    committed?;
    agreed.map_err(|e| anyhow!(e))?;
    Ok(Summary {
        command: plan.command(),
        bytes_in: input_len,
        // Ranks write their own ranges: rank 0 does not count them.
        bytes_out: None,
        seconds,
        engine: engine.name(),
        workers: mpi.size(),
        runner: "mpi",
        threads_from: crate::engines::threads_from(&rank_choice(plan, mpi)),
        files: None,
        io: None,
        split: None,
    })
}

/// The I/O strategy: `--mpi-io`, or direct for a file-to-file job and scatter for pipes.
fn strategy(io: Option<MpiIo>, job: &Prepared) -> Result<IoStrategy> {
    if job.input.path().is_none() && launched_by_hydra() {
        bail!(
            "under MPICH's mpiexec, standard input is forwarded without flow control and large \
             streams are cut off (\"process reading stdin too slowly\"): give the input as a file \
             or a named pipe (mkfifo in.pipe; producer > in.pipe & mpiexec ... paraes enc \
             --backend mpi in.pipe ...)"
        );
    }
    let files = job.input.len().is_some() && job.output.is_file();
    match io {
        Some(MpiIo::Direct) if !files => bail!(
            "--mpi-io direct needs an input file and an output file (-o PATH): \
             use --mpi-io scatter for pipes and devices"
        ),
        Some(MpiIo::Direct) => Ok(IoStrategy::Direct),
        Some(MpiIo::Scatter) => Ok(IoStrategy::Scatter),
        None if files => Ok(IoStrategy::Direct),
        None => Ok(IoStrategy::Scatter),
    }
}

/// Whether MPICH's Hydra launcher (`mpiexec`, Intel MPI's too) started this process: it
/// sets the ranks' node-local layout. Not the PMI wire-up variables: Slurm's `srun --mpi=pmi2`
/// sets `PMI_FD` as well.
fn launched_by_hydra() -> bool {
    std::env::var_os("MPI_LOCALNRANKS").is_some() || std::env::var_os("HYDI_CONTROL_FD").is_some()
}

/// Whether Slurm's `srun` started this process as a task of a job step (and no launcher of
/// its own stands between).
fn task_of_srun() -> bool {
    std::env::var_os("SLURM_STEP_ID").is_some() && !launched_by_hydra()
}

/// Under `srun`, standard input goes to every task unless `srun --input=0` gives it to task 0
/// alone (the others then read /dev/null), and a task that does not read its copy (every rank
/// but 0) stops the stream for all: the job would hang. So when the input is standard input,
/// every rank but 0 checks that its own is not such a stream, and all ranks end together with
/// the advice if one is. Collective.
fn stdin_for_rank_0_alone(mpi: &Mpi, file: &FileTask) -> Result<()> {
    let forwarded = || {
        std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(|fd| std::fs::File::from(fd).metadata())
            .is_ok_and(|meta| meta.file_type().is_fifo() || meta.file_type().is_socket())
    };
    let mine = if file.input.is_none() && !mpi.is_root() && task_of_srun() && forwarded() {
        Err(mpi.tag(
            "under srun, standard input goes to every task and the tasks other than 0 do not \
             read it, which stops the stream: run srun --input=0 ... to give it to task 0 \
             alone, or give the input as a file or a named pipe",
        ))
    } else {
        Ok(())
    };
    outcome(mpi, mpi.agree(mine))
}

/// This rank's engine: the plan's engine with the node shared among its ranks as the
/// registry says (CPU: the node's cores divided among them unless `--threads`; GPU: the node's
/// GPUs taken in turn from `--gpu-device` on).
fn rank_engine(plan: &CryptPlan, mpi: &Mpi) -> Result<Box<dyn Engine>> {
    let choice = rank_choice(plan, mpi);
    Ok((choice.entry.build)(&choice.settings)?.engine)
}

/// The plan's engine with this rank's share of the node, as [`rank_engine`] builds it.
fn rank_choice(plan: &CryptPlan, mpi: &Mpi) -> EngineChoice {
    let mut choice = plan.engine.clone();
    (choice.entry.share_node)(&mut choice.settings, mpi.local_rank(), mpi.local_size());
    choice
}

/// A direct-I/O rank's chunks in flight: what the single-process tool would run on this
/// rank's engine.
fn rank_workers(plan: &CryptPlan, mpi: &Mpi, engine: &dyn Engine) -> usize {
    crate::engines::chunk_workers(&rank_choice(plan, mpi), engine)
}

/// A job outcome as this rank's result: rank 0 reports the message, the others exit non-zero
/// without repeating it.
fn outcome(mpi: &Mpi, result: Result<(), JobError>) -> Result<()> {
    match result {
        Ok(()) => Ok(()),
        Err(failure) if mpi.is_root() => Err(anyhow!(crate::advice::rank_failure(&failure))),
        Err(_) => Err(Reported.into()),
    }
}
