//! Where each pipeline record of a stream lies in the input and the output, computed from the
//! input's size alone, so that processes of one job (MPI ranks) agree on the layout without
//! reading anything; it is how [`crate::pipeline::ChunkReader`] cuts a stream (tested against
//! it). A container body's format chunks, and which lengths its format allows, are
//! [`crate::container::BodyLayout`]'s.

use std::ops::Range;

use crate::pipeline::StreamSpec;

/// The chunk layout of one stream between two files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLayout {
    /// Number of chunks (at least 1: an empty stream still has its final chunk).
    pub chunks: u64,
    input_start: u64,
    input_body: u64,
    output_start: u64,
    record_in: u64,
    record_out: u64,
}

impl RecordLayout {
    /// The layout of `spec`'s stream that starts at byte `input_start` of an input of
    /// `input_len` bytes (the container header comes before it when decrypting) and at byte
    /// `output_start` of the output (after the header when encrypting).
    pub fn new(spec: &StreamSpec<'_>, input_start: u64, input_len: u64, output_start: u64) -> Self {
        let record_in = spec.input_record_len() as u64;
        let input_body = input_len.saturating_sub(input_start);
        let chunks = if spec.last_chunk_short() {
            input_body / record_in + 1
        } else {
            input_body.div_ceil(record_in).max(1)
        };
        RecordLayout {
            chunks,
            input_start,
            input_body,
            output_start,
            record_in,
            record_out: spec.output_record_len() as u64,
        }
    }

    /// Byte offset and length of chunk `index`'s record in the input.
    pub fn input_record(&self, index: u64) -> (u64, usize) {
        let start = index * self.record_in;
        let len = self.input_body.saturating_sub(start).min(self.record_in);
        (self.input_start + start, len as usize)
    }

    /// Byte offset of chunk `index`'s record in the output.
    pub fn output_offset(&self, index: u64) -> u64 {
        self.output_start + index * self.record_out
    }

    /// Whether chunk `index` is the stream's last.
    pub fn is_last(&self, index: u64) -> bool {
        index + 1 == self.chunks
    }

    /// The contiguous range of chunks that rank `rank` of `ranks` owns: balanced to within one
    /// chunk, empty for surplus ranks when there are more ranks than chunks.
    pub fn share(&self, rank: usize, ranks: usize) -> Range<u64> {
        let at = |r: usize| (u128::from(self.chunks) * r as u128 / ranks as u128) as u64;
        at(rank)..at(rank + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{self, BodyParams, Recipient};
    use crate::pipeline::{ChunkReader, Tags};
    use crate::{CpuEngine, Direction, Key, KeySize, Mode};

    const CHUNK: usize = 4096;

    /// For every stream shape, the layout predicts exactly the records the reader cuts.
    #[test]
    fn layout_matches_the_chunk_reader() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let params = BodyParams {
            mode: Mode::Ctr,
            key_size: KeySize::Aes128,
            chunk_size: CHUNK,
        };
        let key = Key::new(&[1; 16]).unwrap();
        let (_, sealed) = container::seal_v2(params, &[Recipient::Key(key)]).unwrap();
        let auth = sealed.authenticator().unwrap().clone();
        for mode in [Mode::Ecb, Mode::Ctr] {
            for direction in [Direction::Encrypt, Direction::Decrypt] {
                for tags in [Tags::None, Tags::Chunk(&auth)] {
                    for padding in [false, true] {
                        let spec = StreamSpec {
                            engine: &engine,
                            mode,
                            direction,
                            key: sealed.stream_spec(&engine, direction).key,
                            counter: [0; 16],
                            chunk_size: CHUNK,
                            padding,
                            tags,
                        };
                        let record = spec.input_record_len();
                        for len in [
                            0,
                            1,
                            16,
                            record - 1,
                            record,
                            record + 1,
                            3 * record,
                            3 * record + 5,
                        ] {
                            let start = 7u64;
                            let input = vec![0u8; len];
                            let layout = RecordLayout::new(&spec, start, start + len as u64, 3);
                            let mut cursor = &input[..];
                            let mut reader = ChunkReader::new(&spec, &mut cursor);
                            let mut seen = 0;
                            let mut offset = start;
                            while let Some(chunk) = reader.next_chunk(Vec::new()).unwrap() {
                                let at = layout.input_record(chunk.index);
                                assert_eq!(at, (offset, chunk.data.len()), "{len} {}", chunk.index);
                                assert_eq!(layout.is_last(chunk.index), chunk.last);
                                offset += chunk.data.len() as u64;
                                seen += 1;
                            }
                            assert_eq!(seen, layout.chunks, "{mode:?} {direction:?} {len}");
                        }
                    }
                }
            }
        }
    }

    /// Shares cover every chunk once, in order, balanced, for any rank count.
    #[test]
    fn shares_partition_the_chunks() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[1; 16]).unwrap().expand();
        let spec = StreamSpec {
            engine: &engine,
            mode: Mode::Ctr,
            direction: Direction::Encrypt,
            key: &key,
            counter: [0; 16],
            chunk_size: CHUNK,
            padding: false,
            tags: Tags::None,
        };
        for chunks in [1u64, 2, 3, 7, 64, 1000] {
            let layout = RecordLayout::new(&spec, 0, chunks * CHUNK as u64, 0);
            assert_eq!(layout.chunks, chunks);
            for ranks in [1, 2, 3, 5, 64, 65, 1000] {
                let mut next = 0;
                for rank in 0..ranks {
                    let share = layout.share(rank, ranks);
                    assert_eq!(share.start, next);
                    assert!(share.end - share.start <= chunks.div_ceil(ranks as u64));
                    next = share.end;
                }
                assert_eq!(next, chunks);
            }
        }
    }
}
