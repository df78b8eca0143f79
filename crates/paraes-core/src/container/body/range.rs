//! A plaintext range of a container file with many chunks in flight
//! ([`SeekableReader::copy_range_parallel`]): the whole chunks the range covers are read at
//! their offsets and opened by the parallel pipeline's workers (only those chunks: a damaged
//! chunk the range does not touch still does not matter); the partial chunks at its two ends
//! go through the reader's own cached chunk.

use std::fs::File;

use super::{RangeError, SeekableReader, TAG_LEN};
use crate::pipeline::{self, PipelineError, Ran, Segment, Sink, Source, Workers};

impl SeekableReader<'_, &File> {
    /// Whether [`SeekableReader::copy_range_parallel`] opens the whole chunks in place, their
    /// plaintext written from between the tags
    /// ([`crate::pipeline::StreamSpec::runs_records_in_place`]).
    pub fn runs_records_in_place(&self) -> bool {
        self.spec.runs_records_in_place()
    }

    /// [`SeekableReader::copy_range`] to `sink` with many chunks in flight on `workers`:
    /// plaintext bytes `start..end` go to the sink's start (a [`Sink::At`] is written at
    /// offsets, a stream in order). Every chunk is authenticated before any of its bytes go
    /// out; a run that fails leaves a stream holding bytes of authentic chunks only (a file
    /// sink is the caller's to discard). `progress` is called with the bytes written so far.
    pub fn copy_range_parallel(
        &mut self,
        start: u64,
        end: u64,
        mut sink: Sink<'_>,
        workers: Workers,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<u64, RangeError> {
        self.check_range(start, end)?;
        let chunk = self.spec.chunk_size as u64;
        // The range in three: up to the first chunk boundary, whole chunks (to the stream's
        // end where the range reaches it, so the last chunk may be short), and the rest.
        let whole_from = start.next_multiple_of(chunk).min(end);
        let whole_to = if end == self.plaintext_len {
            end
        } else {
            (end / chunk * chunk).max(whole_from)
        };
        let mut written = 0u64;
        let mut part = Vec::new();
        self.copy_range(start, whole_from, &mut part)?;
        sink.write_at(written, &part)?;
        written += part.len() as u64;
        progress(written);
        if whole_from < whole_to {
            let ran = self.whole_chunks(
                whole_from / chunk,
                whole_to,
                &mut sink,
                written,
                workers,
                &|n| progress(written + n),
            )?;
            self.bytes_read += ran.read;
            written += ran.written;
        }
        part.clear();
        self.copy_range(whole_to, end, &mut part)?;
        sink.write_at(written, &part)?;
        written += part.len() as u64;
        progress(written);
        Ok(written)
    }

    /// Opens the chunks from `first` that hold the plaintext up to `to` (a chunk boundary, or
    /// the plaintext's end) on `workers`, into `sink` from its byte `skip`.
    fn whole_chunks(
        &mut self,
        first: u64,
        to: u64,
        sink: &mut Sink<'_>,
        skip: u64,
        workers: Workers,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Ran, PipelineError> {
        let layout = self.layout;
        if layout.record_len != self.spec.input_record_len() as u64 {
            // Not a layout the pipeline cuts (none that paraes writes): chunk by chunk.
            let mut plaintext = Vec::new();
            let from = first * self.spec.chunk_size as u64;
            self.copy_range(from, to, &mut plaintext)
                .map_err(|e| match e {
                    RangeError::Stream(e) => e,
                    other => PipelineError::Read(std::io::Error::other(other.to_string())),
                })?;
            sink.write_at(skip, &plaintext)?;
            return Ok(Ran {
                read: 0,
                written: plaintext.len() as u64,
            });
        }
        let ends_stream = to == self.plaintext_len;
        let at = self.body_start + first * layout.record_len;
        let len = if ends_stream {
            (layout.chunks - 1 - first) * layout.record_len + layout.last_chunk_len + TAG_LEN as u64
        } else {
            (to / self.spec.chunk_size as u64 - first) * layout.record_len
        };
        let segment = Segment {
            first_index: first,
            ends_stream,
        };
        let source = Source::At {
            file: self.input,
            at,
            len,
        };
        pipeline::run_parallel_segment(
            &self.spec,
            segment,
            source,
            sink.reborrow(skip),
            workers,
            progress,
        )
    }
}
