//! Many files in one process (`enc`/`dec` with several inputs, `--files-from`, `--recursive`
//! or `--output-dir`, and `verify`). Small files run concurrently on worker threads, each on
//! buffers no larger than its own data; large files run one after another through the
//! threaded pipeline at full single-file speed. So file data takes a fixed budget
//! ([`SMALL_FILE_WORKERS`] small files, or the pipeline's 8 chunks) whatever the number and
//! size of the files. A file that fails is reported on one line naming it, leaves nothing
//! behind, and the others go on; the run then fails with a count. What each file's work says
//! is printed in the order the inputs were given, so two runs print the same report.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Result};
use rustix::fs::{mkdirat, openat, statat, AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::plan::{CryptPlan, FileTask, OutputTarget};
use crate::progress::{FileCount, Progress, Summary};
use crate::run::local::{self, Spread};
use crate::run::prepare::{self, ArmoredInput, Credentials, Reported};
use crate::units::thousands;
use paraes_files::{sync_directory, Reach};

/// Files up to this size run concurrently, each on one thread; larger ones through the
/// pipeline, one at a time (each chunk of those is already spread over every core).
pub const SMALL_FILE: u64 = 1 << 20;

/// Small files in flight at once. Their time goes mostly to opening, syncing and linking
/// files, not to AES, so more of them than cores keeps the storage busy; each holds at most
/// two buffers of its file's size (so at most 32 x 2 x ~1 MiB).
pub const SMALL_FILE_WORKERS: usize = 32;

/// How one file of a run is worked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// At most [`SMALL_FILE`]: on a worker thread, beside other small files.
    Small,
    /// Larger: alone, through the threaded pipeline.
    Large,
}

/// The sizes of a run's files (`None`: cannot be read now; such a file fails on its own when
/// opened), each looked up once, in the run's order (the names stay with the plan).
pub struct Sized {
    /// Their sizes.
    pub sizes: Vec<Option<u64>>,
}

impl Sized {
    /// Looks up the size of each of `files`.
    pub fn new<'a>(files: impl Iterator<Item = &'a Path>) -> Self {
        let sizes = files
            .map(|path| fs::metadata(path).ok().map(|m| m.len()))
            .collect();
        Sized { sizes }
    }

    /// Their total size (for the display and the summary).
    pub fn total(&self) -> u64 {
        self.sizes.iter().flatten().sum()
    }
}

/// What the work on one file has to say (an `OK` line, a warning), held back with the file's
/// outcome until every file before it in the input order has been reported.
#[derive(Default)]
pub struct FileLines {
    lines: Vec<(Stream, String)>,
}

/// Where a line of [`FileLines`] goes.
#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

impl FileLines {
    /// A line for standard output.
    pub fn out(&mut self, line: String) {
        self.lines.push((Stream::Out, line));
    }

    /// A line for standard error.
    pub fn err(&mut self, line: String) {
        self.lines.push((Stream::Err, line));
    }
}

/// The lines of files that finished before an earlier one, printed as soon as every file
/// before them has been (so the report is in the order the inputs were given, however the
/// work was spread; what waits is a few lines per file, as the file list itself holds).
struct InOrder {
    /// The first file whose lines are not printed yet.
    next: usize,
    /// Finished files at or after `next`, by index.
    waiting: BTreeMap<usize, FileLines>,
}

impl InOrder {
    /// Takes file `i`'s lines and prints every file's that is now due.
    fn finished(&mut self, i: usize, lines: FileLines, progress: &Progress) {
        self.waiting.insert(i, lines);
        while let Some(lines) = self.waiting.remove(&self.next) {
            for (stream, line) in &lines.lines {
                match stream {
                    Stream::Out => progress.println_out(line),
                    Stream::Err => progress.println(line),
                }
            }
            self.next += 1;
        }
    }
}

