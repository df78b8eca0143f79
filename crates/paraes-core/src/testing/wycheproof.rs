//! Wycheproof's C2SP chunked-encryption vectors (tests/vectors/c2sp/, 35 for each of
//! Cobblestone-128 and -256) applied as their doc/c2sp_chunked_encryption.md says: each
//! vector's plaintext from an oracle independent of paraes (RustCrypto `aes-gcm`, chunk by chunk
//! under the vector's `aeadKey` and `baseNonce`, checked against `msgLength` and `msgSha512`),
//! then [`check_engine_vectors`] on one engine (at a [`Depth`]): raw mode (every chunk opened
//! at its own index, the body streamed through the pipeline, valid chunks re-encrypted at
//! their index to the vector's bytes) and the core's message API (`Stream::read_message`
//! through the pipeline, and its seekable reader: the whole message, and the length check of
//! the final chunk with the `ValidFinalChunk` exception). A failing vector never releases a
//! byte past its valid prefix.
//! [`check_one_shot`] runs every vector through `cobblestone::open`. Missing or short vector
//! files fail loudly: nothing here skips.

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::PathBuf;

use aes_gcm::aead::{Aead, KeyInit};
use sha2::{Digest, Sha512};

use crate::cobblestone::{self, ChunkCipher, Variant, CHUNK_LEN, PREFIX_LEN, RECORD_LEN, TAG_LEN};
use crate::engine::{Direction, Engine};
use crate::key::Key;
use crate::pipeline::{self, Chunk, Segment, Stages, StreamSpec};
use crate::stream::Stream;

/// The vector files, by instantiation, under [`vectors_dir`]`/c2sp`.
pub const FILES: [(Variant, &str); 2] = [
    (
        Variant::Cobblestone128,
        "c2sp_chunked_encryption_aes_128_gcm_test.json",
    ),
    (
        Variant::Cobblestone256,
        "c2sp_chunked_encryption_aes_256_gcm_test.json",
    ),
];

/// Vectors in each file.
pub const PER_FILE: usize = 35;

/// The repository's tests/vectors folder.
pub fn vectors_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors"))
}

/// Reads a JSON file under [`vectors_dir`]; panics, naming it, if it is missing or not JSON.
pub(crate) fn read_json(relative: &str) -> serde_json::Value {
    let path = vectors_dir().join(relative);
    let text = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the committed test vectors are missing: check out the whole repository)",
            path.display()
        )
    });
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A hex field of `json`; panics with the field's name when absent or not hex.
pub(crate) fn hex_field(json: &serde_json::Value, name: &str) -> Vec<u8> {
    let text = json[name]
        .as_str()
        .unwrap_or_else(|| panic!("no string field {name} in {json}"));
    unhex(text).unwrap_or_else(|| panic!("field {name} is not hex: {text}"))
}

/// The bytes of a hex string (either case), or `None` if it is not hex.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The aeadKey and baseNonce of a vector that raw mode applies to.
#[derive(Clone, Debug)]
pub struct RawKeys {
    /// The AES-GCM key (16 or 32 bytes).
    pub aead_key: Vec<u8>,
    /// The base nonce: chunk `i`'s nonce is it XOR `be96(i)`.
    pub base_nonce: [u8; 12],
}

/// One vector.
#[derive(Clone, Debug)]
pub struct Vector {
    /// The instantiation of its file.
    pub variant: Variant,
    /// Its `tcId`.
    pub id: u64,
    /// Its `comment`.
    pub comment: String,
    /// Its `flags`.
    pub flags: Vec<String>,
    /// Whether its `result` is `valid`.
    pub valid: bool,
    /// The input key (of the wrong size for `InvalidKeySize`).
    pub key: Vec<u8>,
    /// The context.
    pub context: Vec<u8>,
    /// The whole ciphertext (`ct`, decompressed): salt, commitment, chunks.
    pub message: Vec<u8>,
    /// `msgLength`: the message's length (valid) or its valid prefix's (`PartialPlaintext`).
    pub msg_length: Option<u64>,
    /// `msgSha512`.
    pub msg_sha512: Option<Vec<u8>>,
    /// Raw mode's keys; `None` for `HeaderFailure` vectors.
    pub raw: Option<RawKeys>,
}

impl Vector {
    /// The vector in words, for failure messages.
    pub fn name(&self) -> String {
        let bits = self.variant.key_size().bits();
        let result = if self.valid { "valid" } else { "invalid" };
        format!(
            "Cobblestone-{bits} tcId {} ({result}, {:?}: {})",
            self.id, self.flags, self.comment
        )
    }

