//! What went wrong with an input or output file, by type: the front ends choose their advice
//! (a flag, a keyword argument) from the variant, never from the text.

use std::io;
use std::path::PathBuf;

/// Why an input or output could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Binary output to a terminal (`None`: standard output; else the path named).
    #[error("refusing to write binary data to a terminal{}", .0.as_ref().map(|p| format!(" ({})", p.display())).unwrap_or_default())]
    Terminal(Option<PathBuf>),
    /// A name the front end derived from an input's name holds something other than a
    /// regular file: it is never written through.
    #[error("{} exists and is not a regular file (a symbolic link, directory, FIFO or device): paraes does not write through a name it derived", .0.display())]
    DerivedNameTaken(PathBuf),
    /// The output names a directory.
    #[error("output {} is a directory", .0.display())]
    OutputIsDirectory(PathBuf),
    /// The output exists and replacing it was not allowed.
    #[error("output {} already exists", .0.display())]
    Exists(PathBuf),
    /// The output appeared while it was being written (replacing it was not allowed).
    #[error("cannot create {}: it appeared while paraes was writing; nothing was written", .0.display())]
    AppearedMeanwhile(PathBuf),
    /// The output is a FIFO, device or socket, and the caller writes files only.
    #[error("output {} is not a regular file ({kind}): only a regular file is replaced", .path.display())]
    OutputNotRegular {
        /// The output.
        path: PathBuf,
        /// What it is ("a FIFO", "a device", "a socket").
        kind: &'static str,
    },
    /// The output names a file the job reads ([`crate::FilesRead`]): a key, passphrase,
    /// identity or recipients file, or the input.
    #[error(
        "{output} is the same file as {read}, which is read to make it (writing to it would destroy it)"
    )]
    OutputIsRead {
        /// The output, as the user called it.
        output: String,
        /// The file read, in words ("key file k.key").
        read: String,
    },
    /// The temporary beside the output could not be made.
    #[error("cannot create {} in {}: {why}", .dest.display(), .dir.display())]
    CannotCreate {
        /// The output.
        dest: PathBuf,
        /// Its directory.
        dir: PathBuf,
        /// What the failure means.
        why: String,
        /// The system's error (`why` says it in words; kept for its error number).
        cause: io::Error,
    },
    /// The output is an entry that another user may have planted in a shared directory:
    /// see [`crate::shared_dirs::refuse_if_planted`].
    #[error("{} is {what} in {} (sticky and writable by all) that another user owns: paraes does not write through it", .path.display(), .dir.display())]
    Planted {
        /// The entry.
        path: PathBuf,
        /// What it is ("a symbolic link", "a FIFO").
        what: String,
        /// Its directory.
        dir: PathBuf,
    },
    /// An input names a directory.
    #[error("{} is a directory, not a file", .0.display())]
    InputIsDirectory(PathBuf),
    /// An input is a FIFO, device or socket where only regular files are read.
    #[error("{} is not a regular file ({kind})", .path.display())]
    InputNotRegular {
        /// The input.
        path: PathBuf,
        /// What it is ("a FIFO", "a device", "a socket").
        kind: &'static str,
    },
    /// An operating-system call failed; `what` says on what ("cannot open X", "writing X
    /// failed").
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's error.
        #[source]
        source: io::Error,
    },
}

impl FileError {
    /// An I/O failure while doing `what`.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        FileError::Io {
            what: what.into(),
            source,
        }
    }

    /// The system's error number behind the failure, if one is (for front ends whose errors
    /// carry it, as Python's `OSError` does).
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            FileError::Io { source: e, .. } | FileError::CannotCreate { cause: e, .. } => {
                e.raw_os_error()
            }
            _ => None,
        }
    }
}

/// What `kind` is, in words, when it is not a regular file or directory.
pub(crate) fn special_kind(kind: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_file() || kind.is_dir() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("a device")
    }
}

/// `text` with control characters escaped (`\n`, `\t`, ...), so that a file name holding a
/// newline cannot split a message into several lines.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
