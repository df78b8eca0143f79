//! Making a container: a new v3 header for recipients ([`seal`]), its stanzas prepared and
//! checked ([`NewStanzas`]), the slotted header they go in (also a rekey's), the upgrade of an
//! opened v2 file to v3 ([`Opened::upgrade`]), and, for tests, v2 files and planted slots.

use super::info::{Access, BodyParams, HeaderInfo, SlotInfo};
use super::keys::{random_bytes, FileSecret};
use super::opened::{BodyKeys, Opened, RekeyState};
use super::stanza::{self, Recipient, Stanza};
#[cfg(any(test, feature = "testing"))]
use super::v2::SlottedHeader;
use super::v2::{self, HeaderKeys, Preamble};
use super::v3::{self, MessageBody};
use super::{ContainerError, FIRST_GENERATION, MAX_STANZAS};
use crate::cobblestone::{self, Variant};
use crate::key::KeySize;
use crate::pipeline::DEFAULT_CHUNK_SIZE;

impl Opened {
    /// A v3 header, with its message prefix, for the same file key D and the stanzas of the
    /// slot that opened this v2 file (every stanza kept, so recipients who are not present
    /// still open the upgraded file), and the opened v3 container to encrypt the body with.
    /// Refused for v1 (no file key to keep), v3, and a file whose two slots both verify under
    /// D (an unfinished rekey: which set is meant is the rekey's to say).
    pub fn upgrade(&self, key_size: KeySize) -> Result<(Vec<u8>, Opened), ContainerError> {
        let (Some(state), 2) = (&self.rekey, self.info.version) else {
            return Err(ContainerError::BadRecipients(format!(
                "only format v2 files can be upgraded, and this one is format v{}{}",
                self.info.version,
                if self.info.version == 1 {
                    " (it has no file key to keep): decrypt it and encrypt it again"
                } else {
                    ""
                }
            )));
        };
        // Both slots authentic under D: a rekey published its new stanzas but did not wipe the
        // old ones. Keeping either set alone would silently undo or lose that rekey.
        if matches!(&self.info.access, Access::Slots { slots, .. } if slots.len() > 1) {
            return Err(ContainerError::BadRecipients(
                "both stanza slots open with this file's key (a rekey did not finish): run the rekey again to finish it, then upgrade".into(),
            ));
        }
        let variant = Variant::for_key_size(key_size).ok_or_else(|| {
            ContainerError::BadRecipients(
                "a v3 body has a 128- or 256-bit key, not 192: give --bits 128 or 256".into(),
            )
        })?;
        seal_message(
            &self.stanzas,
            self.secret.clone(),
            variant,
            state.preamble.slot_len,
            state.newest_generation,
        )
    }
}

/// Seals a new v3 container for `recipients` with a body of `key_size` (128 or 256 bits): a
/// fresh file key D and message salt, one stanza per recipient. Returns the bytes to write
/// before the body's first chunk (header, then the message's salt and commitment), and the
/// keys to encrypt the body with, which carry the warnings about these recipients
/// ([`Opened::warnings`]).
pub fn seal(
    key_size: KeySize,
    recipients: &[Recipient],
) -> Result<(Vec<u8>, Opened), ContainerError> {
    let variant = Variant::for_key_size(key_size).ok_or_else(|| {
        ContainerError::BadRecipients(
            "a container's body has a 128- or 256-bit key, not 192".into(),
        )
    })?;
    let file_key = FileSecret::random()?;
    let stanzas = make_stanzas(recipients, &file_key)?;
    let slot_len = Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas));
    let (header, mut opened) =
        seal_message(&stanzas, file_key, variant, slot_len, FIRST_GENERATION)?;
    opened.warnings = super::seal_warnings(recipients);
    Ok((header, opened))
}

