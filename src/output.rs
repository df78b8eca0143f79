//! Inputs and outputs with the safety rails. An output file is written to an unnamed
//! temporary (Linux `O_TMPFILE`) in its directory and linked into place only when the job
//! succeeded, so that no signal, not even SIGKILL, can leave a partial file behind; where the
//! file system has no `O_TMPFILE` (or MPI ranks on other nodes must open it by name), a named
//! hidden temporary beside it is the fallback. Never over an existing file without --force;
//! standard output, FIFOs and devices are written as streams.

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;
use tempfile::NamedTempFile;

use crate::signals::{named_done, set_pending, Pending};

/// Where the data comes from.
pub enum Input {
    /// Standard input.
    Stdin(io::Stdin),
    /// A regular file (or device) and its path.
    File(File, PathBuf),
    /// A stream whose next bytes were read ahead (a container's first record, to check it
    /// against the key): they are served again before the rest of the stream.
    Replaying(io::Chain<io::Cursor<Vec<u8>>, Box<Input>>),
}

impl Input {
    /// Opens `path` (`None`: standard input). In a many-file run (see
    /// [`regular_inputs_only`]) only a regular file is opened; otherwise a FIFO or device is
    /// read as a stream.
    pub fn open(path: Option<&Path>) -> Result<Self> {
        let Some(path) = path else {
            return Ok(Input::Stdin(io::stdin()));
        };
        if REGULAR_INPUTS_ONLY.load(Ordering::Relaxed) {
            return Self::open_regular(path);
        }
        let shown = path.display();
        if path.is_dir() {
            bail!("{shown} is a directory, not a file");
        }
        let file = File::open(path).with_context(|| format!("cannot open {shown}"))?;
        Ok(Input::File(file, path.to_path_buf()))
    }

    /// Opens `path` only if it is a regular file ([`open_regular_file`] with a many-file
    /// run's refusal).
    fn open_regular(path: &Path) -> Result<Self> {
        let file = open_regular_file(path, refuse_irregular)?;
        Ok(Input::File(file, path.to_path_buf()))
    }

    /// This input with `ahead`, bytes already read from it, served again first.
    pub fn replaying(self, ahead: Vec<u8>) -> Self {
        Input::Replaying(io::Cursor::new(ahead).chain(Box::new(self)))
    }

    /// The input file's path, if it is one.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Stdin(_) => None,
            Input::File(_, path) => Some(path),
            Input::Replaying(chain) => chain.get_ref().1.path(),
        }
    }

    /// The input as error messages name it.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin(_) => "standard input".to_owned(),
            Input::File(_, path) => path.display().to_string(),
            Input::Replaying(chain) => chain.get_ref().1.name(),
        }
    }

    /// The input's size when it is a regular file (never for a stream read ahead).
    pub fn len(&self) -> Option<u64> {
        match self {
            Input::File(file, _) => file
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
            Input::Stdin(_) | Input::Replaying(_) => None,
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Stdin(stdin) => stdin.read(buf),
            Input::File(file, _) => file.read(buf),
            Input::Replaying(chain) => chain.read(buf),
        }
    }
}

