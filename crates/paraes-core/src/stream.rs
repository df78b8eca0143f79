//! What one run encrypts or decrypts, whatever its format: a raw stream under the user's own
//! key (`--raw`), a bare C2SP message (`--format cobblestone`), or an opened container. One
//! type gives the bytes before the first chunk, the pipeline's [`StreamSpec`], the end check of
//! a whole file, the seekable reader of `--range`, and the encoding other processes of a job
//! (MPI ranks) rebuild the same stream from, so that no caller models the three apart.

use std::fs::File;
use std::io::{Read, Seek, Write};

use zeroize::Zeroizing;

use crate::cobblestone::{self, ChunkCipher, MessageKeys, Variant};
use crate::container::{
    self, BodyAccess, BodyCheck, BodyLayout, ContainerError, FileSecret, Opened, SeekableReader,
    UnverifiedHeader,
};
use crate::engine::{Direction, Engine, Mode};
use crate::key::{ExpandedKey, Key};
use crate::pipeline::{PipelineError, StreamSpec, Tags};

/// A stream's keys and parameters, ready for any runner.
pub enum Stream {
    /// `--raw`: the user's key is the AES key; nothing precedes the first chunk.
    Raw(RawStream),
    /// A bare C2SP chunked-encryption message under the user's input key.
    Message(MessageStream),
    /// A container, sealed or opened (it keeps its header bytes).
    Container(Box<Opened>),
}

/// A raw AES stream: mode, counter, padding and the user's key.
pub struct RawStream {
    key: Key,
    schedule: Box<ExpandedKey>,
    mode: Mode,
    counter: [u8; 16],
    padding: bool,
    chunk_size: usize,
}

/// A bare message: its input key and context, salt and commitment, and chunk cipher.
pub struct MessageStream {
    key: Key,
    context: Vec<u8>,
    prefix: [u8; cobblestone::PREFIX_LEN],
    cipher: Box<ChunkCipher>,
    batch: usize,
}

