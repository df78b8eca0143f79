//! Rekey without re-encrypting: new stanzas wrap the same file key D, so the body and its
//! tags stay as they are. In place, the new slot is published into the idle slot (written with
//! a zero generation, which does not parse, then its generation) and read back before the old
//! slot is wiped (generation first): a crash, kill or full disk at any point leaves a file that
//! the old or the new keys open, and no torn slot parses. When the new stanzas do not fit, the
//! caller writes a new file with a larger header and the same body, checks it, and renames it
//! over the old one. docs/FORMAT.md, "Rekey without re-encrypting".

use super::body::BodyAccess;
use super::header::Parsed;
use super::opened::RekeyState;
use super::seal::slotted_header;
use super::stanza::Stanza;
use super::v2::{self, HeaderKeys, Preamble, GENERATION_LEN, MAX_GENERATION};
use super::{ContainerError, NewStanzas, Opened, Recipient};

/// One write of an in-place rekey: `bytes` at byte `offset` of the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderWrite {
    /// Byte offset in the container file.
    pub offset: u64,
    /// What to write there.
    pub bytes: Vec<u8>,
}

/// An in-place rekey: apply `publish` in order, each write durable (fsync) before the next;
/// read the header back and [`Opened::confirm_rekey`] it; only then apply `wipe` the same way.
#[derive(Clone, Debug)]
pub struct InPlace {
    /// The idle slot's generation zeroed (a damaged or unverified slot stops parsing before
    /// anything else changes), the new slot with its generation field zero, then the
    /// generation alone (one aligned 8-byte write inside one 512-byte sector).
    pub publish: [HeaderWrite; 3],
    /// The old slot's generation zeroed (so it stops parsing at once), then the rest of it.
    pub wipe: [HeaderWrite; 2],
}

impl InPlace {
    /// Every write, in the order they are made.
    pub fn writes(&self) -> impl Iterator<Item = &HeaderWrite> {
        self.publish.iter().chain(&self.wipe)
    }

    /// The bytes of the file that `publish` overwrites: `offset` and length.
    pub fn overwritten(&self) -> (u64, usize) {
        (self.publish[1].offset, self.publish[1].bytes.len())
    }

    /// The writes that put back what `publish` overwrote, by the same protocol (generation
    /// zeroed first, the slot with a zero generation, then its generation, each durable before
    /// the next), so that an undo cut short leaves no torn slot that parses. `before` holds
    /// the bytes at [`InPlace::overwritten`] as they were right before the first write (the
    /// undo record); `None` if it is not that long.
    pub fn undo(&self, before: &[u8]) -> Option<[HeaderWrite; 3]> {
        let (offset, len) = self.overwritten();
        if before.len() != len || len < GENERATION_LEN {
            return None;
        }
        let mut slot = before.to_vec();
        let generation = slot[..GENERATION_LEN].to_vec();
        slot[..GENERATION_LEN].fill(0);
        Some([
            HeaderWrite {
                offset,
                bytes: vec![0; GENERATION_LEN],
            },
            HeaderWrite {
                offset,
                bytes: slot,
            },
            HeaderWrite {
                offset,
                bytes: generation,
            },
        ])
    }
}

/// Where a rekey writes its new stanzas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RekeyWay {
    /// Into the header's idle slot when they fit, else into a rewritten copy.
    InPlaceWhereTheyFit,
    /// Always into a rewritten copy renamed over the file (`rekey --rewrite`: for file
    /// systems where the file cannot be guarded against other writers while it is written).
    Rewrite,
}

/// How to carry out a rekey.
#[derive(Clone, Debug)]
pub enum Rekey {
    /// The new stanzas fit the header's idle slot.
    InPlace(InPlace),
    /// The new stanzas need a larger header: write `header`, then the old file's bytes from
    /// `body_offset` to its end, to a new file, [`Opened::confirm_rekey`] it, and rename it
    /// over the old one.
    Rewrite {
        /// The new header.
        header: Vec<u8>,
        /// Where the body starts in the old file.
        body_offset: u64,
    },
}

