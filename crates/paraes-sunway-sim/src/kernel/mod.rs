//! The SW-AES kernels of a CPE. Every operation goes through [`crate::machine::Machine`], so it
//! is both executed and counted: the S-box ([`sbox`]), the Fig. 3 layout ([`layout`]), the round
//! steps in row form shared by the SIMD variants ([`steps`]), the three SubBytes flavours
//! ([`vector`] for SIMD and SIMD+selldw, [`bytes`] for the original byte-array C), and one batch
//! as the CPE loop runs it ([`batch`]).

pub mod batch;
pub mod bytes;
pub mod flavor;
pub mod layout;
pub mod sbox;
pub mod steps;
pub mod vector;
pub mod word;

pub use batch::{
    record_batch, record_batch_with, record_variant, record_variant_with, run_batch, Counter,
    CounterLayout, GCM_CHUNK_BLOCKS,
};
pub use bytes::ByteFlavor;
pub use flavor::{CipherShape, Flavor, BATCH_BLOCKS, BATCH_BYTES, BATCH_WORDS};
pub use vector::{ExtractFlavor, SelldwFlavor};