    /// Whether it has `flag`.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// The bytes after the 56-byte salt and commitment (raw mode's input).
    pub fn body(&self) -> &[u8] {
        self.message.get(PREFIX_LEN..).unwrap_or(&[])
    }

    /// Raw mode's chunk cipher: `aeadKey` and `baseNonce` used directly.
    pub fn raw_cipher(&self) -> Option<ChunkCipher> {
        let raw = self.raw.as_ref()?;
        let key = Key::new(&raw.aead_key).expect("a 16- or 32-byte aeadKey");
        Some(ChunkCipher::new(&key, raw.base_nonce))
    }

    /// The body cut as a reader must cut it: records of 16 KiB + 16, the last one shorter; a
    /// body that ends on a record boundary (or is empty) ends in an empty record of its own,
    /// which no reader accepts.
    pub fn records(&self) -> Vec<&[u8]> {
        let body = self.body();
        let mut records: Vec<&[u8]> = body.chunks(RECORD_LEN).collect();
        if body.len().is_multiple_of(RECORD_LEN) {
            records.push(&[]);
        }
        records
    }

    /// The oracle's reading of the body (RustCrypto `aes-gcm`, nothing of paraes's but the
    /// parsing above): each record opened at its index, `None` where a reader must refuse it
    /// (shorter than a tag, or its tag does not verify); and the valid prefix, the chunks up to
    /// the first refused one, checked against `msgLength` and `msgSha512`. For a valid vector
    /// that is the whole plaintext. Empty for `HeaderFailure` vectors.
    pub fn oracle(&self) -> Oracle {
        let Some(raw) = &self.raw else {
            assert!(self.msg_length.is_none(), "{}: a prefix", self.name());
            return Oracle::default();
        };
        let chunks: Vec<Option<Vec<u8>>> = self
            .records()
            .into_iter()
            .enumerate()
            .map(|(index, record)| {
                let mut nonce = raw.base_nonce;
                for (n, i) in nonce[4..].iter_mut().zip((index as u64).to_be_bytes()) {
                    *n ^= i;
                }
                if record.len() < TAG_LEN {
                    return None;
                }
                match raw.aead_key.len() {
                    16 => aes_gcm::Aes128Gcm::new_from_slice(&raw.aead_key)
                        .expect("16 bytes")
                        .decrypt(&nonce.into(), record)
                        .ok(),
                    _ => aes_gcm::Aes256Gcm::new_from_slice(&raw.aead_key)
                        .expect("32 bytes")
                        .decrypt(&nonce.into(), record)
                        .ok(),
                }
            })
            .collect();
        let prefix: Vec<u8> = chunks.iter().map_while(|c| c.clone()).flatten().collect();
        assert_eq!(
            prefix.len() as u64,
            self.msg_length.unwrap_or(0),
            "{}: the oracle's valid prefix is not msgLength",
            self.name()
        );
        if let Some(sha) = &self.msg_sha512 {
            assert!(
                Sha512::digest(&prefix)[..] == sha[..],
                "{}: the oracle's valid prefix is not msgSha512",
                self.name()
            );
        }
        if self.valid {
            assert!(chunks.iter().all(Option::is_some), "{}", self.name());
        }
        Oracle { chunks, prefix }
    }

    /// Asserts that `released`, what a failing reader let out, is at most the valid prefix.
    pub fn assert_within_prefix(&self, oracle: &Oracle, released: &[u8], path: &str) {
        assert!(
            oracle.prefix.starts_with(released),
            "{}: {path} released {} bytes, not a part of the {}-byte valid prefix",
            self.name(),
            released.len(),
            oracle.prefix.len()
        );
    }
}

/// What the oracle reads in a vector's body ([`Vector::oracle`]).
#[derive(Clone, Debug, Default)]
pub struct Oracle {
    /// Each record's plaintext at its own index, or `None` where a reader must refuse it.
    pub chunks: Vec<Option<Vec<u8>>>,
    /// The longest valid prefix (the whole plaintext of a valid vector).
    pub prefix: Vec<u8>,
}

