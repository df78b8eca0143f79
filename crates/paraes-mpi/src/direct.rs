//! Direct I/O: every rank runs its own contiguous range of chunks the way the single-process
//! tool runs a whole file ([`pipeline::run_parallel_segment`]: workers reading and writing
//! their windows of the shared input and output files at their offsets); no data crosses MPI.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use paraes_core::pipeline::{self, Segment, Sink, Source, StreamSpec, Workers};
use paraes_core::records::RecordLayout;
use paraes_core::Direction;

use crate::assignment::Assignment;
use crate::world::{JobError, Mpi, Reason};

/// Runs the direct strategy (see the module docs); collective.
/// `header_len` bytes come before the first chunk (in the output when encrypting, in the
/// input when decrypting); `workers` windows are in flight.
pub(crate) fn run(
    mpi: &Mpi,
    spec: &StreamSpec<'_>,
    header_len: u64,
    assignment: &Assignment,
    workers: usize,
) -> Result<u64, JobError> {
    let (input_start, output_start) = match spec.direction {
        Direction::Encrypt => (0, header_len),
        Direction::Decrypt => (header_len, 0),
    };
    let layout = RecordLayout::new(spec, input_start, assignment.input_len, output_start);
    let files = open_files(assignment);
    mpi.agree_on(files.as_ref().map(|_| ()).map_err(|(reason, e)| JobError {
        reason: *reason,
        message: mpi.tag(e),
    }))?;
    let (input, output) = files.expect("agreed above");

    let share = layout.share(mpi.rank(), mpi.size());
    let worked = if share.is_empty() {
        Ok(0)
    } else {
        // This rank's chunks as the single-process tool runs a file: windows read and written
        // at their offsets by `workers` workers.
        let (input_at, _) = layout.input_record(share.start);
        let (last_at, last_len) = layout.input_record(share.end - 1);
        let input_len = last_at + last_len as u64 - input_at;
        let segment = Segment {
            first_index: share.start,
            ends_stream: layout.is_last(share.end - 1),
        };
        let source = Source::At {
            file: &input,
            at: input_at,
            len: input_len,
        };
        let sink = Sink::At {
            file: &output,
            at: layout.output_offset(share.start),
            // Ranks on one machine writing one file: the kernel lets one write in at a time,
            // and a rank that waits for it spins on the core its own AES needs; taking turns
            // it sleeps instead. Across nodes (a parallel file system) writers never wait on
            // each other's machine, and a lock there would be a round trip per window.
            take_turns: mpi.size() > 1 && mpi.local_size() == mpi.size(),
        };
        pipeline::run_parallel_segment(spec, segment, source, sink, Workers::new(workers), &|_| {})
            .map(|ran| ran.written)
            .map_err(|e| e.to_string())
    };
    let written = worked.as_ref().copied().unwrap_or(0);
    // Ranks finish at different times: the early ones wait without taking a core.
    mpi.quiet_barrier();
    mpi.agree(worked.map(|_| ()).map_err(|e| mpi.tag(&e)))?;
    Ok(mpi.sum(written))
}

/// Opens the assignment's input and output temporary on this rank, and checks that it sees the input
/// rank 0 saw.
/// A failure to see rank 0's files is [`Reason::NotShared`] (scatter I/O needs no shared
/// file system).
fn open_files(assignment: &Assignment) -> Result<(File, File), (Reason, String)> {
    let (Some(input), Some(output)) = (&assignment.input, &assignment.output) else {
        return Err((
            Reason::Other,
            "direct I/O needs an input file and an output file".into(),
        ));
    };
    let shared = "direct I/O needs the same files on every rank (a shared file system)";
    let opened = |path: &Path, file: io::Result<File>| {
        file.map_err(|e| {
            (
                Reason::NotShared,
                format!("cannot open {}: {e} ({shared})", path.display()),
            )
        })
    };
    let input_file = opened(input, File::open(input))?;
    let len = input_file
        .metadata()
        .map_err(|e| {
            (
                Reason::Other,
                format!("cannot read the size of {}: {e}", input.display()),
            )
        })?
        .len();
    if len != assignment.input_len {
        return Err((
            Reason::NotShared,
            format!(
                "{} has {len} bytes here but {} on rank 0 ({shared})",
                input.display(),
                assignment.input_len
            ),
        ));
    }
    let output_file = opened(output, OpenOptions::new().write(true).open(output))?;
    Ok((input_file, output_file))
}
