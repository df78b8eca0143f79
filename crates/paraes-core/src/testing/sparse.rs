//! C2SP chunks at high indices (tests/vectors/c2sp-sparse.json, computed with pyca's AESGCM by
//! scripts/sparse-vectors.py), where Wycheproof's vectors stop at index 257: a full chunk at
//! 2^32 + 5 (the nonce counter's 32-bit boundary), the final chunk at 2^38 - 1 (the largest
//! index the spec allows), and a final chunk at 2^38 whose tag is right but whose index every
//! reader must refuse. [`check_engine_sparse`] runs them on one engine: raw mode at each index
//! (one chunk at a time, and a pipeline segment that starts there, both ways), and the core's
//! seekable reader over a [`SparseMessage`] that holds only the real chunks at their offsets of
//! a message of up to 4 PiB (nothing that large is ever written: other records read as zeros).

use std::io::{self, Read, Seek, SeekFrom};

use crate::cobblestone::{
    ChunkCipher, MessageKeys, Variant, CHUNK_LEN, PREFIX_LEN, RECORD_LEN, SALT_LEN,
};
use crate::engine::{Direction, Engine};
use crate::key::Key;
use crate::pipeline::{self, Chunk, PipelineError, Segment, Stages, StreamSpec};
use crate::stream::Stream;

use super::wycheproof::{hex_field, read_json};

/// The file under tests/vectors.
pub const FILE: &str = "c2sp-sparse.json";

/// One chunk of a sparse vector.
#[derive(Clone, Debug)]
pub struct SparseChunk {
    /// Its index in the message.
    pub index: u64,
    /// Whether it is the message's final chunk.
    pub last: bool,
    /// Its plaintext (the file's `ptRule`: byte j is `(7 j + 13) mod 256`).
    pub plaintext: Vec<u8>,
    /// Its nonce, as pyca was given it.
    pub nonce: [u8; 12],
    /// Its ciphertext and tag.
    pub record: Vec<u8>,
}

/// One message of which only a few chunks are given.
#[derive(Clone, Debug)]
pub struct SparseVector {
    /// What it is, in words.
    pub name: String,
    /// The instantiation.
    pub variant: Variant,
    /// Whether a reader must accept it (the last one is past the spec's limit).
    pub valid: bool,
    /// The input key.
    pub key: Vec<u8>,
    /// The context.
    pub context: Vec<u8>,
    /// The salt.
    pub salt: [u8; SALT_LEN],
    /// The commitment pyca's HKDF derived.
    pub commitment: Vec<u8>,
    /// The AES-GCM key pyca's HKDF derived.
    pub aead_key: Vec<u8>,
    /// The base nonce pyca's HKDF derived.
    pub base_nonce: [u8; 12],
    /// Chunks in the whole message.
    pub message_chunks: u64,
    /// The chunks given, in order (the final chunk among them).
    pub chunks: Vec<SparseChunk>,
}

impl SparseVector {
    /// Raw mode's chunk cipher: the derived key and base nonce used directly.
    pub fn raw_cipher(&self) -> ChunkCipher {
        ChunkCipher::new(
            &Key::new(&self.aead_key).expect("an aeadKey"),
            self.base_nonce,
        )
    }

    /// The whole message as a reader at offsets sees it (see [`SparseMessage`]).
    pub fn message(&self) -> SparseMessage {
        let mut prefix = self.salt.to_vec();
        prefix.extend_from_slice(&self.commitment);
        let last = self.chunks.last().expect("a chunk");
        assert!(
            last.last && last.index + 1 == self.message_chunks,
            "{}",
            self.name
        );
        let pieces = self
            .chunks
            .iter()
            .map(|c| {
                (
                    PREFIX_LEN as u64 + c.index * RECORD_LEN as u64,
                    c.record.clone(),
                )
            })
            .collect();
        let len = PREFIX_LEN as u64 + last.index * RECORD_LEN as u64 + last.record.len() as u64;
        SparseMessage::new(prefix, pieces, len)
    }
}