/// Runs `work` on every file of `sized` (file `i` is `name(i)`): the small ones concurrently
/// on `workers` threads, then the large ones in turn on this thread. `work` returns the input bytes done (for the
/// display; a pipelined `work` moves the display itself and returns 0) and puts what it has to
/// say into the file's [`FileLines`]. A failure adds one line naming the file. Each file's
/// lines are printed in the order of `files`, whichever finishes first. Returns how many
/// succeeded and failed.
pub fn for_each_file<'n>(
    sized: &Sized,
    name: impl Fn(usize) -> &'n Path + Sync,
    workers: usize,
    progress: &Progress,
    work: impl Fn(usize, Size, &mut FileLines) -> Result<u64> + Sync,
) -> FileCount {
    let sizes = &sized.sizes;
    let is_small = |i: usize| sizes[i].is_none_or(|len| len <= SMALL_FILE);
    let small: Vec<usize> = (0..sizes.len()).filter(|&i| is_small(i)).collect();
    let large: Vec<usize> = (0..sizes.len()).filter(|&i| !is_small(i)).collect();
    let count = Mutex::new((
        FileCount::default(),
        InOrder {
            next: 0,
            waiting: BTreeMap::new(),
        },
    ));
    let total = sizes.len();
    let run = |i: usize, size: Size| {
        let mut lines = FileLines::default();
        let outcome = work(i, size, &mut lines);
        let mut guard = count.lock().unwrap_or_else(|e| e.into_inner());
        let (count, in_order) = &mut *guard;
        match outcome {
            Ok(bytes) => {
                count.done += 1;
                progress.add(bytes);
            }
            Err(e) => {
                count.failed += 1;
                lines.err(format!(
                    "paraes: error: {}: {}",
                    crate::advice::one_line(&name(i).display().to_string()),
                    crate::advice::error_line(&e)
                ));
            }
        }
        progress.files_done(count.done + count.failed, total);
        in_order.finished(i, lines, progress);
    };
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, small.len().max(1)) {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = small.get(at) else { return };
                run(i, Size::Small);
            });
        }
    });
    for &i in &large {
        run(i, Size::Large);
    }
    count.into_inner().unwrap_or_else(|e| e.into_inner()).0
}

/// Fails the run when any file failed: "3 of 1,000 files failed".
pub fn outcome(count: Option<FileCount>) -> Result<()> {
    let Some(count) = count else {
        return Ok(());
    };
    if count.failed > 0 && count.done + count.failed == 1 {
        // Its one line said it all.
        return Err(Reported.into());
    }
    if count.failed > 0 {
        bail!(
            "{} of {} files failed (each said why above)",
            thousands(count.failed),
            thousands(count.done + count.failed)
        );
    }
    Ok(())
}

/// `enc`/`dec` of many files in this process.
pub fn run(
    plan: &CryptPlan,
    jobs: &[FileTask],
    output_dir: Option<&Path>,
    refused: &[(PathBuf, String)],
) -> Result<Summary> {
    let engine = crate::engines::select(&plan.engine)?;
    let workers = crate::engines::chunk_workers(&plan.engine, engine.as_ref());
    let credentials = Credentials::read_now(plan)?;
    for (path, why) in refused {
        eprintln!(
            "paraes: error: {}: {}",
            crate::advice::one_line(&path.display().to_string()),
            crate::advice::one_line(why)
        );
    }
    let input = |i: usize| jobs[i].input.as_deref().unwrap_or(Path::new(""));
    let inputs = Sized::new((0..jobs.len()).map(input));
    let progress = Progress::start_many(&plan.ui, inputs.total(), jobs.len());
    let written = AtomicU64::new(0);
    let directories = Mutex::new(BTreeSet::new());
    let mut count = for_each_file(
        &inputs,
        input,
        SMALL_FILE_WORKERS,
        &progress,
        |i, size, lines| {
            let file = &jobs[i];
            let within = match (output_dir, &file.output) {
                (Some(dir), OutputTarget::Path { path, .. }) => {
                    make_parents(dir, path)?.map(Arc::new)
                }
                _ => None,
            };
            let mut job = prepare::prepare(
                plan,
                &credentials,
                file,
                Reach::ThisMachine,
                within,
                ArmoredInput::Decoded,
            )?;
            if let Some(warning) = job.warning.take() {
                lines.err(warning);
            }
            let spread = match size {
                Size::Small => Spread::InTurn,
                Size::Large => Spread::Workers(workers),
            };
            let done = local::crypt_prepared(
                plan,
                job,
                engine.as_ref(),
                spread,
                &progress,
                Some(&directories),
            )?;
            written.fetch_add(done.written, Ordering::Relaxed);
            Ok(match size {
                Size::Small => done.read,
                // The pipeline moved the display itself.
                Size::Large => 0,
            })
        },
    );
    crate::engines::say_fallback(engine.as_ref());
    count.failed += refused.len();
    // The new names are durable once their directories are: each synced once, not per file.
    for dir in directories.into_inner().unwrap_or_else(|e| e.into_inner()) {
        sync_directory(&dir);
    }
    let seconds = progress.finish();
    let summary = Summary {
        command: plan.command(),
        bytes_in: inputs.total(),
        bytes_out: Some(written.into_inner()),
        seconds,
        engine: engine.name(),
        workers: engine.workers(),
        runner: "local",
        threads_from: crate::engines::threads_from(&plan.engine),
        files: Some(count),
        io: None,
        split: engine.split(),
    };
    Ok(summary)
}