/// Every vector of both files (70), each file checked to hold exactly [`PER_FILE`] (10 valid).
pub fn vectors() -> Vec<Vector> {
    let mut all = Vec::new();
    for (variant, file) in FILES {
        let json = read_json(&format!("c2sp/{file}"));
        assert_eq!(json["numberOfTests"], PER_FILE, "{file}: numberOfTests");
        let aead = match variant {
            Variant::Cobblestone128 => "AEAD_AES_128_GCM",
            Variant::Cobblestone256 => "AEAD_AES_256_GCM",
        };
        let before = all.len();
        for group in json["testGroups"].as_array().expect("testGroups") {
            assert_eq!(group["aead"], aead, "{file}");
            assert_eq!(group["sha"], "SHA-512", "{file}");
            for test in group["tests"].as_array().expect("tests") {
                all.push(parse(variant, test));
            }
        }
        let read = &all[before..];
        assert_eq!(read.len(), PER_FILE, "{file}: vectors");
        assert_eq!(read.iter().filter(|v| v.valid).count(), 10, "{file}");
    }
    all
}

fn parse(variant: Variant, test: &serde_json::Value) -> Vector {
    let compressed = hex_field(test, "ct");
    let mut message = Vec::new();
    flate2::read::ZlibDecoder::new(&compressed[..])
        .read_to_end(&mut message)
        .unwrap_or_else(|e| panic!("tcId {}: ct is not zlib: {e}", test["tcId"]));
    let raw = test.get("aeadKey").map(|_| RawKeys {
        aead_key: hex_field(test, "aeadKey"),
        base_nonce: hex_field(test, "baseNonce")
            .try_into()
            .expect("a 12-byte baseNonce"),
    });
    let flags: Vec<String> = test["flags"]
        .as_array()
        .expect("flags")
        .iter()
        .map(|f| f.as_str().expect("a flag").to_owned())
        .collect();
    let vector = Vector {
        variant,
        id: test["tcId"].as_u64().expect("tcId"),
        comment: test["comment"].as_str().unwrap_or("").to_owned(),
        valid: match test["result"].as_str() {
            Some("valid") => true,
            Some("invalid") => false,
            other => panic!("tcId {}: result {other:?}", test["tcId"]),
        },
        key: hex_field(test, "key"),
        context: hex_field(test, "ctx"),
        message,
        msg_length: test["msgLength"].as_u64(),
        msg_sha512: test.get("msgSha512").map(|_| hex_field(test, "msgSha512")),
        raw,
        flags,
    };
    assert_eq!(
        vector.raw.is_none(),
        vector.has("HeaderFailure"),
        "{}: raw mode applies exactly without HeaderFailure",
        vector.name()
    );
    vector
}

/// What [`check_engine_vectors`] ran, for the test's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Covered {
    /// Vectors run.
    pub vectors: usize,
    /// Of them, vectors run in raw mode (all but the `HeaderFailure` ones).
    pub raw: usize,
    /// Of them, vectors run through the message API.
    pub message_api: usize,
    /// Chunks opened or sealed one at a time at their index.
    pub chunks: usize,
}

/// How much of each vector [`check_engine_vectors`] runs on an engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Every path: the body streamed in batches of 1 and 4 chunks, threaded and in turn, both
    /// ways; the message API in both batch sizes.
    Full,
    /// For slow engines (a simulator, a stand-in): every chunk still opened and sealed again
    /// at its own index, and the other paths once (batches of 4 chunks, threaded) for the
    /// vectors under [`QUICK_WHOLE`]; larger ones (the two `CounterRollover` vectors of 4 MiB)
    /// run one chunk at a time only.
    Quick,
}

/// Under [`Depth::Quick`], the largest message run through every path.
pub const QUICK_WHOLE: usize = 1 << 20;

impl Depth {
    /// The pipeline batches and stages of the streamed paths for `v`.
    fn streams(self, v: &Vector) -> (&'static [usize], &'static [Stages]) {
        match self {
            Depth::Full => (
                &[CHUNK_LEN, 4 * CHUNK_LEN],
                &[Stages::Threaded, Stages::InTurn],
            ),
            Depth::Quick if v.message.len() < QUICK_WHOLE => {
                (&[4 * CHUNK_LEN], &[Stages::Threaded])
            }
            Depth::Quick => (&[], &[]),
        }
    }
}

/// Every vector through `cobblestone::open` (the one-shot reader, on the calling thread):
/// valid ones give their plaintext, invalid ones fail. Returns the vectors run.
pub fn check_one_shot(vectors: &[Vector]) -> usize {
    for v in vectors {
        let oracle = v.oracle();
        match cobblestone::open(v.variant, &v.key, &v.context, &v.message) {
            Ok(plain) if v.valid => assert!(plain == oracle.prefix, "{}: open", v.name()),
            Ok(_) => panic!("{}: cobblestone::open accepted it", v.name()),
            Err(e) if v.valid => panic!("{}: cobblestone::open: {e}", v.name()),
            Err(_) => {}
        }
    }
    vectors.len()
}

