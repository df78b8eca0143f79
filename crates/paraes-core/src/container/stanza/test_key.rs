//! A stanza kind for tests only (kind 250, which no paraes build writes or reads): D wrapped
//! under HKDF-SHA256 of a 32-byte test key with a salt of 16 to 64 bytes, so that its body's
//! length varies (as an SSH-RSA stanza's will, with the modulus). It was added as any kind is,
//! by this file and one registry line, and its tests show that this is all it takes: a
//! container sealed for it opens and decrypts, `info` names it, and its lengths are enforced.
//! Its recipient is its key (a test kind keeps nothing secret).
// recipe-example: stanza-kind (the kind itself)

use std::ops::RangeInclusive;

use zeroize::Zeroizing;

use super::{hkdf, BodyLen, Identity, Kind, Recipient, Wrap, WrapKey, WRAPPED_LEN};
use crate::container::identity::{IdentityKey, PublicRecipient, RecipientKey, SecretIdentity};
use crate::container::keys::random_bytes;
use crate::container::ContainerError;

/// The test stanza kind.
pub(super) struct TestKey;

/// HKDF-SHA256 info of a test stanza's wrap key.
const INFO: &[u8] = b"paraes test-only stanza wrap key";
/// Bytes of the salt, the stanza's args: the recipient chooses.
const SALT_LEN: RangeInclusive<usize> = 16..=64;
/// The test key tests seal with.
pub(crate) const FIXED_KEY: [u8; 32] = [0x7e; 32];

/// A recipient of the test kind: its key, and how long a salt to write.
pub(crate) struct TestRecipient {
    key: [u8; 32],
    salt_len: usize,
}

impl TestRecipient {
    /// The recipient of [`FIXED_KEY`] with a salt of `salt_len` bytes (16 to 64).
    pub(crate) fn fixed(salt_len: usize) -> PublicRecipient {
        PublicRecipient::new(TestRecipient {
            key: FIXED_KEY,
            salt_len,
        })
    }
}

/// An identity of the test kind: its key.
pub(crate) struct TestIdentity(Zeroizing<[u8; 32]>);

impl TestIdentity {
    /// The identity of `key`.
    pub(crate) fn of(key: [u8; 32]) -> SecretIdentity {
        SecretIdentity::new(TestIdentity(Zeroizing::new(key)))
    }
}

impl Kind for TestKey {
    fn byte(&self) -> u8 {
        250
    }

    fn name(&self) -> &'static str {
        "test key"
    }

    fn label(&self) -> &'static str {
        "test-key"
    }

    fn body_len(&self) -> BodyLen {
        BodyLen::Between(SALT_LEN.start() + WRAPPED_LEN, SALT_LEN.end() + WRAPPED_LEN)
    }

    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>> {
        let to: &TestRecipient = recipient.public_key()?;
        let mut salt = vec![0u8; to.salt_len];
        Some(random_bytes(&mut salt).map(|()| Wrap {
            key: hkdf(Some(&salt), &to.key, INFO),
            args: salt,
        }))
    }

    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        _max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError> {
        let Some(TestIdentity(key)) = identity.secret_key() else {
            return Ok(None);
        };
        Ok(Some(hkdf(Some(args), &key[..], INFO)))
    }
}

impl RecipientKey for TestRecipient {
    fn text(&self) -> String {
        format!(
            "paraes-test-recipient {} ({} salt bytes)",
            hex::encode(self.key),
            self.salt_len
        )
    }
}

impl IdentityKey for TestIdentity {
    fn recipient(&self) -> PublicRecipient {
        PublicRecipient::new(TestRecipient {
            key: *self.0,
            salt_len: *SALT_LEN.start(),
        })
    }

    fn secret_text(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("PARAES-TEST-KEY-{}", hex::encode(*self.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::stanza::Stanza;
    use crate::container::{seal, Access, BodyAccess, Unlock, UnverifiedHeader};
    use crate::cpu::CpuEngine;
    use crate::engine::Direction;
    use crate::key::{Key, KeySize};
    use crate::pipeline;

    /// The stanzas the header of `file` lists, as `info` names them.
    fn listed(file: &[u8]) -> Vec<String> {
        let header = UnverifiedHeader::read(&mut &file[..]).unwrap();
        let Access::Slots { slots, .. } = &header.info().access else {
            panic!("a v3 file has slots");
        };
        slots[0].stanzas.iter().map(ToString::to_string).collect()
    }

    fn open(file: &[u8], identity: Identity) -> Result<Vec<u8>, String> {
        let mut input = file;
        let opened = UnverifiedHeader::read(&mut input)
            .and_then(|h| h.open(&Unlock::new(vec![identity]), BodyAccess::Bytes(file)))
            .map_err(|e| e.to_string())?;
        let engine = CpuEngine::new(Some(1)).unwrap();
        let spec = opened.stream_spec(&engine, Direction::Decrypt);
        let mut out = Vec::new();
        pipeline::run(&spec, &mut input, &mut out, &|_| {}).map_err(|e| e.to_string())?;
        Ok(out)
    }

    #[test]
    fn a_container_sealed_for_the_test_kind_opens_and_decrypts() {
        let plain: Vec<u8> = (0..40_000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        let engine = CpuEngine::new(Some(1)).unwrap();
        for salt_len in [16, 41, 64] {
            let recipients = [
                Recipient::Key(Key::new(&[1; 32]).unwrap()),
                Recipient::Public(TestRecipient::fixed(salt_len)),
            ];
            let (mut file, sealed) = seal(KeySize::Aes256, &recipients).unwrap();
            let spec = sealed.stream_spec(&engine, Direction::Encrypt);
            pipeline::run(&spec, &mut &plain[..], &mut file, &|_| {}).unwrap();
            assert_eq!(listed(&file), ["key file", "test key"]);
            assert_eq!(sealed.stanzas[1].kind, 250);
            assert_eq!(sealed.stanzas[1].body.len(), salt_len + WRAPPED_LEN);
            assert_eq!(
                open(&file, Identity::Secret(TestIdentity::of(FIXED_KEY))).unwrap(),
                plain
            );
            let wrong = open(&file, Identity::Secret(TestIdentity::of([9; 32]))).unwrap_err();
            assert!(
                wrong.contains("it opens with: key file, test key"),
                "{wrong}"
            );
        }
    }

    #[test]
    fn a_test_stanza_of_a_length_outside_its_range_is_refused() {
        for len in [0, 16, 63, 113, 4000] {
            let stanza = Stanza {
                kind: 250,
                body: vec![0; len],
            };
            let error = stanza.kind().unwrap_err().to_string();
            assert!(
                error.contains(&format!(
                    "a stanza of kind 250 is {len} bytes, not 64 to 112"
                )),
                "{error}"
            );
        }
        for len in [64, 100, 112] {
            let stanza = Stanza {
                kind: 250,
                body: vec![0; len],
            };
            assert_eq!(stanza.kind().unwrap().to_string(), "test key");
        }
    }
}