/// The sparse vectors (6: three messages for each of Cobblestone-128 and -256).
pub fn sparse_vectors() -> Vec<SparseVector> {
    let json = read_json(FILE);
    assert_eq!(
        json["ptRule"], "byte j of each chunk's plaintext is (7 * j + 13) mod 256",
        "{FILE}: the plaintext rule this reader implements"
    );
    let vectors: Vec<SparseVector> = json["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .map(|v| SparseVector {
            name: v["name"].as_str().expect("name").to_owned(),
            variant: match v["aead"].as_str() {
                Some("AEAD_AES_128_GCM") => Variant::Cobblestone128,
                Some("AEAD_AES_256_GCM") => Variant::Cobblestone256,
                other => panic!("{FILE}: aead {other:?}"),
            },
            valid: v["result"] == "valid",
            key: hex_field(v, "key"),
            context: hex_field(v, "ctx"),
            salt: hex_field(v, "salt").try_into().expect("a 24-byte salt"),
            commitment: hex_field(v, "commitment"),
            aead_key: hex_field(v, "aeadKey"),
            base_nonce: hex_field(v, "baseNonce").try_into().expect("12 bytes"),
            message_chunks: v["messageChunks"].as_u64().expect("messageChunks"),
            chunks: v["chunks"]
                .as_array()
                .expect("chunks")
                .iter()
                .map(|c| SparseChunk {
                    index: c["index"].as_u64().expect("index"),
                    last: c["last"].as_bool().expect("last"),
                    plaintext: (0..c["ptLen"].as_u64().expect("ptLen"))
                        .map(|j| ((7 * j + 13) % 256) as u8)
                        .collect(),
                    nonce: hex_field(c, "nonce").try_into().expect("12 bytes"),
                    record: hex_field(c, "ct"),
                })
                .collect(),
        })
        .collect();
    assert_eq!(vectors.len(), 6, "{FILE}: vectors");
    assert_eq!(vectors.iter().filter(|v| v.valid).count(), 4, "{FILE}");
    vectors
}

/// A message of any length of which only the prefix and a few records exist: a `Read + Seek`
/// that reads every other byte as zero (as a sparse file would), and counts what it read.
pub struct SparseMessage {
    pieces: Vec<(u64, Vec<u8>)>,
    len: u64,
    position: u64,
    /// Bytes read so far.
    pub bytes_read: u64,
}

impl SparseMessage {
    /// `len` bytes: `prefix` from byte 0, each `(offset, bytes)` of `pieces` at its offset,
    /// zeros elsewhere.
    pub fn new(prefix: Vec<u8>, mut pieces: Vec<(u64, Vec<u8>)>, len: u64) -> Self {
        pieces.push((0, prefix));
        SparseMessage {
            pieces,
            len,
            position: 0,
            bytes_read: 0,
        }
    }
}

impl Read for SparseMessage {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf
            .len()
            .min(self.len.saturating_sub(self.position) as usize);
        let (start, end) = (self.position, self.position + n as u64);
        buf[..n].fill(0);
        for (at, bytes) in &self.pieces {
            let from = start.max(*at);
            let to = end.min(at + bytes.len() as u64);
            if from < to {
                buf[(from - start) as usize..(to - start) as usize]
                    .copy_from_slice(&bytes[(from - at) as usize..(to - at) as usize]);
            }
        }
        self.position = end;
        self.bytes_read += n as u64;
        Ok(n)
    }
}

impl Seek for SparseMessage {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        self.position = target.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(self.position)
    }
}

/// Every sparse vector on `engine` (see the module docs); panics with the vector and the path
/// that went wrong. Returns the chunks run.
pub fn check_engine_sparse(engine: &dyn Engine, vectors: &[SparseVector]) -> usize {
    let mut chunks = 0;
    for v in vectors {
        let what = |path: &str| format!("{} on {}: {path}", v.name, engine.name());
        // The core's derivation and nonces agree with pyca's.
        let keys = MessageKeys::derive(v.variant, &v.key, &v.salt, &v.context)
            .unwrap_or_else(|e| panic!("{}", what(&format!("derive: {e}"))));
        assert_eq!(
            &keys.commitment()[..],
            &v.commitment[..],
            "{}",
            what("commitment")
        );
        assert_eq!(
            keys.chunks().base_nonce(),
            v.base_nonce,
            "{}",
            what("base nonce")
        );
        let cipher = v.raw_cipher();
        for c in &v.chunks {
            assert_eq!(
                cipher.nonce(c.index),
                c.nonce,
                "{}",
                what("a chunk's nonce")
            );
        }
        chunks += raw_at_index(engine, v, &cipher, &what);
        if v.valid {
            segments(engine, v, &cipher, &what);
        }
        seekable(engine, v, &what);
    }
    chunks
}

/// Each chunk opened and sealed alone at its index: the pyca bytes both ways, or (past the
/// limit) refused both ways.
fn raw_at_index(
    engine: &dyn Engine,
    v: &SparseVector,
    cipher: &ChunkCipher,
    what: &dyn Fn(&str) -> String,
) -> usize {
    for c in &v.chunks {
        for direction in [Direction::Decrypt, Direction::Encrypt] {
            let spec = StreamSpec::message(engine, direction, cipher, CHUNK_LEN);
            let (input, expected) = match direction {
                Direction::Decrypt => (&c.record, &c.plaintext),
                Direction::Encrypt => (&c.plaintext, &c.record),
            };
            let mut chunk = Chunk {
                index: c.index,
                last: c.last,
                data: input.clone(),
            };
            let done = match direction {
                Direction::Decrypt => pipeline::open(&spec, &mut chunk),
                Direction::Encrypt => pipeline::seal(&spec, &mut chunk),
            };
            let path = format!("chunk {} alone, {direction:?}", c.index);
            match done {
                Ok(()) if v.valid => assert!(chunk.data == *expected, "{}", what(&path)),
                Ok(()) => panic!("{}", what(&format!("{path}: past the limit, accepted"))),
                Err(PipelineError::TooLong) if !v.valid => {}
                Err(e) => panic!("{}", what(&format!("{path}: {e}"))),
            }
        }
    }
    2 * v.chunks.len()
}

