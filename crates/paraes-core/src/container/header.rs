//! Reading a container's header ([`UnverifiedHeader::read`]): v1, v2 or v3, parsed and its
//! absurd values refused before anything is allocated for them, its exact bytes kept; nothing
//! in it is authenticated until it is opened (`open.rs`).

use std::io::Read;

use super::info::{Access, HeaderInfo, SlotInfo};
use super::v1::{self, V1Header};
use super::v2::{self, SlottedHeader};
use super::v3;
use super::{read_exact, ContainerError, MAGIC, MESSAGE_PREFIX_LEN};

#[derive(Debug)]
pub(super) enum Parsed {
    V1(V1Header),
    /// v2 or v3: the preamble says which.
    Slots(SlottedHeader),
}

/// A parsed header whose tag has not been checked: its [`HeaderInfo`] may be shown, but only
/// [`UnverifiedHeader::open`] gives the keys a stream needs.
#[derive(Debug)]
pub struct UnverifiedHeader {
    pub(super) info: HeaderInfo,
    pub(super) parsed: Parsed,
    /// v3: the message's salt and commitment, read with the header.
    pub(super) message_prefix: Option<[u8; MESSAGE_PREFIX_LEN]>,
    /// The exact bytes read: the header, and for v3 the message's salt and commitment.
    pub(super) bytes: Vec<u8>,
}

/// A reader that keeps a copy of what it read (a header's exact bytes).
struct Recording<'a, R> {
    inner: &'a mut R,
    bytes: Vec<u8>,
}

impl<R: Read> Read for Recording<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl UnverifiedHeader {
    /// Reads and parses a header (v1, v2 or v3; for v3 also the message's salt and commitment
    /// after it), refusing absurd values before allocating anything for them (at most two
    /// stanza slots of [`v2::MAX_SLOT_LEN`] bytes). The bytes read are kept
    /// ([`Opened::header_bytes`](super::Opened::header_bytes)).
    pub fn read(input: &mut impl Read) -> Result<Self, ContainerError> {
        let mut recording = Recording {
            inner: input,
            bytes: Vec::new(),
        };
        let mut header = Self::parse(&mut recording)?;
        header.bytes = recording.bytes;
        Ok(header)
    }

    fn parse(input: &mut impl Read) -> Result<Self, ContainerError> {
        let mut first = [0u8; 32];
        match read_exact(input, &mut first[..MAGIC.len()]) {
            Err(ContainerError::TruncatedHeader) => return Err(ContainerError::NotAContainer),
            other => other?,
        }
        if first[..MAGIC.len()] != MAGIC {
            return Err(ContainerError::NotAContainer);
        }
        read_exact(input, &mut first[MAGIC.len()..MAGIC.len() + 1])?;
        if ![v1::VERSION, v2::VERSION, v3::VERSION].contains(&first[8]) {
            return Err(ContainerError::UnsupportedVersion(first[8]));
        }
        read_exact(input, &mut first[MAGIC.len() + 1..])?;
        let counter: [u8; 16] = first[16..32].try_into().expect("16 bytes");
        if first[8] == v1::VERSION {
            let header = V1Header::read(&first, input)?;
            return Ok(UnverifiedHeader {
                info: HeaderInfo {
                    version: v1::VERSION,
                    params: header.params,
                    counter,
                    header_len: header.len(),
                    access: Access::V1(header.key_source),
                },
                parsed: Parsed::V1(header),
                message_prefix: None,
                bytes: Vec::new(),
            });
        }
        let header = SlottedHeader::read(&first, input)?;
        let message_prefix = if header.preamble.version == v3::VERSION {
            let mut prefix = [0u8; MESSAGE_PREFIX_LEN];
            read_exact(input, &mut prefix).map_err(|e| match e {
                ContainerError::TruncatedHeader => ContainerError::BodyCutOrExtended(
                    "it ends inside its 24-byte salt and 32-byte key commitment".into(),
                ),
                other => other,
            })?;
            Some(prefix)
        } else {
            None
        };
        let mut slots = header
            .slots
            .iter()
            .map(|slot| {
                Ok(SlotInfo {
                    position: slot.index,
                    generation: slot.generation,
                    stanzas: slot.kinds()?,
                })
            })
            .collect::<Result<Vec<_>, ContainerError>>()?;
        slots.sort_by_key(|slot| slot.position);
        Ok(UnverifiedHeader {
            info: HeaderInfo {
                version: header.preamble.version,
                params: header.preamble.params,
                counter,
                header_len: header.preamble.header_len(),
                access: Access::Slots {
                    slots,
                    ignored: header.ignored.clone(),
                },
            },
            parsed: Parsed::Slots(header),
            message_prefix,
            bytes: Vec::new(),
        })
    }

    /// The header's public, unauthenticated facts.
    pub fn info(&self) -> &HeaderInfo {
        &self.info
    }
}
