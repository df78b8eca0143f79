//! The MPI world of a paraes job: start-up, rank facts, and the few collectives the runners use
//! (byte broadcast, agreement on success or the first failure, sums).

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::{Threading, Universe};
use mpi::request::{Request, Scope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};
use std::time::{Duration, Instant};

/// How long [`wait_quietly`] polls a request flat out before it sleeps between checks.
const QUIET_SPIN: Duration = Duration::from_micros(20);
/// How long [`wait_quietly`] sleeps between checks after that.
const QUIET_POLL: Duration = Duration::from_micros(50);

/// Completes `request` without taking a core for the wait, as MPICH's blocking calls do (they
/// poll flat out): polls for [`QUIET_SPIN`], then sleeps [`QUIET_POLL`] between checks. With
/// more threads than cores (the pipeline's threads, several ranks per node, other work), a
/// waiting rank then leaves the cores to those that have work; the cost is at most about one
/// sleep of latency per wait.
pub(crate) fn wait_quietly<'a, D: ?Sized, S: Scope<'a>>(mut request: Request<'a, D, S>) {
    let started = Instant::now();
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => request = pending,
        }
        if started.elapsed() < QUIET_SPIN {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(QUIET_POLL);
        }
    }
}

/// What [`mpi_bytes`] points an empty buffer at.
static NOWHERE: [u8; 1] = [0];

/// `bytes` as MPI may be given it: an empty slice at a real address. An empty `Vec` or slice
/// of bytes points at address 1 (its alignment), and Open MPI's `MPI_IN_PLACE` is
/// `(void *) 1`: given an empty byte buffer, Open MPI reads "in place", which is an error on a
/// rank other than the root of a scatter or gather (`MPI_ERR_ARG`, the job aborts) and means
/// something else in an allgather. Every byte buffer that paraes hands MPI goes through this
/// or [`mpi_bytes_mut`].
pub(crate) fn mpi_bytes(bytes: &[u8]) -> &[u8] {
    if bytes.is_empty() {
        &NOWHERE[..0]
    } else {
        bytes
    }
}

/// [`mpi_bytes`] for a buffer MPI writes into: a vector without an allocation gets one, so
/// that even when it is empty its slice is at a real address. One that has an allocation keeps
/// it: moved, it would leave a copy of its bytes (the assignment's key, on rank 0) unwiped in
/// the memory it left.
pub(crate) fn mpi_bytes_mut(bytes: &mut Vec<u8>) -> &mut [u8] {
    if bytes.capacity() == 0 {
        bytes.reserve(1);
    }
    &mut bytes[..]
}

/// A failure of the whole job, the same on every rank: one line that says which rank failed and
/// why (rank 0 prints it; the others exit quietly), and what kind of failure it is, so that
/// the binary chooses its advice by kind, never by the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JobError {
    /// What kind of failure.
    pub reason: Reason,
    /// The failure, in one line.
    pub message: String,
}

/// The kinds of job failure that call for their own advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Any failure without advice of its own.
    Other,
    /// A rank does not see the files rank 0 sees (direct I/O without a shared file system).
    NotShared,
}

impl Reason {
    fn code(self) -> u8 {
        match self {
            Reason::Other => 0,
            Reason::NotShared => 1,
        }
    }

    fn from_code(code: u8) -> Self {
        match code {
            1 => Reason::NotShared,
            _ => Reason::Other,
        }
    }
}

impl JobError {
    /// A failure without advice of its own.
    pub fn other(message: impl Into<String>) -> Self {
        JobError {
            reason: Reason::Other,
            message: message.into(),
        }
    }
}

/// The MPI environment: initialised on creation, finalised on drop.
pub struct Mpi {
    world: SimpleCommunicator,
    local_size: usize,
    local_rank: usize,
    // Dropped last: finalises MPI.
    _universe: Universe,
}

impl Mpi {
    /// Initialises MPI (a process started without mpiexec becomes a job of one rank).
    pub fn init() -> Result<Mpi, JobError> {
        // Engines and the pipeline run threads of their own; only the main thread calls MPI.
        let (universe, _) =
            mpi::initialize_with_threading(Threading::Funneled).ok_or_else(|| {
                JobError::other(
                    "MPI was already initialised in this process: start paraes once per rank",
                )
            })?;
        let world = universe.world();
        let node = world.split_shared(world.rank());
        Ok(Mpi {
            local_size: node.size() as usize,
            local_rank: node.rank() as usize,
            world,
            _universe: universe,
        })
    }

    /// This process's rank, from 0.
    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// Whether this is rank 0, the one that talks to the user.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// Ranks on this node (sharing its memory), for splitting the node's cores or GPUs.
    pub fn local_size(&self) -> usize {
        self.local_size
    }

