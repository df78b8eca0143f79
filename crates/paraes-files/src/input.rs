//! Inputs: standard input, a file, a stream whose first bytes were read ahead and are
//! served again, or an armored container decoded as it is read. Which files a call takes is its own option ([`InputKinds`]), never a
//! process-wide setting, so two threads (two Python calls) keep their own rules.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::armor::{self, ArmorReader};
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
    /// An armored container ([`Input::dearmored`]): a stream of the container's bytes, whatever
    /// the input beneath (it has no offsets and no length).
    Armored(Box<ArmorReader<Input>>),
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

    /// A container input that may be armored: when its first bytes are a PEM-style begin
    /// line, the armored input (its begin line checked now), else this input as it is. Looked
    /// at without moving a regular file's offset; a stream's first bytes are served again.
    pub fn dearmored(self) -> Result<Self, FileError> {
        let (input, armored) = self.starts_armored()?;
        if !armored {
            return Ok(input);
        }
        let name = input.name();
        let failed = |e| FileError::io(format!("reading {name} failed"), e);
        if let (Input::File(file, _), Some(len)) = (&input, input.len()) {
            // A file's whole armor is checked before any of it is used, so a run that writes
            // to a stream gets nothing from a file whose armor is then refused (a binary file
            // has its end checked before anything is written too).
            let mut check = ArmorReader::new(paraes_core::positioned::ReadAt::new(file, 0, len))
                .map_err(failed)?;
            io::copy(&mut check, &mut io::sink()).map_err(failed)?;
        }
        let reader = ArmorReader::new(input).map_err(failed)?;
        Ok(Input::Armored(Box::new(reader)))
    }

    /// This input, and whether its first bytes are a PEM-style begin line: looked at without
    /// moving a regular file's offset (a stream's first bytes are served again), and without
    /// reading the rest, so a run that cannot take armor refuses it at once (not after
    /// [`Input::dearmored`]'s check of the whole armor).
    pub fn starts_armored(self) -> Result<(Self, bool), FileError> {
        let mut start = [0u8; armor::ARMOR_PREFIX.len()];
        let failed = |name: String| move |e| FileError::io(format!("reading {name} failed"), e);
        let (input, seen) = match (&self, self.len()) {
            (Input::File(file, _), Some(_)) => {
                let seen = read_file_start(file, &mut start).map_err(failed(self.name()))?;
                (self, seen)
            }
            _ => {
                let mut input = self;
                let seen = read_start(|buf, _| input.read(buf), &mut start);
                let seen = seen.map_err(failed(input.name()))?;
                (input.replaying(start[..seen].to_vec()), seen)
            }
        };
        let armored = armor::looks_armored(&start[..seen]);
        Ok((input, armored))
    }

    /// Whether the input is armored text ([`Input::dearmored`]).
    pub fn is_armored(&self) -> bool {
        match self {
            Input::Armored(_) => true,
            Input::Replaying(chain) => chain.get_ref().1.is_armored(),
            Input::Stdin(_) | Input::File(..) => false,
        }
    }

    /// Standard input, when the input is read from it (beneath a replay or an armor too).
    pub fn stdin(&self) -> Option<&io::Stdin> {
        match self {
            Input::Stdin(stdin) => Some(stdin),
            _ => self.beneath()?.stdin(),
        }
    }

    /// The input beneath a replay or an armor.
    fn beneath(&self) -> Option<&Input> {
        match self {
            Input::Replaying(chain) => Some(chain.get_ref().1),
            Input::Armored(reader) => Some(reader.get_ref()),
            Input::Stdin(_) | Input::File(..) => None,
        }
    }

    /// The input file's path, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::File(_, path) => Some(path),
            _ => self.beneath()?.path(),
        }
    }

    /// The input as error messages name it.
    pub fn name(&self) -> String {
        match (self, self.beneath()) {
            (Input::File(_, path), _) => path.display().to_string(),
            (_, Some(beneath)) => beneath.name(),
            _ => "standard input".to_owned(),
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
            Input::Stdin(_) | Input::Replaying(_) | Input::Armored(_) => None,
        }
    }

    /// Whether the input is known to be empty (a regular file of length 0).
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The file the input is read from, if it is one (beneath a replay or an armor too).
    pub fn file(&self) -> Option<&File> {
        match self {
            Input::File(file, _) => Some(file),
            _ => self.beneath()?.file(),
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
            Input::Armored(reader) => reader.read(buf),
        }
    }

    /// Each kind's own vectored read (`readv` for standard input and a file): the pipeline
    /// reads a stream straight into the data slots of the GCM records it seals, 16 KiB slots
    /// between tags, and `Read`'s default fills only the first slot a call (a read syscall per
    /// 16 KiB: `enc < f` spent twice `cat`'s system time in its reads).
    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        match self {
            Input::Stdin(stdin) => stdin.read_vectored(bufs),
            Input::File(file, _) => file.read_vectored(bufs),
            Input::Replaying(chain) => chain.read_vectored(bufs),
            Input::Armored(reader) => reader.read_vectored(bufs),
        }
    }
}

