//! Vectored I/O into and out of the data slots of GCM chunk records
//! ([`RecordsJob::data_slots`]): a window of plaintext read from a file straight into its
//! records' places (`preadv`), and opened plaintext written from between the tags (`pwritev`,
//! `writev`), so the records job runs in place and no pass copies a window from one buffer to
//! another.

use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Write};
use std::os::fd::AsRawFd;

use crate::engine::{RecordsJob, GCM_RECORD_LEN, GCM_TAG_LEN};

/// The most buffers one `preadv` or `pwritev` takes (Linux's `IOV_MAX`); a longer list goes
/// in several calls.
const MOST_SLICES: usize = 1024;

/// `offset` as the kernel's file offset type: an offset it cannot hold is refused, never
/// wrapped round to another place in the file.
fn file_offset(offset: u64) -> io::Result<libc::off_t> {
    libc::off_t::try_from(offset).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("byte offset {offset} is past what this system's file offsets hold"),
        )
    })
}

/// The file offset `done` bytes after `offset`.
fn file_offset_after(offset: libc::off_t, done: isize) -> io::Result<libc::off_t> {
    file_offset(offset as u64 + done as u64)
}

/// The data slots of the records side `records` (no empty one: a call with nothing left to
/// move would read as the file's end).
fn slots(records: &[u8]) -> Vec<IoSlice<'_>> {
    RecordsJob::data_slots(records.len())
        .filter(|slot| !slot.is_empty())
        .map(|slot| IoSlice::new(&records[slot]))
        .collect()
}

/// Reads the file's bytes from `offset` into the data slots of the records side `records`, in
/// order, until every slot is full. A file that ends first is an `UnexpectedEof` error.
pub(super) fn read_slots_at(file: &File, records: &mut [u8], offset: u64) -> io::Result<()> {
    let mut slices: Vec<IoSliceMut<'_>> = records
        .chunks_mut(GCM_RECORD_LEN)
        .map(|record| {
            let data = record.len().saturating_sub(GCM_TAG_LEN);
            IoSliceMut::new(&mut record[..data])
        })
        .filter(|slice| !slice.is_empty())
        .collect();
    let moves = Moves {
        advance: IoSliceMut::advance_slices,
        at_zero: io::ErrorKind::UnexpectedEof,
    };
    moves.all_at(&mut slices, offset, |left, count, offset| {
        // SAFETY: `IoSliceMut` is ABI-compatible with `iovec` on Unix (its documentation says
        // so); the first `count` of them (`count` <= `left.len()`) describe writable memory
        // that `left` borrows mutably for the whole call, and the descriptor is the open
        // `file`'s.
        unsafe { libc::preadv(file.as_raw_fd(), left.as_mut_ptr().cast(), count, offset) }
    })
}

/// Writes the data slots of the records side `records` to the file from `offset`, back to
/// back (the tags between them are not written).
pub(super) fn write_slots_at(file: &File, records: &[u8], offset: u64) -> io::Result<()> {
    let mut slices = slots(records);
    let moves = Moves {
        advance: IoSlice::advance_slices,
        at_zero: io::ErrorKind::WriteZero,
    };
    moves.all_at(&mut slices, offset, |left, count, offset| {
        // SAFETY: `IoSlice` is ABI-compatible with `iovec` on Unix; the first `count` of them
        // (`count` <= `left.len()`) describe memory that `left` borrows for the whole call,
        // which the kernel only reads, and the descriptor is the open `file`'s.
        unsafe { libc::pwritev(file.as_raw_fd(), left.as_ptr().cast(), count, offset) }
    })
}

/// How a positioned vectored call moves on over its buffers ([`IoSlice`] or [`IoSliceMut`]).
struct Moves<T> {
    /// Drops the buffers a call finished and moves into a part-done one.
    advance: for<'a, 'b> fn(&'b mut &'a mut [T], usize),
    /// The error of a call that moved nothing.
    at_zero: io::ErrorKind,
}

