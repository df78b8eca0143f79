//! The inputs and outputs of a many-file `enc`/`dec` run: names from the command line, a
//! `--files-from` list or `--recursive`, each given its output name.

use std::collections::HashMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Result};
use paraes_core::Direction;

use super::naming::{check_not_read, default_name, NamingFix};
use super::CryptInputs;
use super::{FileTask, Files, Format, OutputTarget, Runner};
use crate::files;
use crate::files::{Found, Naming, Skipped};
use paraes_files::path_id;

/// The files of a many-file run: every input with its output, checked as a whole (no two
/// inputs write one output, no output is a file the run reads).
pub(super) fn many_files(parts: &CryptInputs<'_>, runner: Runner) -> Result<Files> {
    let command = parts.command;
    if parts.output.is_some() {
        usage!(command, "-o names one output, but this run has several inputs: drop -o (each output is named after its input), or use --output-dir DIR");
    }
    if matches!(parts.format, Format::Raw { .. }) {
        usage!(command, "--raw takes one input at a time (each raw stream needs its own counter block, and its IV is printed for it): run one paraes per file, or drop --raw for containers");
    }
    if parts.range.is_some() {
        usage!(command, "--range applies to one container file");
    }
    if parts.ui.size.is_some() {
        usage!(command, "--size is for input from a pipe: drop it");
    }
    if parts.show_data_key {
        usage!(command, "--show-data-key applies to one file at a time");
    }
    if parts.inputs.iter().any(|p| p == Path::new("-")) {
        usage!(
            command,
            "standard input cannot be one of several inputs: give files only (or one input alone)"
        );
    }
    if let (Runner::Mpi { .. }, Some(list)) = (runner, &parts.list.files_from) {
        if !fs::metadata(list).is_ok_and(|m| m.is_file()) {
            usage!(command, "with --backend mpi, --files-from needs a regular file every rank can read (not standard input, a pipe or <(...)): write the list to a file first");
        }
    }
    let listed = match &parts.list.files_from {
        Some(list) => files::read_list(list, parts.list.null)?,
        None => Vec::new(),
    };
    let direction = parts.direction;
    let wanted = move |path: &Path| {
        let container = path.as_os_str().as_bytes().ends_with(b".paraes");
        match direction {
            Direction::Encrypt => !container,
            Direction::Decrypt => container,
        }
    };
    let mut skipped = Skipped::default();
    let recursive = parts.list.recursive;
    let mut named = Named {
        direction,
        output_dir: parts.output_dir,
        jobs: Vec::new(),
        unnamed: Vec::new(),
        climbing: None,
    };
    for (names, naming) in [
        (parts.inputs.to_vec(), Naming::FileName),
        (listed, Naming::WholePath),
    ] {
        files::gather(names, naming, recursive, wanted, &mut skipped, |found| {
            named.add(found)
        });
    }
    if let Some(path) = named.climbing {
        usage!(
            command,
            "{}: a --files-from name with a '..' component cannot be mirrored below --output-dir (it could land outside it): list the names from a directory above them (cd there first), or drop --output-dir",
            path.display()
        );
    }
    say_skipped(&skipped, direction, parts.ui.quiet);
    let Named {
        mut jobs, unnamed, ..
    } = named;
    if jobs.is_empty() && unnamed.is_empty() && skipped.unlisted.is_empty() {
        bail!("no input files: nothing to do");
    }
    jobs.shrink_to_fit();
    check_outputs(&jobs, &unnamed, parts)?;
    let mut refused = skipped.unlisted;
    refused.extend(unnamed.into_iter().map(|(_, input, why)| (input, why)));
    let jobs = jobs
        .into_iter()
        .map(|(input, out)| FileTask {
            input: Some(input),
            output: OutputTarget::Path {
                path: out,
                force: parts.force,
                derived: true,
            },
        })
        .collect();
    Ok(Files::Many {
        jobs,
        output_dir: parts.output_dir.map(Path::to_path_buf),
        refused,
    })
}

/// The inputs of a many-file run as they are found, each with its output's name: what the
/// plan holds per file is those two names, so a run of many files takes little memory each.
struct Named<'a> {
    direction: Direction,
    output_dir: Option<&'a Path>,
    /// Every input with an output name, and that name.
    jobs: Vec<(PathBuf, PathBuf)>,
    /// Inputs that could get no output name, with the reason: failures of the run. Each with
    /// how many of `jobs` were found before it, so the inputs' order is kept.
    unnamed: Vec<(usize, PathBuf, String)>,
    /// With --output-dir, the first input whose name below it would climb out of it (a
    /// `--files-from` name with a `..` component): mirrored, it could land outside the
    /// directory, and flattened it would collide or surprise; the user names it from a
    /// directory above it.
    climbing: Option<PathBuf>,
}

