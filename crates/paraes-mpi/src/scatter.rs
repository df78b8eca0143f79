//! Scatter I/O: rank 0 reads rounds of chunks (one per rank), spreads them with Scatterv, every
//! rank seals or opens its chunk, Gatherv brings the results back in order and rank 0 writes
//! them. Works with pipes and without a shared file system; memory per rank is bounded by one
//! round, whatever the stream's length.

use mpi::datatype::{Partition, PartitionMut};
use mpi::traits::{Communicator, Root};
use paraes_core::pipeline::{Chunk, ChunkReader, StreamSpec};

use crate::chunk::process_chunk;
use crate::root_io::RootIo;
use crate::world::{JobError, Mpi};

/// Control flag: stop now (rank 0 failed or saw a failure).
const STOP: u64 = 1;
/// Control flag: this round holds the stream's last chunk.
const FINAL: u64 = 2;
/// Control words before the per-rank lengths: flags, first chunk index, chunks in the round.
const CONTROL_HEAD: usize = 3;

/// Runs the scatter strategy (see the module docs); collective.
pub(crate) fn run(mpi: &Mpi, spec: &StreamSpec<'_>, root_io: RootIo<'_>) -> Result<u64, JobError> {
    let size = mpi.size();
    let rank = mpi.rank();
    let root = mpi.world().process_at_rank(0);
    // MPI counts are 32-bit: a round never carries more than i32::MAX bytes.
    let per_round = size.min((i32::MAX as usize / spec.buffer_capacity()).max(1));

    let mut input = root_io.input;
    let mut output = root_io.output;
    let mut reader = input.as_mut().map(|input| ChunkReader::new(spec, input));
    let mut failure: Option<String> = None;
    let mut written = 0u64;
    let mut spare = spec.new_buffer();
    let mut mine = spec.new_buffer();
    let (mut send, mut gathered) = (Vec::new(), Vec::new());
    let mut control = vec![0u64; CONTROL_HEAD + size];
    let mut next_index = 0u64;

    loop {
        if mpi.is_root() {
            control.fill(0);
            match (&failure, reader.as_mut()) {
                (Some(_), _) => control[0] = STOP,
                (None, None) => {
                    failure = Some("rank 0 has no input for scatter I/O".into());
                    control[0] = STOP;
                }
                (None, Some(reader)) => {
                    send.clear();
                    let mut count = 0;
                    while count < per_round {
                        match reader.next_chunk(std::mem::take(&mut spare)) {
                            Ok(Some(chunk)) => {
                                control[CONTROL_HEAD + count] = chunk.data.len() as u64;
                                send.extend_from_slice(&chunk.data);
                                spare = chunk.data;
                                count += 1;
                                if chunk.last {
                                    control[0] = FINAL;
                                    break;
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                failure = Some(format!("reading the input failed: {e}"));
                                control[0] = STOP;
                                break;
                            }
                        }
                    }
                    if spare.capacity() == 0 {
                        spare = spec.new_buffer();
                    }
                    control[1] = next_index;
                    control[2] = count as u64;
                    next_index += count as u64;
                }
            }
        }
        root.broadcast_into(&mut control[..]);
        if control[0] & STOP != 0 {
            break;
        }
        let (first, count, is_final) = (control[1], control[2] as usize, control[0] & FINAL != 0);
        let lens = &control[CONTROL_HEAD..];

        // Spread the round.
        mine.resize(lens[rank] as usize, 0);
        if mpi.is_root() {
            let (counts, displs) = counts_and_displacements(lens.iter().copied());
            let partition = Partition::new(&send[..], &counts[..], &displs[..]);
            root.scatter_varcount_into_root(&partition, &mut mine[..]);
        } else {
            root.scatter_varcount_into(&mut mine[..]);
        }

        // Work on this rank's chunk; a failure travels back as its message.
        let mut status = [0u64; 2];
        let mut message = Vec::new();
        if rank < count {
            let mut chunk = Chunk {
                index: first + rank as u64,
                last: is_final && rank + 1 == count,
                data: std::mem::take(&mut mine),
            };
            if let Err(e) = process_chunk(spec, &mut chunk) {
                message = mpi.tag(&e.to_string()).into_bytes();
                status[1] = 1;
            }
            mine = chunk.data;
        }
        let payload: &[u8] = if status[1] == 1 { &message } else { &mine };
        status[0] = payload.len() as u64;

        // Gather the results in order.
        if mpi.is_root() {
            let mut statuses = vec![0u64; 2 * size];
            root.gather_into_root(&status[..], &mut statuses[..]);
            let (counts, displs) = counts_and_displacements(statuses.iter().step_by(2).copied());
            gathered.resize(counts.iter().map(|&c| c as usize).sum(), 0);
            {
                let mut partition = PartitionMut::new(&mut gathered[..], &counts[..], &displs[..]);
                root.gather_varcount_into_root(payload, &mut partition);
            }
            for r in 0..count {
                let piece = &gathered[displs[r] as usize..][..counts[r] as usize];
                if statuses[2 * r + 1] == 1 {
                    failure = Some(String::from_utf8_lossy(piece).into_owned());
                    break;
                }
                let Some(out) = output.as_mut() else {
                    failure = Some("rank 0 has no output for scatter I/O".into());
                    break;
                };
                if let Err(e) = out.write_all(piece) {
                    failure = Some(format!("writing the output failed: {e}"));
                    break;
                }
                written += piece.len() as u64;
            }
        } else {
            root.gather_into(&status[..]);
            root.gather_varcount_into(payload);
        }
        if is_final {
            break;
        }
    }
    if let (None, Some(out)) = (&failure, output.as_mut()) {
        if let Err(e) = out.flush() {
            failure = Some(format!("writing the output failed: {e}"));
        }
    }
    mpi.agree(failure.map_or(Ok(()), Err))?;
    Ok(written)
}

/// MPI counts and displacements for consecutive pieces of the given lengths.
fn counts_and_displacements(lens: impl Iterator<Item = u64>) -> (Vec<i32>, Vec<i32>) {
    let counts: Vec<i32> = lens.map(|len| len as i32).collect();
    let mut displs = Vec::with_capacity(counts.len());
    let mut at = 0i32;
    for &count in &counts {
        displs.push(at);
        at += count;
    }
    (counts, displs)
}
