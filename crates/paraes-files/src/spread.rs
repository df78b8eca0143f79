//! A stream's chunks between a front end's [`Input`] and [`Output`], the one piece of code the
//! CLI and the Python package share: many chunks in flight ([`Spread::Workers`]: read at
//! offsets where the input is a regular file paraes opened, written at offsets, its room
//! reserved first, where the output is a file paraes created, a pipe at either end widened), or
//! chunk by chunk on the calling thread ([`Spread::InTurn`]: a small file, when many run at
//! once). What ran is told as an [`IoMode`] (the CLI's `--stats`, Python's return value).

use std::fs::File;
use std::io::{self, Read};

use paraes_core::pipeline::{
    self, PipelineError, Ran, Segment, Sink, Source, Stages, StreamSpec, Workers,
};

use crate::error::FileError;
use crate::input::Input;
use crate::output::Output;

/// How a stream's chunks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Many in flight on this many workers (see [`chunk_workers`]).
    Workers(usize),
    /// One after another on the calling thread (small files, many of which run at once, or
    /// whose size does not pay for threads).
    InTurn,
}

/// The workers of a stream's chunks in flight for an engine of `threads` threads: one per
/// thread, so the thread count bounds a run's memory too (README: 64 MiB + 8 MiB per worker);
/// at least two, so that one chunk is read or written while another is at the engine.
pub fn chunk_workers(threads: usize) -> usize {
    threads.max(2)
}

/// How a stream's chunks were read and written where many were in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoMode {
    /// Read at offsets by the workers (a regular file paraes opened), or as a stream.
    pub read_at_offsets: bool,
    /// Written at offsets by the workers (a file paraes created), or as a stream in order.
    pub write_at_offsets: bool,
    /// The workers.
    pub workers: usize,
    /// Whether the GCM chunk records were sealed or opened in place: a file's plaintext read
    /// into their data slots, opened plaintext written from between the tags
    /// ([`StreamSpec::runs_records_in_place`]); false for raw and v2 streams.
    pub records_in_place: bool,
}

impl IoMode {
    /// How each end was reached, in a word: `offsets` or `stream`.
    pub fn ends(&self) -> (&'static str, &'static str) {
        let word = |at_offsets| if at_offsets { "offsets" } else { "stream" };
        (word(self.read_at_offsets), word(self.write_at_offsets))
    }
}

/// What one stream's run read and wrote, and how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// Bytes read and written by the stream (not what was written before it).
    pub ran: Ran,
    /// How its chunks were read and written, when many were in flight.
    pub io: Option<IoMode>,
}

/// Why a stream's run failed: an end could not be used, or the stream itself failed (the
/// pipeline says "the input" and "the output": the front end names them).
#[derive(Debug, thiserror::Error)]
pub enum SpreadError {
    /// An end could not be used (reserving the output's room, another handle on a file).
    #[error(transparent)]
    File(#[from] FileError),
    /// Reading, processing or writing the stream failed.
    #[error(transparent)]
    Stream(#[from] PipelineError),
}

/// Runs `spec` from `input` to `output` as `spread` says, from the output's byte `header_len`
/// (what was written before the stream); `progress` is called with the output bytes of the
/// stream written so far, where many chunks are in flight. Standard input and output are
/// streams even when they are regular files (their offsets are the shell's).
pub fn run_stream(
    spec: &StreamSpec<'_>,
    input: &mut Input,
    output: &mut Output,
    spread: Spread,
    header_len: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Moved, SpreadError> {
    let workers = match spread {
        Spread::Workers(workers) => workers,
        Spread::InTurn => {
            let mut counted = CountedReader {
                inner: input,
                bytes: 0,
            };
            let written = pipeline::run_segment(
                spec,
                Segment::WHOLE,
                Stages::InTurn,
                &mut counted,
                &mut output.writer(),
                &|_| {},
            )?;
            let ran = Ran {
                read: counted.bytes,
                written,
            };
            return Ok(Moved { ran, io: None });
        }
    };
    let input_name = input.name();
    let positioned = input
        .at_offsets()
        .map(|(file, at, len)| (file.try_clone(), at, len));
    if let Some(stdin) = input.stdin() {
        crate::widen_pipe(stdin);
    }
    let input_file;
    let (source, out_len) = match positioned {
        Some((file, at, len)) => {
            input_file =
                file.map_err(|e| FileError::io(format!("reading {input_name} failed"), e))?;
            let source = Source::At {
                file: &input_file,
                at,
                len,
            };
            (source, spec.output_len(len))
        }
        None => (Source::Stream(input), None),
    };
    let mut end = OutputEnd::new(output, header_len, out_len)?;
    let io = end.io_mode(
        source_at_offsets(&source),
        workers,
        spec.runs_records_in_place(),
    );
    let ran = pipeline::run_parallel(spec, source, end.sink(), Workers::new(workers), progress)?;
    Ok(Moved { ran, io: Some(io) })
}

fn source_at_offsets(source: &Source<'_>) -> bool {
    matches!(source, Source::At { .. })
}

/// An output made ready for many chunks in flight: its file (to write at offsets) when paraes
/// created it, its room reserved; else its stream, widened when it is a pipe.
pub struct OutputEnd<'o> {
    output: &'o mut Output,
    file: Option<File>,
    at: u64,
}

impl<'o> OutputEnd<'o> {
    /// `output`, written from its byte `at`; `len`, when known, is the length of what goes
    /// there, whose room is reserved now (a disk too small fails before any work).
    pub fn new(output: &'o mut Output, at: u64, len: Option<u64>) -> Result<Self, FileError> {
        if let Output::Stdout(stdout) = &*output {
            crate::widen_pipe(stdout);
        }
        let file = match output.at_offsets() {
            Some(file) => {
                let name = output.name();
                let file = file
                    .try_clone()
                    .map_err(|e| FileError::io(format!("writing {name} failed"), e))?;
                if let Some(len) = len {
                    output.reserve(at + len)?;
                }
                Some(file)
            }
            None => None,
        };
        Ok(OutputEnd { output, file, at })
    }

    /// How a run with `workers` workers that reads at offsets or not (`read_at_offsets`), and
    /// seals or opens its records in place or not, reaches its two ends.
    pub fn io_mode(&self, read_at_offsets: bool, workers: usize, records_in_place: bool) -> IoMode {
        IoMode {
            read_at_offsets,
            write_at_offsets: self.file.is_some(),
            workers,
            records_in_place,
        }
    }

    /// The sink of a parallel run.
    pub fn sink(&mut self) -> Sink<'_> {
        match &self.file {
            Some(file) => Sink::At {
                file,
                at: self.at,
                take_turns: false,
            },
            None => Sink::Stream(self.output.writer()),
        }
    }
}

/// A reader that counts what passes through it.
struct CountedReader<'a, R> {
    inner: &'a mut R,
    bytes: u64,
}

