//! Format v3's body: exactly one C2SP chunked-encryption message (Cobblestone-256, or
//! Cobblestone-128 for 128-bit bodies; [`crate::cobblestone`]) right after the header that v2
//! also uses (preamble and two stanza slots, [`super::v2`]). Its input key IK is derived from
//! the file key D in a domain of its own; its context is the preamble's first 16 bytes (magic,
//! version, body parameters), which nothing a rekey changes touches. A file key is taken only if
//! the message's key commitment matches: the commitment, not a chunk tag, ties D to the body
//! (docs/FORMAT.md, "Format v3").

use zeroize::Zeroizing;

use super::keys::{derive, FileSecret};
use super::v2::PREAMBLE_LEN;
use crate::cobblestone::{ChunkCipher, MessageKeys, Variant, PREFIX_LEN, SALT_LEN};
use crate::key::Key;

// The version byte of format v3, defined with the header that v3 shares with v2.
pub(crate) use super::v2::V3_VERSION as VERSION;
/// Bytes of the preamble that are the message's context.
pub(crate) const CONTEXT_LEN: usize = 16;
/// BLAKE3 key-derivation context of the body's input key IK.
const INPUT_KEY_CONTEXT: &str = "paraes 2026-11 container v3 body input key";

/// The keys of a v3 body under one file key: IK, the context, the message's keys for one salt
/// and its chunk cipher.
pub(crate) struct MessageBody {
    pub(crate) input_key: Key,
    pub(crate) context: [u8; CONTEXT_LEN],
    keys: MessageKeys,
    pub(crate) cipher: ChunkCipher,
}

impl MessageBody {
    /// The body keys of the file whose preamble is `preamble`, under file key `file_key`, for
    /// the message salt `salt`. IK is the first 16 or 32 bytes of BLAKE3's key derivation of D.
    pub(crate) fn new(
        file_key: &FileSecret,
        preamble: &[u8; PREAMBLE_LEN],
        variant: Variant,
        salt: &[u8; SALT_LEN],
    ) -> Self {
        let mut input_key = Zeroizing::new([0u8; 32]);
        derive(
            INPUT_KEY_CONTEXT,
            &[file_key.as_bytes()],
            &mut input_key[..variant.key_size().bytes()],
        );
        let input_key = Key::new(&input_key[..variant.key_size().bytes()]).expect("16 or 32 bytes");
        let context: [u8; CONTEXT_LEN] = preamble[..CONTEXT_LEN].try_into().expect("16 bytes");
        let keys = MessageKeys::derive(variant, input_key.as_bytes(), salt, &context)
            .expect("IK has the variant's size");
        let cipher = keys.chunks();
        MessageBody {
            input_key,
            context,
            keys,
            cipher,
        }
    }

    /// Whether the message prefix `prefix` (salt and commitment) carries this key's
    /// commitment (constant-time comparison).
    pub(crate) fn commits_to(&self, prefix: &[u8; PREFIX_LEN]) -> bool {
        self.keys.commits_to(&prefix[SALT_LEN..])
    }

    /// The message prefix a writer puts before the first chunk: `salt` and the commitment.
    pub(crate) fn prefix(&self, salt: &[u8; SALT_LEN]) -> [u8; PREFIX_LEN] {
        let mut prefix = [0u8; PREFIX_LEN];
        prefix[..SALT_LEN].copy_from_slice(salt);
        prefix[SALT_LEN..].copy_from_slice(self.keys.commitment());
        prefix
    }
}
