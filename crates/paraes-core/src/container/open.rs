//! Opening a read header ([`UnverifiedHeader::open`]): the identities tried on each stanza
//! ([`Unlock`]), the Argon2id cap over both slots, the slot tag and the body check that a file
//! key must pass, and the slot that the key does not authenticate (refused in v2, ignored in
//! v3). docs/FORMAT.md, "Opening a file".

use super::body::{BodyAccess, BodyCheck};
use super::header::{Parsed, UnverifiedHeader};
use super::info::{count_kinds, describe, Access, IgnoredSlot};
use super::keys::{FileSecret, DEFAULT_MAX_KDF_MIB};
use super::opened::{BodyKeys, Opened, Opener, RekeyState};
use super::stanza::{self, Identity, Stanza};
use super::v1::{V1Header, V1KeySource};
use super::v2::{self, HeaderKeys, SlottedHeader};
use super::v3::{self, MessageBody};
use super::ContainerError;
use crate::cobblestone::{self, Variant};
use crate::key::Key;
use crate::pipeline::DEFAULT_CHUNK_SIZE;

/// How to try to open a container: identities to try, the most Argon2id work to accept, and
/// whether a second slot that the file key does not authenticate may be ignored.
#[derive(Clone)]
pub struct Unlock {
    /// Keys, passphrases and secret identities, tried in turn.
    pub identities: Vec<Identity>,
    /// The most Argon2id memory x passes (MiB) the passphrase stanzas of a header may ask for
    /// in all (both slots together).
    pub max_kdf_mib: u64,
    /// Open a v2 file even when its other slot parses but does not verify under the file key
    /// that opened it ([`ContainerError::UnverifiedSlot`] otherwise): that slot is ignored
    /// ([`Opened::ignored_slot`]), and a rekey may overwrite it. A v3 file opens so without
    /// it: its body's key commitment decides the file key.
    pub allow_unverified_slot: bool,
}

impl Unlock {
    /// Whether a passphrase is among the identities (so opening may run Argon2id).
    pub fn has_passphrase(&self) -> bool {
        self.identities
            .iter()
            .any(|i| matches!(i, Identity::Passphrase(_)))
    }

    /// Tries `identities` with the default Argon2id cap, refusing unverified slots.
    pub fn new(identities: Vec<Identity>) -> Self {
        Unlock {
            identities,
            max_kdf_mib: DEFAULT_MAX_KDF_MIB,
            allow_unverified_slot: false,
        }
    }
}

impl UnverifiedHeader {
    /// Opens the header with an identity (docs/FORMAT.md, "Opening a file"). v2 and v3: a
    /// stanza's file key D is taken only if its slot's tag verifies under D and the body check
    /// passes (else the next stanza or slot is tried): v3, the message's key commitment
    /// matches D (read with the header, so on files and streams alike); v2, where `body` can be
    /// read at offsets, the body's first and last chunk tags verify under D (the first, on a
    /// stream). Then every other slot that parses must verify under D too, unless
    /// [`Unlock::allow_unverified_slot`]. Argon2id runs only if the passphrase stanzas of all
    /// slots together ask for no more than the cap.
    pub fn open(self, unlock: &Unlock, body: BodyAccess<'_>) -> Result<Opened, ContainerError> {
        // A v3 body whose length no writer makes is refused before any key is tried (it says
        // nothing about the keys, and trying them may run Argon2id).
        if let (true, Some(len)) = (self.info.is_message(), body.len()?) {
            self.info
                .layout(len)
                .map_err(|why| ContainerError::BodyCutOrExtended(why.to_string()))?;
        }
        match &self.parsed {
            Parsed::V1(header) => self.open_v1(header, unlock),
            Parsed::Slots(header) => self.open_slots(header, unlock, body),
        }
    }

    fn open_v1(&self, header: &V1Header, unlock: &Unlock) -> Result<Opened, ContainerError> {
        let mut tried_key = false;
        for identity in &unlock.identities {
            let key = match identity {
                Identity::Key(key) => Some(key.clone()),
                Identity::Passphrase(passphrase) => {
                    if let V1KeySource::Passphrase(params) = &header.key_source {
                        if params.cost_mib() > unlock.max_kdf_mib {
                            return Err(ContainerError::KdfTooCostly {
                                cost_mib: params.cost_mib(),
                                cap_mib: unlock.max_kdf_mib,
                                slots: 1,
                            });
                        }
                    }
                    header.passphrase_key(passphrase)?
                }
                Identity::Secret(_) => None,
            };
            if let Some(key) = key {
                tried_key = true;
                if let Some(keys) = header.open(&key) {
                    let secret = FileSecret::from_bytes(key.as_bytes());
                    return Ok(self.opened(
                        secret,
                        BodyKeys::Chunked(Box::new(keys)),
                        None,
                        Vec::new(),
                    ));
                }
            }
        }
        Err(if tried_key {
            ContainerError::WrongKeyOrDamagedHeader
        } else {
            ContainerError::NoMatchingStanza(describe(&self.info.access))
        })
    }