/// Opens `path` only if it is a regular file, without ever waiting: a FIFO with no writer
/// would block forever, and a device could be read without end. It is looked at before
/// opening (so no FIFO or device is opened at all), then opened with `O_NONBLOCK` and looked
/// at again through the descriptor (so a file swapped meanwhile is caught too); `refuse` says
/// why anything else is refused.
pub fn open_regular_file(
    path: &Path,
    refuse: impl Fn(&Path, &fs::Metadata) -> Result<()>,
) -> Result<File> {
    if let Ok(meta) = fs::metadata(path) {
        refuse(path, &meta)?;
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let file = rustix::fs::open(path, flags, Mode::empty())
        .map(File::from)
        .map_err(io::Error::from)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    refuse(path, &meta)?;
    // A regular file never blocks, but leave the descriptor as a plain open would be.
    rustix::fs::fcntl_setfl(&file, rustix::fs::fcntl_getfl(&file)? - OFlags::NONBLOCK)?;
    Ok(file)
}

/// Set once a many-file run is planned: from then on [`Input::open`] takes regular files only.
static REGULAR_INPUTS_ONLY: AtomicBool = AtomicBool::new(false);

/// Makes [`Input::open`] refuse FIFOs, devices and sockets for the rest of this process: a
/// many-file run reads regular files only (one input alone may be a stream).
pub fn regular_inputs_only() {
    REGULAR_INPUTS_ONLY.store(true, Ordering::Relaxed);
}

/// Why an input of a many-file run that `meta` describes is refused: it is a FIFO, device or
/// socket (`None` for a regular file or a directory, which fails on its own).
pub fn not_regular(path: &Path, meta: &fs::Metadata) -> Option<String> {
    let kind = meta.file_type();
    let what = if kind.is_file() || kind.is_dir() {
        return None;
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a device"
    };
    Some(format!(
        "{} is not a regular file ({what}): many-file runs take regular files only; give it alone to stream it",
        path.display()
    ))
}

/// Refuses an input of a many-file run that `meta` says is not a regular file.
fn refuse_irregular(path: &Path, meta: &fs::Metadata) -> Result<()> {
    if meta.is_dir() {
        bail!("{} is a directory, not a file", path.display());
    }
    match not_regular(path, meta) {
        Some(why) => bail!(why),
        None => Ok(()),
    }
}

/// Who must be able to open the unfinished output by a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Processes on this machine (this one, MPI ranks on this node): an unnamed temporary
    /// does, through `/proc/PID/fd/N`.
    ThisMachine,
    /// Processes on other machines too (MPI ranks on other nodes): it needs a name.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    OtherMachines,
}

/// The temporary an output file is written to.
pub enum Temporary {
    /// `O_TMPFILE`: no name until [`Output::commit`] links it.
    Anonymous(File),
    /// A named hidden file beside the destination (the fallback).
    Named(NamedTempFile),
}

/// Where the data goes.
pub enum Output {
    /// Standard output.
    Stdout(io::Stdout),
    /// An existing FIFO or device (`-o /dev/null`, a named pipe) and its path: written in
    /// place, as a stream.
    Stream(File, PathBuf),
    /// A temporary file that becomes `dest` on [`Output::commit`].
    File {
        /// The temporary (deleted with the process, or on drop, unless committed).
        temp: Temporary,
        /// The final name.
        dest: PathBuf,
        /// Whether an existing `dest` may be replaced.
        force: bool,
    },
}

impl Output {
    /// Prepares the output `dest` (`None`: standard output). `binary` refuses a terminal.
    /// A `derived` name (one paraes made up from an input's name, not one the user typed) is
    /// written only when it is free or a regular file: never through a symbolic link and never
    /// as a stream into a FIFO or device someone else put there.
    pub fn create(
        dest: Option<&Path>,
        force: bool,
        binary: bool,
        reach: Reach,
        derived: bool,
    ) -> Result<Self> {
        let Some(dest) = dest else {
            let stdout = io::stdout();
            if binary && stdout.is_terminal() {
                bail!("refusing to write binary data to a terminal: redirect it (> FILE) or use -o PATH");
            }
            set_pending(Pending::Stream);
            return Ok(Output::Stdout(stdout));
        };
        let shown = dest.display();
        if derived {
            if let Ok(existing) = fs::symlink_metadata(dest) {
                if !existing.is_file() {
                    bail!("{shown} exists and is not a regular file (a symbolic link, directory, FIFO or device): paraes does not write through a name it derived; remove it, or {WRITE_ELSEWHERE}");
                }
            }
        }
        if let Ok(existing) = fs::metadata(dest) {
            if existing.is_dir() {
                bail!("output {shown} is a directory: give a file name with -o");
            }
            if !existing.is_file() {
                // A FIFO or device cannot be replaced by a renamed temporary: stream into it.
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(dest)
                    .with_context(|| format!("cannot open {shown} for writing"))?;
                if binary && file.is_terminal() {
                    bail!(
                        "refusing to write binary data to a terminal ({shown}): choose another -o"
                    );
                }
                set_pending(Pending::Stream);
                return Ok(Output::Stream(file, dest.to_path_buf()));
            }
            if !force {
                bail!("output {shown} already exists: use --force to overwrite it");
            }
        }
        let dir = directory_of(dest);
        let anonymous = match reach {
            Reach::ThisMachine => anonymous_in(dir).map_err(|e| cannot_create(dest, dir, e))?,
            Reach::OtherMachines => None,
        };
        let temp = match anonymous {
            Some(file) => {
                set_pending(Pending::Anonymous);
                Temporary::Anonymous(file)
            }
            None => {
                let named = named_in(dir, dest).map_err(|e| cannot_create(dest, dir, e))?;
                set_pending(Pending::Named(named.path().to_path_buf()));
                Temporary::Named(named)
            }
        };
        Ok(Output::File {
            temp,
            dest: dest.to_path_buf(),
            force,
        })
    }

