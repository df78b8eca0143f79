//! Inputs: standard input, a file, or a stream whose first bytes were read ahead and are
//! served again. Which files a call takes is its own option ([`InputKinds`]), never a
//! process-wide setting, so two threads (two Python calls) keep their own rules.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::error::{special_kind, FileError};
use crate::reads::{file_id, FilesRead};

/// Which inputs a call opens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InputKinds {
    /// Regular files, and FIFOs and devices read as streams (one input alone).
    #[default]
    FilesAndStreams,
    /// Regular files only, opened without ever waiting (many inputs: a FIFO with no writer
    /// would block the run, a device would never end).
    RegularOnly,
}

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
    /// Opens `path` (`None`: standard input), taking what `kinds` allows.
    pub fn open(path: Option<&Path>, kinds: InputKinds) -> Result<Self, FileError> {
        let Some(path) = path else {
            return Ok(Input::Stdin(io::stdin()));
        };
        if kinds == InputKinds::RegularOnly {
            return Ok(Input::File(open_regular_file(path)?, path.to_path_buf()));
        }
        if path.is_dir() {
            return Err(FileError::InputIsDirectory(path.to_path_buf()));
        }
        let file = File::open(path)
            .map_err(|e| FileError::io(format!("cannot open {}", path.display()), e))?;
        Ok(Input::File(file, path.to_path_buf()))
    }

    /// This input with `ahead`, bytes already read from it, served again first.
    pub fn replaying(self, ahead: Vec<u8>) -> Self {
        Input::Replaying(io::Cursor::new(ahead).chain(Box::new(self)))
    }

    /// The input file's path, if it is one.
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

    /// Whether the input is known to be empty (a regular file of length 0).
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The input's file, if it is one.
    pub fn file(&self) -> Option<&File> {
        match self {
            Input::Stdin(_) => None,
            Input::File(file, _) => Some(file),
            Input::Replaying(chain) => chain.get_ref().1.file(),
        }
    }

    /// Refuses `dest` as the output of a job that reads this input when `dest` names the
    /// input's own file (through links: compared by device and inode), which writing it would
    /// destroy.
    /// (The rule of [`FilesRead`] for the one file read.)
    pub fn refuse_as_output(&self, dest: &Path) -> Result<(), FileError> {
        let mut read = FilesRead::new();
        let input = self.file().and_then(|file| file.metadata().ok());
        read.id("the input", input.as_ref().map(file_id));
        read.refuse_as_output_path(dest)
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

/// Refuses what `meta` describes at `path` unless it is a regular file.
pub fn check_regular(path: &Path, meta: &fs::Metadata) -> Result<(), FileError> {
    if meta.is_dir() {
        return Err(FileError::InputIsDirectory(path.to_path_buf()));
    }
    match special_kind(meta.file_type()) {
        Some(kind) => Err(FileError::InputNotRegular {
            path: path.to_path_buf(),
            kind,
        }),
        None => Ok(()),
    }
}

/// Opens `path` only if it is a regular file, without ever waiting: a FIFO with no writer
/// would block forever, and a device could be read without end. It is looked at before
/// opening (so no FIFO or device is opened at all), then opened with `O_NONBLOCK` and looked
/// at again through the descriptor (so a file swapped meanwhile is caught too).
pub fn open_regular_file(path: &Path) -> Result<File, FileError> {
    if let Ok(meta) = fs::metadata(path) {
        check_regular(path, &meta)?;
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let file = rustix::fs::open(path, flags, Mode::empty())
        .map(File::from)
        .map_err(|e| FileError::io(format!("cannot open {}", path.display()), e.into()))?;
    let read_error = |e| FileError::io(format!("cannot read {}", path.display()), e);
    let meta = file.metadata().map_err(read_error)?;
    check_regular(path, &meta)?;
    // A regular file never blocks, but leave the descriptor as a plain open would be.
    let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| read_error(e.into()))?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK).map_err(|e| read_error(e.into()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_s_own_file_is_refused_as_its_output_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"data").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let input = Input::open(Some(&path), InputKinds::FilesAndStreams).unwrap();
        for same in [&path, &link] {
            let err = input.refuse_as_output(same).unwrap_err();
            assert!(matches!(err, FileError::OutputIsRead { .. }), "{err}");
            assert!(
                err.to_string().contains("is the same file as the input"),
                "{err}"
            );
        }
        let other = dir.path().join("g");
        input.refuse_as_output(&other).unwrap();
        fs::write(&other, b"data").unwrap();
        input.refuse_as_output(&other).unwrap();
        let replaying = input.replaying(b"ahead".to_vec());
        assert!(replaying.refuse_as_output(&link).is_err());
    }

    #[test]
    fn regular_only_refuses_a_fifo_without_opening_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = Input::open(Some(&fifo), InputKinds::RegularOnly)
            .err()
            .unwrap();
        assert!(
            matches!(err, FileError::InputNotRegular { kind: "a FIFO", .. }),
            "{err}"
        );
        let err = Input::open(Some(dir.path()), InputKinds::RegularOnly)
            .err()
            .unwrap();
        assert!(matches!(err, FileError::InputIsDirectory(_)), "{err}");
    }
}
