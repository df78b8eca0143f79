//! One job on every rank: the stream from the [`Plan`], then the chosen strategy.

use paraes_core::container::{FileSecret, Opened, UnverifiedHeader};
use paraes_core::pipeline::{StreamSpec, Tags};
use paraes_core::{Engine, ExpandedKey, Key};

use crate::plan::{IoStrategy, Plan};
use crate::root_io::RootIo;
use crate::world::{JobError, Mpi};
use crate::{direct, scatter};

/// Runs `plan` on this rank with its local `engine`; collective (every rank calls it). Returns
/// the bytes of stream output the job wrote (header excluded), the same on every rank for
/// direct I/O and on rank 0 for scatter. Any rank's failure fails the job on every rank.
pub fn execute(
    mpi: &Mpi,
    plan: &Plan,
    engine: &dyn Engine,
    root_io: RootIo<'_>,
) -> Result<u64, JobError> {
    // A container: every rank opens the header itself with the file's secret (D for format
    // v2, never the user's key) and checks its tag. A raw stream: the raw key.
    let prepared: Result<Keys, String> = if plan.header.is_empty() {
        Key::new(&plan.key)
            .map(|key| Keys::Raw(Box::new(key.expand())))
            .map_err(|e| e.to_string())
    } else {
        UnverifiedHeader::read(&mut &plan.header[..])
            .and_then(|header| header.open_with_secret(&FileSecret::from_bytes(&plan.key)))
            .map(|mut opened| {
                // A v3 body goes through the pipeline in the batches rank 0 chose.
                opened.set_batch(plan.chunk_size);
                Keys::Container(Box::new(opened))
            })
            .map_err(|e| e.to_string())
    };
    mpi.agree(prepared.as_ref().map(|_| ()).map_err(|e| mpi.tag(e)))?;
    let keys = prepared.expect("agreed above");
    let spec = match &keys {
        Keys::Container(opened) => opened.stream_spec(engine, plan.direction),
        Keys::Raw(expanded) => StreamSpec {
            engine,
            mode: plan.mode,
            direction: plan.direction,
            key: expanded,
            counter: plan.counter,
            chunk_size: plan.chunk_size,
            padding: plan.padding,
            tags: Tags::None,
        },
    };
    run_strategy(mpi, &spec, plan, root_io)
}

/// The keys of a job.
enum Keys {
    /// A verified container.
    Container(Box<Opened>),
    /// A raw stream's expanded key.
    Raw(Box<ExpandedKey>),
}

fn run_strategy(
    mpi: &Mpi,
    spec: &StreamSpec<'_>,
    plan: &Plan,
    root_io: RootIo<'_>,
) -> Result<u64, JobError> {
    match plan.strategy {
        IoStrategy::Direct => direct::run(mpi, spec, plan),
        IoStrategy::Scatter => scatter::run(mpi, spec, root_io),
    }
}