/// Why a stream could not be made.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A Cobblestone input key must have 16 or 32 bytes.
    #[error("a Cobblestone message takes a 16- or 32-byte key (Cobblestone-128/256), not a {0}-byte one")]
    MessageKeySize(usize),
    /// The message ends before its salt and commitment.
    #[error("it ends before its 24-byte salt and 32-byte key commitment")]
    NoPrefix,
    /// The key or the context is not the message's.
    #[error("the key or context does not match the message (its key commitment differs)")]
    CommitmentMismatch,
    /// A whole message's length is not one a writer makes.
    #[error("it does not end in a chunk shorter than 16 KiB: it was cut or extended")]
    CutOrExtended,
    /// A whole message's last chunk does not verify.
    #[error("its last chunk ({0}) failed authentication: it was damaged, cut or extended")]
    LastChunk(u64),
    /// The stream sent to another process of the job did not arrive intact.
    #[error("the stream from rank 0 is malformed ({0}): run the same paraes binary on every rank")]
    Malformed(&'static str),
    /// A container's header.
    #[error(transparent)]
    Container(#[from] ContainerError),
    /// A key.
    #[error(transparent)]
    Key(#[from] crate::key::KeyError),
}

impl Stream {
    /// A raw stream under `key`.
    pub fn raw(key: Key, mode: Mode, counter: [u8; 16], padding: bool, chunk_size: usize) -> Self {
        Stream::Raw(RawStream {
            schedule: Box::new(key.expand()),
            key,
            mode,
            counter,
            padding,
            chunk_size,
        })
    }

    /// A new bare message under `key` and `context`, with a fresh random salt.
    pub fn new_message(key: Key, context: &[u8], batch: usize) -> Result<Self, StreamError> {
        let mut salt = [0u8; cobblestone::SALT_LEN];
        container::random_bytes(&mut salt)?;
        let keys = message_keys(&key, &salt, context)?;
        let mut prefix = [0u8; cobblestone::PREFIX_LEN];
        prefix[..cobblestone::SALT_LEN].copy_from_slice(&salt);
        prefix[cobblestone::SALT_LEN..].copy_from_slice(keys.commitment());
        Ok(Self::message(key, context, prefix, &keys, batch))
    }

    /// The bare message whose salt and commitment are `prefix`, under `key` and `context`:
    /// refused unless the commitment matches (checked before any chunk is read).
    pub fn open_message(
        key: Key,
        context: &[u8],
        prefix: &[u8],
        batch: usize,
    ) -> Result<Self, StreamError> {
        let prefix: [u8; cobblestone::PREFIX_LEN] =
            prefix.try_into().map_err(|_| StreamError::NoPrefix)?;
        let salt = prefix[..cobblestone::SALT_LEN]
            .try_into()
            .expect("24 bytes");
        let keys = message_keys(&key, salt, context)?;
        if !keys.commits_to(&prefix[cobblestone::SALT_LEN..]) {
            return Err(StreamError::CommitmentMismatch);
        }
        Ok(Self::message(key, context, prefix, &keys, batch))
    }

    /// [`Stream::open_message`] with the prefix read from `input`.
    pub fn read_message(
        key: Key,
        context: &[u8],
        input: &mut impl Read,
        batch: usize,
    ) -> Result<Self, StreamError> {
        let mut prefix = [0u8; cobblestone::PREFIX_LEN];
        input.read_exact(&mut prefix).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => StreamError::NoPrefix,
            _ => StreamError::Container(ContainerError::Io(e)),
        })?;
        Self::open_message(key, context, &prefix, batch)
    }

    fn message(
        key: Key,
        context: &[u8],
        prefix: [u8; cobblestone::PREFIX_LEN],
        keys: &MessageKeys,
        batch: usize,
    ) -> Self {
        Stream::Message(MessageStream {
            key,
            context: context.to_vec(),
            prefix,
            cipher: Box::new(keys.chunks()),
            batch: container::message_batch(batch),
        })
    }

    /// An opened (or sealed) container whose v3 body goes through the pipeline in batches of
    /// `batch` bytes ([`Opened::set_batch`]).
    pub fn container(mut opened: Opened, batch: usize) -> Self {
        opened.set_batch(batch);
        Stream::Container(Box::new(opened))
    }

    /// The bytes before the first chunk: a container's header (with v3's message prefix), a
    /// message's salt and commitment, nothing for a raw stream.
    pub fn header(&self) -> &[u8] {
        match self {
            Stream::Raw(_) => &[],
            Stream::Message(message) => &message.prefix,
            Stream::Container(opened) => opened.header_bytes(),
        }
    }

    /// Writes [`Stream::header`] to `out` (the start of what `enc` writes); returns its length.
    pub fn write_header(&self, out: &mut (impl Write + ?Sized)) -> std::io::Result<u64> {
        out.write_all(self.header())?;
        Ok(self.header().len() as u64)
    }

    /// The opened container, if this is one.
    pub fn opened(&self) -> Option<&Opened> {
        match self {
            Stream::Container(opened) => Some(opened),
            _ => None,
        }
    }

    /// The stream as the pipeline runs it, in `direction` on `engine`.
    pub fn spec<'a>(&'a self, engine: &'a dyn Engine, direction: Direction) -> StreamSpec<'a> {
        match self {
            Stream::Raw(raw) => StreamSpec {
                engine,
                mode: raw.mode,
                direction,
                key: &raw.schedule,
                counter: raw.counter,
                chunk_size: raw.chunk_size,
                padding: raw.padding,
                tags: Tags::None,
            },
            Stream::Message(message) => {
                StreamSpec::message(engine, direction, &message.cipher, message.batch)
            }
            Stream::Container(opened) => opened.stream_spec(engine, direction),
        }
    }

    /// The end check of a whole file before anything is written: a bare message's length must
    /// be one a writer makes and its last chunk's tag must verify (a container's body was
    /// checked when it was opened; a raw stream has no tags). `file` is the whole message.
    pub fn check_end(&self, file: &File) -> Result<(), StreamError> {
        let Stream::Message(message) = self else {
            return Ok(());
        };
        let chunks_start = cobblestone::PREFIX_LEN as u64;
        let len = file.metadata().map_err(ContainerError::Io)?.len();
        BodyLayout::message(len.saturating_sub(chunks_start))
            .map_err(|_| StreamError::CutOrExtended)?;
        match BodyAccess::File(file).check_message_end(chunks_start, &message.cipher)? {
            BodyCheck::Failed(chunk) => Err(StreamError::LastChunk(chunk)),
            BodyCheck::Verified | BodyCheck::NotChecked => Ok(()),
        }
    }

    /// A reader of the plaintext of `input` (the whole file) that decrypts only the chunks a
    /// read touches, on `engine`; `None` for a raw stream.
    pub fn seekable<'a, R: Read + Seek>(
        &'a self,
        engine: &'a dyn Engine,
        input: R,
    ) -> Option<Result<SeekableReader<'a, R>, PipelineError>> {
        match self {
            Stream::Raw(_) => None,
            Stream::Message(message) => {
                Some(SeekableReader::message(&message.cipher, engine, input))
            }
            Stream::Container(opened) => Some(SeekableReader::new(opened, engine, input)),
        }
    }

    /// The stream for another process of the same job (an MPI rank), which rebuilds it with
    /// [`Stream::for_rank`]: a container travels as its header and file secret (D for formats
    /// v2 and v3, never the user's key), a message as its input key, prefix and context, a
    /// raw stream as its key. Wiped when dropped.
    pub fn to_rank_bytes(&self) -> Zeroizing<Vec<u8>> {
        let (kind, mode, padding, counter, batch, key, context) = match self {
            Stream::Raw(raw) => (
                KIND_RAW,
                raw.mode,
                raw.padding,
                raw.counter,
                raw.chunk_size,
                raw.key.as_bytes(),
                &[][..],
            ),
            Stream::Message(message) => (
                KIND_MESSAGE,
                Mode::Ctr,
                false,
                [0; 16],
                message.batch,
                message.key.as_bytes(),
                &message.context[..],
            ),
            Stream::Container(opened) => (
                KIND_CONTAINER,
                opened.info().params.mode,
                true,
                [0; 16],
                opened.batch(),
                opened.secret().as_bytes(),
                &[][..],
            ),
        };
        // Sized before the secret goes in: a buffer that grew would leave a copy of the key
        // behind in the memory it left.
        let fields = [key, self.header(), context];
        let total = 3 + 8 + 16 + fields.iter().map(|f| 8 + f.len()).sum::<usize>();
        let mut out = Zeroizing::new(Vec::with_capacity(total));
        out.extend_from_slice(&[
            kind,
            match mode {
                Mode::Ecb => 0,
                Mode::Ctr => 1,
            },
            u8::from(padding),
        ]);
        out.extend_from_slice(&(batch as u64).to_le_bytes());
        out.extend_from_slice(&counter);
        for field in fields {
            out.extend_from_slice(&(field.len() as u64).to_le_bytes());
            out.extend_from_slice(field);
        }
        debug_assert_eq!(out.len(), total);
        out
    }

    /// The stream [`Stream::to_rank_bytes`] encoded, rebuilt on another process: a
    /// container's header is opened with its secret (its slot tag and v3's key commitment
    /// checked), a message's commitment checked.
    pub fn for_rank(bytes: &[u8]) -> Result<Self, StreamError> {
        let mut reader = Fields(bytes);
        let kind = reader.byte()?;
        let mode = match reader.byte()? {
            0 => Mode::Ecb,
            1 => Mode::Ctr,
            _ => return Err(StreamError::Malformed("mode")),
        };
        let padding = match reader.byte()? {
            0 => false,
            1 => true,
            _ => return Err(StreamError::Malformed("padding")),
        };
        let batch = usize::try_from(reader.u64()?).map_err(|_| StreamError::Malformed("batch"))?;
        let counter: [u8; 16] = reader.take(16)?.try_into().expect("16 bytes");
        let key = Zeroizing::new(reader.field()?.to_vec());
        let header = reader.field()?;
        let context = reader.field()?;
        if !reader.0.is_empty() {
            return Err(StreamError::Malformed("trailing bytes"));
        }
        // A batch no writer sends (a rank would divide by it, or cut GCM chunks apart).
        let unit = match kind {
            KIND_MESSAGE | KIND_CONTAINER => cobblestone::CHUNK_LEN,
            _ => 16,
        };
        if batch == 0 || !batch.is_multiple_of(unit) {
            return Err(StreamError::Malformed("batch"));
        }
        match (kind, context.is_empty(), header.is_empty()) {
            (KIND_RAW, true, true) => {
                Ok(Stream::raw(Key::new(&key)?, mode, counter, padding, batch))
            }
            (KIND_MESSAGE, _, false) if mode == Mode::Ctr && !padding => {
                Self::open_message(Key::new(&key)?, context, header, batch)
            }
            (KIND_CONTAINER, true, false) => {
                let opened = UnverifiedHeader::read(&mut &header[..])?
                    .open_with_secret(&FileSecret::from_bytes(&key))?;
                // The header field is the header, whole: nothing after it (its length is where
                // a rank's chunks start).
                if opened.header_bytes().len() != header.len() {
                    return Err(StreamError::Malformed("header"));
                }
                Ok(Stream::container(opened, batch))
            }
            _ => Err(StreamError::Malformed("stream kind")),
        }
    }
}

