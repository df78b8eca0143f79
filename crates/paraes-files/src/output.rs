//! Outputs with the safety rails; any of them may be written as ASCII armor
//! ([`Output::armored`]). An output file is written to an unnamed temporary (Linux
//! `O_TMPFILE`) in its directory and linked into place only when the job succeeded, so that no
//! signal, not even SIGKILL, can leave a partial file behind; where the file system has no
//! `O_TMPFILE` (or MPI ranks on other nodes must open it by name), a named hidden temporary
//! beside it is the fallback. Never over an existing file unless the call allows it; standard
//! output, FIFOs and devices are written as streams where the call allows that.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, IsTerminal, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::armor::ArmorWriter;
use crate::error::{special_kind, FileError};
use crate::pending::{make_named, named_done, set_pending, ListedTemp, Pending};

/// How an output is made: one value, not a row of booleans.
#[derive(Clone, Debug)]
pub struct OutputOptions {
    /// Whether an existing regular file may be replaced (the CLI's `--force`, Python's
    /// `overwrite=True`).
    pub replace: bool,
    /// Binary data: a terminal is refused.
    pub binary: bool,
    /// Who must be able to open the unfinished output by a path.
    pub reach: Reach,
    /// The name was derived from an input's name, not given: it is written only when it is
    /// free or a regular file, never through a symbolic link and never as a stream into a FIFO
    /// or device someone else put there.
    pub derived_name: bool,
    /// Whether an existing FIFO or device is written as a stream (the CLI: `-o /dev/null`, a
    /// named pipe); otherwise it is refused, as anything but a regular file is.
    pub stream_into_special_files: bool,
    /// The output's directory, held open (a many-file run's `--output-dir` tree, walked without
    /// following links): the output is then made, named and replaced in that directory itself
    /// (through `/proc/self/fd/N`), never through the directory's path, which anyone who can
    /// write to the tree above could swap for a link while the file is worked. Needs `/proc`,
    /// and reaches this process only (not MPI ranks).
    pub within: Option<Arc<OwnedFd>>,
}

impl OutputOptions {
    /// A copy that replaces the regular file it is named after (rekey and upgrade by rewrite):
    /// a FIFO or device found at the name instead (the file swapped meanwhile, a link to
    /// `/dev/null`) is refused, never written as a stream nor waited on.
    pub fn replacing() -> Self {
        OutputOptions {
            replace: true,
            stream_into_special_files: false,
            ..OutputOptions::default()
        }
    }
}

impl Default for OutputOptions {
    /// Binary data, nothing replaced, unfinished output reachable on this machine, a name the
    /// user gave, FIFOs and devices written as streams.
    fn default() -> Self {
        OutputOptions {
            replace: false,
            binary: true,
            reach: Reach::ThisMachine,
            derived_name: false,
            stream_into_special_files: true,
            within: None,
        }
    }
}

/// Who must be able to open the unfinished output by a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Processes on this machine (this one, MPI ranks on this node): an unnamed temporary
    /// does, through `/proc/PID/fd/N`.
    ThisMachine,
    /// Processes on other machines too (MPI ranks on other nodes): it needs a name.
    OtherMachines,
}

/// The temporary an output file is written to.
pub enum Temporary {
    /// `O_TMPFILE`: no name until [`Output::commit`] links it.
    Anonymous(File),
    /// A named hidden file beside the destination (the fallback).
    Named(ListedTemp),
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
        /// The final name, as messages say it.
        dest: PathBuf,
        /// The final name as it is made: `dest`, or the same name in the directory held by
        /// [`OutputOptions::within`].
        at: PathBuf,
        /// Whether an existing `dest` may be replaced.
        force: bool,
        /// The directory `at` is in, held open for as long as the output is written.
        _within: Option<Arc<OwnedFd>>,
    },
    /// Any of the above written as ASCII armor ([`Output::armored`]): a stream, in order.
    Armored(Box<ArmorWriter<Output>>),
}