/// The given chunks as a pipeline segment that starts at the first one's index and ends the
/// stream (what an MPI rank runs), both ways, threaded and in turn, in batches of one chunk and
/// (where the index allows) two.
fn segments(
    engine: &dyn Engine,
    v: &SparseVector,
    cipher: &ChunkCipher,
    what: &dyn Fn(&str) -> String,
) {
    let first = v.chunks[0].index;
    assert!(
        v.chunks.windows(2).all(|w| w[1].index == w[0].index + 1),
        "{}",
        what("the chunks are consecutive")
    );
    let records: Vec<u8> = v.chunks.iter().flat_map(|c| c.record.clone()).collect();
    let plaintext: Vec<u8> = v.chunks.iter().flat_map(|c| c.plaintext.clone()).collect();
    for per_batch in [1u64, 2] {
        if !first.is_multiple_of(per_batch) {
            continue;
        }
        for stages in [Stages::Threaded, Stages::InTurn] {
            for direction in [Direction::Decrypt, Direction::Encrypt] {
                let batch = per_batch as usize * CHUNK_LEN;
                let spec = StreamSpec::message(engine, direction, cipher, batch);
                let segment = Segment {
                    first_index: first / per_batch,
                    ends_stream: true,
                };
                let (input, expected) = match direction {
                    Direction::Decrypt => (&records, &plaintext),
                    Direction::Encrypt => (&plaintext, &records),
                };
                let mut out = Vec::new();
                let path = format!(
                    "segment from chunk {first}, {batch}-byte batches, {stages:?}, {direction:?}"
                );
                pipeline::run_segment(&spec, segment, stages, &mut &input[..], &mut out, &|_| {})
                    .unwrap_or_else(|e| panic!("{}", what(&format!("{path}: {e}"))));
                assert!(out == *expected, "{}", what(&path));
            }
        }
    }
}

/// The core's seekable reader (`Stream::open_message`, then `Stream::seekable`) over the
/// sparse message: the length authenticated from the final chunk, each given chunk read at
/// its plaintext offset, a range across the last two, a read of an absent (zero) chunk
/// refused; past the limit, the reader is refused. It reads only what it needs.
fn seekable(engine: &dyn Engine, v: &SparseVector, what: &dyn Fn(&str) -> String) {
    let key = Key::new(&v.key).expect("a 16- or 32-byte key");
    let message = v.message();
    let mut prefix = v.salt.to_vec();
    prefix.extend_from_slice(&v.commitment);
    let stream = Stream::open_message(key, &v.context, &prefix, CHUNK_LEN)
        .unwrap_or_else(|e| panic!("{}", what(&format!("the message's prefix: {e}"))));
    let made = stream
        .seekable(engine, message)
        .expect("a message is seekable");
    let mut reader = match made {
        Ok(reader) if v.valid => reader,
        Ok(_) => panic!("{}", what("a message past the limit was accepted")),
        Err(PipelineError::TooLong) if !v.valid => return,
        Err(e) => panic!("{}", what(&format!("the seekable reader: {e}"))),
    };
    let last = v.chunks.last().expect("a chunk");
    let len = last.index * CHUNK_LEN as u64 + last.plaintext.len() as u64;
    assert_eq!(
        reader.plaintext_len(),
        len,
        "{}",
        what("the plaintext length")
    );
    for c in &v.chunks {
        let at = c.index * CHUNK_LEN as u64;
        reader.seek(SeekFrom::Start(at)).expect("a seek");
        let mut got = vec![0u8; c.plaintext.len()];
        reader
            .read_exact(&mut got)
            .unwrap_or_else(|e| panic!("{}", what(&format!("chunk {} read: {e}", c.index))));
        assert!(
            got == c.plaintext,
            "{}",
            what(&format!("chunk {}", c.index))
        );
    }
    let start = len - last.plaintext.len() as u64 - 100;
    let mut range = Vec::new();
    reader
        .copy_range(start, len, &mut range)
        .unwrap_or_else(|e| panic!("{}", what(&format!("copy_range: {e}"))));
    let full = &v.chunks[v.chunks.len() - 2].plaintext;
    assert!(
        range == [&full[full.len() - 100..], &last.plaintext[..]].concat(),
        "{}",
        what("a range across the last two chunks")
    );
    reader.seek(SeekFrom::Start(5)).expect("a seek");
    let refused = reader.read(&mut [0u8; 10]);
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::InvalidData),
        "{}",
        what(&format!("chunk 0 (absent, zeros) was read: {refused:?}"))
    );
    assert!(
        reader.bytes_read() <= 8 * RECORD_LEN as u64,
        "{}",
        what(&format!("the reader read {} bytes", reader.bytes_read()))
    );
}