/// Creates the directories between `dir` and the output `path` (an --output-dir tree). `dir`
/// itself is the user's: it is created when missing and may be a symbolic link. Below it,
/// every directory must be a real one: each is created or opened relative to the one above
/// without following links (`mkdirat`, `openat` with `O_NOFOLLOW`), so a link planted in the
/// tree (`out/sub -> /elsewhere`) fails this file instead of sending its output elsewhere.
/// Returns the output's directory, held open (where `/proc` names it), for the output to be
/// made in it and not through its path, which a link swapped in later would redirect.
pub fn make_parents(dir: &Path, path: &Path) -> Result<Option<OwnedFd>> {
    let parent = path.parent().unwrap_or(dir);
    let not_a_directory = |file: &Path| {
        anyhow::anyhow!(
            "cannot create the output directory {}: {} is a file, not a directory; give --output-dir a directory",
            parent.display(),
            file.display()
        )
    };
    let failed = |e: std::io::Error| {
        anyhow::anyhow!(
            "cannot create the output directory {}: {e}",
            parent.display()
        )
    };
    if let Err(e) = fs::create_dir_all(dir) {
        return Err(match dir.ancestors().find(|p| is_file(p)) {
            Some(file) => not_a_directory(file),
            None => failed(e),
        });
    }
    let mut at = open_directory(CWD, dir, OFlags::empty()).map_err(|e| {
        if is_file(dir) {
            not_a_directory(dir)
        } else {
            failed(e)
        }
    })?;
    let below = parent.strip_prefix(dir).map_err(|_| {
        anyhow::anyhow!(
            "{} is not below the output directory {}",
            path.display(),
            dir.display()
        )
    })?;
    let mut walked = dir.to_path_buf();
    for component in below.components() {
        let Component::Normal(name) = component else {
            bail!(
                "{} is not below the output directory {}",
                path.display(),
                dir.display()
            );
        };
        walked.push(name);
        match mkdirat(&at, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(failed(e.into())),
        }
        at = open_directory(&at, name, OFlags::NOFOLLOW).map_err(|e| {
            match statat(&at, name, AtFlags::SYMLINK_NOFOLLOW).map(|s| FileType::from_raw_mode(s.st_mode)) {
                Ok(FileType::Symlink) => anyhow::anyhow!(
                    "{} is a symbolic link: paraes does not write through links below --output-dir; remove it or choose another --output-dir",
                    walked.display()
                ),
                Ok(kind) if kind != FileType::Directory => not_a_directory(&walked),
                _ => failed(e),
            }
        })?;
    }
    let named = paraes_files::fd_path(&at).is_dir();
    Ok(named.then_some(at))
}

/// Opens the directory `name` relative to `at` (with `extra` flags), for walking down from it.
fn open_directory(
    at: impl AsFd,
    name: impl rustix::path::Arg,
    extra: OFlags,
) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | extra;
    Ok(openat(at, name, flags, Mode::empty())?)
}

/// Whether `path` is there and is not a directory (through links).
fn is_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| !m.is_dir())
}
