//! Inputs and outputs with the safety rails: standard streams, FIFOs and devices written as
//! streams, or an output file written to a temporary beside it and renamed into place only on
//! success (removed on error, Ctrl-C and SIGTERM), never over an existing file without --force,
//! never onto the input.

use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use tempfile::NamedTempFile;

/// The temporary output being written, for the interrupt handler to remove.
static PENDING_TEMPORARY: Mutex<Option<PathBuf>> = Mutex::new(None);

fn set_pending(path: Option<PathBuf>) {
    *PENDING_TEMPORARY.lock().unwrap_or_else(|e| e.into_inner()) = path;
}

/// On Ctrl-C, SIGTERM or SIGHUP: remove the temporary output and exit with status 130.
pub fn install_interrupt_handler() -> Result<()> {
    ctrlc::set_handler(|| {
        let pending = PENDING_TEMPORARY
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match pending {
            Some(path) => {
                let _ = fs::remove_file(path);
                eprintln!("paraes: interrupted: no output file was left behind");
            }
            // Standard output, a FIFO or a device: what went out cannot be taken back.
            None => eprintln!(
                "paraes: interrupted: anything already written to the output stream is incomplete"
            ),
        }
        std::process::exit(130);
    })
    .context("cannot install the interrupt handler")
}

/// The write end of the pipe to the watcher of the temporary output; held until the process
/// ends, however it ends.
static WATCHER: Mutex<Option<ChildStdin>> = Mutex::new(None);

/// The watcher (`paraes watch-output PATH`, started by [`Output::watch_for_kill`]): waits until
/// the process writing PATH ends, which closes our standard input, then removes PATH if it was
/// not renamed into place. The only cleanup that survives SIGKILL of the writer.
pub fn watch_output(path: &Path) -> Result<()> {
    let mut sink = [0u8; 64];
    let mut stdin = io::stdin();
    while !matches!(stdin.read(&mut sink), Ok(0) | Err(_)) {}
    if fs::remove_file(path).is_ok() {
        eprintln!(
            "paraes: error: the job was killed before it finished: removed its unfinished output"
        );
    }
    Ok(())
}

/// Where the data comes from.
pub enum Input {
    /// Standard input.
    Stdin(io::Stdin),
    /// A regular file (or device) and its path.
    File(File, PathBuf),
}

impl Input {
    /// Opens `path` (`None` or "-": standard input).
    pub fn open(path: Option<&Path>) -> Result<Self> {
        let Some(path) = path.filter(|p| *p != Path::new("-")) else {
            return Ok(Input::Stdin(io::stdin()));
        };
        let shown = path.display();
        if path.is_dir() {
            bail!("{shown} is a directory: paraes encrypts one stream (try: tar c {shown} | paraes enc ...)");
        }
        let file = File::open(path).with_context(|| format!("cannot open {shown}"))?;
        Ok(Input::File(file, path.to_path_buf()))
    }

    /// The input file's path, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Stdin(_) => None,
            Input::File(_, path) => Some(path),
        }
    }

    /// The input as error messages name it.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin(_) => "standard input".to_owned(),
            Input::File(_, path) => path.display().to_string(),
        }
    }

    /// The input's size when it is a regular file.
    pub fn len(&self) -> Option<u64> {
        match self {
            Input::File(file, _) => file
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
            Input::Stdin(_) => None,
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Stdin(stdin) => stdin.read(buf),
            Input::File(file, _) => file.read(buf),
        }
    }
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
        /// The temporary, deleted on drop unless committed.
        temp: NamedTempFile,
        /// The final name.
        dest: PathBuf,
        /// Whether an existing `dest` may be replaced.
        force: bool,
    },
}

impl Output {
    /// Prepares the output `dest` (`None`: standard output). `binary` refuses a terminal.
    pub fn create(dest: Option<&Path>, force: bool, input: &Input, binary: bool) -> Result<Self> {
        let Some(dest) = dest else {
            let stdout = io::stdout();
            if binary && stdout.is_terminal() {
                bail!("refusing to write binary data to a terminal: redirect it (> FILE) or use -o PATH");
            }
            return Ok(Output::Stdout(stdout));
        };
        let shown = dest.display();
        if let Ok(existing) = fs::metadata(dest) {
            if existing.is_dir() {
                bail!("output {shown} is a directory: give a file name with -o");
            }
            if let Some(input_meta) = input.path().and_then(|p| fs::metadata(p).ok()) {
                if input_meta.dev() == existing.dev() && input_meta.ino() == existing.ino() {
                    bail!("input and output are the same file ({shown}): choose another -o");
                }
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
                return Ok(Output::Stream(file, dest.to_path_buf()));
            }
            if !force {
                bail!("output {shown} already exists: use --force to overwrite it");
            }
        }
        let dir = match dest.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned());
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.unwrap_or_default()))
            .suffix(".paraes-tmp")
            .tempfile_in(dir)
            .map_err(|e| {
                // tempfile's message ends with the random name: say what it means instead.
                let why = match e.kind() {
                    io::ErrorKind::NotFound => "that directory does not exist".to_owned(),
                    io::ErrorKind::PermissionDenied => "that directory is not writable".to_owned(),
                    kind => io::Error::from(kind).to_string(),
                };
                anyhow::anyhow!(
                    "cannot create {shown} in {}: {why}: choose another -o",
                    dir.display()
                )
            })?;
        set_pending(Some(temp.path().to_path_buf()));
        Ok(Output::File {
            temp,
            dest: dest.to_path_buf(),
            force,
        })
    }

    /// Starts a watcher process that removes the temporary if this process dies without
    /// committing it, even by SIGKILL (as MPI launchers kill the ranks of a failed job).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn watch_for_kill(&self) -> Result<()> {
        let Some(temp) = self.temporary_path() else {
            return Ok(());
        };
        let exe = std::env::current_exe().context("cannot find the paraes executable")?;
        let mut child = Command::new(exe)
            .arg("watch-output")
            .arg(temp)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            // Its own process group: a launcher killing ours leaves the watcher to clean up.
            .process_group(0)
            .spawn()
            .context("cannot start the watcher of the output")?;
        *WATCHER.lock().unwrap_or_else(|e| e.into_inner()) = child.stdin.take();
        Ok(())
    }

    /// The temporary file being written, when the output is a file (it becomes the output on
    /// [`Output::commit`]).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn temporary_path(&self) -> Option<&Path> {
        match self {
            Output::File { temp, .. } => Some(temp.path()),
            _ => None,
        }
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
            Output::File { temp, .. } => temp.as_file_mut(),
        }
    }

    /// Makes the output final: flushes it to disk and renames the temporary into place.
    pub fn commit(self) -> Result<()> {
        let Output::File { temp, dest, force } = self else {
            return Ok(());
        };
        let shown = dest.display();
        temp.as_file()
            .sync_all()
            .with_context(|| format!("writing {shown} failed"))?;
        let persisted = if force {
            temp.persist(&dest)
        } else {
            temp.persist_noclobber(&dest)
        };
        set_pending(None);
        persisted
            .map_err(|e| anyhow::Error::new(e.error).context(format!("cannot create {shown}")))?;
        Ok(())
    }
}
