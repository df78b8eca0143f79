//! One job on every rank: the stream from the [`Plan`], then the chosen strategy.

use paraes_core::cobblestone::{self, ChunkCipher, MessageKeys, Variant};
use paraes_core::container::{FileSecret, Opened, UnverifiedHeader};
use paraes_core::pipeline::{StreamSpec, Tags};
use paraes_core::{Engine, ExpandedKey, Key};

use crate::plan::{IoStrategy, Plan, StreamKind};
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
    // A container: every rank opens the header itself with the file's secret (D for formats
    // v2 and v3, never the user's key) and checks its tag (and v3's key commitment). A bare
    // message: its keys from the input key, salt and context, and the commitment checked. A
    // raw stream: the raw key.
    let prepared: Result<Keys, String> = match &plan.kind {
        StreamKind::Raw => Key::new(&plan.key)
            .map(|key| Keys::Raw(Box::new(key.expand())))
            .map_err(|e| e.to_string()),
        StreamKind::Container => UnverifiedHeader::read(&mut &plan.header[..])
            .and_then(|header| header.open_with_secret(&FileSecret::from_bytes(&plan.key)))
            .map(|mut opened| {
                // A v3 body goes through the pipeline in the batches rank 0 chose.
                opened.set_batch(plan.chunk_size);
                Keys::Container(Box::new(opened))
            })
            .map_err(|e| e.to_string()),
        StreamKind::Message { context } => message_cipher(&plan.key, &plan.header, context)
            .map(|cipher| Keys::Message(Box::new(cipher))),
    };
    mpi.agree(prepared.as_ref().map(|_| ()).map_err(|e| mpi.tag(e)))?;
    let keys = prepared.expect("agreed above");
    let spec = match &keys {
        Keys::Container(opened) => opened.stream_spec(engine, plan.direction),
        Keys::Message(cipher) => {
            StreamSpec::message(engine, plan.direction, cipher, plan.chunk_size)
        }
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

/// The chunk cipher of a bare message under `input_key` whose salt and commitment are
/// `prefix`, checking the commitment.
fn message_cipher(input_key: &[u8], prefix: &[u8], context: &[u8]) -> Result<ChunkCipher, String> {
    let variant = Key::new(input_key)
        .ok()
        .and_then(|key| Variant::for_key_size(key.size()))
        .ok_or("a message takes a 16- or 32-byte key")?;
    let (salt, commitment) = prefix
        .split_at_checked(cobblestone::SALT_LEN)
        .filter(|(_, commitment)| commitment.len() == cobblestone::COMMITMENT_LEN)
        .ok_or("the message's salt and commitment did not arrive whole")?;
    let keys = MessageKeys::derive(
        variant,
        input_key,
        salt.try_into().expect("24 bytes"),
        context,
    )
    .map_err(|e| e.to_string())?;
    if !keys.commits_to(commitment) {
        return Err(
            "the key or context does not match the message (its key commitment differs)".into(),
        );
    }
    Ok(keys.chunks())
}

/// The keys of a job.
enum Keys {
    /// A verified container.
    Container(Box<Opened>),
    /// A bare message's chunk cipher (its commitment checked).
    Message(Box<ChunkCipher>),
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