/// Every vector on `engine` at `depth`: raw mode where it applies ([`check_raw`]) and the
/// core's message API ([`check_message_api`]). Panics with the vector and the path that went
/// wrong.
pub fn check_engine_vectors(engine: &dyn Engine, vectors: &[Vector], depth: Depth) -> Covered {
    let mut covered = Covered::default();
    for v in vectors {
        let oracle = v.oracle();
        if v.raw.is_some() {
            covered.chunks += check_raw(engine, v, &oracle, depth);
            covered.raw += 1;
        }
        let (batches, _) = depth.streams(v);
        if !batches.is_empty() {
            check_message_api(engine, v, &oracle, batches);
            covered.message_api += 1;
        }
        covered.vectors += 1;
    }
    covered
}

/// Raw mode of one vector on `engine` (the chunk cipher from `aeadKey` and `baseNonce`):
/// each record opened at its own index as the oracle opens it, and for a valid vector each
/// chunk sealed again at its index to the vector's bytes; then (as `depth` says) the body
/// streamed through the pipeline: a valid body gives its plaintext, an invalid one fails
/// having released at most the valid prefix, and a valid plaintext streamed the other way
/// gives the vector's body. Returns the chunks run one at a time.
pub fn check_raw(engine: &dyn Engine, v: &Vector, oracle: &Oracle, depth: Depth) -> usize {
    let cipher = v.raw_cipher().expect("raw mode applies");
    let what = |path: &str| format!("{} on {}: raw mode, {path}", v.name(), engine.name());
    let records = v.records();
    let open = StreamSpec::message(engine, Direction::Decrypt, &cipher, CHUNK_LEN);
    let seal = StreamSpec::message(engine, Direction::Encrypt, &cipher, CHUNK_LEN);
    let mut chunks = 0;
    for (index, (record, expected)) in records.iter().zip(&oracle.chunks).enumerate() {
        let last = index + 1 == records.len();
        let mut chunk = Chunk {
            index: index as u64,
            last,
            data: record.to_vec(),
        };
        match (pipeline::open(&open, &mut chunk), expected) {
            (Ok(()), Some(plain)) => assert!(
                chunk.data == *plain,
                "{}",
                what(&format!("chunk {index} opened to other bytes"))
            ),
            (Ok(()), None) => panic!("{}", what(&format!("chunk {index} was accepted"))),
            (Err(e), Some(_)) => panic!("{}", what(&format!("chunk {index}: {e}"))),
            (Err(_), None) => {}
        }
        chunks += 1;
        if v.valid {
            let mut chunk = Chunk {
                index: index as u64,
                last,
                data: expected.clone().expect("a valid chunk"),
            };
            pipeline::seal(&seal, &mut chunk)
                .unwrap_or_else(|e| panic!("{}", what(&format!("sealing chunk {index}: {e}"))));
            assert!(
                chunk.data == *record,
                "{}",
                what(&format!("chunk {index} sealed again is not the vector's"))
            );
            chunks += 1;
        }
    }
    let (batches, stages) = depth.streams(v);
    for &batch in batches {
        for &stages in stages {
            let spec = StreamSpec::message(engine, Direction::Decrypt, &cipher, batch);
            let mut out = Vec::new();
            let run = pipeline::run_segment(
                &spec,
                Segment::WHOLE,
                stages,
                &mut &v.body()[..],
                &mut out,
                &|_| {},
            );
            let path = format!("streamed in {batch}-byte batches, {stages:?}");
            match run {
                Ok(_) if v.valid => assert!(out == oracle.prefix, "{}", what(&path)),
                Ok(_) => panic!("{}", what(&format!("{path}: accepted"))),
                Err(e) if v.valid => panic!("{}", what(&format!("{path}: {e}"))),
                Err(_) => v.assert_within_prefix(oracle, &out, &what(&path)),
            }
            if !v.valid {
                continue;
            }
            let spec = StreamSpec::message(engine, Direction::Encrypt, &cipher, batch);
            let mut out = Vec::new();
            let path = format!("the plaintext encrypted in {batch}-byte batches, {stages:?}");
            pipeline::run_segment(
                &spec,
                Segment::WHOLE,
                stages,
                &mut &oracle.prefix[..],
                &mut out,
                &|_| {},
            )
            .unwrap_or_else(|e| panic!("{}", what(&format!("{path}: {e}"))));
            assert!(out == v.body(), "{}", what(&path));
        }
    }
    chunks
}