    fn open_slots(
        &self,
        header: &SlottedHeader,
        unlock: &Unlock,
        body: BodyAccess<'_>,
    ) -> Result<Opened, ContainerError> {
        // The Argon2id cap holds for the file, not per stanza: a planted second slot cannot
        // double the work (docs/FORMAT.md). Over the cap, no passphrase stanza is tried.
        let costs: Vec<u64> = header
            .slots
            .iter()
            .flat_map(|slot| &slot.stanzas)
            .filter_map(|stanza| Some(stanza.argon2()?.cost_mib()))
            .collect();
        let kdf_total: u64 = costs.iter().sum();
        let too_costly = kdf_total > unlock.max_kdf_mib;
        let mut opened_a_stanza = false;
        let mut body_mismatch = None;
        // A stanza refused (e.g. too costly a passphrase) does not stop another identity from
        // opening another stanza; it is reported if nothing opens.
        let mut refused = None;
        // Identities whose secret is at hand are tried on every slot first; only if none of
        // them opens the file are the locked ones (an SSH key with a passphrase) tried, so a
        // passphrase is asked only when it is needed. Split once: unlocking changes the answer.
        let (at_hand, locked): (Vec<&Identity>, Vec<&Identity>) =
            unlock.identities.iter().partition(|i| !i.may_prompt());
        // Slots are tried newest first only to save work: the checks below decide.
        for (slot, identities) in [&at_hand, &locked]
            .into_iter()
            .filter(|identities| !identities.is_empty())
            .flat_map(|identities| header.slots.iter().map(move |slot| (slot, identities)))
        {
            // A slot that names one key too often is not tried at all (paraes never writes
            // one): a planted header cannot make a key work hundreds of times.
            if stanza::names_a_key_too_often(&slot.stanzas) {
                refused.get_or_insert(ContainerError::KeyNamedTooOften);
                continue;
            }
            for (place, stanza) in slot.stanzas.iter().enumerate() {
                for &identity in identities {
                    if too_costly && stanza.argon2().is_some() {
                        refused.get_or_insert(ContainerError::KdfTooCostly {
                            cost_mib: kdf_total,
                            cap_mib: unlock.max_kdf_mib,
                            slots: costs.len(),
                        });
                        continue;
                    }
                    let file_key = match stanza.unwrap(identity, unlock.max_kdf_mib) {
                        Ok(Some(file_key)) => file_key,
                        Ok(None) => continue,
                        Err(e) => {
                            refused.get_or_insert(e);
                            continue;
                        }
                    };
                    opened_a_stanza = true;
                    let Some(mut opened) = self.open_slot(header, slot, file_key) else {
                        continue;
                    };
                    match self.check_body(&opened, body)? {
                        Err(mismatch) => {
                            body_mismatch.get_or_insert(mismatch);
                            continue;
                        }
                        Ok(checked) => opened.body_checked = checked,
                    }
                    // The opened facts list only the slots this key authenticates. Another
                    // slot that parses but does not verify: in v3 the key commitment already
                    // decided that this D is the body's, so that slot is ignored (and said
                    // so); in v2 nothing decides between the two, so it is refused unless
                    // the caller asked to ignore it.
                    let unverified = self.unverified_slot(&opened);
                    if let Some(ignored) = unverified {
                        if ignored.version < v3::VERSION && !unlock.allow_unverified_slot {
                            return Err(ContainerError::UnverifiedSlot);
                        }
                        opened.ignored = Some(ignored);
                    }
                    opened.opener = Some(Opener {
                        stanza: place,
                        identity: unlock
                            .identities
                            .iter()
                            .position(|given| std::ptr::eq(given, identity))
                            .expect("the identity tried is one of the unlock's"),
                    });
                    return Ok(opened);
                }
            }
        }
        Err(if let Some(mismatch) = body_mismatch {
            mismatch
        } else if opened_a_stanza {
            ContainerError::DamagedHeader
        } else if let Some(refused) = refused {
            refused
        } else {
            ContainerError::NoMatchingStanza(describe(&self.info.access))
        })
    }

    /// The slot that parses but that `opened`'s file key does not authenticate, if any.
    fn unverified_slot(&self, opened: &Opened) -> Option<IgnoredSlot> {
        let (
            Access::Slots { slots: all, .. },
            Access::Slots {
                slots: authentic, ..
            },
        ) = (&self.info.access, &opened.info.access)
        else {
            return None;
        };
        let slot = all
            .iter()
            .find(|slot| !authentic.iter().any(|a| a.position == slot.position))?;
        Some(IgnoredSlot {
            position: slot.position,
            generation: slot.generation,
            version: self.info.version,
            lists: count_kinds(&slot.stanzas),
        })
    }

