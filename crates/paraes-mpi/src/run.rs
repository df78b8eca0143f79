//! One job on every rank: the stream from the [`Plan`], then the chosen strategy.

use std::io::{Read, Write};

use paraes_core::container::{ContainerKeys, Header};
use paraes_core::pipeline::{self, Chunk, PipelineError, StreamSpec};
use paraes_core::{Direction, Engine, Key};

use crate::plan::{IoStrategy, Plan};
use crate::world::{JobError, Mpi};
use crate::{direct, scatter};

/// Rank 0's ends of the stream for [`IoStrategy::Scatter`]: the input positioned after any
/// container header, and the output after any header written. Other ranks pass `None`s.
#[derive(Default)]
pub struct RootIo<'a> {
    /// Where rank 0 reads the stream.
    pub input: Option<&'a mut (dyn Read + Send)>,
    /// Where rank 0 writes the result.
    pub output: Option<&'a mut (dyn Write + Send)>,
}

/// Runs `plan` on this rank with its local `engine`; collective (every rank calls it). Returns
/// the bytes of stream output the job wrote (header excluded), the same on every rank for
/// direct I/O and on rank 0 for scatter. Any rank's failure fails the job on every rank.
pub fn execute(
    mpi: &Mpi,
    plan: &Plan,
    engine: &dyn Engine,
    root_io: RootIo<'_>,
) -> Result<u64, JobError> {
    let key = Key::new(&plan.key);
    let container = key
        .as_ref()
        .ok()
        .filter(|_| !plan.header.is_empty())
        .map(|key| {
            let keys = ContainerKeys::derive(key);
            let verified = Header::read(&mut &plan.header[..])
                .and_then(|unverified| Ok((unverified.verify(&keys)?, unverified.header)));
            (keys, verified)
        });
    let ready: Result<(), String> = match (&key, &container) {
        (Err(e), _) => Err(e.to_string()),
        (Ok(_), Some((_, Err(e)))) => Err(e.to_string()),
        _ => Ok(()),
    };
    mpi.agree(ready.map_err(|e| mpi.tag(&e)))?;
    let key = key.expect("agreed above");
    let expanded = key.expand();
    let spec = match &container {
        Some((keys, Ok((auth, header)))) => {
            StreamSpec::for_container(engine, header, keys, auth, plan.direction)
        }
        _ => StreamSpec {
            engine,
            mode: plan.mode,
            direction: plan.direction,
            key: &expanded,
            iv: plan.iv,
            chunk_size: plan.chunk_size,
            padding: plan.padding,
            auth: None,
        },
    };
    match plan.strategy {
        IoStrategy::Direct => direct::run(mpi, &spec, plan),
        IoStrategy::Scatter => scatter::run(mpi, &spec, root_io),
    }
}

/// Seals (encryption) or opens (decryption) one chunk in place.
pub(crate) fn process_chunk(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    match spec.direction {
        Direction::Encrypt => pipeline::seal(spec, chunk),
        Direction::Decrypt => pipeline::open(spec, chunk),
    }
}
