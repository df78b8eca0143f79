//! The key-file stanza (kind 1): D wrapped under HKDF-SHA256 of a symmetric key K (a key
//! file's 16, 24 or 32 bytes) with a fresh 16-byte salt.

use super::{hkdf, BodyLen, Identity, Kind, Recipient, Wrap, WrapKey, WRAPPED_LEN};
use crate::container::keys::random_bytes;
use crate::container::ContainerError;

/// The key-file stanza kind.
pub(super) struct KeyFile;

/// HKDF-SHA256 info of a key-file stanza's wrap key.
const INFO: &[u8] = b"paraes 2026-11 container v2 key-file stanza wrap key";
/// Bytes of the salt, the stanza's args.
const SALT_LEN: usize = 16;

impl Kind for KeyFile {
    fn byte(&self) -> u8 {
        1
    }

    fn name(&self) -> &'static str {
        "key file"
    }

    fn label(&self) -> &'static str {
        "key-file"
    }

    fn body_len(&self) -> BodyLen {
        BodyLen::Exact(SALT_LEN + WRAPPED_LEN)
    }

    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>> {
        let Recipient::Key(key) = recipient else {
            return None;
        };
        let mut salt = [0u8; SALT_LEN];
        Some(random_bytes(&mut salt).map(|()| Wrap {
            args: salt.to_vec(),
            key: hkdf(Some(&salt), key.as_bytes(), INFO),
        }))
    }

    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        _max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError> {
        let Identity::Key(key) = identity else {
            return Ok(None);
        };
        Ok(Some(hkdf(Some(args), key.as_bytes(), INFO)))
    }
}
