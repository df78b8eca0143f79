//! The job description rank 0 broadcasts to the other ranks: what to do to which bytes with
//! which key, and where. A small length-prefixed binary encoding, wiped after use.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use paraes_core::{Direction, Mode};
use zeroize::Zeroizing;

use crate::world::Mpi;

/// How chunks reach the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoStrategy {
    /// Every rank reads and writes its own range of chunks in the shared files.
    Direct,
    /// Rank 0 reads and writes; chunks travel by Scatterv/Gatherv.
    Scatter,
}

/// What a plan's key and header are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// A raw stream: the key is the AES key itself; no header.
    Raw,
    /// A container: the key is its file secret; the header is the container's header (for
    /// format v3 with its message's salt and commitment).
    Container,
    /// A bare C2SP message: the key is its input key, the header its salt and commitment,
    /// and `context` its context.
    Message {
        /// The message's context (exact bytes).
        context: Vec<u8>,
    },
}

/// A plan that did not arrive intact (a bug or a mismatched binary on some rank).
#[derive(Debug, thiserror::Error)]
#[error("the job plan from rank 0 is malformed ({0}): run the same paraes binary on every rank")]
pub struct PlanError(&'static str);

/// Everything a rank needs to do its share of the job.
pub struct Plan {
    /// How chunks reach the ranks.
    pub strategy: IoStrategy,
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// What `key` and `header` are.
    pub kind: StreamKind,
    /// Mode of operation.
    pub mode: Mode,
    /// PKCS#7 padding of ECB's final block.
    pub padding: bool,
    /// Plaintext bytes per chunk.
    pub chunk_size: usize,
    /// Counter block of a raw CTR stream's block 0 (a container's comes from its header).
    pub counter: [u8; 16],
    /// A container's file secret ([`paraes_core::container::Opened::secret`]: D for formats
    /// v2 and v3, never the user's key), a bare message's input key, or a raw stream's AES
    /// key (16, 24 or 32 bytes).
    pub key: Zeroizing<Vec<u8>>,
    /// What comes before the first chunk: the sealed container header, a bare message's salt
    /// and commitment, or nothing for a raw stream.
    pub header: Vec<u8>,
    /// The input file ([`IoStrategy::Direct`]).
    pub input: Option<PathBuf>,
    /// The output temporary every rank writes into ([`IoStrategy::Direct`]).
    pub output: Option<PathBuf>,
    /// The input's size in bytes when the job began ([`IoStrategy::Direct`]).
    pub input_len: u64,
}

impl Plan {
    /// Rank 0's plan on every rank: rank 0 passes `Some(plan)` to go on or `None` to stop the
    /// job (it could not prepare it); the other ranks pass `None`. Returns `None` on a stop.
    pub fn broadcast(mpi: &Mpi, plan: Option<&Plan>) -> Result<Option<Plan>, PlanError> {
        let bytes = match plan {
            Some(plan) if mpi.is_root() => plan.encode(),
            _ => Zeroizing::new(Vec::new()),
        };
        let received = Zeroizing::new(mpi.broadcast_bytes(bytes.to_vec()));
        if received.is_empty() {
            return Ok(None);
        }
        Plan::decode(&received).map(Some)
    }

    /// The plan as bytes (never empty: the empty message means "stop").
    pub fn encode(&self) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(vec![2u8]);
        out.push(match self.strategy {
            IoStrategy::Direct => 0,
            IoStrategy::Scatter => 1,
        });
        out.push(match self.direction {
            Direction::Encrypt => 0,
            Direction::Decrypt => 1,
        });
        out.push(match self.mode {
            Mode::Ecb => 0,
            Mode::Ctr => 1,
        });
        out.push(u8::from(self.padding));
        out.push(match self.kind {
            StreamKind::Raw => 0,
            StreamKind::Container => 1,
            StreamKind::Message { .. } => 2,
        });
        out.extend_from_slice(&(self.chunk_size as u64).to_le_bytes());
        out.extend_from_slice(&self.counter);
        out.extend_from_slice(&self.input_len.to_le_bytes());
        let path_bytes = |path: &Option<PathBuf>| {
            path.as_ref()
                .map(|p| p.as_os_str().as_bytes().to_vec())
                .unwrap_or_default()
        };
        let context = match &self.kind {
            StreamKind::Message { context } => &context[..],
            _ => &[],
        };
        for field in [
            &self.key[..],
            &self.header[..],
            context,
            &path_bytes(&self.input),
            &path_bytes(&self.output),
        ] {
            out.extend_from_slice(&(field.len() as u64).to_le_bytes());
            out.extend_from_slice(field);
        }
        out
    }

    /// Reads a plan written by [`Plan::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Plan, PlanError> {
        let mut reader = Reader(bytes);
        if reader.take(1)? != [2] {
            return Err(PlanError("unknown version"));
        }
        let strategy = match reader.byte()? {
            0 => IoStrategy::Direct,
            1 => IoStrategy::Scatter,
            _ => return Err(PlanError("strategy")),
        };
        let direction = match reader.byte()? {
            0 => Direction::Encrypt,
            1 => Direction::Decrypt,
            _ => return Err(PlanError("direction")),
        };
        let mode = match reader.byte()? {
            0 => Mode::Ecb,
            1 => Mode::Ctr,
            _ => return Err(PlanError("mode")),
        };
        let padding = match reader.byte()? {
            0 => false,
            1 => true,
            _ => return Err(PlanError("padding")),
        };
        let kind = reader.byte()?;
        let chunk_size = usize::try_from(reader.u64()?).map_err(|_| PlanError("chunk size"))?;
        let counter = reader.take(16)?.try_into().expect("16 bytes");
        let input_len = reader.u64()?;
        let key = Zeroizing::new(reader.field()?.to_vec());
        let header = reader.field()?.to_vec();
        let context = reader.field()?.to_vec();
        let kind = match (kind, context.is_empty()) {
            (0, true) => StreamKind::Raw,
            (1, true) => StreamKind::Container,
            (2, _) => StreamKind::Message { context },
            _ => return Err(PlanError("stream kind")),
        };
        // A chunk size no writer sends (a rank would divide by it, or cut GCM chunks apart).
        let unit = match kind {
            StreamKind::Message { .. } => 16 << 10,
            _ => 16,
        };
        if chunk_size == 0 || !chunk_size.is_multiple_of(unit) {
            return Err(PlanError("chunk size"));
        }
        let path = |bytes: &[u8]| {
            (!bytes.is_empty()).then(|| PathBuf::from(OsString::from_vec(bytes.to_vec())))
        };
        let input = path(reader.field()?);
        let output = path(reader.field()?);
        if !reader.0.is_empty() {
            return Err(PlanError("trailing bytes"));
        }
        Ok(Plan {
            strategy,
            direction,
            kind,
            mode,
            padding,
            chunk_size,
            counter,
            key,
            header,
            input,
            output,
            input_len,
        })
    }
}