/// A v3 container with `stanzas` (which wrap `file_key`) in slot 0 of `slot_len` bytes at
/// `generation`: its header and message prefix, and its opened keys.
pub(super) fn seal_message(
    stanzas: &[Stanza],
    file_key: FileSecret,
    variant: Variant,
    slot_len: usize,
    generation: u64,
) -> Result<(Vec<u8>, Opened), ContainerError> {
    let preamble = Preamble {
        version: v3::VERSION,
        params: BodyParams::message(variant),
        counter: [0; 16],
        slot_len,
    };
    let (mut header, rekey) = slotted_header(preamble, stanzas, &file_key, generation);
    let header_len = header.len();
    let mut salt = [0u8; cobblestone::SALT_LEN];
    random_bytes(&mut salt)?;
    let message = MessageBody::new(&file_key, &rekey.preamble_bytes, variant, &salt);
    header.extend_from_slice(&message.prefix(&salt));
    let opened = Opened {
        info: sealed_info(preamble, header_len, generation, stanzas)?,
        header: header.clone(),
        secret: file_key,
        keys: BodyKeys::Message(Box::new(message)),
        rekey: Some(rekey),
        stanzas: stanzas.to_vec(),
        body_checked: false,
        batch: DEFAULT_CHUNK_SIZE,
        ignored: None,
        opener: None,
        warnings: Vec::new(),
    };
    Ok((header, opened))
}

/// The facts of a freshly sealed header.
fn sealed_info(
    preamble: Preamble,
    header_len: usize,
    generation: u64,
    stanzas: &[Stanza],
) -> Result<HeaderInfo, ContainerError> {
    Ok(HeaderInfo {
        version: preamble.version,
        params: preamble.params,
        counter: preamble.counter,
        header_len,
        access: Access::Slots {
            slots: vec![SlotInfo {
                position: 0,
                generation,
                stanzas: stanzas.iter().map(Stanza::kind).collect::<Result<_, _>>()?,
            }],
            ignored: Vec::new(),
        },
    })
}

/// Seals a format v2 container, as paraes wrote them before v3 (for tests of the v2 reader,
/// rekey and upgrade): a fresh file key D and counter block, one stanza per recipient.
#[cfg(any(test, feature = "testing"))]
pub fn seal_v2(
    params: BodyParams,
    recipients: &[Recipient],
) -> Result<(Vec<u8>, Opened), ContainerError> {
    params.check()?;
    let file_key = FileSecret::random()?;
    let stanzas = make_stanzas(recipients, &file_key)?;
    let mut counter = [0u8; 16];
    random_bytes(&mut counter)?;
    let preamble = Preamble {
        version: v2::VERSION,
        params,
        counter,
        slot_len: Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas)),
    };
    let (header, rekey) = slotted_header(preamble, &stanzas, &file_key, FIRST_GENERATION);
    let keys = v2::body_keys(&file_key, &rekey.preamble_bytes, params);
    let opened = Opened {
        info: sealed_info(preamble, header.len(), FIRST_GENERATION, &stanzas)?,
        header: header.clone(),
        secret: file_key,
        keys: BodyKeys::Chunked(Box::new(keys)),
        rekey: Some(rekey),
        stanzas,
        body_checked: false,
        batch: DEFAULT_CHUNK_SIZE,
        ignored: None,
        opener: None,
        warnings: super::seal_warnings(recipients),
    };
    Ok((header, opened))
}

/// New stanzas for recipients, prepared before the file key they will wrap is known: the
/// checks every writer makes (at least one recipient, at most [`MAX_STANZAS`], at most one
/// passphrase), and each recipient's costly part done (Argon2id, key agreement,
/// encapsulation). A rekey prepares them before it opens the file ([`Opened::rekey_with`]).
pub struct NewStanzas {
    prepared: Vec<stanza::PreparedStanza>,
    warnings: Vec<super::SealWarning>,
}

impl std::fmt::Debug for NewStanzas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NewStanzas({} stanzas, wrap keys redacted)",
            self.prepared.len()
        )
    }
}