impl<T> Moves<T> {
    /// Calls `call(buffers, count, offset)` (`preadv` or `pwritev` of the first `count`, at
    /// most [`MOST_SLICES`]) from `offset` on, each time from where the last stopped, until
    /// every buffer is done; a call interrupted by a signal is made again.
    fn all_at(
        &self,
        slices: &mut [T],
        offset: u64,
        call: impl Fn(&mut [T], libc::c_int, libc::off_t) -> isize,
    ) -> io::Result<()> {
        let mut offset = file_offset(offset)?;
        let mut left = slices;
        while !left.is_empty() {
            let count = left.len().min(MOST_SLICES) as libc::c_int;
            match call(&mut *left, count, offset) {
                0 => return Err(self.at_zero.into()),
                n if n > 0 => {
                    offset = file_offset_after(offset, n)?;
                    (self.advance)(&mut left, n as usize);
                }
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Writes the data slots of the records side `records` to `output`, back to back, in as few
/// calls as it takes (one `writev` where `output` is a file, a pipe or standard output).
pub(super) fn write_slots(output: &mut (dyn Write + Send), records: &[u8]) -> io::Result<()> {
    let mut slices = slots(records);
    let mut left = &mut slices[..];
    while !left.is_empty() {
        match output.write_vectored(left) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut left, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::GCM_CHUNK_LEN;
    use std::io::Read;
    use std::os::unix::fs::FileExt;

    const G: usize = GCM_CHUNK_LEN;
    const R: usize = GCM_RECORD_LEN;
    const T: usize = GCM_TAG_LEN;

    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 253) as u8).collect()
    }

    /// Record sides of every shape, and more records than one call takes
    /// ([`MOST_SLICES`]), with an empty last record and a short one.
    fn shapes() -> Vec<usize> {
        vec![
            0,
            T,
            T + 1,
            R,
            R + T,
            2 * R + T + 5,
            (MOST_SLICES + 3) * R + T + 9,
        ]
    }

    /// Reading into the slots fills each with the file's next bytes and leaves the tags'
    /// places alone; a file that ends first is an error.
    #[test]
    fn reads_fill_the_slots_in_order() {
        for len in shapes() {
            let plain = RecordsJob::plaintext_len(len).unwrap();
            let file = tempfile::tempfile().unwrap();
            let content = bytes(plain + 7);
            file.write_all_at(&content, 0).unwrap();
            let mut records = vec![0xeeu8; len];
            read_slots_at(&file, &mut records, 5).unwrap();
            assert!(
                RecordsJob::gather_data(&records) == content[5..5 + plain],
                "{len}"
            );
            for record in records.chunks(R) {
                assert!(
                    record[record.len() - T..].iter().all(|&b| b == 0xee),
                    "{len}"
                );
            }
            if plain > 0 {
                let mut records = vec![0u8; len];
                let err = read_slots_at(&file, &mut records, 8).unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{len}");
            }
        }
        assert_eq!(G + T, R);
    }

    /// Writing from the slots, at an offset or to a stream, writes the data back to back and
    /// none of the tags.
    #[test]
    fn writes_skip_the_tags() {
        for len in shapes() {
            let records = bytes(len);
            let expected = RecordsJob::gather_data(&records);
            let file = tempfile::tempfile().unwrap();
            file.write_all_at(b"abc", 0).unwrap();
            write_slots_at(&file, &records, 3).unwrap();
            let mut written = Vec::new();
            (&file).read_to_end(&mut written).unwrap();
            assert_eq!(written.len(), 3 + expected.len(), "{len}");
            assert!(written[3..] == expected[..], "{len}");
            let mut stream = Vec::new();
            write_slots(&mut stream, &records).unwrap();
            assert!(stream == expected, "{len}");
        }
    }

    /// An offset past what the kernel's offsets hold is refused, never wrapped round.
    #[test]
    fn offsets_past_off_t_are_refused() {
        let file = tempfile::tempfile().unwrap();
        let mut records = vec![0u8; R];
        // (A 64-bit `off_t` cast with `as` would also fail, with the kernel's EINVAL; the
        // message shows the offset was refused before any call.)
        for offset in [u64::MAX, 1 << 63] {
            let err = read_slots_at(&file, &mut records, offset).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{offset}");
            assert!(err
                .to_string()
                .contains("past what this system's file offsets hold"));
            let err = write_slots_at(&file, &records, offset).unwrap_err();
            assert!(err
                .to_string()
                .contains("past what this system's file offsets hold"));
        }
    }

    /// A stream that takes a few bytes at a time still gets every byte once, in order.
    #[test]
    fn short_writes_go_on_where_they_stopped() {
        struct Dribble(Vec<u8>);
        impl Write for Dribble {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let n = buf.len().min(1000);
                self.0.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let records = bytes(3 * R + T + 40);
        let mut out = Dribble(Vec::new());
        write_slots(&mut out, &records).unwrap();
        assert!(out.0 == RecordsJob::gather_data(&records));
    }
}
