//! How a job's two ends can be reached for many chunks in flight: a regular input file read
//! at offsets from where its reading stands ([`Input::at_offsets`], with the kernel told it
//! is read through), an output file paraes created written at offsets ([`Output::at_offsets`],
//! its room reserved up front by [`Output::reserve`]), and pipes widened so a stream moves in
//! large pieces ([`widen_pipe`]). Standard input and output are always streams, even when
//! they are regular files: their offsets are shared with the shell (`>>` appends). ASCII armor
//! at either end is a stream too (an [`Input::Armored`], an [`Output::Armored`]): its text has
//! no offsets that match the container's, so it takes the in-order path by the same rule.

use std::fs::File;
use std::io::Seek;
use std::num::NonZeroU64;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;

use rustix::fs::{Advice, FallocateFlags, FileType, FsWord};
use rustix::io::Errno;

use crate::error::FileError;
use crate::input::Input;
use crate::output::{Output, Temporary};

impl Input {
    /// The input's file, where its stream starts in it and the stream's length, when it is a
    /// regular file paraes opened (not standard input, not a stream read ahead) whose size is
    /// its length: then it can be read at offsets, and the kernel is told it will be read
    /// through once (read-ahead). A kernel's file (procfs, sysfs), whose size is not what it
    /// holds, is read as a stream, to its end.
    pub fn at_offsets(&self) -> Option<(&File, u64, u64)> {
        let Input::File(file, _) = self else {
            return None;
        };
        let meta = file.metadata().ok().filter(|m| m.is_file())?;
        if pseudo_file(file) {
            return None;
        }
        // A file whose bytes go on past its size (a kernel file that says 0) is read to its end.
        let mut past_end = [0u8; 1];
        if file
            .read_at(&mut past_end, meta.len())
            .map_or(true, |n| n != 0)
        {
            return None;
        }
        let at = (&*file).stream_position().ok()?;
        let len = meta.len().checked_sub(at)?;
        // Only advice: a file system that takes none reads the same bytes.
        let _ = rustix::fs::fadvise(file, at, NonZeroU64::new(len), Advice::Sequential);
        Some((file, at, len))
    }
}

impl Output {
    /// The output file when paraes created it (a temporary that nobody else writes): then it can
    /// be written at offsets. `None` for standard output, a FIFO or device, and armor (text
    /// written in order).
    pub fn at_offsets(&self) -> Option<&File> {
        match self {
            Output::File { temp, .. } => Some(match temp {
                Temporary::Anonymous(file) => file,
                Temporary::Named(named) => named.as_file(),
            }),
            Output::Stdout(_) | Output::Stream(..) | Output::Armored(_) => None,
        }
    }

    /// Reserves the blocks of the output's first `len` bytes before they are written
    /// (`fallocate(2)`, keeping the file's size: a failure leaves no length that looks
    /// written), so that writers at offsets do not each allocate and the file is laid out in
    /// order, and a disk too small fails now, before any work. A file system without it (ramfs,
    /// some network ones) just writes; `posix_fallocate`'s fallback, which writes every block,
    /// is never used. Nor is anything reserved in memory (tmpfs): there `fallocate` allocates
    /// and zeroes every page on one thread before the writers overwrite them all (measured in
    /// docs/RESULTS.md), and a full tmpfs still fails at the first write that does not fit.
    pub fn reserve(&self, len: u64) -> Result<(), FileError> {
        let Some(file) = self.at_offsets() else {
            return Ok(());
        };
        if len == 0 || in_memory(file) {
            return Ok(());
        }
        match rustix::fs::fallocate(file, FallocateFlags::KEEP_SIZE, 0, len) {
            Err(e @ (Errno::NOSPC | Errno::DQUOT)) => Err(FileError::io(
                format!("writing {} failed: no room for its {len} bytes", self.name()),
                e.into(),
            )),
            Err(e @ Errno::FBIG) => Err(FileError::io(
                format!(
                    "writing {} failed: it would be {len} bytes, more than this file system (or the process's file size limit) allows",
                    self.name()
                ),
                e.into(),
            )),
            // Not supported here, or not for this file: the writes allocate as they go.
            Ok(()) | Err(_) => Ok(()),
        }
    }
}

/// `TMPFS_MAGIC` of `statfs(2)`: a file system in memory.
const TMPFS_MAGIC: FsWord = 0x0102_1994;

/// Whether `file` lives on tmpfs.
fn in_memory(file: &File) -> bool {
    rustix::fs::fstatfs(file).is_ok_and(|fs| fs.f_type == TMPFS_MAGIC)
}

