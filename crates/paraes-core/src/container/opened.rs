//! An opened container ([`Opened`]): its authenticated facts, the keys its body runs with, and
//! the stream specs the pipeline runs it by; what a rekey or an upgrade of it needs.

use super::info::{HeaderInfo, IgnoredSlot};
use super::keys::{Authenticator, FileSecret, StreamKeys};
use super::stanza::Stanza;
use super::v2::{self, Preamble};
use super::v3::MessageBody;
use crate::cobblestone;
use crate::engine::{Direction, Engine};
use crate::key::Key;
use crate::pipeline::{StreamSpec, Tags};

/// What a rekey (or an upgrade) of an opened v2 or v3 file needs: the preamble, which slot the
/// file key opened, and the newest generation among the slots that key authenticates.
#[derive(Clone, Copy, Debug)]
pub(super) struct RekeyState {
    pub(super) preamble: Preamble,
    pub(super) preamble_bytes: [u8; v2::PREAMBLE_LEN],
    pub(super) opened_slot: usize,
    pub(super) newest_generation: u64,
}

/// Which stanza of the opening slot opened the file, and with which identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Opener {
    /// Its place among the slot's stanzas ([`Opened::opened_by`]).
    pub(super) stanza: usize,
    /// Its place among the [`Unlock`](super::Unlock)'s identities.
    pub(super) identity: usize,
}

/// The keys a body runs with.
pub(super) enum BodyKeys {
    /// v1 and v2: the body's AES key and paraes's chunk authenticator.
    Chunked(Box<StreamKeys>),
    /// v3: the message's input key, context and chunk cipher.
    Message(Box<MessageBody>),
}

/// A verified (or freshly sealed) container: its facts, and the keys its stream runs with.
pub struct Opened {
    pub(super) info: HeaderInfo,
    /// The exact bytes before the body's first chunk: the header, and for v3 the message's
    /// salt and commitment (read, or written by [`seal`]).
    pub(super) header: Vec<u8>,
    pub(super) secret: FileSecret,
    pub(super) keys: BodyKeys,
    pub(super) rekey: Option<RekeyState>,
    /// The stanzas of the slot that opened the file (v2, v3), as they are: an upgrade keeps
    /// them.
    pub(super) stanzas: Vec<Stanza>,
    /// Which stanza opened the file, with which identity (`None` for a container sealed, or
    /// opened with its secret or by a v1 key).
    pub(super) opener: Option<Opener>,
    /// Whether the body check passed with the whole body at hand when the file was opened
    /// (v2: its first and last chunk tags from a whole file; v3: the key commitment), which a
    /// rekey needs before it writes anything.
    pub(super) body_checked: bool,
    /// Plaintext bytes per pipeline chunk of a v3 body (a whole number of 16 KiB message
    /// chunks); v1 and v2 bodies go through the pipeline one format chunk at a time.
    pub(super) batch: usize,
    /// A slot that parses but that the file key does not authenticate, ignored.
    pub(super) ignored: Option<IgnoredSlot>,
    /// What the seal that made it warns about (empty for a file opened).
    pub(super) warnings: Vec<super::SealWarning>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opened {{ {:?}, keys: <redacted> }}", self.info)
    }
}

impl Opened {
    /// What [`super::seal`] warns about the recipients it sealed this container for (empty for
    /// a container opened): the front end tells the user, the core never prints.
    pub fn warnings(&self) -> &[super::SealWarning] {
        &self.warnings
    }

    /// The header's facts, now authenticated.
    pub fn info(&self) -> &HeaderInfo {
        &self.info
    }

    /// The exact bytes before the body's first chunk: the header, and for v3 the message's
    /// salt and commitment (what [`seal`](fn@super::seal) wrote, or what
    /// [`UnverifiedHeader::read`](super::UnverifiedHeader::read) read).
    pub fn header_bytes(&self) -> &[u8] {
        &self.header
    }

    /// A stanza slot that parses but that this file key does not authenticate, which opening
    /// ignored (v3 always; v2 only with
    /// [`Unlock::allow_unverified_slot`](super::Unlock::allow_unverified_slot)): every front end
    /// tells the user ([`IgnoredSlot::warning`]).
    pub fn ignored_slot(&self) -> Option<&IgnoredSlot> {
        self.ignored.as_ref()
    }

