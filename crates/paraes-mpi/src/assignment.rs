//! The assignment rank 0 broadcasts to the other ranks: what to do to which bytes with
//! which key, and where. A small length-prefixed binary encoding, wiped after use.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use paraes_core::Direction;
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

/// An assignment that did not arrive intact (a bug or a mismatched binary on some rank).
#[derive(Debug, thiserror::Error)]
#[error("the assignment from rank 0 is malformed ({0}): run the same paraes binary on every rank")]
pub struct AssignmentError(&'static str);

/// Everything a rank needs to do its share of the job.
pub struct Assignment {
    /// How chunks reach the ranks.
    pub strategy: IoStrategy,
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// The stream, as [`paraes_core::stream::Stream::to_rank_bytes`] encodes it (a
    /// container's file secret, never the user's key; wiped after use).
    pub stream: Zeroizing<Vec<u8>>,
    /// The input file ([`IoStrategy::Direct`]).
    pub input: Option<PathBuf>,
    /// The output temporary every rank writes into ([`IoStrategy::Direct`]).
    pub output: Option<PathBuf>,
    /// The input's size in bytes when the job began ([`IoStrategy::Direct`]).
    pub input_len: u64,
}

impl Assignment {
    /// Rank 0's assignment on every rank: rank 0 passes `Some(assignment)` to go on or `None` to stop the
    /// job (it could not prepare it); the other ranks pass `None`. Returns `None` on a stop.
    pub fn broadcast(
        mpi: &Mpi,
        assignment: Option<&Assignment>,
    ) -> Result<Option<Assignment>, AssignmentError> {
        let bytes = match assignment {
            Some(assignment) if mpi.is_root() => assignment.encode(),
            _ => Zeroizing::new(Vec::new()),
        };
        let received = Zeroizing::new(mpi.broadcast_bytes(bytes.to_vec()));
        if received.is_empty() {
            return Ok(None);
        }
        Assignment::decode(&received).map(Some)
    }

    /// The assignment as bytes (never empty: the empty message means "stop").
    pub fn encode(&self) -> Zeroizing<Vec<u8>> {
        let path_bytes = |path: &Option<PathBuf>| {
            path.as_ref()
                .map(|p| p.as_os_str().as_bytes().to_vec())
                .unwrap_or_default()
        };
        let (input, output) = (path_bytes(&self.input), path_bytes(&self.output));
        let fields = [&self.stream[..], &input, &output];
        // Sized before the stream (which holds a key) goes in: a buffer that grew would leave
        // a copy of the key behind in the memory it left.
        let total = 3 + 8 + fields.iter().map(|f| 8 + f.len()).sum::<usize>();
        let mut out = Zeroizing::new(Vec::with_capacity(total));
        out.push(VERSION);
        out.push(match self.strategy {
            IoStrategy::Direct => 0,
            IoStrategy::Scatter => 1,
        });
        out.push(match self.direction {
            Direction::Encrypt => 0,
            Direction::Decrypt => 1,
        });
        out.extend_from_slice(&self.input_len.to_le_bytes());
        for field in fields {
            out.extend_from_slice(&(field.len() as u64).to_le_bytes());
            out.extend_from_slice(field);
        }
        debug_assert_eq!(out.len(), total);
        out
    }

    /// Reads an assignment written by [`Assignment::encode`] (the stream inside is checked when a rank
    /// rebuilds it).
    pub fn decode(bytes: &[u8]) -> Result<Assignment, AssignmentError> {
        let mut reader = Reader(bytes);
        if reader.take(1)? != [VERSION] {
            return Err(AssignmentError("unknown version"));
        }
        let strategy = match reader.byte()? {
            0 => IoStrategy::Direct,
            1 => IoStrategy::Scatter,
            _ => return Err(AssignmentError("strategy")),
        };
        let direction = match reader.byte()? {
            0 => Direction::Encrypt,
            1 => Direction::Decrypt,
            _ => return Err(AssignmentError("direction")),
        };
        let input_len = reader.u64()?;
        let stream = Zeroizing::new(reader.field()?.to_vec());
        let path = |bytes: &[u8]| {
            (!bytes.is_empty()).then(|| PathBuf::from(OsString::from_vec(bytes.to_vec())))
        };
        let input = path(reader.field()?);
        let output = path(reader.field()?);
        if !reader.0.is_empty() {
            return Err(AssignmentError("trailing bytes"));
        }
        Ok(Assignment {
            strategy,
            direction,
            stream,
            input,
            output,
            input_len,
        })
    }
}

/// The encoding's version (3: the stream travels as one field the core encodes).
const VERSION: u8 = 3;

/// A cursor over the encoded assignment.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], AssignmentError> {
        if self.0.len() < len {
            return Err(AssignmentError("too short"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, AssignmentError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, AssignmentError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn field(&mut self) -> Result<&'a [u8], AssignmentError> {
        let len = usize::try_from(self.u64()?).map_err(|_| AssignmentError("field length"))?;
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_survive_the_round_trip_and_damage_is_refused() {
        let plan = Assignment {
            strategy: IoStrategy::Direct,
            direction: Direction::Decrypt,
            stream: Zeroizing::new(vec![9; 40]),
            input: Some(PathBuf::from("/data/in put ü.paraes")),
            output: None,
            input_len: 12345,
        };
        let bytes = plan.encode();
        let back = Assignment::decode(&bytes).unwrap();
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.strategy, IoStrategy::Direct);
        assert_eq!(back.direction, Direction::Decrypt);
        assert_eq!(&back.stream[..], &[9; 40]);
        assert_eq!(back.input, plan.input);
        assert_eq!(back.output, None);
        assert_eq!(back.input_len, 12345);
        for cut in 0..bytes.len() {
            assert!(Assignment::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(Assignment::decode(&longer).is_err());
        for (at, value) in [(0, 2), (1, 2), (2, 2)] {
            let mut bad = bytes.to_vec();
            bad[at] = value;
            assert!(Assignment::decode(&bad).is_err(), "byte {at} = {value}");
        }
    }
}