/// Where a rekey's new slot lies and which generation it has (for the read-back check).
#[derive(Clone, Copy, Debug)]
struct NewSlot {
    position: usize,
    generation: u64,
}

impl Rekey {
    /// The rekeyed container, applied to a copy of the whole `old` container in memory (for
    /// tests and small files).
    pub fn apply_to(&self, old: &[u8]) -> Vec<u8> {
        match self {
            Rekey::InPlace(in_place) => {
                let mut out = old.to_vec();
                for write in in_place.writes() {
                    let at = write.offset as usize;
                    out[at..at + write.bytes.len()].copy_from_slice(&write.bytes);
                }
                out
            }
            Rekey::Rewrite {
                header,
                body_offset,
            } => {
                let mut out = header.clone();
                out.extend_from_slice(&old[*body_offset as usize..]);
                out
            }
        }
    }
}

impl Opened {
    /// Replaces the stanzas with new ones for `recipients`, keeping the file key, the body and
    /// every chunk tag. Needs a file opened with its body at hand (the body check proved that
    /// D is the body's key); the new generation is one more than the newest the file key
    /// authenticates. Format v1 files cannot be rekeyed (their body key is the user's key).
    pub fn rekey(&self, recipients: &[Recipient]) -> Result<Rekey, ContainerError> {
        self.rekey_with(
            &NewStanzas::prepare(recipients)?,
            RekeyWay::InPlaceWhereTheyFit,
        )
    }

    /// [`Opened::rekey`] with stanzas prepared beforehand (before the file was opened: the
    /// costly part of each, such as Argon2id, is done), written the way `way` says.
    pub fn rekey_with(&self, new: &NewStanzas, way: RekeyWay) -> Result<Rekey, ContainerError> {
        self.check_rekeyable()?;
        self.rekey_to(new.seal(&self.secret)?, way)
    }

    /// Refuses a file that cannot be rekeyed: format v1, or one whose body was not checked.
    pub(super) fn check_rekeyable(&self) -> Result<RekeyState, ContainerError> {
        let Some(state) = self.rekey else {
            return Err(ContainerError::BadRecipients(
                "a format v1 file cannot be rekeyed (its body is encrypted with the user's key \
                 itself): decrypt it and encrypt it again"
                    .into(),
            ));
        };
        if !self.body_checked {
            return Err(ContainerError::RekeyNotConfirmed(
                "the body could not be checked against the file key before the rekey: rekey \
                 a whole container file (not a stream, and not one whose body was truncated \
                 or extended)"
                    .into(),
            ));
        }
        Ok(state)
    }

