//! paraes-core: AES-128/192/256, the ECB and CTR modes, the Engine seam, the rayon CPU engine,
//! the chunk pipeline and the authenticated container format.
#![deny(missing_docs)]

pub mod aes;
mod chunk_tag;
pub mod cobblestone;
pub mod container;
pub mod cpu;
pub mod cpus;
pub mod engine;
mod features;
#[cfg(feature = "testing")]
pub mod fuzzing;
pub mod gf256;
pub mod ghash;
pub mod hybrid;
pub mod job;
pub mod key;
pub mod modes;
pub mod names;
pub mod pipeline;
pub mod polyval;
#[cfg(unix)]
pub mod positioned;
pub mod records;
#[cfg(feature = "testing")]
pub mod seeded;
#[cfg(unix)]
pub mod stream;
#[cfg(feature = "testing")]
pub mod testing;
pub mod throughput;

pub use aes::AesImpl;
pub use cpu::CpuEngine;
pub use engine::{
    Counters, Direction, Engine, EngineError, Job, Mode, Modelled, RecordsError, RecordsJob, Split,
};
pub use hybrid::HybridEngine;
pub use key::{ExpandedKey, Key, KeyError, KeySize};
pub use names::{UnknownKeySize, UnknownMode};
pub use throughput::Throughput;