impl Named<'_> {
    fn add(&mut self, Found { path, relative }: Found) {
        let named = match self.output_dir {
            Some(_) if self.climbing.is_some() => return,
            Some(_) if relative.components().any(|c| c == Component::ParentDir) => {
                self.climbing = Some(path);
                return;
            }
            Some(dir) => default_name(self.direction, &relative, NamingFix::RunAlone)
                .map(|name| dir.join(name)),
            None => default_name(self.direction, &path, NamingFix::RunAlone),
        };
        match named {
            Ok(out) => self.jobs.push((path, out)),
            Err(e) => self.unnamed.push((self.jobs.len(), path, format!("{e:#}"))),
        }
    }
}

/// Refuses, before anything is written, a run in which two inputs would write one output
/// (also through `..` or a linked directory), an output is one of the run's inputs (or one
/// that got no output name) or the file list, or an output is a file the run reads otherwise
/// (a key file). Each output's landing place is kept as a 16-byte hash, not as a name.
fn check_outputs(
    jobs: &[(PathBuf, PathBuf)],
    unnamed: &[(usize, PathBuf, String)],
    parts: &CryptInputs<'_>,
) -> Result<()> {
    let list_id = parts.list.files_from.as_deref().and_then(path_id);
    // Input `i` is `jobs[i]`, or `unnamed[i - jobs.len()]`. A file given under two names is
    // shown by the last of them in the order they were found (each replaces the one before).
    let mut input_ids: HashMap<(u64, u64), usize> = HashMap::with_capacity(jobs.len());
    let mut note = |i: usize, input: &Path| {
        if let Some(id) = path_id(input) {
            input_ids.insert(id, i);
        }
    };
    let mut next_job = 0;
    for (k, (jobs_before, input, _)) in unnamed.iter().enumerate() {
        for (j, (job_input, _)) in jobs.iter().enumerate().take(*jobs_before).skip(next_job) {
            note(j, job_input);
        }
        next_job = *jobs_before;
        note(jobs.len() + k, input);
    }
    for (j, (job_input, _)) in jobs.iter().enumerate().skip(next_job) {
        note(j, job_input);
    }
    let input_at = |i: usize| match jobs.get(i) {
        Some((input, _)) => input,
        None => &unnamed[i - jobs.len()].1,
    };
    let mut landings: HashMap<[u8; 16], usize> = HashMap::with_capacity(jobs.len());
    for (i, (path, out)) in jobs.iter().enumerate() {
        let landing = landing(out);
        let key = landing_key(&landing);
        match landings.get(&key) {
            // The hash is 128 bits: a match is the same place, checked by name all the same.
            Some(&first) if self::landing(&jobs[first].1) == landing => bail!(
                "{} and {} would both be written to {}: rename one, or run them separately",
                jobs[first].0.display(),
                path.display(),
                out.display()
            ),
            Some(_) => {}
            None => {
                landings.insert(key, i);
            }
        }
        // One look at the output per file: an existing one may be an input or the list.
        let out_id = path_id(out);
        if let Some(&input) = out_id.and_then(|id| input_ids.get(&id)) {
            bail!(
                "{} (the output of {}) is the input {} of this run: writing it would destroy it; run them separately or use --output-dir",
                out.display(),
                path.display(),
                input_at(input).display()
            );
        }
        if list_id.is_some() && out_id == list_id {
            bail!(
                "{} (the output of {}) is the file list this run reads: writing it would destroy it; choose another --output-dir",
                out.display(),
                path.display()
            );
        }
        let output = OutputTarget::Path {
            path: out.clone(),
            force: parts.force,
            derived: true,
        };
        check_not_read(&output, Some(path), &parts.keys)?;
    }
    Ok(())
}

/// A 128-bit hash of a landing place's name, by which [`check_outputs`] tells them apart.
fn landing_key(landing: &Path) -> [u8; 16] {
    let hash = blake3::hash(landing.as_os_str().as_bytes());
    let mut key = [0u8; 16];
    key.copy_from_slice(&hash.as_bytes()[..16]);
    key
}

/// Where `out` lands: its deepest directory that exists, with links and `..` resolved, and the
/// rest of the name, so two names of one file (`a` and `sub/../a`, or a name through a
/// linked directory) are seen as one.
fn landing(out: &Path) -> PathBuf {
    let absolute = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    for existing in absolute.ancestors().skip(1) {
        if let Ok(real) = fs::canonicalize(existing) {
            let rest = absolute.strip_prefix(existing).unwrap_or(&absolute);
            return real.join(rest);
        }
    }
    absolute
}

/// Says once what a --recursive walk left out.
pub(super) fn say_skipped(skipped: &Skipped, direction: Direction, quiet: bool) {
    if quiet {
        return;
    }
    if skipped.links > 0 {
        eprintln!(
            "paraes: note: skipped {} symbolic link(s) inside directories (not followed; name them as inputs to include them)",
            skipped.links
        );
    }
    if skipped.special > 0 {
        eprintln!(
            "paraes: note: skipped {} FIFO(s), socket(s) or device(s) inside directories",
            skipped.special
        );
    }
    if skipped.wrong_suffix > 0 {
        let what = match direction {
            Direction::Encrypt => "already ending in .paraes (not encrypted twice)",
            Direction::Decrypt => "not ending in .paraes",
        };
        eprintln!(
            "paraes: note: skipped {} file(s) inside directories {what}",
            skipped.wrong_suffix
        );
    }
}
