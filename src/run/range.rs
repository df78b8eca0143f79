//! `dec --range START..END`: decrypts only the plaintext bytes asked for, reading and
//! authenticating only the chunks that hold them plus the last chunk (so the plaintext length
//! it checks the range against is authentic), through paraes-core's seekable reader, of a
//! container or a bare message (`--format cobblestone`). The whole chunks a range covers are
//! read at their offsets and opened by many workers at once (the parallel pipeline's), written
//! at offsets to an output file paraes created, in order to a stream; `--stats` says so.

use anyhow::{bail, Context, Result};
use paraes_core::container::RangeError;
use paraes_core::pipeline::Workers;

use crate::plan::{ByteRange, CryptPlan, FileTask};
use crate::progress::{Progress, Summary};
use crate::run::local::name_failure;
use crate::run::prepare::{self, ArmoredInput, Credentials, Prepared};
use paraes_files::{Input, OutputEnd, Reach};

/// Runs `dec --range` on the one container or bare message of `plan`.
pub fn run(plan: &CryptPlan, file: &FileTask, range: ByteRange) -> Result<Summary> {
    let engine = crate::engines::select(&plan.engine)?;
    let credentials = Credentials::on_first_use(plan);
    let armored = ArmoredInput::Refused(|name| {
        format!("--range reads a binary container at its chunks' offsets, and {name} is ASCII armor, which has none: decrypt it whole (drop --range)")
    });
    let mut job = prepare::prepare(plan, &credentials, file, Reach::ThisMachine, None, armored)?;
    job.say_warning();
    let progress = Progress::start(&plan.ui, None);
    let workers = crate::engines::chunk_workers(&plan.engine, engine.as_ref());
    let Prepared {
        stream,
        input,
        output,
        ..
    } = &mut job;
    let Input::File(file, path) = input else {
        bail!("--range needs a file");
    };
    let name = path.display().to_string();
    let Some(reader) = stream.seekable(engine.as_ref(), &*file) else {
        bail!("--range reads containers and bare messages, not raw streams");
    };
    let mut reader = reader.map_err(|e| name_failure(e, &name, &output.name()))?;
    let len = reader.plaintext_len();
    let end = range.end.unwrap_or(len);
    if range.start > len || end > len {
        let asked = match range.end {
            Some(end) => format!("{}..{end}", range.start),
            None => format!("{}..", range.start),
        };
        bail!(
            "--range {asked} reaches past the end of {name}, whose plaintext has {len} bytes: ask for at most ..{len}"
        );
    }
    let output_name = output.name();
    let mut output_end = OutputEnd::new(output, 0, Some(end - range.start))?;
    let io = output_end.io_mode(true, workers, reader.runs_records_in_place());
    let copied = reader
        .copy_range_parallel(
            range.start,
            end,
            output_end.sink(),
            Workers::new(workers),
            &|n| progress.set(n),
        )
        .map_err(|e| match e {
            RangeError::Stream(e) => name_failure(e, &name, &output_name),
            other => other.into(),
        });
    crate::engines::say_fallback(engine.as_ref());
    let bytes_read = reader.bytes_read();
    let written = copied?;
    let seconds = progress.finish();
    job.output
        .commit()
        .with_context(|| format!("the range of {name} was not written"))?;
    Ok(Summary {
        command: plan.command(),
        bytes_in: bytes_read,
        bytes_out: Some(written),
        seconds,
        engine: engine.name(),
        workers: engine.workers(),
        runner: "local",
        threads_from: crate::engines::threads_from(&plan.engine),
        files: None,
        io: Some(io),
        split: engine.split(),
    })
}