impl Output {
    /// Prepares the output `dest` (`None`: standard output) as `options` say.
    pub fn create(dest: Option<&Path>, options: &OutputOptions) -> Result<Self, FileError> {
        let Some(dest) = dest else {
            let stdout = io::stdout();
            if options.binary && stdout.is_terminal() {
                return Err(FileError::Terminal(None));
            }
            set_pending(Pending::Stream);
            return Ok(Output::Stdout(stdout));
        };
        let at = match &options.within {
            Some(dir) => fd_path(dir.as_ref()).join(dest.file_name().unwrap_or_default()),
            None => dest.to_path_buf(),
        };
        if options.derived_name {
            if let Ok(existing) = fs::symlink_metadata(&at) {
                if !existing.is_file() {
                    return Err(FileError::DerivedNameTaken(dest.to_path_buf()));
                }
            }
        }
        if let Ok(existing) = fs::metadata(&at) {
            if existing.is_dir() {
                return Err(FileError::OutputIsDirectory(dest.to_path_buf()));
            }
            if let Some(kind) = special_kind(existing.file_type()) {
                if !options.stream_into_special_files {
                    return Err(FileError::OutputNotRegular {
                        path: dest.to_path_buf(),
                        kind,
                    });
                }
                // Whoever planted a FIFO in /tmp reads what is written into it: the FIFO is
                // checked in its own directory, and any link to it as it is followed. (A link
                // that resolves to no path, as /dev/stdout to a pipe, the open resolves.)
                let checked = match fs::symlink_metadata(&at) {
                    Ok(entry) if entry.file_type().is_symlink() => {
                        match crate::shared_dirs::resolve_links(&at) {
                            Ok(real) => Some(real),
                            Err(planted @ FileError::Planted { .. }) => return Err(planted),
                            Err(_) => None,
                        }
                    }
                    _ => Some(at.clone()),
                };
                if let Some(fifo) = checked {
                    crate::shared_dirs::refuse_if_planted(&fifo, &existing, kind)?;
                }
                // A FIFO or device cannot be replaced by a renamed temporary: stream into it.
                let file = fs::OpenOptions::new().write(true).open(&at).map_err(|e| {
                    FileError::io(format!("cannot open {} for writing", dest.display()), e)
                })?;
                // What was opened is what was checked, not a file swapped in since (opened
                // without O_TRUNC, so nothing of it has changed yet).
                let opened = file.metadata().map_err(|e| {
                    FileError::io(format!("cannot open {} for writing", dest.display()), e)
                })?;
                if (opened.dev(), opened.ino()) != (existing.dev(), existing.ino()) {
                    return Err(FileError::io(
                        format!("cannot open {} for writing", dest.display()),
                        io::Error::other(
                            "it was replaced between paraes's check and its open; nothing was written",
                        ),
                    ));
                }
                if options.binary && file.is_terminal() {
                    return Err(FileError::Terminal(Some(dest.to_path_buf())));
                }
                set_pending(Pending::Stream);
                return Ok(Output::Stream(file, dest.to_path_buf()));
            }
            if !options.replace {
                return Err(FileError::Exists(dest.to_path_buf()));
            }
        }
        let dir = directory_of(&at);
        let cannot_create = |e| cannot_create(dest, directory_of(dest), e);
        let anonymous = match options.reach {
            Reach::ThisMachine => anonymous_in(dir).map_err(cannot_create)?,
            Reach::OtherMachines => None,
        };
        let temp = match anonymous {
            Some(file) => {
                set_pending(Pending::Anonymous);
                Temporary::Anonymous(file)
            }
            None => {
                let named = named_in(dir, &at).map_err(cannot_create)?;
                set_pending(Pending::Named(named.path().to_path_buf()));
                Temporary::Named(named)
            }
        };
        Ok(Output::File {
            temp,
            dest: dest.to_path_buf(),
            at,
            force: options.replace,
            _within: options.within.clone(),
        })
    }

    /// This output written as ASCII armor (docs/FORMAT.md): a text stream, written in order
    /// (it has no offsets), finished by [`Output::commit`].
    pub fn armored(self) -> Self {
        Output::Armored(Box::new(ArmorWriter::new(self)))
    }

    /// Writes `bytes` at `offset` of an output file paraes created (its temporary), for
    /// writers that place their pieces themselves (several threads or ranks); refused for a
    /// stream, which has no offsets.
    pub fn write_at(&self, bytes: &[u8], offset: u64) -> Result<(), FileError> {
        match self.file() {
            Some(file) => file
                .write_all_at(bytes, offset)
                .map_err(|e| FileError::io(format!("writing {} failed", self.name()), e)),
            None => Err(FileError::io(
                format!("writing {} failed", self.name()),
                io::Error::new(io::ErrorKind::Unsupported, "a stream has no offsets"),
            )),
        }
    }

    /// A path through which other processes can open the unfinished output for writing
    /// (MPI ranks), when the output is a file.
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
    pub fn is_file(&self) -> bool {
        matches!(self, Output::File { .. })
    }

    /// The output as error messages name it.
    pub fn name(&self) -> String {
        match self {
            Output::Stdout(_) => "standard output".to_owned(),
            Output::Stream(_, path) | Output::File { dest: path, .. } => path.display().to_string(),
            Output::Armored(armored) => armored.get_ref().name(),
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
            Output::Armored(armored) => &mut **armored,
        }
    }

