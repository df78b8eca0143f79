//! Direct I/O: every rank reads and writes its own contiguous range of chunks in the shared
//! input and output files with positioned reads and writes; no data crosses MPI.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use paraes_core::pipeline::{Chunk, StreamSpec};
use paraes_core::Direction;

use crate::chunk::process_chunk;
use crate::layout::Layout;
use crate::plan::Plan;
use crate::world::{JobError, Mpi};

/// Runs the direct strategy (see the module docs); collective.
pub(crate) fn run(mpi: &Mpi, spec: &StreamSpec<'_>, plan: &Plan) -> Result<u64, JobError> {
    let header_len = plan.header.len() as u64;
    let (input_start, output_start) = match spec.direction {
        Direction::Encrypt => (0, header_len),
        Direction::Decrypt => (header_len, 0),
    };
    let layout = Layout::new(spec, input_start, plan.input_len, output_start);
    let files = open_files(plan);
    mpi.agree(files.as_ref().map(|_| ()).map_err(|e| mpi.tag(e)))?;
    let (input, output) = files.expect("agreed above");

    let mut written = 0u64;
    let mut work = || -> Result<(), String> {
        let mut buf = spec.new_buffer();
        for index in layout.share(mpi.rank(), mpi.size()) {
            let (at, len) = layout.input_record(index);
            buf.resize(len, 0);
            input
                .read_exact_at(&mut buf, at)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::UnexpectedEof => {
                        "the input became shorter while it was being read".to_string()
                    }
                    _ => format!("reading the input failed: {e}"),
                })?;
            let mut chunk = Chunk {
                index,
                last: layout.is_last(index),
                data: buf,
            };
            process_chunk(spec, &mut chunk).map_err(|e| e.to_string())?;
            output
                .write_all_at(&chunk.data, layout.output_offset(index))
                .map_err(|e| format!("writing the output failed: {e}"))?;
            written += chunk.data.len() as u64;
            buf = chunk.data;
        }
        Ok(())
    };
    let worked = work();
    mpi.agree(worked.map_err(|e| mpi.tag(&e)))?;
    Ok(mpi.sum(written))
}

/// Opens the plan's input and output temporary on this rank, and checks that it sees the input
/// rank 0 saw.
fn open_files(plan: &Plan) -> Result<(File, File), String> {
    let (Some(input), Some(output)) = (&plan.input, &plan.output) else {
        return Err("direct I/O needs an input file and an output file".into());
    };
    let shared = "direct I/O needs the same files on every rank (a shared file system); \
                  scatter I/O does not";
    let opened = |path: &Path, file: io::Result<File>| {
        file.map_err(|e| format!("cannot open {}: {e} ({shared})", path.display()))
    };
    let input_file = opened(input, File::open(input))?;
    let len = input_file
        .metadata()
        .map_err(|e| format!("cannot read the size of {}: {e}", input.display()))?
        .len();
    if len != plan.input_len {
        return Err(format!(
            "{} has {len} bytes here but {} on rank 0 ({shared})",
            input.display(),
            plan.input_len
        ));
    }
    let output_file = opened(output, OpenOptions::new().write(true).open(output))?;
    Ok((input_file, output_file))
}