impl NewStanzas {
    /// One prepared stanza per recipient.
    pub fn prepare(recipients: &[Recipient]) -> Result<Self, ContainerError> {
        if recipients.is_empty() {
            return Err(ContainerError::BadRecipients(
                "no recipients: a container needs at least one way to open it".into(),
            ));
        }
        if recipients.len() > MAX_STANZAS {
            return Err(ContainerError::BadRecipients(format!(
                "{} recipients: a container holds at most {MAX_STANZAS}",
                recipients.len()
            )));
        }
        if recipients
            .iter()
            .filter(|r| matches!(r, Recipient::Passphrase(..)))
            .count()
            > 1
        {
            return Err(ContainerError::BadRecipients(
                "at most one passphrase per container".into(),
            ));
        }
        let prepared = recipients
            .iter()
            .map(stanza::PreparedStanza::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(NewStanzas {
            prepared,
            warnings: super::seal_warnings(recipients),
        })
    }

    /// What sealing for these recipients warns about, as [`Opened::warnings`].
    pub fn warnings(&self) -> &[super::SealWarning] {
        &self.warnings
    }

    /// The stanzas, each wrapping `file_key`.
    pub(super) fn seal(&self, file_key: &FileSecret) -> Result<Vec<Stanza>, ContainerError> {
        let stanzas = self
            .prepared
            .iter()
            .map(|prepared| prepared.seal(file_key))
            .collect::<Result<Vec<_>, _>>()?;
        // What a reader refuses, no writer makes.
        if stanza::names_a_key_too_often(&stanzas) {
            return Err(ContainerError::BadRecipients(format!(
                "the same SSH key is given more than {} times: give it once",
                stanza::MAX_SAME_TAG
            )));
        }
        Ok(stanzas)
    }
}

/// One stanza per recipient; at most one passphrase, at least one recipient.
pub(super) fn make_stanzas(
    recipients: &[Recipient],
    file_key: &FileSecret,
) -> Result<Vec<Stanza>, ContainerError> {
    NewStanzas::prepare(recipients)?.seal(file_key)
}

/// A whole v2 or v3 header (the preamble says which) with `stanzas` in slot 0 and an empty
/// slot 1.
pub(super) fn slotted_header(
    preamble: Preamble,
    stanzas: &[Stanza],
    file_key: &FileSecret,
    generation: u64,
) -> (Vec<u8>, RekeyState) {
    let preamble_bytes = preamble.encode();
    let slot = v2::encode_slot(
        &preamble_bytes,
        preamble.slot_len,
        generation,
        stanzas,
        &HeaderKeys::new(file_key, preamble.version),
    )
    .expect("the slot was sized for the stanzas");
    let mut header = preamble_bytes.to_vec();
    header.extend_from_slice(&slot);
    header.resize(preamble.header_len(), 0);
    let state = RekeyState {
        preamble,
        preamble_bytes,
        opened_slot: 0,
        newest_generation: generation,
    };
    (header, state)
}

/// The hostile-input harness's forger (docs/FORMAT.md, "Opening a file"): `file` with slot
/// `position` replaced by a valid slot of `generation` whose stanzas, for `recipients`, wrap a
/// fresh file key of the forger's own, with a correct tag under that key. Someone who knows
/// only public recipients can make it; readers must not let it replace or shadow the real slot.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn plant_slot(
    file: &[u8],
    position: usize,
    recipients: &[Recipient],
    generation: u64,
) -> Result<Vec<u8>, ContainerError> {
    let first: &[u8; 32] = file
        .get(..32)
        .and_then(|b| b.try_into().ok())
        .ok_or(ContainerError::TruncatedHeader)?;
    let header = SlottedHeader::read(first, &mut &file[32..])?;
    let forged_key = FileSecret::random()?;
    let stanzas = make_stanzas(recipients, &forged_key)?;
    let slot = v2::encode_slot(
        &header.preamble_bytes,
        header.preamble.slot_len,
        generation,
        &stanzas,
        &HeaderKeys::new(&forged_key, header.preamble.version),
    )
    .ok_or_else(|| ContainerError::BadRecipients("the forged stanzas do not fit".into()))?;
    let at = header.preamble.slot_offset(position);
    let mut out = file.to_vec();
    out[at..at + slot.len()].copy_from_slice(&slot);
    Ok(out)
}