/// `PROC_SUPER_MAGIC` and `SYSFS_MAGIC` of `statfs(2)`: files the kernel makes up as they are
/// read, whose sizes say nothing of their contents (procfs says 0, sysfs 4096).
const PSEUDO_MAGICS: [FsWord; 2] = [rustix::fs::PROC_SUPER_MAGIC, 0x6265_6572];

/// Whether `file` lives on procfs or sysfs.
fn pseudo_file(file: &File) -> bool {
    rustix::fs::fstatfs(file).is_ok_and(|fs| PSEUDO_MAGICS.contains(&fs.f_type))
}

/// Linux's default `/proc/sys/fs/pipe-max-size`, taken where it cannot be read.
const DEFAULT_PIPE_MAX: usize = 1 << 20;

/// The widest paraes makes a pipe, whatever the system allows: a window of chunks.
const WIDEST_PIPE: usize = 4 << 20;

/// Widens `fd`'s pipe, when it is one, to the largest buffer an unprivileged process may set
/// (`/proc/sys/fs/pipe-max-size`, 1 MiB by default, up to [`WIDEST_PIPE`]; a pipe starts at
/// 64 KiB), so a stream passes in fewer, larger pieces. Returns the pipe's size, `None` for
/// anything but a pipe. A pipe that cannot be widened (the user's pipe quota is spent) stays
/// as it is.
pub fn widen_pipe(fd: impl AsFd) -> Option<usize> {
    let fd = fd.as_fd();
    let stat = rustix::fs::fstat(fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Fifo {
        return None;
    }
    let allowed = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_PIPE_MAX)
        .min(WIDEST_PIPE);
    let now = rustix::pipe::fcntl_getpipe_size(fd).ok()?;
    if now >= allowed {
        return Some(now);
    }
    Some(rustix::pipe::fcntl_setpipe_size(fd, allowed).unwrap_or(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::InputKinds;
    use crate::output::OutputOptions;
    use std::io::Read;

    #[test]
    fn a_file_input_is_read_at_offsets_from_where_its_reading_stands() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, b"header+body").unwrap();
        let mut input = Input::open(Some(&path), InputKinds::FilesAndStreams).unwrap();
        let mut header = [0u8; 7];
        input.read_exact(&mut header).unwrap();
        let (_, at, len) = input.at_offsets().unwrap();
        assert_eq!((at, len), (7, 4));
        assert!(input.replaying(b"x".to_vec()).at_offsets().is_none());
    }

    #[test]
    fn a_kernel_file_whose_size_is_not_its_length_is_a_stream() {
        for path in ["/proc/self/status", "/proc/cpuinfo"] {
            let path = std::path::Path::new(path);
            let input = Input::open(Some(path), InputKinds::FilesAndStreams).unwrap();
            assert!(input.at_offsets().is_none(), "{}", path.display());
        }
    }

    #[test]
    fn an_output_file_is_reserved_without_changing_its_length_and_a_stream_is_not_at_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        let options = OutputOptions::default();
        let mut output = Output::create(Some(&dest), &options).unwrap();
        output.reserve(1 << 20).unwrap();
        let file = output.at_offsets().unwrap();
        assert_eq!(file.metadata().unwrap().len(), 0);
        output.writer().write_all(b"abc").unwrap();
        output.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"abc");
        let null = Output::create(Some(std::path::Path::new("/dev/null")), &options).unwrap();
        assert!(null.at_offsets().is_none());
        null.reserve(10).unwrap();
    }

    #[test]
    fn nothing_is_reserved_in_memory() {
        use std::os::unix::fs::MetadataExt;
        let shm = std::path::Path::new("/dev/shm");
        let Ok(dir) = tempfile::tempdir_in(shm) else {
            eprintln!("SKIPPED nothing_is_reserved_in_memory: no /dev/shm to make a file in");
            return;
        };
        let output =
            Output::create(Some(&dir.path().join("out")), &OutputOptions::default()).unwrap();
        let file = output.at_offsets().unwrap();
        assert!(in_memory(file), "/dev/shm is not tmpfs here");
        output.reserve(8 << 20).unwrap();
        assert_eq!(file.metadata().unwrap().blocks(), 0, "pages were allocated");
    }

    #[test]
    fn a_pipe_is_widened_and_anything_else_is_left_alone() {
        let (read, _write) = rustix::pipe::pipe().unwrap();
        let size = widen_pipe(&read).unwrap();
        assert!(size >= 64 << 10, "{size}");
        let file = tempfile::tempfile().unwrap();
        assert_eq!(widen_pipe(&file), None);
    }
}