    /// The rekey that writes `stanzas` (each wrapping this file's key) as the file's one slot.
    pub(super) fn rekey_to(
        &self,
        stanzas: Vec<Stanza>,
        way: RekeyWay,
    ) -> Result<Rekey, ContainerError> {
        let state = self.check_rekeyable()?;
        let generation = state
            .newest_generation
            .checked_add(1)
            .filter(|g| *g <= MAX_GENERATION)
            .ok_or(ContainerError::GenerationExhausted)?;
        let slot = v2::encode_slot(
            &state.preamble_bytes,
            state.preamble.slot_len,
            generation,
            &stanzas,
            &HeaderKeys::new(&self.secret, state.preamble.version),
        );
        match slot.filter(|_| way == RekeyWay::InPlaceWhereTheyFit) {
            Some(mut slot) => {
                let idle = state.preamble.slot_offset(1 - state.opened_slot) as u64;
                let old = state.preamble.slot_offset(state.opened_slot) as u64;
                let generation_bytes = slot[..GENERATION_LEN].to_vec();
                slot[..GENERATION_LEN].fill(0);
                let slot_len = state.preamble.slot_len;
                Ok(Rekey::InPlace(InPlace {
                    publish: [
                        HeaderWrite {
                            offset: idle,
                            bytes: vec![0; GENERATION_LEN],
                        },
                        HeaderWrite {
                            offset: idle,
                            bytes: slot,
                        },
                        HeaderWrite {
                            offset: idle,
                            bytes: generation_bytes,
                        },
                    ],
                    wipe: [
                        HeaderWrite {
                            offset: old,
                            bytes: vec![0; GENERATION_LEN],
                        },
                        HeaderWrite {
                            offset: old + GENERATION_LEN as u64,
                            bytes: vec![0; slot_len - GENERATION_LEN],
                        },
                    ],
                }))
            }
            None => {
                // A rewrite keeps the slot size where the stanzas fit it (so a later rekey can
                // go in place again), and grows it where they do not.
                let preamble = Preamble {
                    slot_len: Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas))
                        .max(state.preamble.slot_len),
                    ..state.preamble
                };
                let (header, _) = slotted_header(preamble, &stanzas, &self.secret, generation);
                Ok(Rekey::Rewrite {
                    header,
                    body_offset: state.preamble.header_len() as u64,
                })
            }
        }
    }

    /// Checks that this file key still opens the container read back from `file` as it did
    /// when it was opened: a slot that verifies under it, and the body check (v3: the key
    /// commitment and, on a whole file, the length and last chunk's tag; v2: the first and last
    /// chunk tags) passing with the whole body at hand. What a failed rekey reads back before it
    /// says the file is unchanged.
    pub fn still_opens(&self, file: BodyAccess<'_>) -> Result<(), ContainerError> {
        let fail = |why: &str| ContainerError::RekeyNotConfirmed(why.to_owned());
        let header = file.read_header()?;
        let Parsed::Slots(parsed) = &header.parsed else {
            return Err(fail("the header read back is not format v2 or v3"));
        };
        let opened = parsed
            .slots
            .iter()
            .find_map(|slot| header.open_slot(parsed, slot, self.secret.clone()))
            .ok_or_else(|| fail("no slot opens with the file key"))?;
        match header.check_body(&opened, file)? {
            Ok(true) => Ok(()),
            Err(_) => Err(fail("the body does not belong to the file key")),
            Ok(false) => Err(fail("the body's length is not one a writer makes")),
        }
    }

    /// Checks what a rekey wrote, read back from the rekeyed container (after `publish` for
    /// in place, before the rename for a rewrite): the same preamble, the new slot in its
    /// place with its generation and a tag that verifies under this file's key, and the
    /// body's first and last chunk tags verifying under it.
    pub fn confirm_rekey(
        &self,
        rekey: &Rekey,
        rekeyed: BodyAccess<'_>,
    ) -> Result<(), ContainerError> {
        let fail = |why: &str| ContainerError::RekeyNotConfirmed(why.to_owned());
        let Some(state) = self.rekey else {
            return Err(fail("a format v1 file cannot be rekeyed"));
        };
        let expected = match rekey {
            Rekey::InPlace(in_place) => NewSlot {
                position: 1 - state.opened_slot,
                generation: u64::from_be_bytes(
                    in_place.publish[2].bytes[..]
                        .try_into()
                        .map_err(|_| fail("no generation"))?,
                ),
            },
            Rekey::Rewrite { header, .. } => NewSlot {
                position: 0,
                generation: u64::from_be_bytes(
                    header[v2::PREAMBLE_LEN..v2::PREAMBLE_LEN + GENERATION_LEN]
                        .try_into()
                        .expect("8 bytes"),
                ),
            },
        };
        let header = rekeyed.read_header()?;
        let Parsed::Slots(parsed) = &header.parsed else {
            return Err(fail("the header read back is not format v2 or v3"));
        };
        if parsed.preamble_bytes[..32] != state.preamble_bytes[..32] {
            return Err(fail("the preamble read back differs"));
        }
        let slot = parsed
            .slots
            .iter()
            .find(|s| s.index == expected.position && s.generation == expected.generation)
            .ok_or_else(|| fail("the new stanza slot is not there"))?;
        let opened = header
            .open_slot(parsed, slot, self.secret.clone())
            .ok_or_else(|| fail("the new stanza slot's tag does not verify"))?;
        match header.check_body(&opened, rekeyed)? {
            Ok(true) => Ok(()),
            Err(_) => Err(fail("the body does not belong to the file key (its key commitment or chunk tags do not verify)")),
            Ok(false) => Err(fail("the body's length is not one a writer makes")),
        }
    }
}