impl<R: Read> Read for CountedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    /// The inner reader's own vectored read (`readv` for files and standard input), not
    /// `Read`'s default, which fills one buffer a call: the GCM reader reads into the records'
    /// 16 KiB data slots.
    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        let n = self.inner.read_vectored(bufs)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::InputKinds;
    use crate::output::OutputOptions;
    use paraes_core::{CpuEngine, Direction, ExpandedKey, Key, Mode};

    fn spec<'a>(engine: &'a CpuEngine, key: &'a ExpandedKey) -> StreamSpec<'a> {
        StreamSpec {
            engine,
            mode: Mode::Ctr,
            direction: Direction::Encrypt,
            key,
            counter: [7; 16],
            chunk_size: 64 << 10,
            padding: false,
            tags: pipeline::Tags::None,
        }
    }

    #[test]
    fn files_paraes_opened_are_read_and_written_at_offsets_with_the_bytes_of_a_run_in_turn() {
        let engine = CpuEngine::new(Some(2)).unwrap();
        let key = ExpandedKey::new(&Key::new(&[3u8; 32]).unwrap());
        let spec = spec(&engine, &key);
        let dir = tempfile::tempdir().unwrap();
        let plain: Vec<u8> = (0..(9 << 20) + 5).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(dir.path().join("in"), &plain).unwrap();
        let options = OutputOptions::default();
        let mut runs = Vec::new();
        for (spread, name) in [(Spread::Workers(2), "spread"), (Spread::InTurn, "turn")] {
            let mut input =
                Input::open(Some(&dir.path().join("in")), InputKinds::FilesAndStreams).unwrap();
            let dest = dir.path().join(name);
            let mut output = Output::create(Some(&dest), &options).unwrap();
            output.writer().write_all(b"head").unwrap();
            let moved = run_stream(&spec, &mut input, &mut output, spread, 4, &|_| {}).unwrap();
            output.commit().unwrap();
            assert_eq!(moved.ran.read, plain.len() as u64, "{name}");
            assert_eq!(moved.ran.written, plain.len() as u64, "{name}");
            runs.push((moved.io, std::fs::read(&dest).unwrap()));
        }
        let io = IoMode {
            read_at_offsets: true,
            write_at_offsets: true,
            workers: 2,
            records_in_place: false,
        };
        assert_eq!(runs[0].0, Some(io));
        assert_eq!(io.ends(), ("offsets", "offsets"));
        assert_eq!(runs[1].0, None);
        assert_eq!(&runs[0].1[..4], b"head");
        assert_eq!(runs[0].1, runs[1].1);
        assert_ne!(&runs[0].1[4..], &plain[..]);
    }

    /// A counted vectored read fills more than its first buffer in one call, and counts it.
    #[test]
    fn counted_vectored_reads_fill_every_buffer_in_one_call() {
        let bytes: Vec<u8> = (0..48u8).collect();
        let mut inner = &bytes[..];
        let mut counted = CountedReader {
            inner: &mut inner,
            bytes: 0,
        };
        let (mut a, mut b, mut c) = ([0u8; 16], [0u8; 16], [0u8; 16]);
        let mut bufs = [
            io::IoSliceMut::new(&mut a),
            io::IoSliceMut::new(&mut b),
            io::IoSliceMut::new(&mut c),
        ];
        assert_eq!(counted.read_vectored(&mut bufs).unwrap(), 48);
        assert_eq!(counted.bytes, 48);
        assert_eq!([a, b, c].concat(), bytes);
    }

    #[test]
    fn there_are_two_workers_at_least() {
        assert_eq!(chunk_workers(1), 2);
        assert_eq!(chunk_workers(16), 16);
    }
}