    /// Makes the output final: flushes it to disk and gives it its name, durably.
    pub fn commit(self) -> Result<(), FileError> {
        if let Some(dir) = self.commit_leaving_directory()? {
            sync_directory(&dir);
        }
        Ok(())
    }

    /// [`Output::commit`] without syncing the directory that holds the new name: returns
    /// that directory, for a many-file run to sync each of its directories once at the end.
    pub fn commit_leaving_directory(self) -> Result<Option<PathBuf>, FileError> {
        if let Output::Armored(armored) = self {
            let name = armored.get_ref().name();
            let inner = armored
                .finish()
                .map_err(|e| FileError::io(format!("writing {name} failed"), e))?;
            return inner.commit_leaving_directory();
        }
        let Output::File {
            temp,
            dest,
            at,
            force,
            _within,
        } = self
        else {
            self.flush_stream()?;
            set_pending(Pending::Nothing);
            return Ok(None);
        };
        let shown = dest.display();
        let linked = match temp {
            Temporary::Anonymous(file) => {
                file.sync_all()
                    .map_err(|e| FileError::io(format!("writing {shown} failed"), e))?;
                // A signal from here on may find the output already in place: say nothing
                // about it rather than claim that nothing was left.
                set_pending(Pending::Nothing);
                link_anonymous(&file, &at, force)
            }
            Temporary::Named(named) => {
                named
                    .as_file()
                    .sync_all()
                    .map_err(|e| FileError::io(format!("writing {shown} failed"), e))?;
                named.persist(&at, force)
            }
        };
        set_pending(Pending::Nothing);
        linked.map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                FileError::AppearedMeanwhile(dest.clone())
            } else {
                FileError::io(format!("cannot create {shown}"), e)
            }
        })?;
        Ok(Some(directory_of(&dest).to_path_buf()))
    }

    fn flush_stream(mut self) -> Result<(), FileError> {
        let name = self.name();
        self.writer()
            .flush()
            .map_err(|e| FileError::io(format!("writing {name} failed"), e))
    }
}

/// The output's stream ([`Output::writer`]) as a writer of its own (what an armor writes to).
impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.writer().write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