    /// The body check of `opened` (a slot that verified under its file key): `Ok(true)` if
    /// it passed with the whole body at hand, `Ok(false)` if not all of it could be checked
    /// (a stream, whose end the pipeline checks, or a length no writer makes, which the
    /// pipeline reports), `Err(why)` if this file key does not belong to the body. v3: the
    /// message's key commitment (read with the header) must match, then on a whole file its
    /// last chunk's tag must verify; v2: the first and last chunk tags (the first, on a
    /// stream).
    pub(super) fn check_body(
        &self,
        opened: &Opened,
        body: BodyAccess<'_>,
    ) -> Result<Result<bool, ContainerError>, ContainerError> {
        let check = match (&opened.keys, &self.message_prefix) {
            (BodyKeys::Message(message), Some(prefix)) => {
                if !message.commits_to(prefix) {
                    return Ok(Err(ContainerError::CommitmentMismatch));
                }
                body.check_message_end(self.info.chunks_start(), &message.cipher)?
            }
            (BodyKeys::Chunked(keys), _) => {
                body.check(self.info.params, self.info.header_len as u64, &keys.auth)?
            }
            (BodyKeys::Message(_), None) => unreachable!("a v3 header is read with its prefix"),
        };
        Ok(match check {
            BodyCheck::Failed(chunk) => Err(ContainerError::BodyKeyMismatch(chunk)),
            BodyCheck::Verified => Ok(matches!(body, BodyAccess::File(_) | BodyAccess::Bytes(_))),
            BodyCheck::NotChecked => Ok(false),
        })
    }

    /// Opens the header with the file's secret itself, as another process of the same job
    /// received it from the one that opened the file (an MPI rank): that process applied the
    /// rules of [`UnverifiedHeader::open`]; here the header tag of a slot is checked, and for
    /// v3 the body's key commitment.
    pub fn open_with_secret(self, secret: &FileSecret) -> Result<Opened, ContainerError> {
        match &self.parsed {
            Parsed::V1(header) => {
                let key = Key::new(secret.as_bytes())
                    .map_err(|_| ContainerError::WrongKeyOrDamagedHeader)?;
                let keys = header
                    .open(&key)
                    .ok_or(ContainerError::WrongKeyOrDamagedHeader)?;
                Ok(self.opened(
                    secret.clone(),
                    BodyKeys::Chunked(Box::new(keys)),
                    None,
                    Vec::new(),
                ))
            }
            Parsed::Slots(header) => {
                let opened = header
                    .slots
                    .iter()
                    .find_map(|slot| self.open_slot(header, slot, secret.clone()))
                    .ok_or(ContainerError::DamagedHeader)?;
                if let (BodyKeys::Message(message), Some(prefix)) =
                    (&opened.keys, &self.message_prefix)
                {
                    if !message.commits_to(prefix) {
                        return Err(ContainerError::CommitmentMismatch);
                    }
                }
                Ok(opened)
            }
        }
    }

    /// `slot` opened with `file_key`, if the slot's tag verifies under it. The next rekey
    /// generation comes from the slots this key authenticates, never from another.
    pub(super) fn open_slot(
        &self,
        header: &SlottedHeader,
        slot: &v2::Slot,
        file_key: FileSecret,
    ) -> Option<Opened> {
        let header_keys = HeaderKeys::new(&file_key, header.preamble.version);
        let authentic: Vec<&v2::Slot> = header
            .slots
            .iter()
            .filter(|s| s.verify(&header.preamble_bytes, &header_keys))
            .collect();
        if !authentic.iter().any(|s| s.index == slot.index) {
            return None;
        }
        let newest_authentic = authentic
            .iter()
            .map(|s| s.generation)
            .max()
            .unwrap_or(slot.generation);
        let keys = match &self.message_prefix {
            Some(prefix) => BodyKeys::Message(Box::new(MessageBody::new(
                &file_key,
                &header.preamble_bytes,
                Variant::for_key_size(header.preamble.params.key_size)
                    .expect("a v3 preamble has a message's key size"),
                prefix[..cobblestone::SALT_LEN]
                    .try_into()
                    .expect("24 bytes"),
            ))),
            None => BodyKeys::Chunked(Box::new(v2::body_keys(
                &file_key,
                &header.preamble_bytes,
                header.preamble.params,
            ))),
        };
        let rekey = RekeyState {
            preamble: header.preamble,
            preamble_bytes: header.preamble_bytes,
            opened_slot: slot.index,
            newest_generation: newest_authentic,
        };
        let mut opened = self.opened(file_key, keys, Some(rekey), slot.stanzas.clone());
        // Once opened, the facts shown are the authenticated ones only.
        if let Access::Slots { slots, .. } = &mut opened.info.access {
            slots.retain(|info| authentic.iter().any(|s| s.index == info.position));
        }
        Some(opened)
    }

    fn opened(
        &self,
        secret: FileSecret,
        keys: BodyKeys,
        rekey: Option<RekeyState>,
        stanzas: Vec<Stanza>,
    ) -> Opened {
        Opened {
            info: self.info.clone(),
            header: self.bytes.clone(),
            secret,
            keys,
            rekey,
            stanzas,
            body_checked: false,
            batch: DEFAULT_CHUNK_SIZE,
            ignored: None,
            opener: None,
            warnings: Vec::new(),
        }
    }
}
