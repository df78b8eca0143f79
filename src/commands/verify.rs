//! `verify`: checks that containers are whole and authentic (header tag, every chunk tag, the
//! last-chunk flag, ECB's padding) without decrypting their bodies and without writing
//! anything; many files run as a many-file `enc` does. Prints `FILE: OK` per authentic file, in
//! the order the files were given. An armored container (docs/FORMAT.md, "ASCII armor") is
//! checked as a stream, on one thread.

use std::io::BufReader;
use std::path::Path;

use anyhow::{anyhow, Result};
use paraes_core::container::{self, ContainerError, IgnoredSlot, Unlock, UnverifiedHeader};
use paraes_core::pipeline::PipelineError;
use paraes_core::{CpuEngine, Engine};
use paraes_files::{FileError, Input};

use crate::plan::{Ui, VerifyPlan};
use crate::progress::Progress;
use crate::run::many;
use crate::run::prepare::warner;

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
    let files = many::Sized::new(plan.files.iter().map(|path| path.as_path()));
    let progress = Progress::start_many(&ui, files.total(), plan.files.len());
    let cores = paraes_core::cpus::usable().count;
    let mut count = many::for_each_file(
        &files,
        |i| plan.files[i].as_path(),
        many::SMALL_FILE_WORKERS,
        &progress,
        |i, size, lines| {
            let path = &plan.files[i];
            // A large file alone spreads over the cores; small ones already run side by side.
            let threads = match size {
                many::Size::Small => 1,
                many::Size::Large => cores,
            };
            let (bytes, ignored) = verify_one(path, &unlock, &engine, threads)?;
            let shown = crate::advice::one_line(&path.display().to_string());
            // A slot the file key does not authenticate is named on the file's own line, quiet
            // or not: the OK is about the slot that opened the file, not that one.
            match ignored {
                Some(ignored) => lines.out(format!("{shown}: OK, {}", ignored.short())),
                None if !plan.quiet => lines.out(format!("{shown}: OK")),
                None => {}
            }
            Ok(bytes)
        },
    );
    let out_failed = progress.output_failure();
    progress.finish();
    count.failed += plan.unlisted.len();
    many::outcome(Some(count))?;
    // Every file was checked; the `OK` lines could not all be written.
    out_failed.map_or(Ok(()), Err)
}

/// Checks one container on `threads` threads; returns its size, and the stanza slot that
/// opening ignored, if any.
fn verify_one(
    path: &Path,
    unlock: &Unlock,
    engine: &dyn Engine,
    threads: usize,
) -> Result<(u64, Option<IgnoredSlot>)> {
    // A FIFO or device would block or never end: verify reads container files at offsets.
    let file = paraes_files::open_regular_file(path).map_err(|e| match e {
        FileError::InputIsDirectory(_) | FileError::InputNotRegular { .. } => anyhow!(
            "{} is not a regular file: verify reads container files at their offsets; save a stream to a file first",
            path.display()
        ),
        other => other.into(),
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let input = Input::File(file, path.to_path_buf()).dearmored()?;
    let file = match input {
        Input::File(file, _) => file,
        armored => return Ok((size, verify_armored(armored, unlock, engine)?)),
    };
    let header = read_header(&mut BufReader::new(&file))?;
    // Files are checked side by side, but Argon2id runs one at a time (as `dec` does).
    let turn = unlock.has_passphrase().then(crate::run::prepare::kdf_turn);
    let opened = header.open(unlock, container::BodyAccess::File(&file))?;
    drop(turn);
    container::verify_file(&opened, engine, &file, threads)?;
    Ok((size, opened.ignored_slot().cloned()))
}

/// Checks the armored container `input` in one stream; returns the stanza slot that opening
/// ignored, if any.
fn verify_armored(
    mut input: Input,
    unlock: &Unlock,
    engine: &dyn Engine,
) -> Result<Option<IgnoredSlot>> {
    let header = read_header(&mut input)?;
    let turn = unlock.has_passphrase().then(crate::run::prepare::kdf_turn);
    let (opened, mut body) = crate::run::prepare::open_body(header, unlock, input)?;
    drop(turn);
    // A refused armor line comes as a read error: said as what it is.
    container::verify(&opened, engine, &mut body).map_err(|e| match e {
        PipelineError::Read(io) => anyhow::Error::new(io).context("reading the armor failed"),
        other => other.into(),
    })?;
    Ok(opened.ignored_slot().cloned())
}

/// Reads a container header.
fn read_header(input: &mut impl std::io::Read) -> Result<UnverifiedHeader> {
    UnverifiedHeader::read(input).map_err(|e| match e {
        ContainerError::NotAContainer => anyhow!("not a paraes container (no paraes header)"),
        other => other.into(),
    })
}
