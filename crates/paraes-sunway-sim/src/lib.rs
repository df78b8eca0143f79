//! paraes-sunway-sim: a byte-exact, cycle-modelled simulator of SW-AES (Li et al., "SW-AES:
//! Accelerating AES Algorithm on the Sunway TaihuLight") on the SW26010 many-core chip.
//!
//! [`SunwaySimEngine`] really encrypts: every AES step runs as counted operations on simulated
//! 256-bit registers ([`machine::V256`], 8 x u32 lanes) or 64-bit scalars against a simulated
//! 64 KiB LDM per CPE ([`ldm`], laid out by [`ldm_plan`]), CPEs in parallel on the host with rayon
//! ([`offload`]), and its output is byte-identical to [`paraes_core::modes::apply`] (GCM chunk
//! counters included). At the same time it models how long an SW26010 would take: the
//! instruction stream of one batch (8 blocks) is recorded through the same code ([`kernel`]),
//! scheduled on an in-order dual-issue (P0 + P1) CPE ([`schedule`]), and combined with a DMA and
//! start-up model ([`timing`]) whose every constant is in [`params::PARAMETER_TABLE`] with its
//! source.
//!
//! The public API the CLI uses:
//! - [`SimConfig`] (`variant`, `buffering`, `cgs`, `params`), [`Variant`], [`Buffering`];
//! - [`SunwaySimEngine::new`], [`paraes_core::Engine`] for it, [`SunwaySimEngine::process_timed`]
//!   returning a [`SimReport`], and the running totals [`SunwaySimEngine::simulated_seconds`] /
//!   [`SunwaySimEngine::simulated_bytes`];
//! - [`SunwaySimEngine::predict`]: the same time model for a size without running data.
//!
//! Each `process` call is one offload: the MPE splits the buffer over the CGs, spawns the CPE
//! threads (paying the athread start-up and the per-CPE table fetch), and joins them. A file
//! streamed in 1 MiB chunks thus pays the start-up once per MiB and moves only 4 KiB per CPE per
//! call, so its simulated rate is lower than the paper's one-shot figures (which offload the
//! whole input at once; see docs/SUNWAY.md).
//!
//! Modules depend downwards only: the root declares and re-exports; `config`, `error`,
//! `params`, `machine`, `ldm` are leaves; `ldm_plan`, `kernel`, `schedule`, `timing`, `offload`
//! and `engine` build on them.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod batch;
pub mod config;
pub mod engine;
pub mod error;
pub mod kernel;
pub mod ldm;
pub mod ldm_plan;
pub mod machine;
pub mod offload;
pub mod params;
pub mod report;
pub mod schedule;
pub mod timing;

pub use config::{Buffering, SimConfig, Variant};
pub use engine::SunwaySimEngine;
pub use error::SimError;
pub use report::SimReport;
