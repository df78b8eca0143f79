//! Format v1, read only: a header authenticated with keyed BLAKE3 under a key derived from the
//! user's key K, which is also the body's AES key. paraes no longer writes it (K keyed the body
//! directly, so anything else done with K could reveal a v1 body's keystream; docs/FORMAT.md),
//! but every v1 file still decrypts.

use std::io::Read;

use zeroize::Zeroizing;

use super::keys::{derive, Argon2Params, StreamKeys};
use super::{read_exact, BodyParams, ContainerError};
use crate::engine::Mode;
use crate::key::{Key, KeySize};

/// The version byte of format v1.
pub(crate) const VERSION: u8 = 1;
/// Bytes of the v1 header tag.
const HEADER_TAG_LEN: usize = 32;
/// Bytes of the v1 Argon2id parameters.
const ARGON2_LEN: usize = 28;
/// The v1 fields before the optional Argon2id parameters.
const FIXED_LEN: usize = 32;

/// BLAKE3 key-derivation context of the v1 MAC key.
const MAC_KEY_CONTEXT: &str = "paraes 2026-11 container v1 authentication key";
/// BLAKE3 key-derivation context of a v1 file's chunk-MAC keys.
const CHUNK_KEY_CONTEXT: &str = "paraes 2026-11 container v1 per-file chunk MAC keys";

/// Where a v1 container's key came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum V1KeySource {
    /// A raw key (key file or key argument).
    RawKey,
    /// A passphrase through Argon2id.
    Passphrase(Argon2Params),
}

/// A parsed v1 header, tag not yet checked.
#[derive(Debug)]
pub(crate) struct V1Header {
    pub(crate) params: BodyParams,
    pub(crate) key_source: V1KeySource,
    fields: Vec<u8>,
    tag: [u8; HEADER_TAG_LEN],
}

impl V1Header {
    /// Parses the rest of a v1 header; `fixed` holds its first 32 bytes (magic and version
    /// already checked).
    pub(crate) fn read(
        fixed: &[u8; FIXED_LEN],
        input: &mut impl Read,
    ) -> Result<Self, ContainerError> {
        let bad = |what: String| ContainerError::BadHeader(what);
        let params = BodyParams::decode(&fixed[9..16], VERSION)?;
        let mut fields = fixed.to_vec();
        let key_source = match fixed[11] {
            0 => V1KeySource::RawKey,
            1 => {
                let mut kdf = [0u8; ARGON2_LEN];
                read_exact(input, &mut kdf)?;
                fields.extend_from_slice(&kdf);
                let params = Argon2Params::decode(&kdf);
                params.check()?;
                V1KeySource::Passphrase(params)
            }
            other => return Err(bad(format!("unknown key source {other}"))),
        };
        let mut tag = [0u8; HEADER_TAG_LEN];
        read_exact(input, &mut tag)?;
        Ok(V1Header {
            params,
            key_source,
            fields,
            tag,
        })
    }

    /// Length of the encoded header, tag included.
    pub(crate) fn len(&self) -> usize {
        self.fields.len() + HEADER_TAG_LEN
    }

    /// The stream keys if `key` is the file's key K (the header tag verifies), else `None`.
    pub(crate) fn open(&self, key: &Key) -> Option<StreamKeys> {
        if key.size() != self.params.key_size {
            return None;
        }
        let mac = Zeroizing::new(blake3::derive_key(MAC_KEY_CONTEXT, key.as_bytes()));
        let expected = blake3::keyed_hash(&mac, &self.fields);
        // blake3::Hash compares in constant time.
        if expected != blake3::Hash::from_bytes(self.tag) {
            return None;
        }
        let mut material = Zeroizing::new([0u8; 48]);
        derive(
            CHUNK_KEY_CONTEXT,
            &[&mac[..], expected.as_bytes()],
            &mut material[..],
        );
        Some(StreamKeys::new(key.clone(), &material))
    }

    /// The key K from a passphrase (Argon2id with the header's salt and parameters).
    pub(crate) fn passphrase_key(&self, passphrase: &[u8]) -> Result<Option<Key>, ContainerError> {
        match &self.key_source {
            V1KeySource::Passphrase(params) => {
                Ok(Some(params.derive_key(passphrase, self.params.key_size)?))
            }
            V1KeySource::RawKey => Ok(None),
        }
    }

    /// A v1 header as the last v1 writer made it: only tests write v1 now.
    #[cfg(test)]
    pub(crate) fn seal_for_tests(
        params: BodyParams,
        nonce: [u8; 16],
        key_source: V1KeySource,
        key: &Key,
    ) -> Vec<u8> {
        let mut out = super::MAGIC.to_vec();
        out.push(VERSION);
        out.extend_from_slice(&params.encode(VERSION));
        out[11] = match key_source {
            V1KeySource::RawKey => 0,
            V1KeySource::Passphrase(_) => 1,
        };
        out.extend_from_slice(&nonce);
        if let V1KeySource::Passphrase(p) = &key_source {
            out.extend_from_slice(&p.encode());
        }
        let mac = blake3::derive_key(MAC_KEY_CONTEXT, key.as_bytes());
        let tag = blake3::keyed_hash(&mac, &out);
        out.extend_from_slice(tag.as_bytes());
        out
    }
}

/// The v1 mode byte.
pub(crate) fn mode_byte(mode: Mode) -> u8 {
    match mode {
        Mode::Ctr => 1,
        Mode::Ecb => 2,
    }
}

/// The key size of a header byte.
pub(crate) fn key_size_of(byte: u8) -> Result<KeySize, ContainerError> {
    KeySize::from_len(usize::from(byte))
        .map_err(|_| ContainerError::BadHeader(format!("key size {byte} bytes")))
}
