//! paraes-mpi: one file encrypted by many MPI ranks on many nodes (rsmpi).
//!
//! Rank 0 prepares the job exactly as the single-process tool does (options, key, container
//! header, output temporary) and broadcasts an [`Assignment`]; then every rank runs its own local
//! [`paraes_core::Engine`] on its share of the chunks, by one of two [`IoStrategy`]s:
//!
//! - [`IoStrategy::Direct`]: every rank opens the input and the output itself and runs its own
//!   contiguous range of chunks as the single-process tool runs a file
//!   ([`paraes_core::pipeline::run_parallel_segment`]: workers reading and writing their windows
//!   of the shared files at their offsets). No data crosses MPI.
//! - [`IoStrategy::Scatter`]: rank 0 reads rounds of chunks, spreads them with `MPI_Scatterv`,
//!   every rank seals or opens its chunk, `MPI_Gatherv` brings them back in order and rank 0
//!   writes them; rank 0's reading and writing run on threads that overlap the collectives. Works
//!   with pipes and without a shared file system; memory is a fixed number of rounds on rank 0
//!   and one chunk on every other rank, whatever the file size.
//!
//! Chunks are cut, sealed and opened by the same code as the local pipeline
//! ([`paraes_core::pipeline::run_parallel_segment`], [`paraes_core::pipeline::ChunkReader`],
//! [`paraes_core::pipeline::seal`] and [`paraes_core::pipeline::open`]), so the output is
//! byte-identical to the single-process tool for any rank count. Every failure on any rank
//! becomes one [`JobError`] that all ranks agree on, so the job ends together, with one message,
//! and rank 0 removes the output.
#![deny(missing_docs)]

mod assignment;
mod direct;
mod root_io;
mod run;
mod scatter;
mod world;

pub use assignment::{Assignment, AssignmentError, IoStrategy};
pub use root_io::RootIo;
pub use run::execute;
pub use world::{JobError, Mpi, Reason};