/// A cursor over the encoded plan.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], PlanError> {
        if self.0.len() < len {
            return Err(PlanError("too short"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, PlanError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, PlanError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn field(&mut self) -> Result<&'a [u8], PlanError> {
        let len = usize::try_from(self.u64()?).map_err(|_| PlanError("field length"))?;
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_survive_the_round_trip_and_damage_is_refused() {
        let plan = Plan {
            strategy: IoStrategy::Direct,
            direction: Direction::Decrypt,
            kind: StreamKind::Message {
                context: b"ctx".to_vec(),
            },
            mode: Mode::Ecb,
            padding: true,
            chunk_size: 1 << 20,
            counter: [7; 16],
            key: Zeroizing::new(vec![9; 24]),
            header: vec![1, 2, 3],
            input: Some(PathBuf::from("/data/in put ü.paraes")),
            output: None,
            input_len: 12345,
        };
        let bytes = plan.encode();
        let back = Plan::decode(&bytes).unwrap();
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.strategy, IoStrategy::Direct);
        assert_eq!(back.direction, Direction::Decrypt);
        assert_eq!(
            back.kind,
            StreamKind::Message {
                context: b"ctx".to_vec()
            }
        );
        assert_eq!(back.mode, Mode::Ecb);
        assert!(back.padding);
        assert_eq!(back.chunk_size, 1 << 20);
        assert_eq!(back.counter, [7; 16]);
        assert_eq!(&back.key[..], &[9; 24]);
        assert_eq!(back.header, [1, 2, 3]);
        assert_eq!(back.input, plan.input);
        assert_eq!(back.output, None);
        assert_eq!(back.input_len, 12345);
        for cut in 0..bytes.len() {
            assert!(Plan::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(Plan::decode(&longer).is_err());
        // A padding byte other than 0 or 1, a context on a raw stream or a container, and a
        // chunk size a writer never sends are refused.
        let mut padding = bytes.to_vec();
        padding[4] = 2;
        assert!(Plan::decode(&padding).is_err());
        for (kind, chunk_size, context) in [
            (StreamKind::Raw, 1 << 20, true),
            (StreamKind::Container, 1 << 20, true),
            (StreamKind::Raw, 0, false),
            (StreamKind::Raw, 4097, false),
            (StreamKind::Message { context: vec![] }, 4096, false),
        ] {
            let mut bad = Plan::decode(&bytes).unwrap();
            bad.kind = kind;
            bad.chunk_size = chunk_size;
            let mut encoded = bad.encode();
            if context {
                // Re-encode with a context field although the kind has none.
                let message = Plan {
                    kind: StreamKind::Message {
                        context: b"ctx".to_vec(),
                    },
                    ..Plan::decode(&encoded).unwrap()
                };
                encoded = message.encode();
                encoded[5] = match bad.kind {
                    StreamKind::Raw => 0,
                    _ => 1,
                };
            }
            assert!(Plan::decode(&encoded).is_err(), "{chunk_size} {context}");
        }
    }
}
