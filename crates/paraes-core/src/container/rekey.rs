//! Rekey without re-encrypting: new stanzas wrap the same file key D, so the body and its
//! tags stay as they are. In place, the new slot goes into the idle slot and is made durable
//! before the old slot is wiped: a crash, kill or full disk at any point leaves a file that the
//! old or the new keys open. When the new stanzas do not fit, the caller writes a new file
//! with a larger header and the same body, and renames it over the old one.

use super::stanza::Stanza;
use super::v2::{self, Preamble, V2Keys};
use super::{make_stanzas, v2_header, ContainerError, Opened, Recipient};

/// One write of an in-place rekey: `bytes` at byte `offset` of the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderWrite {
    /// Byte offset in the container file.
    pub offset: u64,
    /// What to write there.
    pub bytes: Vec<u8>,
}

/// How to carry out a rekey.
#[derive(Clone, Debug)]
pub enum Rekey {
    /// Apply the writes in order, making each durable (fsync) before the next.
    InPlace(Vec<HeaderWrite>),
    /// The new stanzas need a larger header: write `header`, then the old file's bytes from
    /// `body_offset` to its end, to a new file, and rename it over the old one.
    Rewrite {
        /// The new header.
        header: Vec<u8>,
        /// Where the body starts in the old file.
        body_offset: u64,
    },
}

impl Opened {
    /// Replaces the stanzas with new ones for `recipients`, keeping the file key, the body and
    /// every chunk tag. Format v1 files cannot be rekeyed (their body key is the user's key).
    pub fn rekey(&self, recipients: &[Recipient]) -> Result<Rekey, ContainerError> {
        let Some(state) = self.rekey else {
            return Err(ContainerError::BadRecipients(
                "a format v1 file cannot be rekeyed (its body is encrypted with the user's key \
                 itself): decrypt it and encrypt it again"
                    .into(),
            ));
        };
        let stanzas: Vec<Stanza> = make_stanzas(recipients, &self.secret)?;
        let slot = v2::encode_slot(
            &state.preamble_bytes,
            state.preamble.slot_len,
            state.next_generation,
            &stanzas,
            &V2Keys::new(&self.secret),
        );
        match slot {
            Some(slot) => {
                let idle = 1 - state.opened_slot;
                Ok(Rekey::InPlace(vec![
                    HeaderWrite {
                        offset: state.preamble.slot_offset(idle) as u64,
                        bytes: slot,
                    },
                    HeaderWrite {
                        offset: state.preamble.slot_offset(state.opened_slot) as u64,
                        bytes: vec![0; state.preamble.slot_len],
                    },
                ]))
            }
            None => {
                let preamble = Preamble {
                    slot_len: Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas)),
                    ..state.preamble
                };
                let (header, _) =
                    v2_header(preamble, &stanzas, &self.secret, state.next_generation);
                Ok(Rekey::Rewrite {
                    header,
                    body_offset: state.preamble.header_len() as u64,
                })
            }
        }
    }
}

impl Rekey {
    /// The rekeyed container, applied to a copy of the whole `old` container in memory (for
    /// tests and small files).
    pub fn apply_to(&self, old: &[u8]) -> Vec<u8> {
        match self {
            Rekey::InPlace(writes) => {
                let mut out = old.to_vec();
                for write in writes {
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