    /// This rank's position among the ranks on its node.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    pub(crate) fn world(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// Rank 0's `bytes` on every rank (other ranks pass anything, e.g. an empty vector).
    pub fn broadcast_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let root = self.world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.is_root() {
            bytes
        } else {
            vec![0u8; len as usize]
        };
        root.broadcast_into(mpi_bytes_mut(&mut buf));
        buf
    }

    /// `message` prefixed with this rank when the job has several ranks.
    pub fn tag(&self, message: &str) -> String {
        if self.size() > 1 {
            format!("rank {} of {}: {message}", self.rank(), self.size())
        } else {
            message.to_string()
        }
    }

    /// Every rank's outcome, agreed: `Ok` on every rank if every rank succeeded, otherwise the
    /// failure of the lowest failing rank (callers say which rank with [`Mpi::tag`]).
    /// Collective: every rank must call it, even after a local failure.
    pub fn agree(&self, mine: Result<(), String>) -> Result<(), JobError> {
        self.agree_on(mine.map_err(JobError::other))
    }

    /// [`Mpi::agree`] for a failure of a known [`Reason`], which every rank learns with it.
    pub fn agree_on(&self, mine: Result<(), JobError>) -> Result<(), JobError> {
        // A failure travels as its reason's code, then its text (never empty).
        let message = match &mine {
            Ok(()) => Vec::new(),
            Err(failure) => {
                let mut bytes = vec![failure.reason.code()];
                bytes.extend_from_slice(if failure.message.is_empty() {
                    b"failed"
                } else {
                    failure.message.as_bytes()
                });
                bytes
            }
        };
        let size = self.size();
        let mut lens = vec![0i32; size];
        self.world
            .all_gather_into(&(message.len() as i32), &mut lens[..]);
        if lens.iter().all(|&len| len == 0) {
            return Ok(());
        }
        let displs: Vec<i32> = lens
            .iter()
            .scan(0, |at, &len| {
                let here = *at;
                *at += len;
                Some(here)
            })
            .collect();
        let mut all = vec![0u8; lens.iter().map(|&len| len as usize).sum()];
        {
            let mut partition = PartitionMut::new(mpi_bytes_mut(&mut all), &lens[..], &displs[..]);
            self.world
                .all_gather_varcount_into(mpi_bytes(&message), &mut partition);
        }
        let failed = lens
            .iter()
            .position(|&len| len > 0)
            .expect("one rank failed");
        let start = displs[failed] as usize;
        let failure = &all[start..start + lens[failed] as usize];
        Err(JobError {
            reason: Reason::from_code(failure[0]),
            message: String::from_utf8_lossy(&failure[1..]).into_owned(),
        })
    }

    /// Waits until every rank has called it, without spinning ([`wait_quietly`]), so a rank
    /// that finished its share early leaves the cores to the ranks still working. Collective.
    pub fn quiet_barrier(&self) {
        wait_quietly(self.world.immediate_barrier());
    }

    /// The sum of `value` over all ranks, on every rank.
    pub fn sum(&self, value: u64) -> u64 {
        let mut total = 0u64;
        self.world
            .all_reduce_into(&value, &mut total, SystemOperation::sum());
        total
    }
}

#[cfg(test)]
mod tests {
    use super::{mpi_bytes, mpi_bytes_mut};

    /// Open MPI's `MPI_IN_PLACE`, which no buffer of paraes may be at.
    const OPEN_MPI_IN_PLACE: usize = 1;

    #[test]
    fn empty_buffers_are_never_at_open_mpis_in_place_address() {
        let empty: Vec<u8> = Vec::new();
        assert_eq!(
            empty.as_ptr() as usize,
            OPEN_MPI_IN_PLACE,
            "what the guard is for"
        );
        assert_ne!(mpi_bytes(&empty).as_ptr() as usize, OPEN_MPI_IN_PLACE);
        assert_ne!(mpi_bytes(&[]).as_ptr() as usize, OPEN_MPI_IN_PLACE);
        assert!(mpi_bytes(&empty).is_empty());
        let mut received: Vec<u8> = Vec::new();
        let slice = mpi_bytes_mut(&mut received);
        assert!(slice.is_empty());
        assert_ne!(slice.as_ptr() as usize, OPEN_MPI_IN_PLACE);
        let full = [1u8, 2, 3];
        assert_eq!(
            mpi_bytes(&full).as_ptr(),
            full.as_ptr(),
            "a full buffer is itself"
        );
    }

    /// Rank 0 broadcasts the assignment, which holds the file key, from a vector exactly as
    /// long as its allocation (`to_vec`): moved to a larger one, it would leave an unwiped copy
    /// of the key in the memory it left (the wiped copy is the new one).
    #[test]
    fn a_full_buffer_is_handed_to_mpi_where_it_is() {
        let mut secret = vec![7u8; 40];
        assert_eq!(secret.capacity(), secret.len(), "what the test is about");
        let at = secret.as_ptr();
        assert_eq!(mpi_bytes_mut(&mut secret).as_ptr(), at);
        assert_eq!(secret.as_ptr(), at);
    }
}
