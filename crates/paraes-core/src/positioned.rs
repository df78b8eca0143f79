//! `Read` and `Write` over positioned file I/O (`pread`/`pwrite`): a byte range of a shared
//! file as a stream, so a segment of a stream can run through the pipeline
//! ([`crate::pipeline::run_segment`]) while other processes work on other ranges of the same
//! files. Neither adapter moves the file's own offset.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;

/// Reads `len` bytes of a file from byte `at`, then reports the end. A file that ends before
/// the range does is an error (it shrank while being read), not a short stream.
#[derive(Debug)]
pub struct ReadAt<'a> {
    file: &'a File,
    at: u64,
    end: u64,
}

impl<'a> ReadAt<'a> {
    /// The `len` bytes of `file` from byte `at`.
    pub fn new(file: &'a File, at: u64, len: u64) -> Self {
        ReadAt {
            file,
            at,
            end: at + len,
        }
    }
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.at)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input became shorter while it was being read",
            ));
        }
        self.at += n as u64;
        Ok(n)
    }
}

/// Writes a stream into a file from byte `at` on.
#[derive(Debug)]
pub struct WriteAt<'a> {
    file: &'a File,
    at: u64,
}

impl<'a> WriteAt<'a> {
    /// A stream written into `file` from byte `at`.
    pub fn new(file: &'a File, at: u64) -> Self {
        WriteAt { file, at }
    }
}

impl Write for WriteAt<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_and_write_in_place() {
        let path = std::env::temp_dir().join(format!("paraes-positioned-{}", std::process::id()));
        std::fs::write(&path, b"0123456789").unwrap();
        let file = File::options().read(true).write(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let mut got = String::new();
        ReadAt::new(&file, 3, 4).read_to_string(&mut got).unwrap();
        assert_eq!(got, "3456");
        let err = ReadAt::new(&file, 8, 5).read_to_end(&mut Vec::new());
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        WriteAt::new(&file, 2).write_all(b"ab").unwrap();
        let mut all = Vec::new();
        ReadAt::new(&file, 0, 10).read_to_end(&mut all).unwrap();
        assert_eq!(all, b"01ab456789");
    }
}