    /// A path through which other processes can open the unfinished output for writing
    /// (MPI ranks), when the output is a file.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn shared_path(&self) -> Option<PathBuf> {
        match self {
            Output::File {
                temp: Temporary::Anonymous(file),
                ..
            } => Some(PathBuf::from(format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                file.as_raw_fd()
            ))),
            Output::File {
                temp: Temporary::Named(named),
                ..
            } => Some(named.path().to_path_buf()),
            _ => None,
        }
    }

    /// The unfinished output file itself, to read back what was written before
    /// [`Output::commit`] (rekey checks its copy), when the output is a file.
    pub fn file(&self) -> Option<&File> {
        match self {
            Output::File {
                temp: Temporary::Anonymous(file),
                ..
            } => Some(file),
            Output::File {
                temp: Temporary::Named(named),
                ..
            } => Some(named.as_file()),
            _ => None,
        }
    }

    /// Whether the output is a file (not a stream).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn is_file(&self) -> bool {
        matches!(self, Output::File { .. })
    }

    /// The output as error messages name it.
    pub fn name(&self) -> String {
        match self {
            Output::Stdout(_) => "standard output".to_owned(),
            Output::Stream(_, path) | Output::File { dest: path, .. } => path.display().to_string(),
        }
    }

    /// The stream to write to.
    pub fn writer(&mut self) -> &mut (dyn Write + Send) {
        match self {
            Output::Stdout(stdout) => stdout,
            Output::Stream(file, _) => file,
            Output::File {
                temp: Temporary::Anonymous(file),
                ..
            } => file,
            Output::File {
                temp: Temporary::Named(named),
                ..
            } => named.as_file_mut(),
        }
    }

    /// Makes the output final: flushes it to disk and gives it its name, durably.
    pub fn commit(self) -> Result<()> {
        if let Some(dir) = self.commit_leaving_directory()? {
            sync_directory(&dir);
        }
        Ok(())
    }

    /// [`Output::commit`] without syncing the directory that holds the new name: returns
    /// that directory, for a many-file run to sync each of its directories once at the end.
    pub fn commit_leaving_directory(self) -> Result<Option<PathBuf>> {
        let Output::File { temp, dest, force } = self else {
            self.flush_stream()?;
            set_pending(Pending::Nothing);
            return Ok(None);
        };
        let shown = dest.display();
        let linked = match temp {
            Temporary::Anonymous(file) => {
                file.sync_all()
                    .with_context(|| format!("writing {shown} failed"))?;
                // A signal from here on may find the output already in place: say nothing
                // about it rather than claim that nothing was left.
                set_pending(Pending::Nothing);
                link_anonymous(&file, &dest, force)
            }
            Temporary::Named(named) => {
                named
                    .as_file()
                    .sync_all()
                    .with_context(|| format!("writing {shown} failed"))?;
                let temp_path = named.path().to_path_buf();
                let persisted = if force {
                    named.persist(&dest)
                } else {
                    named.persist_noclobber(&dest)
                };
                named_done(&temp_path);
                persisted.map(|_| ()).map_err(|e| e.error)
            }
        };
        set_pending(Pending::Nothing);
        linked.map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                anyhow::anyhow!("cannot create {shown}: it appeared while paraes was writing; nothing was written: use --force to overwrite it")
            } else {
                anyhow::Error::new(e).context(format!("cannot create {shown}"))
            }
        })?;
        Ok(Some(directory_of(&dest).to_path_buf()))
    }

    fn flush_stream(mut self) -> Result<()> {
        let name = self.name();
        self.writer()
            .flush()
            .with_context(|| format!("writing {name} failed"))
    }
}