/// Reads up to `start.len()` bytes from offset 0 on by `read_at(buf, offset)`, fewer only
/// where the input ends; returns how many.
/// Whether `file`, read from its start (its offset unmoved), begins a PEM-style armor: for
/// commands that change a binary container in place (rekey, upgrade) and refuse armor.
pub fn file_looks_armored(file: &File) -> io::Result<bool> {
    let mut start = [0u8; armor::ARMOR_PREFIX.len()];
    let seen = read_file_start(file, &mut start)?;
    Ok(armor::looks_armored(&start[..seen]))
}

/// [`read_start`] of a file at its offsets from 0.
fn read_file_start(file: &File, start: &mut [u8]) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    read_start(|buf, at| file.read_at(buf, at as u64), start)
}

fn read_start(
    mut read_at: impl FnMut(&mut [u8], usize) -> io::Result<usize>,
    start: &mut [u8],
) -> io::Result<usize> {
    let mut seen = 0;
    while seen < start.len() {
        match read_at(&mut start[seen..], seen) {
            Ok(0) => break,
            Ok(n) => seen += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(seen)
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

    /// A vectored read of a file, plain or beneath a replay, fills more than its first buffer
    /// in one call (as `readv` does), not one buffer a call as `Read`'s default does.
    #[test]
    fn vectored_reads_fill_every_buffer_in_one_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..48u8).collect();
        fs::write(&path, &bytes).unwrap();
        let open = || Input::open(Some(&path), InputKinds::FilesAndStreams).unwrap();
        for (what, mut input) in [
            ("file", open()),
            ("replaying", open().replaying(Vec::new())),
        ] {
            let (mut a, mut b, mut c) = ([0u8; 16], [0u8; 16], [0u8; 16]);
            let mut bufs = [
                io::IoSliceMut::new(&mut a),
                io::IoSliceMut::new(&mut b),
                io::IoSliceMut::new(&mut c),
            ];
            assert_eq!(input.read_vectored(&mut bufs).unwrap(), 48, "{what}");
            assert_eq!([a, b, c].concat(), bytes, "{what}");
        }
    }

    /// A binary container file stays a file read at its offsets (nothing read moved them); an
    /// armored one becomes a stream of the container's bytes, with no offsets and no length,
    /// that still names and guards its file.
    #[test]
    fn dearmored_keeps_a_binary_file_positional_and_streams_an_armored_one() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("binary");
        fs::write(&binary, b"PARAES container bytes").unwrap();
        let input = Input::open(Some(&binary), InputKinds::RegularOnly).unwrap();
        let mut input = input.dearmored().unwrap();
        assert!(matches!(input, Input::File(..)) && !input.is_armored());
        assert_eq!(
            input.at_offsets().map(|(_, at, len)| (at, len)),
            Some((0, 22))
        );
        let mut all = Vec::new();
        input.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"PARAES container bytes");

        let mut armor = armor::ArmorWriter::new(Vec::new());
        armor.write_all(&[7u8; 100]).unwrap();
        let armored = dir.path().join("armored");
        fs::write(&armored, armor.finish().unwrap()).unwrap();
        let input = Input::open(Some(&armored), InputKinds::FilesAndStreams).unwrap();
        let mut input = input.dearmored().unwrap();
        assert!(input.is_armored());
        assert!(input.at_offsets().is_none() && input.len().is_none());
        assert_eq!(input.path(), Some(armored.as_path()));
        assert!(input.refuse_as_output(&armored).is_err());
        let mut all = Vec::new();
        input.read_to_end(&mut all).unwrap();
        assert_eq!(all, [7u8; 100]);
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