/// One vector through the core's message API on `engine`: the key (refused if it is not 16
/// or 32 bytes), `Stream::read_message` (which checks the commitment), the rest streamed
/// through the pipeline in each of `batches`; then the seekable reader, whose making
/// authenticates the final chunk (it must fail for invalid vectors except `ValidFinalChunk`
/// ones, where paraes, reading only that chunk, succeeds as the spec allows) and whose whole
/// read must fail for every invalid vector, having released at most the valid prefix, and keep
/// failing when read again; the final chunk read alone gives its plaintext.
pub fn check_message_api(engine: &dyn Engine, v: &Vector, oracle: &Oracle, batches: &[usize]) {
    let what = |path: &str| format!("{} on {}: {path}", v.name(), engine.name());
    let key = match Key::new(&v.key) {
        Ok(key) => key,
        Err(_) => {
            assert!(v.has("InvalidKeySize"), "{}", what("the key was refused"));
            return;
        }
    };
    for &batch in batches {
        let mut input = &v.message[..];
        let stream = match Stream::read_message(key.clone(), &v.context, &mut input, batch) {
            Ok(stream) => stream,
            Err(e) => {
                assert!(v.has("HeaderFailure"), "{}", what(&format!("header: {e}")));
                return;
            }
        };
        assert!(
            !v.has("HeaderFailure"),
            "{}",
            what("the header was accepted")
        );
        let mut out = Vec::new();
        let spec = stream.spec(engine, Direction::Decrypt);
        let run = pipeline::run(&spec, &mut input, &mut out, &|_| {});
        let path = format!("Stream::read_message, {batch}-byte batches");
        match run {
            Ok(_) if v.valid => assert!(out == oracle.prefix, "{}", what(&path)),
            Ok(_) => panic!("{}", what(&format!("{path}: accepted"))),
            Err(e) if v.valid => panic!("{}", what(&format!("{path}: {e}"))),
            Err(_) => v.assert_within_prefix(oracle, &out, &what(&path)),
        }
    }
    let stream =
        Stream::read_message(key, &v.context, &mut &v.message[..], CHUNK_LEN).expect("read above");
    let made = stream
        .seekable(engine, Cursor::new(&v.message[..]))
        .expect("a message is seekable");
    let mut reader = match made {
        Ok(reader) => reader,
        Err(e) => {
            assert!(
                !v.valid && !v.has("ValidFinalChunk"),
                "{}",
                what(&format!("the seekable reader's length check: {e}"))
            );
            return;
        }
    };
    assert!(
        v.valid || v.has("ValidFinalChunk"),
        "{}",
        what("the seekable reader authenticated the length")
    );
    let mut out = Vec::new();
    let whole = reader.read_to_end(&mut out);
    match whole {
        Ok(_) if v.valid => {
            assert!(out == oracle.prefix, "{}", what("seekable read"));
            assert_eq!(reader.plaintext_len(), oracle.prefix.len() as u64);
        }
        Ok(_) => panic!("{}", what("the seekable reader read it whole")),
        Err(e) if v.valid => panic!("{}", what(&format!("seekable read: {e}"))),
        Err(_) => {
            v.assert_within_prefix(oracle, &out, &what("the seekable reader"));
            let mut more = [0u8; 100];
            assert!(
                reader.read(&mut more).is_err(),
                "{}",
                what("a read after the failure did not fail again")
            );
        }
    }
    // The final chunk alone (its bytes from the end): authentic for valid and ValidFinalChunk
    // vectors alike.
    let len = reader.plaintext_len();
    let last_start = len / CHUNK_LEN as u64 * CHUNK_LEN as u64;
    reader
        .seek(SeekFrom::End(last_start as i64 - len as i64))
        .expect("a seek");
    let mut last = Vec::new();
    reader
        .read_to_end(&mut last)
        .unwrap_or_else(|e| panic!("{}", what(&format!("the final chunk alone: {e}"))));
    let sound = oracle.chunks.last().and_then(Option::as_deref);
    assert!(
        sound == Some(&last[..]) && last.len() as u64 == len - last_start,
        "{}",
        what("the final chunk alone is not its plaintext")
    );
}