const KIND_RAW: u8 = 0;
const KIND_CONTAINER: u8 = 1;
const KIND_MESSAGE: u8 = 2;

/// The message keys of `key` (16 or 32 bytes) for `salt` and `context`.
fn message_keys(
    key: &Key,
    salt: &[u8; cobblestone::SALT_LEN],
    context: &[u8],
) -> Result<MessageKeys, StreamError> {
    let variant = Variant::for_key_size(key.size())
        .ok_or(StreamError::MessageKeySize(key.as_bytes().len()))?;
    MessageKeys::derive(variant, key.as_bytes(), salt, context)
        .map_err(|_| StreamError::MessageKeySize(key.as_bytes().len()))
}

/// A cursor over [`Stream::to_rank_bytes`]'s encoding.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], StreamError> {
        if self.0.len() < len {
            return Err(StreamError::Malformed("too short"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, StreamError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, StreamError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn field(&mut self) -> Result<&'a [u8], StreamError> {
        let len = usize::try_from(self.u64()?).map_err(|_| StreamError::Malformed("length"))?;
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::Recipient;
    use crate::{CpuEngine, KeySize};

    /// Encrypts `data` as `stream` describes, header first.
    fn encrypt(stream: &Stream, data: &[u8]) -> Vec<u8> {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let mut out = Vec::new();
        stream.write_header(&mut out).unwrap();
        crate::pipeline::run(
            &stream.spec(&engine, Direction::Encrypt),
            &mut &data[..],
            &mut out,
            &|_| {},
        )
        .unwrap();
        out
    }

    fn streams() -> Vec<Stream> {
        let key = Key::new(&[3; 32]).unwrap();
        let (_, sealed) = container::seal(KeySize::Aes128, &[Recipient::Key(key.clone())]).unwrap();
        vec![
            Stream::raw(Key::new(&[1; 24]).unwrap(), Mode::Ctr, [5; 16], false, 4096),
            Stream::raw(Key::new(&[1; 16]).unwrap(), Mode::Ecb, [0; 16], true, 64),
            Stream::new_message(key.clone(), b"ctx", 3 * cobblestone::CHUNK_LEN).unwrap(),
            Stream::new_message(Key::new(&[4; 16]).unwrap(), b"", 1).unwrap(),
            Stream::container(sealed, 2 * cobblestone::CHUNK_LEN),
        ]
    }

    /// A rank rebuilds exactly the stream rank 0 has: the same header, and the same bytes
    /// from the same plaintext.
    #[test]
    fn a_rank_rebuilds_the_same_stream() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        for stream in streams() {
            let bytes = stream.to_rank_bytes();
            let rebuilt = Stream::for_rank(&bytes).unwrap();
            assert_eq!(rebuilt.header(), stream.header());
            assert_eq!(&rebuilt.to_rank_bytes()[..], &bytes[..]);
            assert_eq!(encrypt(&rebuilt, &data), encrypt(&stream, &data));
        }
    }

    /// Every cut, a trailing byte, and a changed header byte (a message's salt or commitment,
    /// a container's slot) are refused: a rank never runs a stream other than rank 0's.
    #[test]
    fn damaged_rank_bytes_are_refused() {
        for stream in streams() {
            let bytes = stream.to_rank_bytes();
            for cut in 0..bytes.len() {
                assert!(Stream::for_rank(&bytes[..cut]).is_err(), "cut at {cut}");
            }
            let mut longer = bytes.to_vec();
            longer.push(0);
            assert!(Stream::for_rank(&longer).is_err());
            let header_len = stream.header().len();
            if header_len > 0 {
                // The header is the second field, after the key: flip its last byte.
                let key_len = match &stream {
                    Stream::Container(opened) => opened.secret().as_bytes().len(),
                    Stream::Message(message) => message.key.as_bytes().len(),
                    Stream::Raw(_) => unreachable!(),
                };
                let at = 3 + 8 + 16 + 8 + key_len + 8 + header_len - 1;
                let mut changed = bytes.to_vec();
                changed[at] ^= 1;
                assert!(Stream::for_rank(&changed).is_err());
            }
        }
        // A container's header field with a byte after the header.
        let container = &streams()[4];
        let bytes = container.to_rank_bytes();
        let secret_len = container.opened().unwrap().secret().as_bytes().len();
        let header_len = container.header().len();
        let at = 3 + 8 + 16 + 8 + secret_len;
        let mut longer = bytes[..at].to_vec();
        longer.extend_from_slice(&(header_len as u64 + 1).to_le_bytes());
        longer.extend_from_slice(container.header());
        longer.push(0);
        longer.extend_from_slice(&bytes[at + 8 + header_len..]);
        assert!(matches!(
            Stream::for_rank(&longer),
            Err(StreamError::Malformed("header"))
        ));
        // A message batch that is not whole 16 KiB chunks, and an unknown kind.
        let message = &streams()[2];
        let mut bad = message.to_rank_bytes().to_vec();
        bad[3..11].copy_from_slice(&4096u64.to_le_bytes());
        assert!(matches!(
            Stream::for_rank(&bad),
            Err(StreamError::Malformed("batch"))
        ));
        let mut bad = message.to_rank_bytes().to_vec();
        bad[0] = 9;
        assert!(Stream::for_rank(&bad).is_err());
    }

    /// A message opens only with its key and context; a wrong one fails on the commitment.
    #[test]
    fn a_message_opens_only_with_its_key_and_context() {
        let key = Key::new(&[8; 32]).unwrap();
        let sealed = Stream::new_message(key.clone(), b"a", 1).unwrap();
        let prefix = sealed.header().to_vec();
        assert!(Stream::open_message(key.clone(), b"a", &prefix, 1).is_ok());
        assert!(matches!(
            Stream::open_message(key.clone(), b"b", &prefix, 1),
            Err(StreamError::CommitmentMismatch)
        ));
        assert!(matches!(
            Stream::open_message(Key::new(&[9; 32]).unwrap(), b"a", &prefix, 1),
            Err(StreamError::CommitmentMismatch)
        ));
        assert!(matches!(
            Stream::read_message(key.clone(), b"a", &mut &prefix[..40], 1),
            Err(StreamError::NoPrefix)
        ));
        assert!(matches!(
            Stream::new_message(Key::new(&[1; 24]).unwrap(), b"", 1),
            Err(StreamError::MessageKeySize(24))
        ));
    }
}