/// Makes the names in `dir` durable (best effort: not every file system lets a directory be
/// synced).
pub fn sync_directory(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

/// The directory a destination lives in.
fn directory_of(dest: &Path) -> &Path {
    match dest.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// An unnamed file in `dir`, or `None` when the file system cannot make one (or this system
/// has no `/proc` to name it by later).
fn anonymous_in(dir: &Path) -> io::Result<Option<File>> {
    let opened = rustix::fs::open(
        dir,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    );
    let file = match opened {
        Ok(fd) => File::from(fd),
        // Kernels and file systems without O_TMPFILE answer one of these.
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOSYS) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let linkable = fs::metadata(format!("/proc/self/fd/{}", file.as_raw_fd())).is_ok();
    Ok(linkable.then_some(file))
}

/// Temporaries that a killed write or rekey of `container` can leave beside it: the hidden
/// `.NAME.*.paraes-tmp` that [`named_in`] and [`link_anonymous`] name, and older versions'
/// `.paraes-rekey.*`.
pub fn leftovers(container: &Path) -> Vec<PathBuf> {
    let dir = match container.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Some(name) = container.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let ours = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            let entry_name = entry.file_name();
            let entry_name = entry_name.to_string_lossy();
            entry_name.starts_with(".paraes-rekey.")
                || (entry_name.starts_with(&ours) && entry_name.ends_with(".paraes-tmp"))
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// The warning about `stale` temporaries.
pub fn leftovers_warning(stale: &[PathBuf]) -> String {
    let names: Vec<String> = stale
        .iter()
        .map(|p| crate::advice::one_line(&p.display().to_string()))
        .collect();
    format!(
        "{} temporary file(s) of an interrupted rekey or write lie beside this container ({}): remove them once no paraes runs there",
        stale.len(),
        names.join(", ")
    )
}

/// A named hidden temporary beside `dest`.
fn named_in(dir: &Path, dest: &Path) -> io::Result<NamedTempFile> {
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned());
    tempfile::Builder::new()
        .prefix(&format!(".{}.", name.unwrap_or_default()))
        .suffix(".paraes-tmp")
        .tempfile_in(dir)
}

/// Gives the unnamed `file` the name `dest`: linked directly when `dest` is free (refused if
/// it appeared meanwhile); with `force` over an existing file, linked to a hidden name and
/// renamed over it (atomic for readers of `dest`).
fn link_anonymous(file: &File, dest: &Path, force: bool) -> io::Result<()> {
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let link =
        |to: &Path| rustix::fs::linkat(CWD, proc_path.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW);
    match link(dest) {
        Ok(()) => return Ok(()),
        Err(Errno::EXIST) if force => {}
        Err(e) => return Err(e.into()),
    }
    let dir = directory_of(dest);
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned());
    for _ in 0..16 {
        let mut random = [0u8; 6];
        paraes_core::container::random_bytes(&mut random).map_err(io::Error::other)?;
        let hidden = dir.join(format!(
            ".{}.{}.paraes-tmp",
            name.as_deref().unwrap_or_default(),
            hex::encode(random)
        ));
        match link(&hidden) {
            Ok(()) => {
                // Ours now: a signal removes it (SIGKILL can leave it).
                set_pending(Pending::Named(hidden.clone()));
                let renamed = fs::rename(&hidden, dest).inspect_err(|_| {
                    let _ = fs::remove_file(&hidden);
                });
                named_done(&hidden);
                set_pending(Pending::Nothing);
                return renamed;
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other("no free temporary name"))
}

/// The advice when an output cannot be written where it would go; one-file and many-file runs
/// share it, and only one-file runs take `-o`.
const WRITE_ELSEWHERE: &str =
    "write elsewhere (-o PATH for one file, --output-dir DIR for several)";

/// Says what a failure to create the temporary means.
fn cannot_create(dest: &Path, dir: &Path, e: io::Error) -> anyhow::Error {
    // tempfile's message ends with the random name: say what it means instead.
    let why = match e.kind() {
        io::ErrorKind::NotFound if dir.is_dir() => {
            "the file system there cannot hold new files".to_owned()
        }
        io::ErrorKind::NotFound => "that directory does not exist".to_owned(),
        io::ErrorKind::PermissionDenied => "that directory is not writable".to_owned(),
        kind => io::Error::from(kind).to_string(),
    };
    anyhow::anyhow!(
        "cannot create {} in {}: {why}: {WRITE_ELSEWHERE}",
        dest.display(),
        dir.display()
    )
}
