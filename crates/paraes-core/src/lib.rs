//! paraes-core: AES-128/192/256, the ECB and CTR modes, the Engine seam and the rayon CPU engine.
#![deny(missing_docs)]

pub mod aes;
pub mod cpu;
pub mod engine;
pub mod key;
pub mod modes;

pub use aes::Implementation;
pub use cpu::CpuEngine;
pub use engine::{Direction, Engine, EngineError, Job, Mode};
pub use key::{ExpandedKey, Key, KeyError, KeySize};
