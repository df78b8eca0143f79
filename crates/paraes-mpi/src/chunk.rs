//! The one chunk step every strategy runs (sealing or opening in place, as the local pipeline
//! does): a leaf module, so `direct`, `scatter` and `run` do not import each other for it.

use paraes_core::pipeline::{self, Chunk, PipelineError, StreamSpec};
use paraes_core::Direction;

/// Seals (encryption) or opens (decryption) one chunk in place.
pub(crate) fn process_chunk(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    match spec.direction {
        Direction::Encrypt => pipeline::seal(spec, chunk),
        Direction::Decrypt => pipeline::open(spec, chunk),
    }
}