    /// Sets how many plaintext bytes of a v3 body go through the pipeline as one chunk:
    /// `bytes` rounded down to a whole number of 16 KiB message chunks (at least one). The
    /// bytes written do not depend on it. No effect on v1 and v2 bodies, whose chunk size is
    /// in their header.
    pub fn set_batch(&mut self, bytes: usize) {
        self.batch = message_batch(bytes);
    }

    /// Plaintext bytes of a v3 body per pipeline chunk ([`Opened::set_batch`]).
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The stream of the body in `direction` on `engine`, as the pipeline runs it (a v3 body
    /// in batches of [`Opened::set_batch`]).
    pub fn stream_spec<'a>(
        &'a self,
        engine: &'a dyn Engine,
        direction: Direction,
    ) -> StreamSpec<'a> {
        self.spec(engine, direction, self.batch)
    }

    /// The stream of the body with one format chunk per pipeline chunk (16 KiB for v3), for
    /// readers that index chunks by their place in the file: `verify`, `--range`.
    pub fn chunk_spec<'a>(
        &'a self,
        engine: &'a dyn Engine,
        direction: Direction,
    ) -> StreamSpec<'a> {
        self.spec(engine, direction, self.info.params.chunk_size)
    }

    fn spec<'a>(
        &'a self,
        engine: &'a dyn Engine,
        direction: Direction,
        batch: usize,
    ) -> StreamSpec<'a> {
        match &self.keys {
            BodyKeys::Chunked(keys) => StreamSpec {
                engine,
                mode: self.info.params.mode,
                direction,
                key: &keys.expanded,
                counter: self.info.counter,
                chunk_size: self.info.params.chunk_size,
                padding: true,
                tags: Tags::Chunk(&keys.auth),
            },
            BodyKeys::Message(message) => {
                StreamSpec::message(engine, direction, &message.cipher, batch)
            }
        }
    }

    /// The secret another process of the same job opens the header with
    /// ([`UnverifiedHeader::open_with_secret`](super::UnverifiedHeader::open_with_secret)): D for
    /// v2 and v3 (never the user's key), K for v1.
    pub fn secret(&self) -> &FileSecret {
        &self.secret
    }

    /// The key that reads the body without paraes (show it only on an explicit request). v3:
    /// the message's input key IK, which with [`Opened::message_context`] reads the body with
    /// any C2SP Cobblestone implementation, and also lets its holder write a different body
    /// that this key accepts, for every recipient. v1 and v2: the body's AES key, which with
    /// the counter block decrypts the body with any AES-CTR/ECB tool (after removing the chunk
    /// tags) and cannot forge chunk tags (their keys are derived from D separately).
    pub fn data_key(&self) -> &Key {
        match &self.keys {
            BodyKeys::Chunked(keys) => &keys.body,
            BodyKeys::Message(message) => &message.input_key,
        }
    }

    /// v3: the context of the body's message (the preamble's first 16 bytes).
    pub fn message_context(&self) -> Option<&[u8]> {
        match &self.keys {
            BodyKeys::Message(message) => Some(&message.context),
            BodyKeys::Chunked(_) => None,
        }
    }

    /// v3: the body message's chunk cipher.
    pub fn message_cipher(&self) -> Option<&cobblestone::ChunkCipher> {
        match &self.keys {
            BodyKeys::Message(message) => Some(&message.cipher),
            BodyKeys::Chunked(_) => None,
        }
    }

    /// The v1/v2 chunk authenticator (none for a v3 body, whose chunks are AES-GCM).
    pub fn authenticator(&self) -> Option<&Authenticator> {
        match &self.keys {
            BodyKeys::Chunked(keys) => Some(&keys.auth),
            BodyKeys::Message(_) => None,
        }
    }
}

/// A pipeline batch of a C2SP message for `bytes`: rounded down to a whole number of 16 KiB
/// message chunks, at least one.
pub fn message_batch(bytes: usize) -> usize {
    let chunk = cobblestone::CHUNK_LEN;
    (bytes / chunk).max(1) * chunk
}