/// Makes the names in `dir` durable (best effort: not every file system lets a directory be
/// synced).
pub fn sync_directory(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

/// The path `/proc` gives this process's open descriptor `fd`: the file (or directory) itself,
/// whatever its names are now.
pub fn fd_path(fd: &impl AsRawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The directory a destination lives in.
pub(crate) fn directory_of(dest: &Path) -> &Path {
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
    let linkable = fs::metadata(fd_path(&file)).is_ok();
    Ok(linkable.then_some(file))
}

/// The most bytes of a file's name that its hidden temporaries repeat: with the dots, a
/// 16-digit hash, the 12 random characters and `.paraes-tmp`, a temporary's name stays within
/// the 255 bytes a name may have, however long the file's own name is.
const HIDDEN_STEM: usize = 200;

/// How the hidden temporaries of the file named `name` begin: `.NAME.`; where the name is
/// longer than [`HIDDEN_STEM`] bytes or not UTF-8, `.CUT~HASH.`: the name cut (at a character,
/// its bytes not UTF-8 shown as U+FFFD) and 16 hex digits of its BLAKE3 hash, so two names that
/// share their first bytes (or differ only in bytes that are not UTF-8) never share a prefix
/// (which [`crate::leftovers`] finds temporaries by).
pub(crate) fn hidden_prefix(name: &OsStr) -> String {
    let shown = name.to_string_lossy();
    let mut end = shown.len().min(HIDDEN_STEM);
    while !shown.is_char_boundary(end) {
        end -= 1;
    }
    if end == shown.len() && name.to_str().is_some() {
        return format!(".{shown}.");
    }
    let hash = blake3::hash(name.as_encoded_bytes());
    format!(".{}~{}.", &shown[..end], hex::encode(&hash.as_bytes()[..8]))
}

/// A named hidden temporary beside `dest`, listed for a signal to remove.
fn named_in(dir: &Path, dest: &Path) -> io::Result<ListedTemp> {
    ListedTemp::make(|| {
        tempfile::Builder::new()
            .prefix(&hidden_prefix(dest.file_name().unwrap_or_default()))
            .suffix(".paraes-tmp")
            .tempfile_in(dir)
    })
}

/// Gives the unnamed `file` the name `dest`: linked directly when `dest` is free (refused if
/// it appeared meanwhile); with `force` over an existing file, linked to a hidden name and
/// renamed over it (atomic for readers of `dest`).
fn link_anonymous(file: &File, dest: &Path, force: bool) -> io::Result<()> {
    let proc_path = fd_path(file);
    let link = |to: &Path| rustix::fs::linkat(CWD, &proc_path, CWD, to, AtFlags::SYMLINK_FOLLOW);
    match link(dest) {
        Ok(()) => return Ok(()),
        Err(Errno::EXIST) if force => {}
        Err(e) => return Err(e.into()),
    }
    let dir = directory_of(dest);
    let prefix = hidden_prefix(dest.file_name().unwrap_or_default());
    for _ in 0..16 {
        let mut random = [0u8; 6];
        paraes_core::container::random_bytes(&mut random).map_err(io::Error::other)?;
        let hidden = dir.join(format!("{prefix}{}.paraes-tmp", hex::encode(random)));
        // Ours once linked: a signal removes it (SIGKILL can leave it).
        match make_named(
            || link(&hidden).map_err(io::Error::from),
            |()| hidden.clone(),
        ) {
            Ok(()) => {
                set_pending(Pending::Named(hidden.clone()));
                let renamed = fs::rename(&hidden, dest).inspect_err(|_| {
                    let _ = fs::remove_file(&hidden);
                });
                named_done(&hidden);
                set_pending(Pending::Nothing);
                return renamed;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free temporary name"))
}

/// Says what a failure to create the temporary means.
fn cannot_create(dest: &Path, dir: &Path, e: io::Error) -> FileError {
    // tempfile's message ends with the random name: say what it means instead.
    let why = match e.kind() {
        io::ErrorKind::NotFound if dir.is_dir() => {
            "the file system there cannot hold new files".to_owned()
        }
        io::ErrorKind::NotFound => "that directory does not exist".to_owned(),
        io::ErrorKind::PermissionDenied => "that directory is not writable".to_owned(),
        kind => io::Error::from(kind).to_string(),
    };
    FileError::CannotCreate {
        dest: dest.to_path_buf(),
        dir: dir.to_path_buf(),
        why,
        cause: e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's rules: nothing streamed into a FIFO, only a regular file replaced.
    fn files_only(replace: bool) -> OutputOptions {
        OutputOptions {
            within: None,
            replace,
            stream_into_special_files: false,
            ..OutputOptions::default()
        }
    }

    #[test]
    fn an_output_appears_whole_on_commit_and_replaces_only_when_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        let mut output = Output::create(Some(&dest), &files_only(false)).unwrap();
        output.writer().write_all(b"new").unwrap();
        assert!(!dest.exists(), "no name before the commit");
        output.commit().unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"new");
        let err = Output::create(Some(&dest), &files_only(false))
            .err()
            .unwrap();
        assert!(matches!(err, FileError::Exists(_)), "{err}");
        let mut output = Output::create(Some(&dest), &files_only(true)).unwrap();
        output.writer().write_all(b"newer").unwrap();
        drop(output);
        assert_eq!(
            fs::read(&dest).unwrap(),
            b"new",
            "dropped: nothing replaced"
        );
        let output = Output::create(Some(&dest), &files_only(true)).unwrap();
        output.commit().unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }

    /// An armored output has no offsets (it is written in order) and appears, whole and
    /// ended by the end line, only on commit.
    #[test]
    fn an_armored_output_is_a_stream_finished_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.asc");
        let mut output = Output::create(Some(&dest), &files_only(false))
            .unwrap()
            .armored();
        assert!(output.at_offsets().is_none() && output.file().is_none() && !output.is_file());
        assert_eq!(output.name(), dest.display().to_string());
        output.writer().write_all(&[1u8; 49]).unwrap();
        assert!(!dest.exists());
        output.commit().unwrap();
        let text = String::from_utf8(fs::read(&dest).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(
            (lines[0], lines[3]),
            (crate::armor::BEGIN, crate::armor::END)
        );
        assert_eq!((lines[1].len(), lines[2].len()), (64, 4));
    }

    #[test]
    fn a_fifo_is_refused_unless_streams_are_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = Output::create(Some(&fifo), &files_only(true))
            .err()
            .unwrap();
        assert!(
            matches!(err, FileError::OutputNotRegular { kind: "a FIFO", .. }),
            "{err}"
        );
        let err = Output::create(Some(dir.path()), &files_only(true))
            .err()
            .unwrap();
        assert!(matches!(err, FileError::OutputIsDirectory(_)), "{err}");
    }

    #[test]
    fn a_temporary_that_cannot_be_made_keeps_the_system_s_error_number() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("missing").join("out");
        let err = Output::create(Some(&dest), &files_only(false))
            .err()
            .unwrap();
        assert!(matches!(err, FileError::CannotCreate { .. }), "{err}");
        assert!(
            err.to_string().ends_with("that directory does not exist"),
            "{err}"
        );
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(FileError::Exists(dest).raw_os_error(), None);
    }
}
