//! Scatter I/O: rank 0 reads rounds of chunks (one per rank), spreads them with Scatterv, every
//! rank seals or opens its chunk, Gatherv brings the results back in order and rank 0 writes
//! them. Works with pipes and without a shared file system.
//!
//! Rank 0's I/O overlaps the collectives: a reader thread cuts round `r + 1` while round `r` is
//! scattered, processed and gathered on the main thread (the only one that calls MPI), and a
//! writer thread writes round `r - 1`. Each side has a fixed pool of [`ROUNDS`] round buffers,
//! so memory stays bounded whatever the stream's length: rank 0 holds at most `2 x ROUNDS`
//! rounds, every other rank one chunk.

use std::io::{Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use mpi::datatype::{Partition, PartitionMut};
use mpi::request;
use mpi::traits::{Communicator, Root};
use paraes_core::pipeline::{self, Chunk, ChunkReader, PipelineError, StreamSpec};
use paraes_core::Direction;

use crate::root_io::RootIo;
use crate::world::{mpi_bytes, mpi_bytes_mut, wait_quietly, JobError, Mpi};

/// Control flag: stop now (rank 0 failed or saw a failure).
const STOP: u64 = 1;
/// Control flag: this round holds the stream's last chunk.
const FINAL: u64 = 2;
/// Control words before the per-rank lengths: flags, first chunk index, chunks in the round.
const CONTROL_HEAD: usize = 3;
/// Round buffers on each side of rank 0's collectives: one being read (or written), one queued,
/// one in the collectives.
const ROUNDS: usize = 3;

/// One round of input chunks as rank 0's reader cut it: the chunks back to back.
struct Round {
    data: Vec<u8>,
    lens: Vec<u64>,
    first: u64,
    is_final: bool,
}

/// Runs the scatter strategy (see the module docs); collective.
pub(crate) fn run(mpi: &Mpi, spec: &StreamSpec<'_>, root_io: RootIo<'_>) -> Result<u64, JobError> {
    // MPI counts are 32-bit: a round never carries more than i32::MAX bytes.
    let per_round = mpi
        .size()
        .min((i32::MAX as usize / spec.buffer_capacity()).max(1));
    let failure = if mpi.is_root() {
        root(mpi, spec, root_io, per_round)
    } else {
        let mut mine = spec.new_buffer();
        while let Some(control) = receive_control(mpi) {
            let last_round = control[0] & FINAL != 0;
            exchange(mpi, spec, &control, None, &mut mine, None);
            if last_round {
                break;
            }
        }
        Ok(0)
    };
    let written = failure.as_ref().copied().unwrap_or(0);
    mpi.agree(failure.map(|_| ()))?;
    Ok(written)
}

/// Rank 0's side: the reader and writer threads around the rounds of collectives. Returns the
/// bytes written, or the job's first failure.
fn root(
    mpi: &Mpi,
    spec: &StreamSpec<'_>,
    root_io: RootIo<'_>,
    per_round: usize,
) -> Result<u64, String> {
    let size = mpi.size();
    let mut control = vec![0u64; CONTROL_HEAD + size];
    let (Some(input), Some(output)) = (root_io.input, root_io.output) else {
        control[0] = STOP;
        broadcast_control(mpi, &mut control);
        return Err("rank 0 has no input or output for scatter I/O".into());
    };
    let (read_free_tx, read_free_rx) = sync_channel::<Vec<u8>>(ROUNDS);
    let (write_free_tx, write_free_rx) = sync_channel::<Vec<u8>>(ROUNDS);
    for _ in 0..ROUNDS {
        let _ = read_free_tx.send(Vec::new());
        let _ = write_free_tx.send(Vec::new());
    }
    let (round_tx, round_rx) = sync_channel::<Result<Round, String>>(1);
    let (write_tx, write_rx) = sync_channel::<Vec<u8>>(1);

    let mut mine = spec.new_buffer();
    std::thread::scope(|scope| {
        scope.spawn(move || read_rounds(spec, input, per_round, read_free_rx, round_tx));
        let writer = scope.spawn(move || write_rounds(output, write_rx, write_free_tx));
        let mut failure: Option<String> = None;
        let mut writer_gone = false;
        loop {
            control.fill(0);
            let round = match failure {
                Some(_) => None,
                None => match round_rx.recv() {
                    Ok(Ok(round)) => Some(round),
                    Ok(Err(e)) => {
                        failure = Some(e);
                        None
                    }
                    Err(_) => {
                        failure = Some("the input reader stopped early".into());
                        None
                    }
                },
            };
            let Some(round) = round else {
                control[0] = STOP;
                broadcast_control(mpi, &mut control);
                break;
            };
            control[0] = if round.is_final { FINAL } else { 0 };
            control[1] = round.first;
            control[2] = round.lens.len() as u64;
            control[CONTROL_HEAD..][..round.lens.len()].copy_from_slice(&round.lens);
            broadcast_control(mpi, &mut control);

            // A writer that stopped has its error waiting: the round still goes round.
            let mut gathered = write_free_rx.recv().unwrap_or_default();
            let send = Some(&round.data[..]);
            let failed = exchange(mpi, spec, &control, send, &mut mine, Some(&mut gathered));
            let _ = read_free_tx.send(round.data);
            if let Some(message) = failed {
                failure = Some(message);
            } else if write_tx.send(gathered).is_err() {
                writer_gone = true;
                failure = Some("the output writer stopped early".into());
            }
            if round.is_final {
                break;
            }
        }
        // Closing the queues stops both threads (the reader at its next round).
        drop(write_tx);
        drop(round_rx);
        drop(read_free_tx);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match (failure, written) {
            (Some(_), Err(e)) if writer_gone => Err(e),
            (Some(message), _) => Err(message),
            (None, written) => written,
        }
    })
}

/// Rank 0's reader thread: cuts the input into rounds of up to `per_round` chunks, in buffers
/// from `free`, until the round with the last chunk or a failure.
fn read_rounds(
    spec: &StreamSpec<'_>,
    mut input: &mut (dyn Read + Send),
    per_round: usize,
    free: Receiver<Vec<u8>>,
    rounds: SyncSender<Result<Round, String>>,
) {
    let mut reader = ChunkReader::new(spec, &mut input);
    let mut spare = spec.new_buffer();
    let mut next_index = 0u64;
    while let Ok(mut data) = free.recv() {
        data.clear();
        let mut lens = Vec::with_capacity(per_round);
        let mut is_final = false;
        while lens.len() < per_round && !is_final {
            match reader.next_chunk(std::mem::take(&mut spare)) {
                Ok(Some(chunk)) => {
                    lens.push(chunk.data.len() as u64);
                    data.extend_from_slice(&chunk.data);
                    is_final = chunk.last;
                    spare = chunk.data;
                }
                Ok(None) => is_final = true,
                Err(e) => {
                    let _ = rounds.send(Err(format!("reading the input failed: {e}")));
                    return;
                }
            }
            if spare.capacity() == 0 {
                spare = spec.new_buffer();
            }
        }
        let first = next_index;
        next_index += lens.len() as u64;
        let round = Round {
            data,
            lens,
            first,
            is_final,
        };
        if rounds.send(Ok(round)).is_err() || is_final {
            return;
        }
    }
}

/// Rank 0's writer thread: writes gathered rounds in order and hands their buffers back.
fn write_rounds(
    output: &mut (dyn Write + Send),
    rounds: Receiver<Vec<u8>>,
    free: SyncSender<Vec<u8>>,
) -> Result<u64, String> {
    let mut written = 0u64;
    for data in rounds {
        output
            .write_all(&data)
            .map_err(|e| format!("writing the output failed: {e}"))?;
        written += data.len() as u64;
        let _ = free.send(data);
    }
    output
        .flush()
        .map_err(|e| format!("writing the output failed: {e}"))?;
    Ok(written)
}

/// A round's control words from rank 0, or `None` when rank 0 says stop (other ranks).
fn receive_control(mpi: &Mpi) -> Option<Vec<u64>> {
    let mut control = vec![0u64; CONTROL_HEAD + mpi.size()];
    broadcast_control(mpi, &mut control);
    (control[0] & STOP == 0).then_some(control)
}

/// Rank 0's control words on every rank (a quiet wait: see [`wait_quietly`]).
fn broadcast_control(mpi: &Mpi, control: &mut [u64]) {
    let root = mpi.world().process_at_rank(0);
    request::scope(|scope| wait_quietly(root.immediate_broadcast_into(scope, control)));
}

/// One round's collectives on every rank: scatter the chunks (`send`, on rank 0) into `mine`,
/// seal or open this rank's, gather the results in order (into `gathered`, on rank 0). Returns,
/// on rank 0, the failure of the lowest failing rank in the round.
fn exchange(
    mpi: &Mpi,
    spec: &StreamSpec<'_>,
    control: &[u64],
    send: Option<&[u8]>,
    mine: &mut Vec<u8>,
    gathered: Option<&mut Vec<u8>>,
) -> Option<String> {
    let (rank, size) = (mpi.rank(), mpi.size());
    let root = mpi.world().process_at_rank(0);
    let (first, count, is_final) = (control[1], control[2] as usize, control[0] & FINAL != 0);
    let lens = &control[CONTROL_HEAD..];

    // Spread the round (every buffer through `mpi_bytes`/`mpi_bytes_mut`: an empty Vec's
    // address is 1, which Open MPI reads as its MPI_IN_PLACE and refuses on a non-root rank).
    mine.resize(lens[rank] as usize, 0);
    match send {
        Some(send) => {
            let (counts, displs) = counts_and_displacements(lens.iter().copied());
            let partition = Partition::new(mpi_bytes(send), &counts[..], &displs[..]);
            request::scope(|scope| {
                let mine = mpi_bytes_mut(mine);
                wait_quietly(root.immediate_scatter_varcount_into_root(scope, &partition, mine));
            });
        }
        None => request::scope(|scope| {
            wait_quietly(root.immediate_scatter_varcount_into(scope, mpi_bytes_mut(mine)));
        }),
    }

    // Work on this rank's chunk; a failure travels back as its message.
    let mut status = [0u64; 2];
    let mut message = Vec::new();
    if rank < count {
        let mut chunk = Chunk {
            index: first + rank as u64,
            last: is_final && rank + 1 == count,
            data: std::mem::take(mine),
        };
        if let Err(e) = process_chunk(spec, &mut chunk) {
            message = mpi.tag(&e.to_string()).into_bytes();
            status[1] = 1;
        }
        *mine = chunk.data;
    }
    let payload = mpi_bytes(if status[1] == 1 { &message } else { mine });
    status[0] = payload.len() as u64;

    // Gather the results in order: back to back, so the round is one write.
    let Some(gathered) = gathered else {
        request::scope(|scope| {
            wait_quietly(root.immediate_gather_into(scope, &status[..]));
            wait_quietly(root.immediate_gather_varcount_into(scope, payload));
        });
        return None;
    };
    let mut statuses = vec![0u64; 2 * size];
    request::scope(|scope| {
        wait_quietly(root.immediate_gather_into_root(scope, &status[..], &mut statuses[..]));
    });
    let (counts, displs) = counts_and_displacements(statuses.iter().step_by(2).copied());
    gathered.resize(counts.iter().map(|&c| c as usize).sum(), 0);
    {
        let mut partition = PartitionMut::new(mpi_bytes_mut(gathered), &counts[..], &displs[..]);
        request::scope(|scope| {
            wait_quietly(root.immediate_gather_varcount_into_root(scope, payload, &mut partition));
        });
    }
    let failed = (0..count).find(|&r| statuses[2 * r + 1] == 1)?;
    let piece = &gathered[displs[failed] as usize..][..counts[failed] as usize];
    Some(String::from_utf8_lossy(piece).into_owned())
}

/// Seals (encryption) or opens (decryption) one chunk in place, as the pipeline's stages do.
fn process_chunk(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    match spec.direction {
        Direction::Encrypt => pipeline::seal(spec, chunk),
        Direction::Decrypt => pipeline::open(spec, chunk),
    }
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
