//! One job on every rank: the stream rebuilt from the [`Assignment`], then the chosen strategy.

use paraes_core::stream::Stream;
use paraes_core::Engine;

use crate::assignment::{Assignment, IoStrategy};
use crate::root_io::RootIo;
use crate::world::{JobError, Mpi};
use crate::{direct, scatter};

/// Runs `assignment` on this rank with its local `engine`; collective (every rank calls it). Returns
/// the bytes of stream output the job wrote (header excluded), the same on every rank for
/// direct I/O and on rank 0 for scatter. Any rank's failure fails the job on every rank.
/// `workers`: a direct-I/O rank's chunks in flight, as the single-process tool chooses them for
/// `engine` (the binary's `engines::chunk_workers`).
pub fn execute(
    mpi: &Mpi,
    assignment: &Assignment,
    engine: &dyn Engine,
    workers: usize,
    root_io: RootIo<'_>,
) -> Result<u64, JobError> {
    // Every rank rebuilds the stream itself: a container's header opened with the file's
    // secret (its slot tag and v3's key commitment checked), a bare message's commitment
    // checked, a raw stream's key expanded.
    let stream = Stream::for_rank(&assignment.stream).map_err(|e| e.to_string());
    mpi.agree(stream.as_ref().map(|_| ()).map_err(|e| mpi.tag(e)))?;
    let stream = stream.expect("agreed above");
    let spec = stream.spec(engine, assignment.direction);
    match assignment.strategy {
        IoStrategy::Direct => {
            let header_len = stream.header().len() as u64;
            direct::run(mpi, &spec, header_len, assignment, workers)
        }
        IoStrategy::Scatter => scatter::run(mpi, &spec, root_io),
    }
}
